// Offline outbox in IndexedDB: messages not yet acknowledged by the server, in send order.
// Each keeps its clientMessageId, so sending it again is safe (the server dedupes).
const DB_NAME = 'parley';
const STORE = 'outbox';
let dbPromise = null;

function openDb() {
  if (!dbPromise) {
    dbPromise = new Promise((resolve, reject) => {
      const req = indexedDB.open(DB_NAME, 1);
      req.onupgradeneeded = () => {
        const db = req.result;
        if (!db.objectStoreNames.contains(STORE)) db.createObjectStore(STORE, { keyPath: 'clientMessageId' });
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  }
  return dbPromise;
}

async function tx(mode, fn) {
  const db = await openDb();
  return new Promise((resolve, reject) => {
    const t = db.transaction(STORE, mode);
    const store = t.objectStore(STORE);
    let result;
    const req = fn(store);
    if (req) req.onsuccess = () => { result = req.result; };
    t.oncomplete = () => resolve(result);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error);
  });
}

let counter = 0;
// item: {clientMessageId, userId, conversationId, type, text, replyToId?, attachmentId?,
//        attachment?, forwardOf?, createdAt, order, failed?, error?}
export function putItem(item) {
  if (item.order === undefined) item.order = Date.now() * 1000 + (counter++ % 1000);
  return tx('readwrite', (s) => s.put(item));
}
export function removeItem(clientMessageId) { return tx('readwrite', (s) => s.delete(clientMessageId)); }
export async function allItems(userId) {
  const items = (await tx('readonly', (s) => s.getAll())) || [];
  return items.filter((i) => !userId || i.userId === userId).sort((a, b) => a.order - b.order);
}
export async function clearUser(userId) {
  for (const item of await allItems(userId)) await removeItem(item.clientMessageId);
}
export async function size(userId) { return (await allItems(userId)).length; }
