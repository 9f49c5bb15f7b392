// The group panel: rename the open group, see its members, add and remove people, leave.
// Names are text nodes (h() never parses HTML).
import { t } from '/web/i18n.js';
import { $, h, setChildren, debounce } from '/web/dom.js';
import { store, userName, userPicture } from '/web/store.js';
import { avatar } from '/web/avatar.js';
import * as client from '/web/client.js';
import { openPerson } from '/web/views-safety.js';

let opts = { showError() {} };

function open() {
  const conv = store.conversations.get(store.openId);
  if (!conv || conv.type !== 'group') return;
  $('#group-name').value = conv.name || '';
  $('#group-add-search').value = '';
  $('#group-error').textContent = '';
  setChildren($('#group-add-results'));
  $('#group-panel').hidden = false;
  render();
  $('#group-name').focus();
}

function close() { $('#group-panel').hidden = true; }

// Failures go to the panel's error line (a refusal says why: 403, 400 …).
async function act(work) {
  $('#group-error').textContent = '';
  try { await work(); } catch (e) { $('#group-error').textContent = e.message; }
}

// Members, "you" first; everyone but you can be removed (removing yourself is leaving).
export function renderGroupPanel() {
  if ($('#group-panel').hidden) return;
  const conv = store.conversations.get(store.openId);
  if (!conv || conv.type !== 'group') { close(); return; }
  render();
}

function render() {
  const conv = store.conversations.get(store.openId);
  const ids = [...(conv.participantIds || [])].sort((a, b) =>
    (b === store.me.id) - (a === store.me.id) || userName(a).localeCompare(userName(b)));
  $('#group-count').textContent = `(${ids.length})`;
  setChildren($('#group-members'), ids.map((id) => h('li', { class: 'member-row', dataset: { userId: id } },
    avatar(userName(id), userPicture(id), { small: true }),
    h('span', { class: 'user-name' }, id === store.me.id ? t('{name} (you)', { name: userName(id) }) : userName(id)),
    id !== store.me.id && store.blocked.has(id) ? h('span', { class: 'blocked-badge' }, 'blocked') : null,
    id === store.me.id ? null : h('button', {
      type: 'button', class: 'text-btn member-profile', dataset: { profileUserId: id }, 'aria-label': t('Block or report {name}', { name: userName(id) }),
      onclick: (e) => { close(); openPerson(id, $('#group-open')); },
    }, t('Block / report')),
    id === store.me.id ? null : h('button', {
      type: 'button', class: 'text-btn', dataset: { removeUserId: id }, 'aria-label': t('Remove {name}', { name: userName(id) }),
      onclick: () => act(() => client.removeFromGroup(conv.id, id)),
    }, t('Remove')))));
}

export function initGroup(o) {
  opts = { ...opts, ...o };
  $('#group-open').addEventListener('click', open);
  $('#group-close').addEventListener('click', close);
  const panel = $('#group-panel');
  panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(); });
  panel.addEventListener('click', (e) => { if (e.target === panel) close(); });
  $('#group-rename-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const name = $('#group-name').value.trim();
    if (!name) { $('#group-error').textContent = 'A group needs a name.'; return; }
    act(() => client.renameGroup(store.openId, name));
  });
  $('#group-leave').addEventListener('click', () => act(async () => { await client.leaveGroup(store.openId); close(); }));
  let seqNo = 0;
  const search = $('#group-add-search');
  const run = debounce(async () => {
    const mine = ++seqNo;
    const q = search.value.trim();
    if (!q) { setChildren($('#group-add-results')); return; }
    try {
      const conv = store.conversations.get(store.openId);
      const inGroup = new Set(conv?.participantIds || []);
      const users = (await client.searchUsers(q)).filter((u) => !inGroup.has(u.id));
      if (mine !== seqNo) return;
      for (const u of users) if (!store.users.has(u.id)) store.users.set(u.id, u);
      setChildren($('#group-add-results'), users.length ? users.map((u) => h('li', null, h('button', {
        type: 'button', class: 'user-hit', dataset: { userId: u.id },
        onclick: () => act(async () => { await client.addToGroup(store.openId, [u.id]); search.value = ''; setChildren($('#group-add-results')); }),
      }, h('span', { class: 'user-name' }, u.displayName), h('span', { class: 'user-email' }, u.email)))) : h('li', { class: 'muted pad' }, t('Nobody else found.')));
    } catch (e) { $('#group-error').textContent = e.message; }
  }, 200);
  search.addEventListener('input', run);
}

export { close as closeGroupPanel };
