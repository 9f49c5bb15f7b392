// The sidebar: conversation list, message search, the new-chat and forward panels.
import { t } from '/web/i18n.js';
import { h, $, setChildren, clear, formatListTime, debounce } from '/web/dom.js';
import { store, sortedConversations, conversationName, peerId, typingText, userName, userPicture, lastPending, fromBlocked } from '/web/store.js';
import { avatar } from '/web/avatar.js';
import * as client from '/web/client.js';
import { isAdmin, openInvites, renderInviteAccess } from '/web/views-invites.js';
import { renderAdminAccess } from '/web/views-admin.js';

let openChat = () => {};
let showError = () => {};
export function initList(opts) {
  openChat = opts.openChat;
  showError = opts.showError;
  const list = $('#conversation-list');
  list.addEventListener('scroll', () => {
    if (list.scrollTop + list.clientHeight > list.scrollHeight - 100) client.loadMoreConversations().catch(showError);
  });
  initSearch();
  initNewChat();
  $('#forward-close').addEventListener('click', () => { $('#forward-panel').hidden = true; });
}

function previewText(conv) {
  const typing = typingText(conv.id);
  if (typing) return { text: typing, cls: 'typing' };
  const p = lastPending(conv.id);
  const m = conv.lastMessage;
  if (p && (!m || p.createdAt >= m.createdAt)) return { text: t('Sending: {text}', { text: p.text || (p.attachment ? p.attachment.name : t('forwarded message')) }), cls: 'pending' };
  if (!m) return { text: t('No messages yet'), cls: 'muted' };
  if (m.deletedAt) return { text: t(m.deletedBy && m.deletedBy !== m.senderId ? 'Removed by an admin' : 'Message deleted'), cls: 'muted' };
  if (fromBlocked(m)) return { text: t('Message from a blocked user'), cls: 'muted' };
  let text = m.text;
  if (m.type === 'system') text = systemText(m);
  else if (!text && m.attachment) text = m.type === 'image' ? t('Photo') : t('File: {name}', { name: m.attachment.name });
  text = text || '';
  if (m.type !== 'system' && m.senderId === store.me?.id) text = t('You: {text}', { text });
  else if (m.type !== 'system' && conv.type === 'group') text = t('{name}: {text}', { name: userName(m.senderId), text });
  return { text, cls: '' };
}

// The same sentences as the SDK's ChatPresentation.systemLine: who did what, by name.
export function systemText(m) {
  const me = store.me?.id;
  // "You …" and "Ada …" are two sentences: in French the verb agrees ("Vous avez", "Ada a").
  const own = m.senderId === me;
  const line = (english, values = {}) => t(own ? english.replace('{who}', 'You') : english, { who: userName(m.senderId), ...values });
  const name = (id) => (id === me ? t('you') : userName(id));
  const list = (ids) => (ids.length > 1 ? ids.slice(0, -1).map(name).join(', ') + t(' and ') + name(ids[ids.length - 1]) : ids.length ? name(ids[0]) : t('people'));
  const meta = m.metadata || {};
  const ids = (key) => (meta[key] || '').split(',').filter(Boolean);
  switch (meta.action) {
    case 'renamed': return meta.name ? line('{who} renamed the group to “{name}”', { name: meta.name }) : line('{who} renamed the group');
    case 'participants.added': return line('{who} added {people}', { people: list(ids('userIds')) });
    case 'participant.removed': return line('{who} removed {people}', { people: list(ids('userId')) });
    case 'participant.left': return line('{who} left');
    default: return m.text || line('{who} changed the conversation');
  }
}

export function renderList() {
  const list = $('#conversation-list');
  const rows = sortedConversations().map((conv) => {
    const preview = previewText(conv);
    const peer = peerId(conv);
    const online = peer && (store.connection === 'online' || store.connection === 'syncing') ? !!store.users.get(peer)?.isOnline : false;
    const unread = conv.unreadCount > 0 ? conv.unreadCount : 0;
    const mentions = conv.mentionCount > 0 ? conv.mentionCount : 0;
    const name = conversationName(conv);
    const spoken = [name, unread ? `${unread} unread` : '', mentions ? (mentions === 1 ? '1 mention' : `${mentions} mentions`) : '', conv.muted ? 'muted' : '']
      .filter(Boolean).join(', ');
    return h('li', {
      class: `conv-row${conv.id === store.openId ? ' active' : ''}${unread ? ' has-unread' : ''}${conv.muted ? ' muted' : ''}`,
      dataset: { conversationId: conv.id }, role: 'button', tabindex: '0',
      'aria-label': spoken,
      onclick: () => openChat(conv.id),
      onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); openChat(conv.id); } },
    },
    avatar(name, peer ? userPicture(peer) : null, {
      presence: conv.type === 'direct' ? h('span', { class: `presence${online ? ' online' : ''}`, title: online ? t('Online') : t('Offline') }) : null,
    }),
    h('div', { class: 'row-main' },
      h('div', { class: 'row-top' }, h('span', { class: 'name' }, name), h('span', { class: 'time' }, formatListTime(conv.lastMessage?.createdAt || conv.lastActivityAt))),
      h('div', { class: 'row-bottom' }, h('span', { class: `preview ${preview.cls}` }, preview.text),
        conv.muted ? h('span', { class: 'muted-mark', title: t('Muted'), 'aria-hidden': 'true' }, '🔕') : null,
        h('span', { class: 'mention-badge', hidden: !mentions, title: t('You were mentioned') }, mentions ? '@' : ''),
        h('span', { class: 'unread', hidden: !unread }, unread ? String(unread) : ''))));
  });
  if (!rows.length) rows.push(h('li', { class: 'list-empty' }, t('No conversations yet. Start one with ✎.')));
  if (store.listHasMore) rows.push(h('li', { class: 'list-more' }, h('button', { type: 'button', class: 'link', onclick: () => client.loadMoreConversations().catch(showError) }, t('Load more'))));
  setChildren(list, rows);
  $('#me-name').textContent = store.me?.displayName || '';
  const mine = $('#me-avatar');
  const picture = store.me?.avatarUrl || '';
  if (mine.dataset.for !== `${store.me?.displayName}|${picture}`) {
    mine.replaceChildren(avatar(store.me?.displayName, picture || null, { small: true }));
    mine.dataset.for = `${store.me?.displayName}|${picture}`;
  }
  renderInviteAccess();
  renderAdminAccess();
}

// ---- search ----
function snippetNodes(snippet, query) {
  // The server marks hits with [ ]: split and wrap them in <mark>, as text only. Brackets
  // typed in the message itself look the same, so only segments that start with one of the
  // query's words are marked; the others stay literal text.
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const out = [];
  const re = /\[([^\[\]]*)\]/g;
  let last = 0; let m;
  while ((m = re.exec(snippet))) {
    if (!words.some((w) => m[1].toLowerCase().startsWith(w))) continue;
    if (m.index > last) out.push(snippet.slice(last, m.index));
    out.push(h('mark', null, m[1]));
    last = re.lastIndex;
  }
  if (last < snippet.length) out.push(snippet.slice(last));
  return out;
}

function initSearch() {
  const input = $('#search-input');
  const box = $('#search-results');
  let seqNo = 0;
  const run = debounce(async () => {
    const q = input.value.trim();
    const mine = ++seqNo;
    if (!q) { box.hidden = true; clear(box); $('#conversation-list').hidden = false; return; }
    try {
      const res = await client.search(q);
      if (mine !== seqNo) return;
      const items = res.results.map((r) => h('button', {
        type: 'button', class: 'search-hit', dataset: { messageId: r.message.id, conversationId: r.conversationId, seq: r.seq },
        onclick: () => { openChat(r.conversationId, r.seq); },
      },
      h('div', { class: 'row-top' }, h('span', { class: 'name' }, conversationName(store.conversations.get(r.conversationId)) || t('Conversation')),
        h('span', { class: 'time' }, formatListTime(r.message.createdAt))),
      // A blocked person's words stay folded here too, as in the chat and the list.
      fromBlocked(r.message)
        ? h('div', { class: 'snippet muted', dataset: { blocked: 'true' } }, t('Message from a blocked user'))
        : h('div', { class: 'snippet' }, `${userName(r.message.senderId)}: `, snippetNodes(r.snippet || r.message.text || '', q))));
      setChildren(box, items.length ? items : h('p', { class: 'muted pad' }, t('No messages found.')));
      box.hidden = false;
      $('#conversation-list').hidden = true;
    } catch (e) { showError(e); }
  }, 250);
  input.addEventListener('input', run);
  input.addEventListener('keydown', (e) => { if (e.key === 'Escape') { input.value = ''; run(); } });
}

// ---- new chat ----
const selected = new Map();
function initNewChat() {
  const panel = $('#new-chat-panel');
  const search = $('#new-chat-search');
  const results = $('#new-chat-results');
  const close = () => { panel.hidden = true; };
  $('#new-chat').addEventListener('click', () => {
    selected.clear(); search.value = ''; $('#new-chat-name').value = ''; $('#new-chat-error').textContent = '';
    panel.hidden = false; renderSelected(); run(); search.focus();
  });
  $('#new-chat-close').addEventListener('click', close);
  panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(); });
  panel.addEventListener('click', (e) => { if (e.target === panel) close(); });
  let seqNo = 0;
  const run = debounce(async () => {
    const mine = ++seqNo;
    try {
      const users = (await client.searchUsers(search.value.trim())).filter((u) => u.id !== store.me.id);
      if (mine !== seqNo) return;
      for (const u of users) if (!store.users.has(u.id)) store.users.set(u.id, u);
      setChildren(results, users.map((u) => h('li', null, h('button', {
        type: 'button', class: `user-hit${selected.has(u.id) ? ' selected' : ''}`, dataset: { userId: u.id },
        'aria-pressed': selected.has(u.id) ? 'true' : 'false',
        onclick: (e) => {
          if (selected.has(u.id)) selected.delete(u.id); else selected.set(u.id, u);
          e.currentTarget.classList.toggle('selected', selected.has(u.id));
          e.currentTarget.setAttribute('aria-pressed', selected.has(u.id) ? 'true' : 'false');
          renderSelected();
        },
      }, h('span', { class: `presence${u.isOnline ? ' online' : ''}` }), h('span', { class: 'user-name' }, u.displayName), h('span', { class: 'user-email' }, u.email)))));
      if (!users.length) setChildren(results, nobodyFound(close));
    } catch (e) { $('#new-chat-error').textContent = e.message; }
  }, 200);
  search.addEventListener('input', run);
  $('#new-chat-create').addEventListener('click', async () => {
    const err = $('#new-chat-error');
    err.textContent = '';
    if (!selected.size) { err.textContent = t('Pick at least one person.'); return; }
    try {
      const conv = await client.createConversation([...selected.keys()], $('#new-chat-name').value.trim());
      close();
      openChat(conv.id);
    } catch (e) { err.textContent = e.message; }
  });
}

// Nobody to start a chat with: say how people get in (only admins can invite, in the web
// client or with `parley invite`).
function nobodyFound(closeNewChat) {
  const found = h('p', { class: 'nobody-title' }, t('Nobody found.'));
  if (isAdmin()) {
    return h('li', { class: 'nobody pad', id: 'new-chat-nobody' }, found,
      h('p', null, t('People join your organization with an invite.')),
      h('button', {
        type: 'button', id: 'new-chat-invite', class: 'text-btn accent',
        onclick: () => { closeNewChat(); openInvites($('#new-chat')); },
      }, t('Invite people')));
  }
  const admins = [...store.users.values()].filter((u) => u.role === 'admin' && u.id !== store.me?.id).map((u) => u.displayName);
  const who = admins.length === 1 || admins.length === 2 ? admins.join(' or ') : 'an admin of your organization';
  return h('li', { class: 'nobody pad', id: 'new-chat-nobody' }, found,
    h('p', null, t('New people join with an invite: ask {who} to invite them.', { who })));
}

function renderSelected() {
  setChildren($('#new-chat-selected'), [...selected.values()].map((u) => h('span', { class: 'chip' }, u.displayName,
    h('button', { type: 'button', class: 'chip-x', 'aria-label': t('Remove {name}', { name: u.displayName }), onclick: () => { selected.delete(u.id); renderSelected(); const b = document.querySelector(`#new-chat-results [data-user-id="${u.id}"]`); if (b) b.classList.remove('selected'); } }, '✕'))));
  $('#new-chat-create').textContent = selected.size > 1 || $('#new-chat-name').value.trim() ? t('Create group') : t('Start chat');
}

export function openForward(messageId) {
  const panel = $('#forward-panel');
  setChildren($('#forward-list'), sortedConversations().map((conv) => h('li', null, h('button', {
    type: 'button', class: 'user-hit', dataset: { conversationId: conv.id },
    onclick: () => { panel.hidden = true; client.forwardMessage(conv.id, messageId); openChat(conv.id); },
  }, h('span', { class: 'user-name' }, conversationName(conv))))));
  panel.hidden = false;
}
