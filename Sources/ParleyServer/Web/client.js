// The controller: loads and syncs state over REST, handles socket events, the outbox,
// receipts, typing and every user action. Views call these functions; they never fetch.
import { api, qs, uploadAttachment, ApiError, saveSession, renewalDue, renewSession, onTokenRenewed } from '/web/api.js';
import { Socket } from '/web/socket.js';
import * as outbox from '/web/outbox.js';
import {
  store, emit, applyConversation, applyMessageToList, getCache, upsertMessage, setTyping,
  setTypingSummary, forgetServerCopy, fromBlocked, forgetBlockMarks,
} from '/web/store.js';

let hooks = { onAuthFailed() {}, onError() {}, onIncoming() {}, onOpened() {}, onSending() {} };
export function init(h) { hooks = { ...hooks, ...h }; }

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
  if (restored) forgetServerCopy();
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
function ensureUsers(ids) {
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

function handleMessage(m, created, fromReply = false) {
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

// ---- sending through the outbox ----
export async function sendMessage(fields) {
  hooks.onSending();
  const item = {
    clientMessageId: crypto.randomUUID(), userId: store.me.id, createdAt: new Date().toISOString(),
    type: 'text', text: '', ...fields,
  };
  await outbox.putItem(item);
  store.pending.set(item.clientMessageId, item);
  emit('chat', item.conversationId); emit('list');
  flushOutbox();
  return item;
}

let flushing = false;
let flushAgain = false;
let retryTimer = null;
let restFailures = 0;

// Later, after a wait that doubles up to 30 s: the server asked for time, or it cannot be
// reached over REST either (the socket's reconnect flushes too, at once).
function retryLater(seconds) {
  clearTimeout(retryTimer);
  retryTimer = setTimeout(flushOutbox, seconds * 1000);
}

// Sends the outbox in order: over the socket when it is open, else over REST (a proxy that
// drops WebSockets, a socket still reconnecting): the server answers the stored message either
// way, and the clientMessageId makes a retry safe.
export async function flushOutbox() {
  if (flushing) { flushAgain = true; return; }
  flushing = true;
  try {
    do {
      flushAgain = false;
      for (;;) {
        const item = [...store.pending.values()].filter((i) => !i.failed).sort((a, b) => a.order - b.order)[0];
        if (!item) break;
        try {
          await uploadQueued(item);
        } catch (e) {
          if (e.retryable) { if (!socket.isOpen) retryLater(Math.min(30, 2 ** restFailures++)); break; }
          item.failed = true; item.error = e.message;
          await outbox.putItem(item);
          hooks.onError(e);
          emit('chat', item.conversationId);
          continue;
        }
        const data = { clientMessageId: item.clientMessageId };
        if (item.forwardOf) data.forwardOf = item.forwardOf;
        else { data.type = item.type; data.text = item.text; if (item.attachmentId) data.attachmentId = item.attachmentId; }
        if (item.replyToId) data.replyToId = item.replyToId;
        if (item.threadRootId) data.threadRootId = item.threadRootId;
        if (item.mentions?.length) data.mentions = item.mentions;
        try {
          const m = socket.isOpen
            ? await socket.request('message.send', { conversationId: item.conversationId, ...data })
            : await api('POST', `/conversations/${item.conversationId}/messages`, data);
          restFailures = 0;
          handleMessage(m, true, true);
        } catch (e) {
          if (e.code === 'unavailable' || e.code === 'rate_limited') {
            retryLater(e.retryAfter || 5);
            break;
          }
          if (e.retryable) {
            // No answer: it may or may not be stored; the same clientMessageId goes again.
            if (!socket.isOpen) retryLater(Math.min(30, 2 ** restFailures++));
            break;
          }
          item.failed = true; item.error = e.message;
          await outbox.putItem(item);
          hooks.onError(e);
          emit('chat', item.conversationId);
        }
      }
    } while (flushAgain);
  } finally { flushing = false; }
}

export async function resend(clientMessageId) {
  const item = store.pending.get(clientMessageId);
  if (!item) return;
  item.failed = false; delete item.error;
  await outbox.putItem(item);
  emit('chat', item.conversationId);
  flushOutbox();
}

export async function discard(clientMessageId) {
  const item = store.pending.get(clientMessageId);
  store.pending.delete(clientMessageId);
  await outbox.removeItem(clientMessageId);
  if (item) emit('chat', item.conversationId);
}

// Upload progress callbacks by clientMessageId (functions do not go into IndexedDB).
const uploadProgress = new Map();

// A file goes into the outbox with the message (IndexedDB keeps Blobs): chosen offline, or cut
// off half way, it is uploaded and sent when the connection returns, in order with the rest.
// Resolves once it is sent, or once it waits for the connection.
export async function uploadAndSend(conversationId, file, caption, onProgress) {
  const family = (file.type || '').split('/')[0];
  const type = ['image', 'video', 'audio'].includes(family) ? family : 'file';
  const clientMessageId = crypto.randomUUID();
  if (onProgress) uploadProgress.set(clientMessageId, onProgress);
  const item = await sendMessage({
    clientMessageId, conversationId, type, text: caption || '', file,
    attachment: { name: file.name || 'file', contentType: file.type || 'application/octet-stream', size: file.size, local: true },
  });
  await flushOutbox();
  return item;
}

// Uploads a queued message's file once; the item then names the stored attachment.
async function uploadQueued(item) {
  if (!item.file || item.attachmentId) return;
  const att = await uploadAttachment(item.file, uploadProgress.get(item.clientMessageId) || (() => {}));
  uploadProgress.delete(item.clientMessageId);
  item.attachmentId = att.id;
  item.attachment = att;
  delete item.file;
  await outbox.putItem(item);
  emit('chat', item.conversationId);
}

// ---- edits, deletes, reactions (REST; the events bring them to other devices) ----
async function mutate(method, path, body) {
  try {
    const m = await api(method, path, body);
    if (m && m.id) { upsertMessage(m); applyMessageToList(m, false); emit('chat', m.conversationId); emit('list'); }
    return m;
  } catch (e) { hooks.onError(e); return null; }
}
const mpath = (c, id) => `/conversations/${c}/messages/${id}`;
export const editMessage = (c, id, text) => mutate('PATCH', mpath(c, id), { text });
export const deleteMessage = (c, id) => mutate('DELETE', mpath(c, id));
export const addReaction = (c, id, emoji) => mutate('POST', `${mpath(c, id)}/reactions`, { emoji });
export const removeReaction = (c, id, emoji) => mutate('DELETE', `${mpath(c, id)}/reactions/${encodeURIComponent(emoji)}`);
export const forwardMessage = (toConversationId, messageId) => sendMessage({ conversationId: toConversationId, forwardOf: messageId, type: 'text' });

// ---- threads, pins, mute (v1.3) ----
// A thread's root and newest replies into the cache (live replies arrive as any message does).
export async function loadThread(conversationId, rootId) {
  const res = await api('GET', `/conversations/${conversationId}/threads/${rootId}${qs({ limit: 200 })}`);
  upsertMessage(res.root);
  for (const m of res.messages) upsertMessage(m);
  ensureUsers(res.messages.map((m) => m.senderId));
  emit('chat', conversationId);
}
export const setPinned = (c, id, pinned) => (pinned
  ? mutate('POST', `/conversations/${c}/pins`, { messageId: id })
  : mutate('DELETE', `/conversations/${c}/pins/${id}`));
// Mute is the user's own, on every device: the server sends the others the new view.
export async function setMuted(conversationId, muted) {
  await api('PUT', `/conversations/${conversationId}/settings`, { muted });
  const conv = store.conversations.get(conversationId);
  if (conv) { conv.muted = muted; if (!muted) delete conv.mutedUntil; }
  emit('list'); emit('chat', conversationId);
}

// ---- groups: rename, members, leave (any participant of a group; the server writes a system
// message for each, and `conversation.updated` brings the change to every device) ----
async function changeGroup(method, path, body) {
  const conv = await api(method, path, body);
  if (conv && conv.participantIds && conv.participantIds.includes(store.me.id)) applyConversation(conv);
  emit('list'); emit('chat', conv?.id);
  return conv;
}
export const renameGroup = (id, name) => changeGroup('PATCH', `/conversations/${id}`, { name });
export const addToGroup = (id, userIds) => changeGroup('POST', `/conversations/${id}/participants`, { userIds });
export const removeFromGroup = (id, userId) => changeGroup('DELETE', `/conversations/${id}/participants/${userId}`);
export async function leaveGroup(id) {
  await api('DELETE', `/conversations/${id}/participants/${store.me.id}`);
  store.conversations.delete(id);
  if (store.openId === id) closeConversation();
  emit('list');
}

export const search = (q) => api('GET', `/search${qs({ q, limit: 30 })}`);

// ---- trust and safety (v1.4): blocks are the user's own; reports go to the admins ----
export async function loadBlocked() {
  const res = await api('GET', '/users/blocked');
  store.blocked = new Set((res.users || []).map((u) => u.id));
  for (const u of res.users || []) if (!store.users.has(u.id)) store.users.set(u.id, u);
  emit('users');
}
export async function setBlocked(userId, blocked) {
  await api(blocked ? 'POST' : 'DELETE', `/users/${userId}/block`);
  if (blocked) store.blocked.add(userId);
  else { store.blocked.delete(userId); forgetBlockMarks(userId); }
  emit('users'); emit('list'); emit('chat');
}
// {messageId?, userId?, reason} → {id, status}
export const report = (body) => api('POST', '/reports', body);

export { ApiError };
