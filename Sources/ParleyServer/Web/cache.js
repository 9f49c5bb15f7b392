// What the tab knew, kept in IndexedDB per user: the conversation list, the people, and the
// latest messages of each chat it loaded. A reload opens from it at once (the SDK's
// cache-first open), offline too, and then catches up from where it was: the list with the
// saved sync token, each chat with /changes since its saved seq. Signing out deletes it.
import { tx } from '/web/db.js';
import { store, subscribe, getCache, applyConversation, upsertMessage } from '/web/store.js';

const KEEP = 100;          // messages kept per chat: the latest, by seq
const SAVE_AFTER = 400;    // ms: changes within this are written together

const listKey = (userId) => `${userId}|list`;
const chatKey = (userId, id) => `${userId}|c|${id}`;

// Fills the store from what was saved for this user; resolves with whether anything was.
export async function restore(userId) {
  let records;
  try {
    records = ((await tx('cache', 'readonly', (s) => s.getAll())) || []).filter((r) => r.userId === userId);
  } catch (e) {
    console.warn('cache unreadable', e);
    return false;
  }
  const list = records.find((r) => r.key === listKey(userId));
  if (!list || store.me?.id !== userId) return false;
  for (const u of list.users || []) if (!store.users.has(u.id)) store.users.set(u.id, u);
  for (const c of list.conversations || []) applyConversation(c);
  store.listHasMore = !!list.listHasMore;
  store.listNextBefore = list.listNextBefore || null;
  store.syncToken = list.syncToken || null;
  store.storeId = list.storeId || null;
  for (const r of records) {
    if (r.key === listKey(userId) || !store.conversations.has(r.conversationId)) continue;
    const c = getCache(r.conversationId);
    if (c.loaded) continue;
    for (const m of r.messages) upsertMessage(m);
    c.oldestSeq = r.messages.length ? r.messages[0].seq : null;
    c.hasMoreBefore = !!r.hasMoreBefore;
    c.syncSeq = r.syncSeq || 0;
    c.loaded = true;
  }
  return true;
}

// Saves what changes, a little after it changed.
let dirtyList = false;
const dirtyChats = new Set();
let timer = null;
subscribe((notes) => {
  if (!store.me) return;
  for (const n of notes) {
    if (n.what === 'list' || n.what === 'users') dirtyList = true;
    if (n.what === 'chat' && n.conversationId) dirtyChats.add(n.conversationId);
  }
  if ((dirtyList || dirtyChats.size) && !timer) timer = setTimeout(save, SAVE_AFTER);
});

async function save() {
  timer = null;
  const userId = store.me?.id;
  if (!userId) { dirtyList = false; dirtyChats.clear(); return; }
  const records = [];
  if (dirtyList) {
    records.push({
      key: listKey(userId), userId,
      conversations: [...store.conversations.values()],
      users: [...store.users.values()],
      listHasMore: store.listHasMore, listNextBefore: store.listNextBefore,
      syncToken: store.syncToken, storeId: store.storeId,
    });
  }
  for (const id of dirtyChats) {
    const c = store.caches.get(id);
    if (!c || !c.loaded || !store.conversations.has(id)) continue;
    const all = [...c.messages.values()].sort((a, b) => a.seq - b.seq);
    const messages = all.slice(-KEEP);
    records.push({
      key: chatKey(userId, id), userId, conversationId: id, messages,
      hasMoreBefore: c.hasMoreBefore || all.length > messages.length, syncSeq: c.syncSeq,
    });
  }
  dirtyList = false; dirtyChats.clear();
  if (!records.length) return;
  try {
    await tx('cache', 'readwrite', (s) => { let last = null; for (const r of records) last = s.put(r); return last; });
  } catch (e) { console.warn('cache not saved', e); }
  // Signed out while it was written: take it back.
  if (store.me?.id !== userId) await clearUser(userId);
}

// Deletes the user's saved chats (a server restored from a backup: they may hold messages it
// does not), or everything saved for the user (signing out).
export async function clearUser(userId, { chatsOnly = false } = {}) {
  dirtyChats.clear();
  if (!chatsOnly) dirtyList = false;
  const keep = chatsOnly ? listKey(userId) : null;
  try {
    const keys = ((await tx('cache', 'readonly', (s) => s.getAllKeys())) || [])
      .filter((k) => k.startsWith(`${userId}|`) && k !== keep);
    if (keys.length) await tx('cache', 'readwrite', (s) => { let last = null; for (const k of keys) last = s.delete(k); return last; });
  } catch (e) { console.warn('cache not cleared', e); }
}
