// One message as the chat and the thread panel show it: sender, quote, attachment, text, link
// preview, time and ticks, reactions, the thread line and the actions. Every text a person
// typed (and every preview text) is a text node: h() never parses HTML.
import { t, tn } from '/web/i18n.js';
import { h, formatTime, formatSize, formatListTime } from '/web/dom.js';
import { store, userName, userPicture, fromBlocked } from '/web/store.js';
import { avatar } from '/web/avatar.js';
import { attachmentBlobUrl } from '/web/api.js';
import { openViewer } from '/web/views-viewer.js';
import { systemText } from '/web/views-list.js';

const EMOJI = ['👍', '❤️', '😂', '😮', '😢', '🎉'];
const TICKS = { sending: '', sent: '✓', delivered: '✓✓', read: '✓✓', failed: '!' };
const STATUS_LABEL = { sending: 'Sending', sent: 'Sent', delivered: 'Delivered', read: 'Read', failed: 'Not sent' };

// "1 reply · 10:42", "3 replies · Yesterday" (the SDK's ChatPresentation.threadLine).
export function threadLine(thread) {
  const count = tn(thread.replyCount, '{n} reply', '{n} replies');
  return `${count} · ${formatListTime(thread.lastReplyAt)}`;
}

// A link preview card: site, title (the link), description. Only http(s) links; the page's
// image is not loaded (the page's CSP keeps other sites' images out: nobody's address leaks to
// a site someone linked).
function previewCard(preview) {
  if (!preview || !/^https?:\/\//i.test(preview.url || '') || !(preview.title || preview.description)) return null;
  let host = '';
  try { host = new URL(preview.url).host; } catch { return null; }
  return h('div', { class: 'preview-card' },
    h('div', { class: 'preview-site' }, preview.siteName || host),
    h('a', { class: 'preview-title', href: preview.url, target: '_blank', rel: 'noopener noreferrer nofollow' }, preview.title || host),
    preview.description ? h('div', { class: 'preview-description' }, preview.description) : null);
}

// Messages from a blocked person the user chose to see (by id, for the page's life).
const revealed = new Set();
export function toggleRevealed(id) { if (revealed.has(id)) revealed.delete(id); else revealed.add(id); }

// The tombstone's words: a delete by someone else than the sender is a moderator's.
export function deletedText(m) {
  return m.deletedBy && m.deletedBy !== m.senderId ? t('Removed by an admin') : t('This message was deleted');
}

// What a message's element shows: it is rebuilt only when this changes.
export function messageSignature(m, conv, status, grouped, reply) {
  return JSON.stringify([m.id, m.updatedSeq, m.text, m.editedAt, m.deletedAt, m.deletedBy, m.reactions, status, grouped,
    conv?.type, reply && [reply.text, reply.deletedAt], m.attachment?.id, userName(m.senderId), userPicture(m.senderId), m.thread, m.pinnedAt, m.preview,
    fromBlocked(m), revealed.has(m.id)]);
}

// One message. opts: {inThread} (a reply shown in the thread panel: no thread or quote
// actions), {onImageLoad}, {showError}.
export function messageElement(m, conv, status, grouped, reply, opts = {}) {
  const own = m.senderId === store.me?.id;
  const data = { messageId: m.id || '', seq: m.seq || '', clientMessageId: m.clientMessageId || '', own: own ? 'true' : 'false' };
  if (status) data.status = status;
  if (m.type === 'system') {
    return h('div', { class: 'msg system', dataset: data }, h('span', { class: 'text' }, systemText(m)));
  }
  const deleted = !!m.deletedAt;
  const blocked = fromBlocked(m);
  if (blocked && !revealed.has(m.id)) {
    // Collapsed: nothing of it shows until asked (and then only as text, like any message).
    return h('div', { class: `msg blocked-msg${grouped ? ' grouped' : ''}`, dataset: { ...data, blocked: 'true' } },
      h('div', { class: 'msg-row' },
        h('div', { class: 'bubble blocked-bubble' },
          h('span', { class: 'blocked-note' }, t('Message from a blocked user')),
          h('button', { type: 'button', class: 'link blocked-toggle', 'aria-label': t('Show the message from a blocked user') }, t('Show')))));
  }
  const body = [];
  if (blocked) {
    body.push(h('div', { class: 'blocked-head' }, h('span', { class: 'blocked-note' }, t('From a blocked user')),
      h('button', { type: 'button', class: 'link blocked-toggle', 'aria-label': t('Hide the message from a blocked user') }, t('Hide'))));
  }
  if (!grouped && !own && conv?.type === 'group') {
    body.push(h('div', { class: 'sender-line' }, avatar(userName(m.senderId), userPicture(m.senderId), { small: true }),
      h('div', { class: 'sender' }, userName(m.senderId))));
  }
  if (m.forwardedFromId || m.forwardOf) body.push(h('div', { class: 'forwarded' }, '↪ Forwarded'));
  if (m.replyToId && !deleted) {
    body.push(h('div', { class: 'reply-quote' },
      h('div', { class: 'reply-sender' }, reply ? userName(reply.senderId) : t('Reply')),
      h('div', { class: 'reply-text' }, reply ? (reply.deletedAt ? t('Message deleted') : reply.text || (reply.attachment ? reply.attachment.name : '')) : t('Original message'))));
  }
  if (m.attachment && !deleted) body.push(attachmentElement(m.attachment, m.file, opts));
  if (deleted) body.push(h('div', { class: `text deleted${m.deletedBy && m.deletedBy !== m.senderId ? ' by-admin' : ''}` }, deletedText(m)));
  else if (m.text || !m.attachment) body.push(h('div', { class: 'text', dir: 'auto' }, m.pending && m.forwardOf ? t('Forwarding…') : m.text));
  if (m.preview && !deleted) { const card = previewCard(m.preview); if (card) body.push(card); }
  body.push(h('div', { class: 'meta' },
    m.pinnedAt && !deleted ? h('span', { class: 'pinned', title: t('Pinned by {name}', { name: userName(m.pinnedBy) }), 'aria-label': t('Pinned') }, '📌') : null,
    m.editedAt && !deleted ? h('span', { class: 'edited' }, t('edited')) : null,
    h('time', { datetime: m.createdAt || '' }, formatTime(m.createdAt)),
    status ? h('span', { class: `status ${status}`, title: t(STATUS_LABEL[status]), 'aria-label': t(STATUS_LABEL[status]) }, TICKS[status]) : null));
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
    actions.push(h('button', { type: 'button', class: 'action-resend', 'aria-label': t('Resend') }, t('Resend')));
    actions.push(h('button', { type: 'button', class: 'action-discard', 'aria-label': t('Discard') }, t('Discard')));
  } else if (!m.pending && !deleted) {
    if (!opts.inThread) {
      actions.push(h('button', { type: 'button', class: 'action-reply', 'aria-label': t('Reply'), title: t('Reply') }, '↩'));
      if (m.seq && !m.threadRootId) actions.push(h('button', { type: 'button', class: 'action-thread', 'aria-label': t('Reply in thread'), title: t('Reply in thread') }, '💬'));
    }
    actions.push(h('button', { type: 'button', class: 'action-pin', 'aria-label': m.pinnedAt ? t('Unpin') : t('Pin'), title: m.pinnedAt ? t('Unpin') : t('Pin') }, m.pinnedAt ? '⊘' : '📌'));
    actions.push(h('button', { type: 'button', class: 'action-react', 'aria-label': t('React'), title: t('React') }, h('span', { class: 'icon i-smile' })));
    actions.push(h('button', { type: 'button', class: 'action-forward', 'aria-label': t('Forward'), title: t('Forward') }, '↪'));
    if (!own && m.id && m.type !== 'system') {
      actions.push(h('button', { type: 'button', class: 'action-report', 'aria-label': t('Report this message'), title: t('Report') }, '⚑'));
    }
    if (own && m.type !== 'system') {
      if (!opts.inThread) actions.push(h('button', { type: 'button', class: 'action-edit', 'aria-label': t('Edit'), title: t('Edit') }, '✎'));
      actions.push(h('button', { type: 'button', class: 'action-delete', 'aria-label': t('Delete'), title: t('Delete') }, h('span', { class: 'icon i-trash' })));
    }
  }
  const picker = h('div', { class: 'react-picker', hidden: true, role: 'group', 'aria-label': t('Pick a reaction') },
    EMOJI.map((e) => h('button', { type: 'button', class: 'react-choice', dataset: { emoji: e }, 'aria-label': t('React with {emoji}', { emoji: e }) }, e)),
    // Any other emoji: typed or picked from the system's emoji keyboard, then Enter or +.
    h('input', { class: 'react-other-input', 'aria-label': t('Another emoji'), placeholder: '🙂…', maxlength: '16', autocomplete: 'off', enterkeyhint: 'send' }),
    h('button', { type: 'button', class: 'react-other-go', 'aria-label': t('React with the emoji typed'), title: t('React with the emoji typed') }, '+'));
  const mentionsMe = !own && (m.mentions || []).includes(store.me?.id);
  const thread = m.thread && !opts.inThread
    ? h('button', { type: 'button', class: 'thread-link', 'aria-label': t('Open thread, {line}', { line: threadLine(m.thread) }) }, `💬 ${threadLine(m.thread)}`)
    : null;
  return h('div', { class: `msg${own ? ' own' : ''}${grouped ? ' grouped' : ''}${deleted ? ' is-deleted' : ''}${mentionsMe ? ' mentions-me' : ''}${blocked ? ' blocked-shown' : ''}`, dataset: blocked ? { ...data, blocked: 'true' } : data },
    h('div', { class: 'msg-row' },
      h('div', { class: 'bubble', tabindex: '0' }, body),
      actions.length ? h('div', { class: 'actions', role: 'toolbar', 'aria-label': t('Message actions') }, actions) : null),
    reactions,
    thread,
    picker);
}

// localFile: the Blob of a message still in the outbox (not uploaded yet), shown from memory.
function attachmentElement(att, localFile, opts) {
  if ((att.contentType || '').startsWith('image/')) {
    const img = h('img', { class: 'attachment-image', alt: att.name || 'image', loading: 'lazy' });
    if (att.width && att.height) { img.width = att.width; img.height = att.height; img.style.aspectRatio = `${att.width} / ${att.height}`; }
    img.addEventListener('load', () => opts.onImageLoad?.());
    if (localFile) img.src = localBlobUrl(localFile);
    else attachmentBlobUrl(att.url).then((u) => { img.src = u; }).catch(() => { img.alt = `${att.name} (could not load)`; });
    // A click (or Enter) shows it full screen; the bubble's own click (its actions) is not it.
    const open = h('button', { type: 'button', class: 'attachment-open', 'aria-label': t('Open {name} full screen', { name: att.name || t('image') }) }, img);
    open.addEventListener('click', (e) => { e.stopPropagation(); if (img.src) openViewer(img.src, att.name, open); });
    return h('div', { class: 'attachment' }, open);
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
    } catch (err) { opts.showError?.(err); }
  });
  return a;
}

// One object URL per queued Blob for the page's life.
const localUrls = new WeakMap();
function localBlobUrl(blob) {
  if (!localUrls.has(blob)) localUrls.set(blob, URL.createObjectURL(blob));
  return localUrls.get(blob);
}

// Enter in a picker's emoji field reacts with what it holds (its + button does the same).
export function onReactInputKey(e) {
  if (e.key !== 'Enter' || !e.target.classList?.contains('react-other-input')) return;
  e.preventDefault();
  e.target.closest('.react-picker')?.querySelector('.react-other-go')?.click();
}

// A message redrawn (its reactions, its sender's name or picture changed) keeps what the person
// was doing with it: an open reaction picker, the emoji typed into it, the focus.
export function carryState(from, to) {
  const picker = from.querySelector('.react-picker');
  if (!picker || picker.hidden) return;
  const next = to.querySelector('.react-picker');
  if (!next) return;
  next.hidden = false;
  const input = picker.querySelector('.react-other-input');
  const nextInput = next.querySelector('.react-other-input');
  if (input && nextInput) {
    nextInput.value = input.value;
    if (document.activeElement === input) queueMicrotask(() => nextInput.focus({ preventScroll: true }));
  }
}
