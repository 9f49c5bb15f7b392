// WebSocket: reconnect with exponential backoff + jitter, commands with ids and one reply
// each, events to a callback. The browser answers the server's protocol pings itself; an
// application `ping` every 25 s detects a dead link that the browser has not noticed yet.
import { ApiError, getToken, validToken } from '/web/api.js';

export class Socket {
  constructor({ onEvent, onState, onHello, onAuthFailed }) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.onHello = onHello;
    this.onAuthFailed = onAuthFailed;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.attempt = 0;
    this.timer = null;
    this.pingTimer = null;
    this.stopped = true;
    this.ready = false; // hello received
    this.state = 'connecting';
    window.addEventListener('online', () => this.reconnectNow());
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.onState(state);
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    if (this.ws) { try { this.ws.close(1000, 'bye'); } catch { /* ignore */ } }
    this.ws = null;
  }

  reconnectNow() {
    if (this.stopped || (this.ws && this.ws.readyState <= 1)) return;
    clearTimeout(this.timer);
    this.attempt = 0;
    this.connect();
  }

  async connect() {
    clearTimeout(this.timer);
    if (!getToken() || this.stopped || this.askingTicket) return;
    this.setState('connecting');
    // The token never goes into the socket's URL (proxies and servers log URLs): a one-use
    // ticket, asked for over HTTP with the token in a header, opens the socket instead.
    let ticket;
    this.askingTicket = true;
    try {
      let token;
      try { token = await validToken(); } catch (e) { if (e.status === 401) { this.onAuthFailed(); return; } throw e; }
      const res = await fetch('/api/v1/auth/ticket', { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
      if (res.status === 401) { this.onAuthFailed(); return; }
      if (!res.ok) throw new Error(`ticket: ${res.status}`);
      ticket = (await res.json()).ticket;
    } catch {
      if (this.stopped) return;
      this.setState('offline');
      this.retryLater();
      return;
    } finally {
      this.askingTicket = false;
    }
    if (this.stopped || (this.ws && this.ws.readyState <= 1)) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}/api/v1/ws?ticket=${encodeURIComponent(ticket)}`);
    this.ws = ws;
    this.ready = false;
    ws.onmessage = (e) => this.handleFrame(e.data);
    ws.onclose = (e) => this.handleClose(ws, e);
    ws.onerror = () => { /* onclose follows */ };
  }

  handleFrame(raw) {
    let frame;
    try { frame = JSON.parse(raw); } catch { return; }
    if (frame.replyTo !== undefined) {
      const p = this.pending.get(frame.replyTo);
      if (!p) return;
      this.pending.delete(frame.replyTo);
      clearTimeout(p.timer);
      if (frame.ok) p.resolve(frame.data || {});
      else p.reject(new ApiError(frame.error?.code || 'internal', frame.error?.message, 0, frame.error?.retryAfter || null));
      return;
    }
    if (frame.type === 'hello') {
      this.ready = true;
      this.attempt = 0;
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => this.heartbeat(), 25000);
      this.onHello(frame.data);
      return;
    }
    this.onEvent(frame.type, frame.data || {});
  }

  async heartbeat() {
    if (!this.ready) return;
    const ws = this.ws;
    try { await this.request('ping', {}, 10000); } catch (e) {
      if (e.code === 'timeout' && ws === this.ws) { try { ws.close(4000, 'ping timeout'); } catch { /* ignore */ } }
    }
  }

  async handleClose(ws, e) {
    if (ws !== this.ws) return;
    const wasReady = this.ready;
    this.ws = null;
    this.ready = false;
    clearInterval(this.pingTimer);
    for (const [, p] of this.pending) { clearTimeout(p.timer); p.reject(new ApiError('disconnected', 'Connection lost')); }
    this.pending.clear();
    if (this.stopped) return;
    this.setState('offline');
    // 4001: the session ended (account deactivated, key retired, or the token this socket was
    // opened with expired after the client renewed it). Only the current token can tell.
    if (!wasReady || e.code === 4001) {
      // The upgrade may have been refused for a bad token (401): ask over HTTP once.
      try {
        let token;
        try { token = await validToken(); } catch (err) { if (err.status === 401) { this.onAuthFailed(); return; } throw err; }
        const res = await fetch('/api/v1/users/me', { headers: { Authorization: `Bearer ${token}` } });
        if (res.status === 401) { this.onAuthFailed(); return; }
      } catch { /* server down: keep retrying */ }
    }
    this.retryLater();
  }

  // Backoff with jitter: 0.5 s doubling to 30 s.
  retryLater() {
    const base = Math.min(30000, 500 * 2 ** this.attempt);
    const delay = base / 2 + Math.random() * base / 2;
    this.attempt = Math.min(this.attempt + 1, 10);
    this.nextRetryAt = Date.now() + delay;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  get isOpen() { return !!(this.ws && this.ready && this.ws.readyState === 1); }

  request(type, data, timeoutMs = 20000) {
    return new Promise((resolve, reject) => {
      if (!this.isOpen) { reject(new ApiError('disconnected', 'Not connected')); return; }
      const id = `c${this.nextId++}`;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ApiError('timeout', 'The server did not answer'));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ id, type, data }));
    });
  }
}
