// Minimal Chrome DevTools Protocol driver (node 20: run with --experimental-websocket).
// Launches headless Chromium, makes isolated browser contexts (separate storage = separate
// users) and drives pages through the stable hooks of the Parley web client.
import { spawn } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function launchBrowser({ port = 9333, chromium = '/usr/bin/chromium' } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'pw-chrome-'));
  const proc = spawn(chromium, ['--headless=new', '--no-sandbox', '--disable-gpu', `--remote-debugging-port=${port}`,
    `--user-data-dir=${profile}`, '--no-first-run', '--disable-background-timer-throttling',
    '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows', 'about:blank'], { stdio: 'ignore' });
  let wsUrl = null;
  for (let i = 0; i < 100 && !wsUrl; i++) {
    try { wsUrl = (await (await fetch(`http://127.0.0.1:${port}/json/version`)).json()).webSocketDebuggerUrl; } catch { await sleep(100); }
  }
  if (!wsUrl) throw new Error('chromium did not start');
  const browser = new Browser(wsUrl, proc);
  await browser.open();
  return browser;
}

class Browser {
  constructor(wsUrl, proc) { this.wsUrl = wsUrl; this.proc = proc; this.nextId = 1; this.waiting = new Map(); this.sessions = new Map(); }
  open() {
    return new Promise((resolve, reject) => {
      this.ws = new WebSocket(this.wsUrl);
      this.ws.onopen = resolve;
      this.ws.onerror = reject;
      this.ws.onmessage = (e) => {
        const msg = JSON.parse(e.data);
        if (msg.id && this.waiting.has(msg.id)) {
          const { resolve: ok, reject: fail } = this.waiting.get(msg.id);
          this.waiting.delete(msg.id);
          if (msg.error) fail(new Error(`${msg.error.message} ${msg.error.data || ''}`)); else ok(msg.result);
        } else if (msg.sessionId && this.sessions.has(msg.sessionId)) this.sessions.get(msg.sessionId).onEvent(msg.method, msg.params);
      };
    });
  }
  send(method, params = {}, sessionId) {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ id, method, params, sessionId }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }
  async newPage(name, { width = 1280, height = 800 } = {}) {
    const { browserContextId } = await this.send('Target.createBrowserContext', { disposeOnDetach: true });
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank', browserContextId });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId, name);
    this.sessions.set(sessionId, page);
    await page.send('Runtime.enable');
    await page.send('Log.enable');
    await page.send('Page.enable');
    await page.send('DOM.enable');
    await page.send('Emulation.setFocusEmulationEnabled', { enabled: true });
    await page.viewport(width, height);
    return page;
  }
  async close() { try { await this.send('Browser.close'); } catch { /* gone */ } this.proc.kill(); }
}

class Page {
  constructor(browser, sessionId, name) { this.browser = browser; this.sessionId = sessionId; this.name = name; this.problems = []; this.logs = []; }
  send(method, params) { return this.browser.send(method, params, this.sessionId); }
  onEvent(method, p) {
    if (method === 'Runtime.exceptionThrown') this.problems.push(`exception: ${p.exceptionDetails.exception?.description || p.exceptionDetails.text}`);
    else if (method === 'Runtime.consoleAPICalled') {
      const text = p.args.map((a) => a.value ?? a.description ?? '').join(' ');
      this.logs.push(`${p.type}: ${text}`);
      if (p.type === 'error') this.problems.push(`console.error: ${text}`);
    } else if (method === 'Log.entryAdded') {
      const e = p.entry;
      this.logs.push(`log ${e.level} ${e.source}: ${e.text}${e.url ? ` (${e.url})` : ''}`);
      // Failed network requests while the server is deliberately stopped are expected; CSP and JS errors are not.
      if (e.level === 'error' && e.source !== 'network') this.problems.push(`log ${e.source}: ${e.text}`);
      if (/Content Security Policy|Refused to/i.test(e.text)) this.problems.push(`CSP: ${e.text}`);
    }
  }
  async viewport(width, height) {
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: width < 600 });
  }
  async goto(url) {
    await this.send('Page.navigate', { url });
    await this.waitFor('document.readyState === "complete"');
  }
  async reload() { await this.send('Page.reload', {}); await sleep(300); await this.waitFor('document.readyState === "complete"'); }
  async eval(expression) {
    const r = await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true, userGesture: true });
    if (r.exceptionDetails) throw new Error(`${this.name}: eval failed: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text}\n  in: ${expression}`);
    return r.result.value;
  }
  async waitFor(expression, { timeout = 10000, what } = {}) {
    const end = Date.now() + timeout;
    let last;
    while (Date.now() < end) {
      try { last = await this.eval(expression); if (last) return last; } catch (e) { last = e.message; }
      await sleep(100);
    }
    throw new Error(`${this.name}: timed out waiting for ${what || expression} (last: ${JSON.stringify(last)})`);
  }
  // Waits (up to 10 s) for the element, then clicks it.
  async click(selector) {
    await this.waitFor(`!!document.querySelector(${JSON.stringify(selector)})`, { what: selector });
    return this.eval(`(() => { const el = document.querySelector(${JSON.stringify(selector)}); if (!el) throw new Error('no element ' + ${JSON.stringify(selector)}); el.click(); return true; })()`);
  }
  // Types like a person: focus, then insert text (fires input events).
  async type(selector, text) {
    await this.eval(`(() => { const el = document.querySelector(${JSON.stringify(selector)}); el.focus(); el.value = ''; return true; })()`);
    await this.send('Input.insertText', { text });
  }
  async fill(selector, value) {
    await this.eval(`(() => { const el = document.querySelector(${JSON.stringify(selector)}); el.value = ${JSON.stringify(value)}; el.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`);
  }
  async press(key) {
    const codes = { Enter: 13, Escape: 27 };
    const base = { key, code: key, windowsVirtualKeyCode: codes[key], nativeVirtualKeyCode: codes[key] };
    await this.send('Input.dispatchKeyEvent', { type: 'keyDown', ...base, ...(key === 'Enter' ? { text: '\r' } : {}) });
    await this.send('Input.dispatchKeyEvent', { type: 'keyUp', ...base });
  }
  async setFiles(selector, files) {
    const { root } = await this.send('DOM.getDocument', { depth: 0 });
    const { nodeId } = await this.send('DOM.querySelector', { nodeId: root.nodeId, selector });
    await this.send('DOM.setFileInputFiles', { nodeId, files });
  }
  async screenshot(path) {
    const { data } = await this.send('Page.captureScreenshot', { format: 'png' });
    writeFileSync(path, Buffer.from(data, 'base64'));
  }
}

export { sleep };
