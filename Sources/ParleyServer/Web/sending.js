// Sending through the outbox: every message is first kept in IndexedDB, then sent in order
// over the socket (or REST while the socket is down) with its clientMessageId, so a retry after
// a lost answer never sends it twice. Files are uploaded first, from the outbox too.
import { api, uploadAttachment } from '/web/api.js';
import * as outbox from '/web/outbox.js';
import { store, emit } from '/web/store.js';
import { socket, hook, handleMessage } from '/web/client.js';

export async function sendMessage(fields) {
  hook('onSending');
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
          hook('onError', e);
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
          hook('onError', e);
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
