// The chat pane: header, message list (grouped, day separators, ticks, reactions, actions),
// paging back, read tracking, typing line and the composer.
import { t, tn } from '/web/i18n.js';
import { h, $, formatTime, formatDay, dayKey } from '/web/dom.js';
import {
  store, orderedMessages, messageStatus, conversationName, peerId, userName, findMessage, msgKey, typingText, getCache, emit, fromBlocked, trimWindow,
} from '/web/store.js';
import { messageElement, messageSignature, toggleRevealed, onReactInputKey, carryState } from '/web/views-message.js';
import { openReport, openPerson } from '/web/views-safety.js';
import { openThread, initThread, renderThread, threadOpenFor } from '/web/views-thread.js';
import { attachMentionCompletion, mentionsIn } from '/web/mentions.js';
import * as client from '/web/client.js';
import { openForward } from '/web/views-list.js';

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
  box.addEventListener('click', (e) => onMessageClick(e, store.openId));
  box.addEventListener('keydown', onReactInputKey);
  $('#jump-latest').addEventListener('click', scrollToLatest);
  $('#mute-toggle').addEventListener('click', () => {
    const conv = store.conversations.get(store.openId);
    if (conv) client.setMuted(conv.id, !conv.muted).catch(showError);
  });
  $('#pinned-bar').addEventListener('click', showNewestPin);
  $('#person-open').addEventListener('click', (e) => {
    const conv = store.conversations.get(store.openId);
    const peer = conv && peerId(conv);
    if (peer) openPerson(peer, e.currentTarget);
  });
  initThread({ showError, onMessageClick });
  initComposer();
}

// The pinned bar: the newest pin among the messages this window has ("📌 Ada: the rules",
// "(3 pinned)" beside it); a click scrolls to it.
function pinnedMessages(id) {
  return orderedMessages(id).filter((m) => m.pinnedAt && !m.deletedAt).sort((a, b) => b.pinnedAt.localeCompare(a.pinnedAt));
}
function renderPinnedBar(id) {
  const bar = $('#pinned-bar');
  const pins = id ? pinnedMessages(id) : [];
  bar.hidden = !pins.length;
  if (!pins.length) return;
  const newest = pins[0];
  const who = newest.senderId === store.me?.id ? t('You') : userName(newest.senderId);
  const text = (newest.text || newest.attachment?.name || '').split('\n')[0].slice(0, 80);
  bar.replaceChildren(...[h('span', { class: 'pin-mark', 'aria-hidden': 'true' }, '📌'), h('span', { class: 'pin-text' }, t('{name}: {text}', { name: who, text })),
    pins.length > 1 ? h('span', { class: 'pin-count' }, t('{n} pinned', { n: pins.length })) : null].filter(Boolean));
  bar.dataset.messageId = newest.id;
  bar.setAttribute('aria-label', t('Pinned: {who}: {text}', { who, text }) + (pins.length > 1 ? t(', {n} pinned', { n: pins.length }) : ''));
}
function showNewestPin() {
  const el = document.querySelector(`#messages [data-message-id="${$('#pinned-bar').dataset.messageId}"]`);
  if (el) { el.scrollIntoView({ block: 'center' }); el.classList.add('flash'); setTimeout(() => el.classList.remove('flash'), 2000); }
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
  // At the newest messages of a long chat: the pages read above go (the window stays bounded).
  const thread = threadOpenFor();
  const keepThread = thread && thread.conversationId === store.openId ? thread.rootId : null;
  if (stick && store.openId && trimWindow(store.openId, { keepThread })) { renderChat(); return; }
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
    $('#person-open').hidden = true;
    $('#mute-toggle').hidden = true;
    $('#pinned-bar').hidden = true;
    renderThread();
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
  const peer = conv?.type === 'direct' ? peerId(conv) : null;
  const person = $('#person-open');
  person.hidden = !peer;
  if (peer) {
    person.textContent = t(store.blocked.has(peer) ? 'Blocked' : 'Block or report');
    person.setAttribute('aria-label', t(store.blocked.has(peer) ? 'Blocked: unblock {name}' : 'Block or report {name}', { name: userName(peer) }));
  }
  const mute = $('#mute-toggle');
  mute.hidden = !conv;
  mute.textContent = conv?.muted ? '🔕' : '🔔';
  mute.setAttribute('aria-pressed', conv?.muted ? 'true' : 'false');
  mute.setAttribute('aria-label', t(conv?.muted ? 'Unmute: notify me again' : 'Mute: no notifications except mentions'));
  mute.title = mute.getAttribute('aria-label');
  renderTyping();
  renderMessages(id, conv);
  renderPinnedBar(id);
  renderThread();
}

function subtitle(conv) {
  if (!conv) return '';
  if (conv.type === 'direct') {
    const u = store.users.get(peerId(conv));
    if (store.connection === 'offline' || store.connection === 'connecting') return '';
    if (!u) return '';
    if (u.isOnline) return t('online');
    return u.lastSeenAt ? t('last seen {day} at {time}', { day: formatDay(u.lastSeenAt).toLowerCase(), time: formatTime(u.lastSeenAt) }) : t('offline');
  }
  return tn(conv.memberCount || (conv.participantIds || []).length, '{n} member', '{n} members');
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
  if (c && c.loaded && !c.hasMoreBefore && list.length) nodes.push(h('div', { class: 'history-start' }, t('This is the beginning of the conversation.')));
  if (c && c.loaded && c.hasMoreBefore) nodes.push(h('div', { class: 'history-start' }, t('Scroll up for older messages')));
  for (const m of list) {
    const day = dayKey(m.createdAt);
    if (!prev || dayKey(prev.createdAt) !== day) nodes.push(h('div', { class: 'day-separator', role: 'separator' }, h('span', null, formatDay(m.createdAt))));
    if (unreadAfter !== null && !dividerPlaced && m.seq > unreadAfter && m.senderId !== store.me?.id && m.type !== 'system' && !fromBlocked(m)) {
      dividerPlaced = true;
      nodes.push(h('div', { class: 'unread-divider', id: 'unread-divider', role: 'separator' }, h('span', null, t('New messages'))));
    }
    const grouped = !!prev && prev.senderId === m.senderId && prev.type !== 'system' && m.type !== 'system' &&
      dayKey(prev.createdAt) === day && (new Date(m.createdAt) - new Date(prev.createdAt)) < 5 * 60000;
    const status = messageStatus(conv, m);
    const reply = m.replyToId ? findMessage(id, m.replyToId) : null;
    const key = msgKey(m);
    const sig = messageSignature(m, conv, status, grouped, reply);
    let entry = elements.get(key);
    if (!entry || entry.sig !== sig) {
      const old = entry?.el;
      if (entry) { observer.unobserve(entry.el); visible.delete(entry.el); }
      entry = { el: messageElement(m, conv, status, grouped, reply, { onImageLoad: () => { if (stick) scrollToLatest(); }, showError }), sig };
      if (old) carryState(old, entry.el);
      if (m.seq) observer.observe(entry.el);
    }
    next.set(key, entry);
    nodes.push(entry.el);
    prev = m;
  }
  for (const [key, entry] of elements) if (!next.has(key)) { observer.unobserve(entry.el); visible.delete(entry.el); }
  elements = next;
  // Moving the nodes back in takes the focus from whatever had it among them (a reaction
  // picker's field, a bubble): it is given back.
  const focused = box.contains(document.activeElement) ? document.activeElement : null;
  box.replaceChildren(...nodes);
  if (focused && focused.isConnected && document.activeElement !== focused) focused.focus({ preventScroll: true });
  $('#empty-chat').hidden = true;
  if (box.dataset.stick === '1') { box.dataset.stick = ''; unreadScrollPending = false; scrollToLatest(); } else if (unreadScrollPending && dividerPlaced) scrollToUnread(); else if (atBottom) scrollToLatest();
}

// Clicks on a message's buttons, in the chat and in the thread panel.
async function onMessageClick(e, convId) {
  const el = e.target.closest('.msg');
  if (!el || !convId) return;
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
  if (cls.contains('blocked-toggle')) { if (el.dataset.messageId) toggleRevealed(el.dataset.messageId); emit('chat', convId); return; }
  if (cls.contains('action-resend')) return client.resend(el.dataset.clientMessageId);
  if (cls.contains('action-discard')) return client.discard(el.dataset.clientMessageId);
  if (!m) return;
  if (cls.contains('action-thread') || cls.contains('thread-link')) { el.classList.remove('show-actions'); await openThread(convId, m.id); }
  else if (cls.contains('action-pin')) { el.classList.remove('show-actions'); await client.setPinned(convId, m.id, !m.pinnedAt); }
  else if (cls.contains('action-reply')) setContext({ kind: 'reply', message: m });
  else if (cls.contains('action-edit')) setContext({ kind: 'edit', message: m });
  else if (cls.contains('action-delete')) { el.classList.remove('show-actions'); await client.deleteMessage(convId, m.id); }
  else if (cls.contains('action-forward')) openForward(m.id);
  else if (cls.contains('action-report')) { el.classList.remove('show-actions'); openReport({ message: m }, btn); }
  else if (cls.contains('action-react')) { const p = el.querySelector('.react-picker'); p.hidden = !p.hidden; if (!p.hidden) p.querySelector('button').focus(); }
  else if (cls.contains('react-other-go')) {
    const input = el.querySelector('.react-other-input');
    const emoji = (input.value || '').trim();
    if (!emoji) { input.focus(); return; }
    el.querySelector('.react-picker').hidden = true;
    input.value = '';
    if (!(m.reactions?.[emoji] || []).includes(store.me.id)) await client.addReaction(convId, m.id, emoji);
  }
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
    $('#context-label').textContent = ctx.kind === 'edit' ? t('Editing message') : t('Replying to {name}', { name: userName(ctx.message.senderId) });
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
  const mentions = mentionsIn(text, store.conversations.get(id));
  resetComposer();
  $('#messages').dataset.stick = '1';
  await client.sendMessage({ conversationId: id, text, ...(replyToId ? { replyToId } : {}), ...(mentions.length ? { mentions } : {}) });
}

function initComposer() {
  const composer = $('#composer');
  attachMentionCompletion(composer, $('#composer-mentions'), () => store.conversations.get(store.openId));
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
