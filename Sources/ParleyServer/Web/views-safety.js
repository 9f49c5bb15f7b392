// Trust and safety for every member: a person's panel (block / unblock, report), the
// report dialog (a message or a person, with a reason), and the Account and privacy panel
// (one's profile, download my data, the people I block, delete my account). Names, message texts and reasons
// are text nodes (h() never parses HTML).
import { t } from '/web/i18n.js';
import { h, $, setChildren } from '/web/dom.js';
import { api, fetchBlob } from '/web/api.js';
import { store, userName } from '/web/store.js';
import * as client from '/web/client.js';
import { initProfile, renderProfile } from '/web/views-profile.js';

let opts = { showError() {}, onErased() {} };
let personId = null;
let reportTarget = null; // {message} or {userId}
const openers = new Map(); // panel id -> the element focus goes back to

function showPanel(id, from) {
  openers.set(id, from instanceof HTMLElement ? from : document.activeElement);
  $(id).hidden = false;
}
function hidePanel(id) {
  const panel = $(id);
  if (panel.hidden) return;
  panel.hidden = true;
  const opener = openers.get(id);
  openers.delete(id);
  if (opener && document.contains(opener) && !opener.hidden) opener.focus();
}

export function initSafety(o) {
  opts = { ...opts, ...o };
  for (const [panel, close] of [['#person-panel', closePerson], ['#report-panel', closeReport], ['#account-panel', closeAccount]]) {
    const el = $(panel);
    el.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.stopPropagation(); close(); } });
    el.addEventListener('click', (e) => { if (e.target === el) close(); });
  }
  $('#person-close').addEventListener('click', closePerson);
  $('#person-block').addEventListener('click', toggleBlock);
  $('#person-report').addEventListener('click', (e) => { if (personId) openReport({ userId: personId }, e.currentTarget); });
  $('#report-close').addEventListener('click', closeReport);
  $('#report-cancel').addEventListener('click', closeReport);
  $('#report-form').addEventListener('submit', (e) => { e.preventDefault(); sendReport(); });
  $('#account-close').addEventListener('click', closeAccount);
  initProfile();
  $('#export-download').addEventListener('click', downloadMyData);
  $('#erase-start').addEventListener('click', () => {
    $('#erase-form').hidden = false; $('#erase-start').hidden = true; $('#erase-password').value = ''; $('#erase-password').focus();
  });
  $('#erase-cancel').addEventListener('click', () => { $('#erase-form').hidden = true; $('#erase-start').hidden = false; $('#account-error').textContent = ''; });
  $('#erase-form').addEventListener('submit', (e) => { e.preventDefault(); eraseMyAccount(); });
}

export function closeSafetyPanels() { closeReport(); closePerson(); closeAccount(); }

// ---- a person: block / unblock, report ----
export function openPerson(userId, from) {
  if (!userId || userId === store.me?.id) return;
  personId = userId;
  $('#person-error').textContent = '';
  showPanel('#person-panel', from);
  renderPerson();
  $('#person-block').focus();
}

function closePerson() { personId = null; hidePanel('#person-panel'); }

export function renderPerson() {
  if (!personId || $('#person-panel').hidden) return;
  const user = store.users.get(personId);
  const blocked = store.blocked.has(personId);
  $('#person-name').textContent = userName(personId);
  $('#person-email').textContent = user?.email || '';
  $('#person-state').textContent = blocked ? t('You block this person.') : '';
  const button = $('#person-block');
  button.textContent = t(blocked ? 'Unblock' : 'Block');
  button.dataset.blocked = blocked ? 'true' : 'false';
  button.setAttribute('aria-label', t(blocked ? 'Unblock {name}' : 'Block {name}', { name: userName(personId) }));
  $('#person-report').setAttribute('aria-label', t('Report {name}', { name: userName(personId) }));
}

async function toggleBlock() {
  const id = personId;
  if (!id) return;
  const button = $('#person-block');
  $('#person-error').textContent = '';
  button.disabled = true;
  try {
    await client.setBlocked(id, !store.blocked.has(id));
    renderPerson();
    renderBlockedList();
  } catch (e) {
    $('#person-error').textContent = e.message;
  } finally { button.disabled = false; }
}

// ---- the report dialog ----
// target: {message} (a message someone else sent) or {userId} (a person).
export function openReport(target, from) {
  reportTarget = target;
  const m = target.message;
  $('#report-heading').textContent = m ? t('Report a message') : t('Report {name}', { name: userName(target.userId) });
  setChildren($('#report-subject'), m
    ? h('blockquote', { class: 'report-quote' },
      h('div', { class: 'reply-sender' }, userName(m.senderId)),
      h('div', { class: 'report-quote-text', dir: 'auto' }, m.text || m.attachment?.name || ''))
    : h('p', { class: 'hint' }, t('Tell the admins of your organization what this person did.')));
  $('#report-reason').value = '';
  $('#report-error').textContent = '';
  $('#report-form').hidden = false;
  $('#report-done').hidden = true;
  $('#report-done').textContent = '';
  showPanel('#report-panel', from);
  $('#report-reason').focus();
}

function closeReport() { reportTarget = null; hidePanel('#report-panel'); }

async function sendReport() {
  const target = reportTarget;
  if (!target) return;
  const reason = $('#report-reason').value.trim();
  const err = $('#report-error');
  err.textContent = '';
  if (!reason) { err.textContent = t('Say in a few words what is wrong.'); return; }
  const body = target.message ? { messageId: target.message.id, reason } : { userId: target.userId, reason };
  const button = $('#report-send');
  button.disabled = true;
  try {
    await client.report(body);
    $('#report-form').hidden = true;
    const done = $('#report-done');
    done.textContent = t('Thank you. Your report went to the admins of your organization; the person you reported is not told.');
    done.hidden = false;
    $('#report-close').focus();
  } catch (e) {
    err.textContent = e.message;
  } finally { button.disabled = false; }
}

// ---- Account and privacy ----
export function openAccount(from) {
  $('#account-error').textContent = '';
  $('#export-status').textContent = '';
  $('#erase-form').hidden = true;
  $('#erase-start').hidden = false;
  $('#profile-status').textContent = '';
  renderProfile();
  showPanel('#account-panel', from);
  renderBlockedList();
  client.loadBlocked().then(renderBlockedList).catch(() => {});
  $('#export-download').focus();
}

function closeAccount() { hidePanel('#account-panel'); }

function renderBlockedList() {
  if ($('#account-panel').hidden) return;
  const ids = [...store.blocked].sort((a, b) => userName(a).localeCompare(userName(b)));
  setChildren($('#blocked-list'), ids.length ? ids.map((id) => h('li', { class: 'member-row', dataset: { userId: id } },
    h('span', { class: 'user-name' }, userName(id)),
    h('button', {
      type: 'button', class: 'text-btn blocked-unblock', 'aria-label': t('Unblock {name}', { name: userName(id) }),
      onclick: async (e) => {
        e.currentTarget.disabled = true;
        try { await client.setBlocked(id, false); renderBlockedList(); } catch (err) { $('#account-error').textContent = err.message; }
      },
    }, t('Unblock')))) : h('li', { class: 'muted pad' }, t('You block nobody.')));
}

// The export needs the Authorization header, so it is fetched as a Blob and saved through an
// object URL (a plain link would go without the token).
async function downloadMyData() {
  const button = $('#export-download');
  const status = $('#export-status');
  button.disabled = true;
  status.textContent = t('Preparing your data…');
  try {
    const blob = await fetchBlob('/users/me/export');
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: 'parley-export.zip', hidden: true });
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status.textContent = t('Downloaded parley-export.zip ({kb} KB).', { kb: Math.max(1, Math.round(blob.size / 1024)) });
  } catch (e) {
    status.textContent = '';
    $('#account-error').textContent = e.message;
  } finally { button.disabled = false; }
}

async function eraseMyAccount() {
  const password = $('#erase-password').value;
  const err = $('#account-error');
  err.textContent = '';
  if (!password) { err.textContent = t('Type your password to confirm.'); return; }
  const button = $('#erase-confirm');
  button.disabled = true;
  try {
    await api('DELETE', '/users/me', { password });
    $('#erase-password').value = '';
    closeAccount();
    await opts.onErased();
  } catch (e) {
    err.textContent = e.message;
  } finally { button.disabled = false; }
}
