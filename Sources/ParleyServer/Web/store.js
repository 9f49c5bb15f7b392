// Client state: users, the conversation list, per-conversation message windows, the outbox
// (pending sends), typing and the connection state. Views subscribe to change notices.
import { t } from '/web/i18n.js';
export const store = {
  me: null,
  users: new Map(),            // id -> User (the organization)
  conversations: new Map(),    // id -> Conversation view
  listNextBefore: null,
  listHasMore: false,
  syncToken: null,
  caches: new Map(),           // conversationId -> {messages: Map key->Message, byId, syncSeq, hasMoreBefore, loaded}
  pending: new Map(),          // clientMessageId -> outbox item
  typing: new Map(),           // conversationId -> Map userId -> timer
  typingSummary: new Map(),    // conversationId -> {count, timer}
  summaries: new Map(),        // conversationId -> receipt.summary (large groups)
  openId: null,
  connection: 'connecting',
  storeId: null,               // which copy of the server's data this tab holds (hello.storeId)
  blocked: new Set(),          // ids of the people I block (GET /users/blocked)
};

const listeners = new Set();
export function subscribe(fn) { listeners.add(fn); return () => listeners.delete(fn); }
let queued = new Set();
let scheduled = false;
// what: 'list' | 'chat' | 'typing' | 'connection' | 'users'; coalesced per animation frame.
export function emit(what, conversationId = null) {
  queued.add(`${what}|${conversationId || ''}`);
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(flush);
  setTimeout(flush, 50); // rAF is throttled in background tabs
}
function flush() {
  if (!scheduled) return;
  scheduled = false;
  const batch = queued;
  queued = new Set();
  const notes = [...batch].map((s) => { const [what, id] = s.split('|'); return { what, conversationId: id || null }; });
  for (const fn of listeners) fn(notes);
}

// The server's data is another copy (restored from a backup): this tab may hold messages the
// copy does not have, at seqs it will give to other messages. Forget what came from the server;
// the outbox stays (the server knows each of its sends by client id).
export function forgetServerCopy() {
  store.conversations.clear(); store.caches.clear(); store.summaries.clear();
  store.listNextBefore = null; store.listHasMore = false; store.syncToken = null;
}

export function resetStore() {
  store.me = null;
  store.storeId = null;
  store.users.clear(); store.conversations.clear(); store.caches.clear(); store.pending.clear();
  store.typing.clear(); store.typingSummary.clear(); store.summaries.clear(); store.blocked.clear();
  store.listNextBefore = null; store.listHasMore = false; store.syncToken = null; store.openId = null;
}

export const msgKey = (m) => `${m.senderId}|${m.clientMessageId || m.id}`;

export function userName(id) {
  if (store.me && id === store.me.id) return store.me.displayName;
  return store.users.get(id)?.displayName || t('Unknown user');
}

// The address of a person's picture, or null (they show as initials).
export function userPicture(id) {
  if (store.me && id === store.me.id) return store.me.avatarUrl || null;
  return store.users.get(id)?.avatarUrl || null;
}

// A person's new name or picture (the server's answer, or a user.updated event): presence
// stays as the presence events left it.
export function applyProfile(user) {
  if (store.me && user.id === store.me.id) {
    store.me = { ...store.me, displayName: user.displayName, avatarUrl: user.avatarUrl };
  }
  const known = store.users.get(user.id);
  if (known) {
    known.displayName = user.displayName;
    if (user.avatarUrl) known.avatarUrl = user.avatarUrl; else delete known.avatarUrl;
  } else store.users.set(user.id, user);
  emit('users');
}

export function peerId(conv) {
  if (conv.type !== 'direct') return null;
  return (conv.participantIds || []).find((id) => id !== store.me?.id) || null;
}

export function conversationName(conv) {
  if (!conv) return '';
  if (conv.type === 'direct') return userName(peerId(conv));
  if (conv.name) return conv.name;
  const others = (conv.participantIds || []).filter((id) => id !== store.me?.id).map(userName);
  return others.length ? others.slice(0, 4).join(', ') : t('Group');
}

export function sortedConversations() {
  return [...store.conversations.values()].sort((a, b) =>
    (b.lastActivityAt || '').localeCompare(a.lastActivityAt || '') || a.id.localeCompare(b.id));
}

// A conversation view from the server: keep the one with the higher lastSeq.
export function applyConversation(view) {
  const old = store.conversations.get(view.id);
  if (old && old.lastSeq > view.lastSeq) return false;
  if (old && old.lastMessage && view.lastMessage && old.lastMessage.id === view.lastMessage.id &&
      old.lastMessage.updatedSeq > view.lastMessage.updatedSeq) view.lastMessage = old.lastMessage;
  if (old) {
    // Watermarks never move back, but a view read before a receipt can arrive after it.
    const before = new Map((old.members || []).map((m) => [m.userId, m]));
    for (const m of view.members || []) {
      const o = before.get(m.userId);
      if (o) { m.readSeq = Math.max(m.readSeq, o.readSeq); m.deliveredSeq = Math.max(m.deliveredSeq, o.deliveredSeq); }
    }
    if ((old.readSeq || 0) > (view.readSeq || 0)) {
      view.readSeq = old.readSeq;
      if (view.lastSeq === old.lastSeq) view.unreadCount = old.unreadCount;
    }
  }
  store.conversations.set(view.id, view);
  return true;
}

export function getCache(conversationId, create = true) {
  let c = store.caches.get(conversationId);
  if (!c && create) {
    c = { messages: new Map(), byId: new Map(), syncSeq: 0, hasMoreBefore: true, loaded: false, oldestSeq: null };
    store.caches.set(conversationId, c);
  }
  return c;
}

// Put a server message into its conversation's window (the newer updatedSeq wins).
export function upsertMessage(m) {
  const c = getCache(m.conversationId, false);
  if (!c) return false;
  // Outside the window, unless it is one the window kept (an open thread's root and replies).
  if (c.loaded && c.hasMoreBefore && c.oldestSeq !== null && m.seq < c.oldestSeq && !c.byId.has(m.id) && !(m.threadRootId && c.byId.has(m.threadRootId))) return false;
  const key = msgKey(m);
  const old = c.messages.get(key);
  if (old && old.updatedSeq > m.updatedSeq) return false;
  c.messages.set(key, m);
  c.byId.set(m.id, m);
  // A message the window kept from before its start (an open thread's root, edited or replied
  // to) does not move the start: paging back still asks for everything below it.
  const kept = c.loaded && c.hasMoreBefore && c.oldestSeq !== null && m.seq < c.oldestSeq;
  if (c.oldestSeq === null || (m.seq < c.oldestSeq && !kept)) c.oldestSeq = m.seq;
  return true;
}

// Long chats: the window a conversation keeps in memory. Once it holds more than `most`
// timeline messages and the person is at the newest (or has left the chat), everything older
// than the newest `keep` goes; scrolling up pages it back in from the server, as at first.
// Thread replies are numbered after their root, so no kept root loses its replies; the thread
// open beside the chat (`keepThread`, its root's id) stays whole however old its root.
export const WINDOW = { keep: 200, most: 300 };
export function trimWindow(conversationId, { keep = WINDOW.keep, most = WINDOW.most, keepThread = null } = {}) {
  const c = store.caches.get(conversationId);
  // Called on every scroll at the newest: nothing to count while the whole window is within bounds.
  if (!c || !c.loaded || c.loadingOlder || c.messages.size <= Math.max(most, keep)) return false;
  const seqs = [];
  for (const m of c.messages.values()) if (!m.threadRootId) seqs.push(m.seq);
  if (seqs.length <= Math.max(most, keep)) return false;
  seqs.sort((a, b) => b - a);
  const cutoff = seqs[keep - 1];
  const kept = (m) => keepThread && (m.id === keepThread || m.threadRootId === keepThread);
  for (const [key, m] of c.messages) if (m.seq < cutoff && !kept(m)) { c.messages.delete(key); c.byId.delete(m.id); }
  c.oldestSeq = cutoff;
  c.hasMoreBefore = true;
  return true;
}

export function findMessage(conversationId, id) {
  return store.caches.get(conversationId)?.byId.get(id) || null;
}

// Move the list row along with a message event. Returns true when the row was changed.
export function applyMessageToList(m, created) {
  const conv = store.conversations.get(m.conversationId);
  if (!conv) return false;
  if (m.threadRootId) {
    // A thread reply is no activity of the conversation's: the server sends its members their
    // new unread count in the conversation's view.
    const next = Math.max(m.seq || 0, m.updatedSeq || 0);
    if (next > conv.lastSeq) { conv.lastSeq = next; return true; }
    return false;
  }
  if (created && m.seq > conv.lastSeq) {
    conv.lastSeq = m.seq;
    conv.lastMessage = m;
    if (m.createdAt && m.createdAt > (conv.lastActivityAt || '')) conv.lastActivityAt = m.createdAt;
    if (!m.deletedAt && countsAsUnread(conv, m)) {
      conv.unreadCount = (conv.unreadCount || 0) + 1;
      // In a large group no view follows the message: the mention badge moves here too.
      if (mentionsMe(m)) conv.mentionCount = (conv.mentionCount || 0) + 1;
    }
    return true;
  }
  // A message counted as unread was deleted: it counts no more (the server's rule, mirrored).
  const before = store.caches.get(m.conversationId)?.byId.get(m.id);
  const uncounted = !created && !!m.deletedAt && !!before && !before.deletedAt && countsAsUnread(conv, m) && conv.unreadCount > 0;
  if (uncounted) {
    conv.unreadCount -= 1;
    if (mentionsMe(before) && conv.mentionCount > 0) conv.mentionCount -= 1;
  }
  if (conv.lastMessage && conv.lastMessage.id === m.id && m.updatedSeq >= (conv.lastMessage.updatedSeq || 0)) {
    conv.lastMessage = m;
    if ((m.updatedSeq || 0) > conv.lastSeq) conv.lastSeq = m.updatedSeq;
    return true;
  }
  if ((m.updatedSeq || 0) > conv.lastSeq) conv.lastSeq = m.updatedSeq;
  return uncounted;
}

function mentionsMe(m) {
  return !!store.me && Array.isArray(m.mentions) && m.mentions.includes(store.me.id);
}

// The contract's unread rule: another sender's message above my read watermark, not a system
// one, and not from someone I block (the server leaves those out of unreadCount too).
function countsAsUnread(conv, m) {
  return m.senderId !== store.me?.id && m.type !== 'system' && m.seq > (conv.readSeq || 0) && !fromBlocked(m);
}

// A message from someone I block: marked `senderBlocked` by the server in my views and
// events, or sent by someone I have blocked since it was loaded. Shown collapsed.
export function fromBlocked(m) {
  if (!m || !m.senderId || m.senderId === store.me?.id || m.type === 'system') return false;
  return !!m.senderBlocked || store.blocked.has(m.senderId);
}

// After an unblock, the copies this tab holds stop saying so (the server's next views agree).
export function forgetBlockMarks(userId) {
  for (const c of store.caches.values()) for (const m of c.messages.values()) if (m.senderId === userId) m.senderBlocked = false;
  for (const conv of store.conversations.values()) if (conv.lastMessage?.senderId === userId) conv.lastMessage.senderBlocked = false;
}

// Status of one's own message from the other members' watermarks.
export function messageStatus(conv, m) {
  if (m.senderId !== store.me?.id) return null;
  const p = store.pending.get(m.clientMessageId);
  if (!m.seq) return p && p.failed ? 'failed' : 'sending';
  if (!conv) return 'sent';
  const others = (conv.members || []).filter((x) => x.userId !== store.me.id);
  if (others.length) {
    if (others.every((x) => x.readSeq >= m.seq)) return 'read';
    if (others.every((x) => x.deliveredSeq >= m.seq)) return 'delivered';
    return 'sent';
  }
  const s = store.summaries.get(conv.id);
  const n = (conv.memberCount || 1) - 1;
  if (s && s.seq >= m.seq && n > 0) {
    if (s.readCount >= n) return 'read';
    if (s.deliveredCount >= n) return 'delivered';
  }
  return 'sent';
}

// The server messages of the window plus the pending sends not yet matched, in order.
// The timeline (thread replies left out), or with {thread: rootId} that thread's replies.
export function orderedMessages(conversationId, { thread = null } = {}) {
  const c = store.caches.get(conversationId);
  // The timeline starts at the window's oldest message: an open thread's root kept from
  // before it (trimWindow's keepThread) is the thread panel's, not a stray line above a gap.
  const inWindow = (m) => thread || !c.hasMoreBefore || c.oldestSeq === null || m.seq >= c.oldestSeq;
  const inScope = (m) => (thread ? m.threadRootId === thread : !m.threadRootId) && inWindow(m);
  const list = c ? [...c.messages.values()].filter(inScope) : [];
  list.sort((a, b) => a.seq - b.seq);
  const meId = store.me?.id;
  for (const item of store.pending.values()) {
    if (item.conversationId !== conversationId || !inScope(item)) continue;
    if (c && c.messages.has(`${meId}|${item.clientMessageId}`)) continue;
    list.push(pendingAsMessage(item));
  }
  return list;
}

export function pendingAsMessage(item) {
  return {
    id: null, conversationId: item.conversationId, seq: 0, updatedSeq: 0, senderId: item.userId,
    clientMessageId: item.clientMessageId, type: item.type || 'text', text: item.text || '',
    replyToId: item.replyToId, attachment: item.attachment, file: item.file, forwardOf: item.forwardOf,
    threadRootId: item.threadRootId, mentions: item.mentions,
    reactions: {}, createdAt: item.createdAt, pending: true,
  };
}

export function lastPending(conversationId) {
  let last = null;
  for (const item of store.pending.values()) if (item.conversationId === conversationId) last = item;
  return last;
}

export function typingText(conversationId) {
  const names = [...(store.typing.get(conversationId)?.keys() || [])].map(userName);
  const summary = store.typingSummary.get(conversationId);
  if (summary && summary.count > 3) return t('{n} people are typing…', { n: summary.count });
  if (names.length === 0) return '';
  if (names.length === 1) return t('{name} is typing…', { name: names[0] });
  if (names.length <= 3) return t('{names} and {last} are typing…', { names: names.slice(0, -1).join(', '), last: names[names.length - 1] });
  return t('{n} people are typing…', { n: names.length });
}

export function setTyping(conversationId, userId, isTyping) {
  let m = store.typing.get(conversationId);
  if (!m) { m = new Map(); store.typing.set(conversationId, m); }
  clearTimeout(m.get(userId));
  if (isTyping) m.set(userId, setTimeout(() => setTyping(conversationId, userId, false), 6000));
  else m.delete(userId);
  emit('typing', conversationId);
}

export function setTypingSummary(conversationId, count) {
  const old = store.typingSummary.get(conversationId);
  if (old) clearTimeout(old.timer);
  if (count > 0) {
    store.typingSummary.set(conversationId, { count, timer: setTimeout(() => setTypingSummary(conversationId, 0), 6000) });
  } else store.typingSummary.delete(conversationId);
  emit('typing', conversationId);
}
