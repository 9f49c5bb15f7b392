// Offline outbox in IndexedDB: messages not yet acknowledged by the server, in send order.
// Each keeps its clientMessageId, so sending it again is safe (the server dedupes).
import { tx as dbTx } from '/web/db.js';

const tx = (mode, fn) => dbTx('outbox', mode, fn);

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
