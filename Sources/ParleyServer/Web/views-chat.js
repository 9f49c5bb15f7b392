// The chat pane: header, message list (grouped, day separators, ticks, reactions, actions),
// paging back, read tracking, typing line and the composer.
import { h, $, formatTime, formatDay, dayKey, formatSize } from '/web/dom.js';
import {
  store, orderedMessages, messageStatus, conversationName, peerId, userName, findMessage, msgKey, typingText, getCache,
} from '/web/store.js';
import { attachmentBlobUrl } from '/web/api.js';
import * as client from '/web/client.js';
import { systemText, openForward } from '/web/views-list.js';

const EMOJI = ['👍', '❤️', '😂', '😮', '😢', '🎉'];
const TICKS = { sending: '', sent: '✓', delivered: '✓✓', read: '✓✓', failed: '!' };
const STATUS_LABEL = { sending: 'Sending', sent: 'Sent', delivered: 'Delivered', read: 'Read', failed: 'Not sent' };
let showError = () => {};
let elements = new Map(); // key -> {el, sig}
let renderedFor = null;
let context = null; // {kind: 'reply'|'edit', message}
const visible = new Set();
let observer = null;

export function initChat(opts) {
  showError = opts.showError;
  const box = $('#messages');
  observer = new IntersectionObserver((entries) => {
    for (const e of entries) { if (e.isIntersecting) visible.add(e.target); else visible.delete(e.target); }
    updateRead();
  }, { root: box, threshold: 0.5 });
  document.addEventListener('visibilitychange', updateRead);
  window.addEventListener('focus', updateRead);
  box.addEventListener('scroll', onScroll);
  box.addEventListener('click', onMessagesClick);
  $('#jump-latest').addEventListener('click', scrollToLatest);
  initComposer();
}

function updateRead() {
  if (!store.openId || document.visibilityState !== 'visible') return;
  let max = 0;
  for (const el of visible) if (el.isConnected && el.dataset.seq) max = Math.max(max, Number(el.dataset.seq));
  if (max) client.markRead(store.openId, max);
}

let stick = true;
function scrollToLatest() { const box = $('#messages'); box.scrollTop = box.scrollHeight; stick = true; $('#jump-latest').hidden = true; }
export { scrollToLatest };

// "New messages": a chat opened with unread messages shows a line above the first of them and
// opens there, not at the bottom. The line stays where it was for as long as the chat is open
// (reading below it does not move it), as in Slack or Element.
let unreadAfter = null; // my read watermark when the chat was opened, if it had unread messages
let unreadScrollPending = false;
function scrollToUnread() {
  const line = document.getElementById('unread-divider');
  if (!line) return false;
  const box = $('#messages');
  box.scrollTop = Math.max(0, line.offsetTop - box.offsetTop - 8);
  stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  $('#jump-latest').hidden = stick;
  unreadScrollPending = false;
  return true;
}
// Where a chat opens: its first unread message, else the newest.
export function showOpenedChat() { if (!(unreadAfter !== null && scrollToUnread())) scrollToLatest(); }

async function onScroll() {
  const box = $('#messages');
  stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  $('#jump-latest').hidden = stick;
  if (box.scrollTop > 80 || !store.openId) return;
  const id = store.openId;
  const before = box.scrollHeight - box.scrollTop;
  const c = getCache(id, false);
  if (!c || !c.hasMoreBefore || c.loadingOlder) return;
  try {
    await client.loadOlder(id);
    renderChat();
    if (store.openId === id) box.scrollTop = box.scrollHeight - before;
  } catch (e) { showError(e); }
}

export function renderChat() {
  const id = store.openId;
  const chat = $('#chat');
  document.body.classList.toggle('chat-open', !!id);
  if (!id) {
    delete chat.dataset.conversationId;
    $('#group-open').hidden = true;
    $('#chat-title').textContent = ''; $('#chat-subtitle').textContent = '';
    $('#messages').replaceChildren(); elements.clear(); renderedFor = null; visible.clear();
    $('#typing').textContent = '';
    return;
  }
  const conv = store.conversations.get(id);
  chat.dataset.conversationId = id;
  $('#chat-title').textContent = conversationName(conv);
  $('#chat-subtitle').textContent = subtitle(conv);
  $('#group-open').hidden = conv?.type !== 'group';
  renderTyping();
  renderMessages(id, conv);
}

function subtitle(conv) {
  if (!conv) return '';
  if (conv.type === 'direct') {
    const u = store.users.get(peerId(conv));
    if (store.connection === 'offline' || store.connection === 'connecting') return '';
    if (!u) return '';
    if (u.isOnline) return 'online';
    return u.lastSeenAt ? `last seen ${formatDay(u.lastSeenAt).toLowerCase()} at ${formatTime(u.lastSeenAt)}` : 'offline';
  }
  return `${conv.memberCount || (conv.participantIds || []).length} members`;
}

export function renderTyping() {
  $('#typing').textContent = store.openId ? typingText(store.openId) : '';
}

function renderMessages(id, conv) {
  const box = $('#messages');
  if (renderedFor !== id) {
    elements = new Map(); renderedFor = id; visible.clear(); box.replaceChildren(); stick = true;
    unreadAfter = conv && conv.unreadCount > 0 ? (conv.readSeq || 0) : null;
    unreadScrollPending = unreadAfter !== null;
  }
  const atBottom = stick || box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const list = orderedMessages(id);
  const nodes = [];
  const next = new Map();
  let prev = null;
  let dividerPlaced = false;
  const c = getCache(id, false);
  if (c && c.loaded && !c.hasMoreBefore && list.length) nodes.push(h('div', { class: 'history-start' }, 'This is the beginning of the conversation.'));
  if (c && c.loaded && c.hasMoreBefore) nodes.push(h('div', { class: 'history-start' }, 'Scroll up for older messages'));
  for (const m of list) {
    const day = dayKey(m.createdAt);
    if (!prev || dayKey(prev.createdAt) !== day) nodes.push(h('div', { class: 'day-separator', role: 'separator' }, h('span', null, formatDay(m.createdAt))));
    if (unreadAfter !== null && !dividerPlaced && m.seq > unreadAfter && m.senderId !== store.me?.id && m.type !== 'system') {
      dividerPlaced = true;
      nodes.push(h('div', { class: 'unread-divider', id: 'unread-divider', role: 'separator' }, h('span', null, 'New messages')));
    }
    const grouped = !!prev && prev.senderId === m.senderId && prev.type !== 'system' && m.type !== 'system' &&
      dayKey(prev.createdAt) === day && (new Date(m.createdAt) - new Date(prev.createdAt)) < 5 * 60000;
    const status = messageStatus(conv, m);
    const reply = m.replyToId ? findMessage(id, m.replyToId) : null;
    const key = msgKey(m);
    const sig = JSON.stringify([m.id, m.updatedSeq, m.text, m.editedAt, m.deletedAt, m.reactions, status, grouped,
      conv?.type, reply && [reply.text, reply.deletedAt], m.attachment?.id, userName(m.senderId)]);
    let entry = elements.get(key);
    if (!entry || entry.sig !== sig) {
      if (entry) { observer.unobserve(entry.el); visible.delete(entry.el); }
      entry = { el: messageElement(m, conv, status, grouped, reply), sig };
      if (m.seq) observer.observe(entry.el);
    }
    next.set(key, entry);
    nodes.push(entry.el);
    prev = m;
  }
  for (const [key, entry] of elements) if (!next.has(key)) { observer.unobserve(entry.el); visible.delete(entry.el); }
  elements = next;
  box.replaceChildren(...nodes);
  $('#empty-chat').hidden = true;
  if (box.dataset.stick === '1') { box.dataset.stick = ''; unreadScrollPending = false; scrollToLatest(); } else if (unreadScrollPending && dividerPlaced) scrollToUnread(); else if (atBottom) scrollToLatest();
}

function messageElement(m, conv, status, grouped, reply) {
  const own = m.senderId === store.me?.id;
  const data = { messageId: m.id || '', seq: m.seq || '', clientMessageId: m.clientMessageId || '', own: own ? 'true' : 'false' };
  if (status) data.status = status;
  if (m.type === 'system') {
    return h('div', { class: 'msg system', dataset: data }, h('span', { class: 'text' }, systemText(m)));
  }
  const deleted = !!m.deletedAt;
  const body = [];
  if (!grouped && !own && conv?.type === 'group') body.push(h('div', { class: 'sender' }, userName(m.senderId)));
  if (m.forwardedFromId || m.forwardOf) body.push(h('div', { class: 'forwarded' }, '↪ Forwarded'));
  if (m.replyToId && !deleted) {
    body.push(h('div', { class: 'reply-quote' },
      h('div', { class: 'reply-sender' }, reply ? userName(reply.senderId) : 'Reply'),
      h('div', { class: 'reply-text' }, reply ? (reply.deletedAt ? 'Message deleted' : reply.text || (reply.attachment ? reply.attachment.name : '')) : 'Original message')));
  }
  if (m.attachment && !deleted) body.push(attachmentElement(m.attachment, m.file));
  if (deleted) body.push(h('div', { class: 'text deleted' }, 'This message was deleted'));
  else if (m.text || !m.attachment) body.push(h('div', { class: 'text', dir: 'auto' }, m.pending && m.forwardOf ? 'Forwarding…' : m.text));
  body.push(h('div', { class: 'meta' },
    m.editedAt && !deleted ? h('span', { class: 'edited' }, 'edited') : null,
    h('time', { datetime: m.createdAt || '' }, formatTime(m.createdAt)),
    status ? h('span', { class: `status ${status}`, title: STATUS_LABEL[status], 'aria-label': STATUS_LABEL[status] }, TICKS[status]) : null));
  const reactions = h('div', { class: 'reactions' });
  for (const [emoji, users] of Object.entries(m.reactions || {})) {
    if (!users.length) continue;
    const mine = users.includes(store.me?.id);
    reactions.appendChild(h('button', {
      type: 'button', class: `reaction${mine ? ' mine' : ''}`, dataset: { emoji },
      title: users.map(userName).join(', '), 'aria-label': `${emoji} ${users.length}${mine ? ', remove your reaction' : ', react'}`,
    }, `${emoji} ${users.length}`));
  }
  const actions = [];
  if (m.pending && status === 'failed') {
    actions.push(h('button', { type: 'button', class: 'action-resend', 'aria-label': 'Resend' }, 'Resend'));
    actions.push(h('button', { type: 'button', class: 'action-discard', 'aria-label': 'Discard' }, 'Discard'));
  } else if (!m.pending && !deleted) {
    actions.push(h('button', { type: 'button', class: 'action-reply', 'aria-label': 'Reply', title: 'Reply' }, '↩'));
    actions.push(h('button', { type: 'button', class: 'action-react', 'aria-label': 'React', title: 'React' }, h('span', { class: 'icon i-smile' })));
    actions.push(h('button', { type: 'button', class: 'action-forward', 'aria-label': 'Forward', title: 'Forward' }, '↪'));
    if (own && m.type !== 'system') {
      actions.push(h('button', { type: 'button', class: 'action-edit', 'aria-label': 'Edit', title: 'Edit' }, '✎'));
      actions.push(h('button', { type: 'button', class: 'action-delete', 'aria-label': 'Delete', title: 'Delete' }, h('span', { class: 'icon i-trash' })));
    }
  }
  const picker = h('div', { class: 'react-picker', hidden: true, role: 'group', 'aria-label': 'Pick a reaction' },
    EMOJI.map((e) => h('button', { type: 'button', class: 'react-choice', dataset: { emoji: e }, 'aria-label': `React with ${e}` }, e)));
  return h('div', { class: `msg${own ? ' own' : ''}${grouped ? ' grouped' : ''}${deleted ? ' is-deleted' : ''}`, dataset: data },
    h('div', { class: 'msg-row' },
      h('div', { class: 'bubble', tabindex: '0' }, body),
      actions.length ? h('div', { class: 'actions', role: 'toolbar', 'aria-label': 'Message actions' }, actions) : null),
    reactions,
    picker);
}

// localFile: the Blob of a message still in the outbox (not uploaded yet), shown from memory.
function attachmentElement(att, localFile) {
  if ((att.contentType || '').startsWith('image/')) {
    const img = h('img', { class: 'attachment-image', alt: att.name || 'image', loading: 'lazy' });
    if (att.width && att.height) { img.width = att.width; img.height = att.height; img.style.aspectRatio = `${att.width} / ${att.height}`; }
    img.addEventListener('load', () => { if (stick) scrollToLatest(); });
    if (localFile) img.src = localBlobUrl(localFile);
    else attachmentBlobUrl(att.url).then((u) => { img.src = u; }).catch(() => { img.alt = `${att.name} (could not load)`; });
    return h('div', { class: 'attachment' }, img);
  }
  if (localFile) {
    return h('span', { class: 'attachment-file pending-file' },
      h('span', { class: 'file-icon icon i-file', 'aria-hidden': 'true' }),
      h('span', { class: 'file-name' }, att.name || 'file'),
      h('span', { class: 'file-size' }, formatSize(att.size)));
  }
  const a = h('a', { class: 'attachment-file', href: att.url, download: att.name || 'file' },
    h('span', { class: 'file-icon icon i-file', 'aria-hidden': 'true' }),
    h('span', { class: 'file-name' }, att.name || 'file'),
    h('span', { class: 'file-size' }, formatSize(att.size)));
  a.addEventListener('click', async (e) => {
    e.preventDefault();
    try {
      const u = await attachmentBlobUrl(att.url);
      const tmp = h('a', { href: u, download: att.name || 'file' });
      document.body.appendChild(tmp); tmp.click(); tmp.remove();
    } catch (err) { showError(err); }
  });
  return a;
}

// One object URL per queued Blob for the page's life.
const localUrls = new WeakMap();
function localBlobUrl(blob) {
  if (!localUrls.has(blob)) localUrls.set(blob, URL.createObjectURL(blob));
  return localUrls.get(blob);
}

async function onMessagesClick(e) {
  const el = e.target.closest('.msg');
  if (!el) return;
  const convId = store.openId;
  const m = el.dataset.messageId ? findMessage(convId, el.dataset.messageId) : null;
  const btn = e.target.closest('button');
  if (!btn) {
    if (e.target.closest('.bubble')) {
      for (const other of document.querySelectorAll('.msg.show-actions')) if (other !== el) other.classList.remove('show-actions');
      el.classList.toggle('show-actions');
    }
    return;
  }
  const cls = btn.classList;
  if (cls.contains('action-resend')) return client.resend(el.dataset.clientMessageId);
  if (cls.contains('action-discard')) return client.discard(el.dataset.clientMessageId);
  if (!m) return;
  if (cls.contains('action-reply')) setContext({ kind: 'reply', message: m });
  else if (cls.contains('action-edit')) setContext({ kind: 'edit', message: m });
  else if (cls.contains('action-delete')) { el.classList.remove('show-actions'); await client.deleteMessage(convId, m.id); }
  else if (cls.contains('action-forward')) openForward(m.id);
  else if (cls.contains('action-react')) { const p = el.querySelector('.react-picker'); p.hidden = !p.hidden; if (!p.hidden) p.querySelector('button').focus(); }
  else if (cls.contains('react-choice') || cls.contains('reaction')) {
    const emoji = btn.dataset.emoji;
    const mine = (m.reactions?.[emoji] || []).includes(store.me.id);
    el.querySelector('.react-picker').hidden = true;
    if (mine) await client.removeReaction(convId, m.id, emoji); else await client.addReaction(convId, m.id, emoji);
  }
}

// ---- composer ----
function setContext(ctx) {
  context = ctx;
  const box = $('#composer-context');
  const composer = $('#composer');
  box.hidden = !ctx;
  if (ctx) {
    $('#context-label').textContent = ctx.kind === 'edit' ? 'Editing message' : `Replying to ${userName(ctx.message.senderId)}`;
    $('#context-text').textContent = ctx.message.text || (ctx.message.attachment ? ctx.message.attachment.name : '');
    if (ctx.kind === 'edit') composer.value = ctx.message.text;
    composer.focus();
  } else composer.value = composer.dataset.draftBeforeEdit || composer.value;
  autoresize();
}

export function resetComposer() {
  context = null;
  $('#composer-context').hidden = true;
  $('#composer').value = '';
  autoresize();
}

function autoresize() {
  const c = $('#composer');
  c.style.height = 'auto';
  c.style.height = `${Math.min(c.scrollHeight, 160)}px`;
}

async function submit() {
  const composer = $('#composer');
  const id = store.openId;
  if (!id) return;
  const text = composer.value.trim();
  client.typingStop();
  if (context?.kind === 'edit') {
    const m = context.message;
    resetComposer();
    if (text && text !== m.text) await client.editMessage(id, m.id, text);
    return;
  }
  if (!text) return;
  const replyToId = context?.kind === 'reply' ? context.message.id : undefined;
  resetComposer();
  $('#messages').dataset.stick = '1';
  await client.sendMessage({ conversationId: id, text, ...(replyToId ? { replyToId } : {}) });
}

function initComposer() {
  const composer = $('#composer');
  composer.addEventListener('input', () => {
    autoresize();
    if (store.openId && composer.value.trim() && context?.kind !== 'edit') client.typingInput(store.openId);
  });
  composer.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); } else if (e.key === 'Escape' && context) { e.preventDefault(); resetComposer(); } else if (e.key === 'ArrowUp' && !composer.value && store.openId) {
      const mine = orderedMessages(store.openId).filter((m) => m.senderId === store.me.id && m.id && !m.deletedAt && m.type !== 'system');
      if (mine.length) { e.preventDefault(); setContext({ kind: 'edit', message: mine[mine.length - 1] }); }
    }
  });
  composer.addEventListener('blur', () => client.typingStop());
  $('#send').addEventListener('click', submit);
  $('#context-cancel').addEventListener('click', resetComposer);
  const input = $('#attach-input');
  input.addEventListener('change', async () => {
    const files = [...input.files];
    input.value = '';
    const id = store.openId;
    if (!id) return;
    const progress = $('#upload-progress');
    for (const file of files) {
      progress.value = 0; progress.hidden = false;
      try {
        const caption = composer.value.trim();
        $('#messages').dataset.stick = '1';
        await client.uploadAndSend(id, file, caption, (f) => { progress.value = f; });
        if (caption) resetComposer();
      } catch (e) { showError(e); } finally { progress.hidden = true; }
    }
  });
}
