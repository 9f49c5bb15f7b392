// What the tab knew, kept in IndexedDB per user: the conversation list, the people, and the
// latest messages of each chat it loaded. A reload opens from it at once (the SDK's
// cache-first open), offline too, and then catches up from where it was: the list with the
// saved sync token, each chat with /changes since its saved seq. Signing out deletes it.
//
// One record a thing, keyed "USER|kind|id" so a user's records are one key range: the list's
// paging and sync state (meta), each conversation (v), each person (u), each loaded chat's
// messages (c). Only what changed since it was last written is written again.
import { tx } from '/web/db.js';
import { store, subscribe, getCache, applyConversation, upsertMessage } from '/web/store.js';

const KEEP = 100;          // messages kept per chat: the latest, by seq
const SAVE_AFTER = 400;    // ms: changes within this are written together

const metaKey = (userId) => `${userId}|meta`;
const viewKey = (userId, id) => `${userId}|v|${id}`;
const userKey = (userId, id) => `${userId}|u|${id}`;
const chatKey = (userId, id) => `${userId}|c|${id}`;
const range = (userId) => IDBKeyRange.bound(`${userId}|`, `${userId}|\uffff`);

// What each record held when it was last read or written, as JSON: a thing whose JSON is the
// same is not written again.
let written = new Map();
// Records written since the page loaded (the tests read it through parleyDebug).
export const stats = { puts: 0 };

// Fills the store from what was saved for this user; resolves with whether anything was.
export async function restore(userId) {
  let records;
  try {
    records = (await tx('cache', 'readonly', (s) => s.getAll(range(userId)))) || [];
  } catch (e) {
    console.warn('cache unreadable', e);
    return false;
  }
  const meta = records.find((r) => r.key === metaKey(userId));
  if (!meta || store.me?.id !== userId) return false;
  written = new Map();
  for (const r of records) if (r.kind === 'v' || r.kind === 'u') written.set(r.key, JSON.stringify(r.value));
  for (const r of records) if (r.kind === 'u' && !store.users.has(r.value.id)) store.users.set(r.value.id, r.value);
  for (const r of records) if (r.kind === 'v') applyConversation(r.value);
  store.listHasMore = !!meta.listHasMore;
  store.listNextBefore = meta.listNextBefore || null;
  store.syncToken = meta.syncToken || null;
  store.storeId = meta.storeId || null;
  for (const r of records) {
    if (r.kind !== 'c' || !store.conversations.has(r.conversationId)) continue;
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

// The list's records that changed: the meta record, conversations and people whose JSON is
// not what was written, and the deletion of those the store no longer has.
function listChanges(userId) {
  const puts = [{
    key: metaKey(userId), userId, kind: 'meta',
    listHasMore: store.listHasMore, listNextBefore: store.listNextBefore, syncToken: store.syncToken, storeId: store.storeId,
  }];
  const present = new Set();
  const things = [
    ...[...store.conversations.values()].map((c) => ['v', viewKey(userId, c.id), c]),
    ...[...store.users.values()].map((u) => ['u', userKey(userId, u.id), u]),
  ];
  for (const [kind, key, value] of things) {
    present.add(key);
    const json = JSON.stringify(value);
    if (written.get(key) === json) continue;
    written.set(key, json);
    puts.push({ key, userId, kind, value, conversationId: kind === 'v' ? value.id : undefined });
  }
  const deletes = [];
  for (const key of written.keys()) {
    if (!present.has(key)) { written.delete(key); deletes.push(key); }
  }
  // A conversation gone from the list (left, removed) takes its messages with it.
  for (const key of deletes) if (key.includes('|v|')) deletes.push(key.replace('|v|', '|c|'));
  return { puts, deletes };
}

async function save() {
  timer = null;
  const userId = store.me?.id;
  if (!userId) { dirtyList = false; dirtyChats.clear(); return; }
  const { puts, deletes } = dirtyList ? listChanges(userId) : { puts: [], deletes: [] };
  for (const id of dirtyChats) {
    const c = store.caches.get(id);
    if (!c || !c.loaded || !store.conversations.has(id)) continue;
    const all = [...c.messages.values()].sort((a, b) => a.seq - b.seq);
    const messages = all.slice(-KEEP);
    puts.push({
      key: chatKey(userId, id), userId, kind: 'c', conversationId: id, messages,
      hasMoreBefore: c.hasMoreBefore || all.length > messages.length, syncSeq: c.syncSeq,
    });
  }
  dirtyList = false; dirtyChats.clear();
  if (!puts.length && !deletes.length) return;
  try {
    await tx('cache', 'readwrite', (s) => {
      let last = null;
      for (const r of puts) { last = s.put(r); stats.puts += 1; }
      for (const k of deletes) last = s.delete(k);
      return last;
    });
  } catch (e) {
    console.warn('cache not saved', e);
    written = new Map();  // unsure what landed: the next save writes everything
  }
  // Signed out while it was written: take it back.
  if (store.me?.id !== userId) await clearUser(userId);
}

// Deletes the user's saved chats (a server restored from a backup: they may hold messages it
// does not), or everything saved for the user (signing out).
export async function clearUser(userId, { chatsOnly = false } = {}) {
  dirtyChats.clear();
  if (!chatsOnly) { dirtyList = false; written = new Map(); }
  try {
    const keys = ((await tx('cache', 'readonly', (s) => s.getAllKeys(range(userId)))) || [])
      .filter((k) => !chatsOnly || k.startsWith(`${userId}|c|`));
    if (keys.length) await tx('cache', 'readwrite', (s) => { let last = null; for (const k of keys) last = s.delete(k); return last; });
  } catch (e) { console.warn('cache not cleared', e); }
}
