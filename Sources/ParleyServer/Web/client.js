// The controller: loads and syncs state over REST, handles socket events, the outbox,
// receipts, typing and every user action. Views call these functions; they never fetch.
import { api, qs, ApiError, saveSession, renewalDue, renewSession, onTokenRenewed } from '/web/api.js';
import { Socket } from '/web/socket.js';
import * as outbox from '/web/outbox.js';
import * as cache from '/web/cache.js';
import { flushOutbox } from '/web/sending.js';
import { loadBlocked } from '/web/actions.js';
import {
  store, emit, applyConversation, applyMessageToList, getCache, upsertMessage, setTyping, trimWindow, WINDOW,
  setTypingSummary, forgetServerCopy, fromBlocked, applyProfile,
} from '/web/store.js';

let hooks = { onAuthFailed() {}, onError() {}, onIncoming() {}, onOpened() {}, onSending() {} };
export function init(h) { hooks = { ...hooks, ...h }; }
// Tells the page something happened (the hooks it gave to init).
export function hook(name, ...args) { hooks[name](...args); }

export const socket = new Socket({
  onEvent: (type, data) => { try { handleEvent(type, data); } catch (e) { console.error(e); } },
  onState: (s) => setConnection(s),
  onHello: (data) => { onHello(data).catch((e) => console.error(e)); },
  onAuthFailed: () => hooks.onAuthFailed(),
});

function setConnection(state) {
  store.connection = state;
  emit('connection');
}

export async function startSession(user) {
  store.me = user;
  for (const item of await outbox.allItems(user.id)) store.pending.set(item.clientMessageId, item);
  // What the tab knew shows at once, before (or without) the network; hello catches it up.
  await cache.restore(user.id);
  emit('list');
  socket.start();
}

export async function endSession() {
  socket.stop();
  const me = store.me;
  try { await api('POST', '/auth/logout', {}); } catch { /* stateless tokens: forget it anyway */ }
  if (me) await outbox.clearUser(me.id).catch(() => {});
}

// Access tokens live minutes: renew when a third of the token's life is left, and hand the new
// token to the open socket (`auth`), so it carries on instead of being closed at the old one's
// expiry. A renewal by another tab reaches this socket too.
async function maybeRefreshToken() {
  if (!renewalDue()) return;
  try { await renewSession(); } catch (e) { if (e.status === 401) hooks.onAuthFailed(); }
}
onTokenRenewed((token) => {
  if (!socket.isOpen) return;
  socket.request('auth', { token })
    .then((reply) => { store.socketAuthorizedUntil = reply?.expiresAt || null; })
    .catch(() => { /* the next socket opens with it */ });
});
setInterval(maybeRefreshToken, 15000);

async function onHello(data) {
  if (data.user) { store.me = data.user; saveSession(null, data.user); }
  const restored = !!data.storeId && !!store.storeId && data.storeId !== store.storeId;
  if (data.storeId) store.storeId = data.storeId;
  if (restored) {
    forgetServerCopy();
    if (store.me) cache.clearUser(store.me.id, { chatsOnly: true });
  }
  maybeRefreshToken();
  setConnection('syncing');
  try {
    await Promise.all([syncList(), loadUsers(), loadBlocked()]);
    if (restored && store.openId) await loadHistory(store.openId);
    await Promise.all([...store.caches.keys()].map((id) => catchUp(id)));
    for (const conv of store.conversations.values()) {
      const mine = (conv.members || []).find((m) => m.userId === store.me.id);
      if (mine && conv.lastSeq > mine.deliveredSeq) scheduleDelivered(conv.id, conv.lastSeq);
    }
    if (store.openId) socket.request('focus', { conversationId: store.openId }).catch(() => {});
  } catch (e) {
    console.warn('sync failed', e);
  }
  if (socket.isOpen) setConnection('online');
  emit('list');
  if (store.openId) emit('chat', store.openId);
  flushOutbox();
}

// ---- the conversation list ----
export async function syncList() {
  if (store.syncToken) {
    try {
      const res = await api('GET', `/conversations${qs({ changedSince: store.syncToken })}`);
      for (const c of res.conversations) applyConversation(c);
      for (const id of res.removedIds || []) store.conversations.delete(id);
      store.syncToken = res.syncToken;
      emit('list');
      return;
    } catch (e) {
      if (e.code !== 'invalid_request' && e.code !== 'conflict') throw e;
      store.syncToken = null;
    }
  }
  const res = await api('GET', `/conversations${qs({ limit: 50 })}`);
  for (const c of res.conversations) applyConversation(c);
  store.listHasMore = !!res.hasMore;
  store.listNextBefore = res.nextBefore || null;
  store.syncToken = res.syncToken || null;
  emit('list');
}

let loadingMore = false;
export async function loadMoreConversations() {
  if (loadingMore || !store.listHasMore || !store.listNextBefore) return;
  loadingMore = true;
  try {
    const res = await api('GET', `/conversations${qs({ limit: 50, before: store.listNextBefore })}`);
    for (const c of res.conversations) applyConversation(c);
    store.listHasMore = !!res.hasMore;
    store.listNextBefore = res.nextBefore || null;
    emit('list');
  } finally { loadingMore = false; }
}

export async function loadUsers() {
  const res = await api('GET', `/users${qs({ limit: 500 })}`);
  for (const u of res.users) store.users.set(u.id, u);
  emit('users');
}
let usersReload = null;
export function ensureUsers(ids) {
  if (ids.every((id) => store.users.has(id) || id === store.me?.id) || usersReload) return;
  usersReload = setTimeout(() => { usersReload = null; loadUsers().catch(() => {}); }, 300);
}

export const searchUsers = (q) => api('GET', `/users${qs({ q, limit: 30 })}`).then((r) => r.users);

export async function createConversation(participantIds, name) {
  const body = participantIds.length === 1 && !name
    ? { type: 'direct', participantIds }
    : { type: 'group', participantIds, ...(name ? { name } : {}) };
  const conv = await api('POST', '/conversations', body);
  applyConversation(conv);
  emit('list');
  return conv;
}

async function fetchConversation(id) {
  try {
    const conv = await api('GET', `/conversations/${id}`);
    applyConversation(conv);
    ensureUsers(conv.participantIds || []);
    emit('list'); emit('chat', id);
  } catch (e) {
    if (e.code === 'not_found') { store.conversations.delete(id); emit('list'); }
  }
}

// ---- messages ----
export async function openConversation(id) {
  if (store.openId && store.openId !== id) trimWindow(store.openId, { most: WINDOW.keep });
  store.openId = id;
  hooks.onOpened(id);
  emit('chat', id); emit('list');
  if (socket.isOpen) socket.request('focus', { conversationId: id }).catch(() => {});
  // Opened from a link (or a notification) before the list knows it: read it on its own.
  if (!store.conversations.has(id)) fetchConversation(id);
  const c = getCache(id);
  if (!c.loaded) await loadHistory(id);
}

export function closeConversation() {
  if (store.openId) trimWindow(store.openId, { most: WINDOW.keep });
  store.openId = null;
  hooks.onOpened(null);
  if (socket.isOpen) socket.request('focus', { conversationId: null }).catch(() => {});
  emit('chat'); emit('list');
}

async function loadHistory(id) {
  const c = getCache(id);
  if (c.loading) return c.loading;
  const startSeq = store.conversations.get(id)?.lastSeq || 0;
  c.loading = (async () => {
    try {
      const res = await api('GET', `/conversations/${id}/messages${qs({ limit: 50 })}`);
      for (const m of res.messages) upsertMessage(m);
      c.oldestSeq = res.messages.length ? res.messages[0].seq : null;
      c.hasMoreBefore = !!res.hasMore;
      c.loaded = true;
      c.syncSeq = Math.max(c.syncSeq, startSeq, ...res.messages.map((m) => m.updatedSeq));
      ensureUsers(res.messages.map((m) => m.senderId));
      emit('chat', id);
      await catchUp(id);
    } catch (e) {
      hooks.onError(e);
    } finally { c.loading = null; }
  })();
  return c.loading;
}

export async function loadOlder(id) {
  const c = getCache(id);
  if (!c.loaded || !c.hasMoreBefore || c.loadingOlder || c.oldestSeq === null) return false;
  c.loadingOlder = true;
  try {
    const res = await api('GET', `/conversations/${id}/messages${qs({ before: c.oldestSeq, limit: 50 })}`);
    if (res.messages.length) c.oldestSeq = Math.min(c.oldestSeq, res.messages[0].seq);
    for (const m of res.messages) upsertMessage(m);
    c.hasMoreBefore = !!res.hasMore;
    ensureUsers(res.messages.map((m) => m.senderId));
    emit('chat', id);
    return res.messages.length > 0;
  } finally { c.loadingOlder = false; }
}

// Catch-up feed: everything changed since the last contiguous change we applied.
export function catchUp(id) {
  const c = getCache(id, false);
  if (!c || !c.loaded) return Promise.resolve();
  if (c.catching) { c.catchAgain = true; return c.catching; }
  c.catching = (async () => {
    try {
      do {
        c.catchAgain = false;
        for (;;) {
          const res = await api('GET', `/conversations/${id}/changes${qs({ since: c.syncSeq, limit: 500 })}`);
          for (const m of res.messages) { upsertMessage(m); applyMessageToList(m, true); }
          if (res.messages.length) c.syncSeq = Math.max(c.syncSeq, res.messages[res.messages.length - 1].updatedSeq);
          if (!res.hasMore) { c.syncSeq = Math.max(c.syncSeq, res.lastSeq || 0); break; }
        }
        emit('chat', id); emit('list');
      } while (c.catchAgain);
    } catch (e) {
      console.warn('catch-up failed', e);
    } finally { c.catching = null; }
  })();
  return c.catching;
}

export function handleMessage(m, created, fromReply = false) {
  const own = m.senderId === store.me?.id;
  if (own && store.pending.has(m.clientMessageId)) {
    store.pending.delete(m.clientMessageId);
    outbox.removeItem(m.clientMessageId).catch(() => {});
  }
  if (!store.conversations.has(m.conversationId)) fetchConversation(m.conversationId);
  applyMessageToList(m, created);
  const c = getCache(m.conversationId, false);
  if (c && c.loaded) {
    upsertMessage(m);
    const change = m.updatedSeq || m.seq;
    if (!fromReply) {
      if (change > c.syncSeq + 1) catchUp(m.conversationId); // a gap: fetch what we missed
      else if (change === c.syncSeq + 1 && !c.catching) c.syncSeq = change;
    }
  }
  if (created && !own) {
    setTyping(m.conversationId, m.senderId, false);
    scheduleDelivered(m.conversationId, m.seq);
    if (!fromReply && m.type !== 'system' && !fromBlocked(m)) hooks.onIncoming(m);
  }
  ensureUsers([m.senderId]);
  emit('list'); emit('chat', m.conversationId);
}

function handleEvent(type, d) {
  switch (type) {
    case 'message.created': handleMessage(d.message, true); break;
    case 'message.updated': handleMessage(d.message, false); break;
    case 'conversation.updated': {
      const conv = d.conversation;
      if (conv.participantIds && conv.participantIds.length && !conv.participantIds.includes(store.me.id)) {
        store.conversations.delete(conv.id);
        if (store.openId === conv.id) closeConversation();
      } else {
        applyConversation(conv);
        ensureUsers(conv.participantIds || []);
      }
      emit('list'); emit('chat', conv.id);
      break;
    }
    case 'conversation.activity': {
      const conv = store.conversations.get(d.conversationId);
      if (!conv || d.lastSeq > conv.lastSeq + 1) { fetchConversation(d.conversationId); break; }
      if (d.lastMessage) applyMessageToList(d.lastMessage, true);
      emit('list');
      break;
    }
    case 'typing':
      if (d.userId !== store.me?.id) setTyping(d.conversationId, d.userId, d.isTyping);
      break;
    case 'typing.summary': setTypingSummary(d.conversationId, d.count); break;
    case 'receipt': {
      const conv = store.conversations.get(d.conversationId);
      if (!conv) break;
      conv.members = conv.members || [];
      const m = conv.members.find((x) => x.userId === d.userId);
      if (m) { m.readSeq = Math.max(m.readSeq, d.readSeq); m.deliveredSeq = Math.max(m.deliveredSeq, d.deliveredSeq); } else conv.members.push({ userId: d.userId, readSeq: d.readSeq, deliveredSeq: d.deliveredSeq });
      if (d.userId === store.me.id) conv.readSeq = Math.max(conv.readSeq || 0, d.readSeq);
      emit('chat', d.conversationId);
      break;
    }
    case 'receipt.summary': store.summaries.set(d.conversationId, d); emit('chat', d.conversationId); break;
    case 'user.updated':
      applyProfile(d.user);
      if (d.user.id === store.me?.id) saveSession(null, store.me);
      break;
    case 'presence': {
      const u = store.users.get(d.userId);
      if (u) { u.isOnline = d.isOnline; if (d.lastSeenAt) u.lastSeenAt = d.lastSeenAt; else if (d.isOnline) delete u.lastSeenAt; } else ensureUsers([d.userId]);
      emit('users');
      break;
    }
    default: break;
  }
}

// ---- receipts, batched ----
const deliveredQueue = new Map();
let deliveredTimer = null;
function scheduleDelivered(conversationId, seq) {
  deliveredQueue.set(conversationId, Math.max(seq, deliveredQueue.get(conversationId) || 0));
  if (deliveredTimer) return;
  deliveredTimer = setTimeout(() => {
    deliveredTimer = null;
    for (const [id, upToSeq] of deliveredQueue) {
      if (socket.isOpen) socket.request('delivered', { conversationId: id, upToSeq }).catch(() => {});
    }
    deliveredQueue.clear();
  }, 300);
}

const readQueue = new Map();
let readTimer = null;
export function markRead(conversationId, seq) {
  const conv = store.conversations.get(conversationId);
  if (!conv || !seq || seq <= (conv.readSeq || 0) && !conv.unreadCount) return;
  if (seq <= (readQueue.get(conversationId) || 0)) return;
  readQueue.set(conversationId, seq);
  if (readTimer) return;
  readTimer = setTimeout(async () => {
    readTimer = null;
    const batch = [...readQueue]; readQueue.clear();
    for (const [id, upToSeq] of batch) {
      try {
        const r = socket.isOpen
          ? await socket.request('read', { conversationId: id, upToSeq })
          : await api('POST', `/conversations/${id}/read`, { upToSeq });
        const c = store.conversations.get(id);
        if (c) { c.readSeq = Math.max(c.readSeq || 0, r.readSeq); c.unreadCount = r.unreadCount; }
        emit('list');
      } catch { /* offline: the next view of it reads again */ }
    }
  }, 400);
}

// ---- typing ----
let typingConv = null;
let typingSentAt = 0;
export function typingInput(conversationId) {
  if (!socket.isOpen) return;
  const now = Date.now();
  if (typingConv !== conversationId || now - typingSentAt > 2000) {
    typingConv = conversationId; typingSentAt = now;
    socket.request('typing', { conversationId, isTyping: true }).catch(() => {});
  }
}
export function typingStop() {
  if (!typingConv) return;
  const id = typingConv;
  typingConv = null; typingSentAt = 0;
  if (socket.isOpen) socket.request('typing', { conversationId: id, isTyping: false }).catch(() => {});
}

export { ApiError };

export { sendMessage, flushOutbox, resend, discard, uploadAndSend } from '/web/sending.js';
export * from '/web/actions.js';
