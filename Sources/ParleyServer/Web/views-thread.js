// The thread panel: a root message, its replies (from the cache, then the server's
// newest page), and a composer whose replies go through the outbox like any message.
import { tn } from '/web/i18n.js';
import { h, $, setChildren } from '/web/dom.js';
import { store, orderedMessages, messageStatus, findMessage } from '/web/store.js';
import * as client from '/web/client.js';
import { messageElement, onReactInputKey } from '/web/views-message.js';
import { attachMentionCompletion, mentionsIn } from '/web/mentions.js';

let open = null; // {conversationId, rootId}
let opts = { showError() {} };

export function initThread(options) {
  opts = options;
  $('#thread-close').addEventListener('click', closeThread);
  const composer = $('#thread-composer');
  attachMentionCompletion(composer, $('#thread-mentions'), () => store.conversations.get(open?.conversationId));
  composer.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  $('#thread-send').addEventListener('click', send);
  $('#thread-messages').addEventListener('click', (e) => options.onMessageClick(e, open?.conversationId));
  $('#thread-messages').addEventListener('keydown', onReactInputKey);
}

export async function openThread(conversationId, rootId) {
  open = { conversationId, rootId };
  $('#thread-panel').hidden = false;
  document.body.classList.add('thread-open');
  renderThread();
  $('#thread-composer').focus();
  try {
    await client.loadThread(conversationId, rootId);
  } catch (e) { opts.showError(e); }
  renderThread();
}

export function closeThread() {
  open = null;
  $('#thread-panel').hidden = true;
  document.body.classList.remove('thread-open');
}

export function threadOpenFor() { return open; }

export function renderThread() {
  if (!open) return;
  if (store.openId !== open.conversationId) { closeThread(); return; }
  const conv = store.conversations.get(open.conversationId);
  const root = findMessage(open.conversationId, open.rootId);
  const replies = orderedMessages(open.conversationId, { thread: open.rootId });
  const nodes = [];
  if (root) nodes.push(h('div', { class: 'thread-root' }, messageElement(root, conv, messageStatus(conv, root), false, null, { inThread: true, showError: opts.showError })));
  nodes.push(h('div', { class: 'thread-count' }, tn(replies.length, '{n} reply', '{n} replies')));
  let prev = null;
  for (const m of replies) {
    const grouped = !!prev && prev.senderId === m.senderId && (new Date(m.createdAt) - new Date(prev.createdAt)) < 5 * 60000;
    nodes.push(messageElement(m, conv, messageStatus(conv, m), grouped, null, { inThread: true, showError: opts.showError }));
    prev = m;
  }
  setChildren($('#thread-messages'), nodes);
  const box = $('#thread-messages');
  box.scrollTop = box.scrollHeight;
  // Replies on screen are read (the conversation's watermark: a reply's seq covers what is below it).
  const newest = Math.max(0, ...replies.map((m) => m.seq || 0));
  if (newest && document.visibilityState === 'visible') client.markRead(open.conversationId, newest);
}

async function send() {
  if (!open) return;
  const composer = $('#thread-composer');
  const text = composer.value.trim();
  if (!text) return;
  const conv = store.conversations.get(open.conversationId);
  const mentions = mentionsIn(text, conv);
  composer.value = '';
  await client.sendMessage({
    conversationId: open.conversationId, text, threadRootId: open.rootId, ...(mentions.length ? { mentions } : {}),
  });
}

