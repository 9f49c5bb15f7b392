// End-to-end check of the Parley web client with two headless Chromium users.
//   node --experimental-websocket scripts/web-dev/e2e.mjs [--binary /tmp/parley-web/parley] [--port 18091] [--shots /tmp/webshots]
// Starts its own server (fresh data dir), drives both users through the stable hooks
// documented in Sources/ParleyServer/Web/README.md, stops and restarts the server for the
// offline outbox, and fails on any JS error or CSP violation in either page.
import { spawn } from 'node:child_process';
import { rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, sleep } from './cdp.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const BIN = args.binary || '/tmp/parley-web/parley';
const PORT = Number(args.port || 18091);
const SHOTS = args.shots || '/tmp/webshots';
const DATA = `/tmp/pw-e2e-${PORT}`;
const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '../../Sources/ParleyServer/Web');
const URL0 = `http://127.0.0.1:${PORT}/`;
mkdirSync(SHOTS, { recursive: true });
rmSync(DATA, { recursive: true, force: true });

let server = null;
async function startServer() {
  server = spawn(BIN, ['serve', '--port', String(PORT), '--data-dir', DATA, '--open-organizations', '--web-root', WEB],
    { env: { ...process.env, PARLEY_BCRYPT_COST: '4' }, stdio: ['ignore', 'ignore', 'ignore'] });
  for (let i = 0; i < 100; i++) {
    try { if ((await fetch(`${URL0}health`)).ok) return; } catch { /* not yet */ }
    await sleep(100);
  }
  throw new Error('server did not start');
}
async function stopServer() {
  const p = server; server = null;
  const done = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await Promise.race([done, sleep(5000)]);
  if (p.exitCode === null) { p.kill('SIGKILL'); await done; }
}

let step = 0;
const log = (s) => console.log(`${String(++step).padStart(2)}. ${s}`);
const q = JSON.stringify;
const msgSel = (text) => `[...document.querySelectorAll('#messages [data-seq]')].filter(e => e.querySelector('.text')?.textContent === ${q(text)})`;

async function register(page, org, email, name) {
  await page.goto(URL0);
  await page.waitFor('document.body.dataset.screen === "auth"');
  await page.click('#auth-mode-register');
  await page.fill('#auth-organization', org);
  await page.fill('#auth-email', email);
  await page.fill('#auth-password', 'correct horse');
  await page.fill('#auth-display-name', name);
  await page.click('#auth-register');
  await page.waitFor('document.body.dataset.screen === "main"');
  await page.waitFor('document.querySelector("#banner").dataset.state === "online"', { what: 'banner online' });
}

async function sendText(page, text) {
  await page.type('#composer', text);
  await page.press('Enter');
}

const browser = await launchBrowser();
let ok = false;
try {
  await startServer();
  const A = await browser.newPage('ada');
  const B = await browser.newPage('bob');

  log('auth screen, error shown for a bad login');
  await A.goto(URL0);
  await A.waitFor('document.body.dataset.screen === "auth"');
  await A.fill('#auth-organization', 'Nowhere'); await A.fill('#auth-email', 'x@y.io'); await A.fill('#auth-password', 'wrongpass1');
  await A.click('#auth-login');
  await A.waitFor('document.querySelector("#auth-error").textContent.includes("Invalid")');
  await A.screenshot(`${SHOTS}/auth-desktop.png`);

  log('register two users in one organization');
  await register(A, 'Acme', 'ada@acme.io', 'Ada <b>Lovelace</b>');
  await register(B, 'acme', 'bob@acme.io', 'Bob');

  log('Ada starts a direct chat with Bob');
  await A.click('#new-chat');
  await A.type('#new-chat-search', 'bob');
  await A.waitFor('document.querySelector("#new-chat-results [data-user-id]")');
  await A.click('#new-chat-results [data-user-id]');
  await A.click('#new-chat-create');
  const cid = await A.waitFor('document.querySelector("#chat").dataset.conversationId');
  await A.waitFor(`document.querySelector("#chat-title").textContent === "Bob"`);

  log('Ada sends; Bob sees an unread badge and Ada online');
  await sendText(A, 'Hello Bob <img src=x onerror=alert(1)>');
  await A.waitFor(`${msgSel('Hello Bob <img src=x onerror=alert(1)>')}[0]?.dataset.status === "sent" || ${msgSel('Hello Bob <img src=x onerror=alert(1)>')}[0]?.dataset.status === "delivered"`, { what: 'sent tick' });
  const row = `#conversation-list [data-conversation-id="${cid}"]`;
  await B.waitFor(`document.querySelector('${row} .unread')?.textContent === "1"`, { what: 'unread badge 1' });
  await B.waitFor(`document.querySelector('${row} .presence')?.classList.contains("online")`, { what: 'presence online' });
  await B.waitFor(`document.querySelector('${row} .name').textContent === "Ada <b>Lovelace</b>"`, { what: 'name as text' });
  await A.waitFor(`${msgSel('Hello Bob <img src=x onerror=alert(1)>')}[0]?.dataset.status === "delivered"`, { what: 'delivered tick' });

  log('Bob opens the chat; Ada sees read');
  await B.click(row);
  await B.waitFor(`${msgSel('Hello Bob <img src=x onerror=alert(1)>')}.length === 1`);
  await A.waitFor(`${msgSel('Hello Bob <img src=x onerror=alert(1)>')}[0]?.dataset.status === "read"`, { what: 'read tick' });
  await B.waitFor(`!document.querySelector('${row} .unread')?.textContent`, { what: 'badge cleared' });
  if (await B.eval('document.querySelectorAll("#messages img:not(.attachment-image)").length')) throw new Error('text became HTML');

  log('Bob types; Ada sees "Bob is typing…"; Bob sends');
  await B.type('#composer', 'Hi Ada');
  await A.waitFor('document.querySelector("#typing").textContent === "Bob is typing…"');
  await A.waitFor(`document.querySelector('${row} .preview').textContent.includes("typing")`);
  await B.press('Enter');
  await A.waitFor(`${msgSel('Hi Ada')}.length === 1`);
  await A.waitFor('document.querySelector("#typing").textContent === ""', { what: 'typing cleared' });
  await B.waitFor(`${msgSel('Hi Ada')}[0]?.dataset.status === "read"`, { what: 'read tick for Bob' });

  log('Ada reacts to Bob\'s message; Bob sees it');
  await A.eval(`${msgSel('Hi Ada')}[0].querySelector('.action-react').click()`);
  {
    const r = await A.eval(`(() => { const b = ${msgSel('Hi Ada')}[0].querySelector('.bubble').getBoundingClientRect(); return {x: b.x + b.width / 2, y: b.y + b.height / 2}; })()`);
    await A.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: r.x, y: r.y });
    await sleep(150);
    await A.screenshot(`${SHOTS}/actions-desktop-ada.png`);
  }
  await A.eval(`${msgSel('Hi Ada')}[0].querySelector('.react-choice[data-emoji="👍"]').click()`);
  await B.waitFor(`${msgSel('Hi Ada')}[0]?.querySelector('.reactions')?.textContent.includes("👍 1")`, { what: 'reaction on Bob' });

  log('Ada edits her message; Bob sees the edit');
  await A.eval(`${msgSel('Hello Bob <img src=x onerror=alert(1)>')}[0].querySelector('.action-edit').click()`);
  await A.waitFor('document.querySelector("#composer").value.startsWith("Hello Bob")');
  await A.type('#composer', 'Hello Bob, edited');
  await A.press('Enter');
  await B.waitFor(`${msgSel('Hello Bob, edited')}[0]?.querySelector('.edited')`, { what: 'edit on Bob' });

  log('Bob replies to Ada\'s message; Ada sees the quote');
  await B.eval(`${msgSel('Hello Bob, edited')}[0].querySelector('.action-reply').click()`);
  await B.screenshot(`${SHOTS}/reply-context-bob.png`);
  await sendText(B, 'Replying here');
  await A.waitFor(`${msgSel('Replying here')}[0]?.querySelector('.reply-quote')?.textContent.includes("Hello Bob, edited")`, { what: 'reply quote' });

  log('Bob deletes a message; Ada sees the tombstone');
  await sendText(B, 'oops, wrong chat');
  await A.waitFor(`${msgSel('oops, wrong chat')}.length === 1`);
  await B.eval(`${msgSel('oops, wrong chat')}[0].querySelector('.action-delete').click()`);
  await A.waitFor(`${msgSel('oops, wrong chat')}.length === 0 && document.querySelector('#messages .text.deleted')`, { what: 'deleted' });

  log('Ada uploads an image and a file; both show on both sides');
  await A.screenshot('/tmp/pw-upload.png');
  writeFileSync('/tmp/pw-notes.txt', 'some notes\n');
  await A.setFiles('#attach-input', ['/tmp/pw-upload.png']);
  for (const P of [A, B]) await P.waitFor('[...document.querySelectorAll("img.attachment-image")].some(i => i.src.startsWith("blob:") && i.complete && i.naturalWidth > 0)', { what: `${P.name} image`, timeout: 15000 });
  await A.waitFor('document.querySelector("#upload-progress").hidden');
  await A.setFiles('#attach-input', ['/tmp/pw-notes.txt']);
  for (const P of [A, B]) await P.waitFor('document.querySelector("a.attachment-file")?.textContent.includes("pw-notes.txt")', { what: `${P.name} file link` });

  log('search finds a message and opens its conversation');
  await B.click('#back');
  await B.type('#search-input', 'edit');
  await B.waitFor('document.querySelector("#search-results [data-message-id]")');
  await B.click('#search-results [data-message-id]');
  await B.waitFor(`document.querySelector("#chat").dataset.conversationId === ${q(cid)}`);

  log('Ada creates a named group with Bob; Bob sees it with an unread badge');
  await A.click('#new-chat');
  await A.type('#new-chat-search', 'bob');
  await A.waitFor('document.querySelector("#new-chat-results [data-user-id]")');
  await A.click('#new-chat-results [data-user-id]');
  await A.fill('#new-chat-name', 'Team <i>x</i>');
  await A.click('#new-chat-create');
  await A.waitFor('document.querySelector("#chat-title").textContent === "Team <i>x</i>"');
  const gid = await A.eval('document.querySelector("#chat").dataset.conversationId');
  await sendText(A, 'group hello');
  await B.waitFor(`document.querySelector('#conversation-list [data-conversation-id="${gid}"] .name')?.textContent === "Team <i>x</i>" && document.querySelector('#conversation-list [data-conversation-id="${gid}"] .unread')?.textContent === "1"`, { what: 'group row on Bob' });
  await A.click(row);
  await A.waitFor(`document.querySelector("#chat").dataset.conversationId === ${q(cid)}`);

  await A.screenshot(`${SHOTS}/main-desktop-ada.png`);
  await A.send('Emulation.setEmulatedMedia', { features: [{ name: 'prefers-color-scheme', value: 'dark' }] });
  await A.screenshot(`${SHOTS}/main-desktop-ada-dark.png`);
  await A.send('Emulation.setEmulatedMedia', { features: [] });
  await B.viewport(390, 844);
  await sleep(300);
  await B.screenshot(`${SHOTS}/chat-phone-bob.png`);
  await B.click('#back');
  await sleep(200);
  await B.screenshot(`${SHOTS}/list-phone-bob.png`);
  await B.click('#new-chat');
  await B.waitFor('document.querySelector("#new-chat-results [data-user-id]")');
  await B.screenshot(`${SHOTS}/new-chat-phone-bob.png`);
  await B.press('Escape');
  await B.click(row);
  await B.viewport(1280, 800);
  await B.eval('(() => { const m = document.querySelector("#messages"); m.scrollTop = m.scrollHeight; return true; })()');

  log('server stops: Ada sends while offline (stays in IndexedDB, status sending)');
  await stopServer();
  await A.waitFor('["offline", "connecting"].includes(document.querySelector("#banner").dataset.state)', { what: 'banner offline' });
  await sendText(A, 'sent while offline 1');
  await sendText(A, 'sent while offline 2');
  await A.waitFor(`${msgSel('sent while offline 2')}[0]?.dataset.status === "sending"`);
  const size = await A.eval('window.parleyDebug.outboxSize()');
  if (size !== 2) throw new Error(`outbox size ${size}, expected 2`);
  await A.screenshot(`${SHOTS}/offline-desktop-ada.png`);

  log('server restarts: both see each message exactly once, in order');
  await startServer();
  for (const P of [A, B]) {
    await P.waitFor(`${msgSel('sent while offline 1')}.length === 1 && ${msgSel('sent while offline 2')}.length === 1 && document.querySelector("#banner").dataset.state === "online"`, { what: `${P.name} offline messages`, timeout: 40000 });
  }
  await A.waitFor(`${msgSel('sent while offline 2')}[0].dataset.status === "read"`, { what: 'offline message read' });
  const order = await B.eval(`[${msgSel('sent while offline 1')}[0].dataset.seq, ${msgSel('sent while offline 2')}[0].dataset.seq].map(Number)`);
  if (!(order[0] < order[1])) throw new Error(`offline messages out of order ${order}`);
  if (await A.eval('window.parleyDebug.outboxSize()') !== 0) throw new Error('outbox not empty');

  log('outbox survives closing the page while offline (IndexedDB), sent once on the next load');
  await stopServer();
  await A.waitFor('["offline", "connecting"].includes(document.querySelector("#banner").dataset.state)', { what: 'banner offline' });
  await sendText(A, 'survives reload');
  await A.waitFor(`${msgSel('survives reload')}[0]?.dataset.status === "sending"`);
  await A.goto('about:blank');
  await startServer();
  await A.goto(URL0);
  await A.waitFor('document.body.dataset.screen === "main"');
  await A.click(row);
  await A.waitFor(`${msgSel('survives reload')}.length === 1 && ${msgSel('survives reload')}[0].dataset.status !== "sending"`, { timeout: 40000, what: 'reloaded send delivered' });
  await B.waitFor(`${msgSel('survives reload')}.length === 1`, { timeout: 40000, what: 'Bob gets the reloaded send' });
  if (await A.eval('window.parleyDebug.outboxSize()') !== 0) throw new Error('outbox not empty after reload');

  log('paging back: 70 more messages, Bob scrolls to the top');
  const token = await A.eval('localStorage.getItem("parley.token")');
  for (let i = 1; i <= 70; i++) {
    await fetch(`${URL0}api/v1/conversations/${cid}/messages`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ clientMessageId: `bulk-${i}`, text: `bulk ${i}` }) });
  }
  await B.waitFor(`${msgSel('bulk 70')}.length === 1`);
  await B.reload();
  await B.waitFor('document.body.dataset.screen === "main"');
  await B.click(row);
  await B.waitFor(`${msgSel('bulk 70')}.length === 1`);
  const before = await B.eval('document.querySelectorAll("#messages [data-seq]").length');
  await B.eval('document.querySelector("#messages").scrollTop = 0');
  await B.waitFor(`document.querySelectorAll("#messages [data-seq]").length > ${before}`, { what: 'older page loaded' });
  await B.waitFor(`${msgSel('Hi Ada')}.length === 1`, { what: 'first messages after paging', timeout: 15000 }).catch(async () => {
    await B.eval('document.querySelector("#messages").scrollTop = 0');
    await B.waitFor(`${msgSel('Hi Ada')}.length === 1`);
  });

  log('log out returns to the auth screen');
  await B.click('#logout');
  await B.waitFor('document.body.dataset.screen === "auth" && !localStorage.getItem("parley.token")');

  const problems = [...A.problems.map((p) => `ada: ${p}`), ...B.problems.map((p) => `bob: ${p}`)];
  if (problems.length) { console.log('Console problems:\n  ' + problems.join('\n  ')); throw new Error('console problems'); }
  ok = true;
  console.log('ALL OK');
} catch (e) {
  console.error('FAILED:', e.message);
  for (const P of browser.sessions.values()) {
    console.error(`--- ${P.name} console (last 25) ---\n  ` + P.logs.slice(-25).join('\n  '));
    try { await P.screenshot(`${SHOTS}/failure-${P.name}.png`); } catch { /* ignore */ }
  }
} finally {
  await browser.close();
  if (server) await stopServer();
  process.exit(ok ? 0 : 1);
}
