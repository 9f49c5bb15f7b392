// The admin console (admins, `user.role === 'admin'`): reports to handle, members and
// their roles (make admin / member, deactivate, erase), the organization's invites, allowed
// domains and message retention, and the audit log. Opened from the menu (admins only) or the
// `#admin` link; a member who gets here anyway sees the server's 403 as a sentence. Every name,
// reason, message text and audit detail is a text node (h() never parses HTML).
import { t, tn } from '/web/i18n.js';
import { h, $, setChildren, formatDay, formatTime } from '/web/dom.js';
import { api, qs } from '/web/api.js';
import { store } from '/web/store.js';
import { isAdmin, openInvites } from '/web/views-invites.js';
import { deletedText } from '/web/views-message.js';

const SECTIONS = ['reports', 'members', 'organization', 'audit'];
const ACTIONS = {
  'role.changed': 'changed a role', 'user.deactivated': 'deactivated a member', 'user.erased': 'erased a member',
  'invite.created': 'created an invite', 'invite.deleted': 'revoked an invite', 'domains.changed': 'changed the allowed domains',
  'retention.changed': 'changed the message retention', 'report.resolved': 'resolved a report', 'report.dismissed': 'dismissed a report',
  'report.reopened': 'reopened a report', 'message.deleted': 'deleted a message', 'participant.removed': 'removed someone from a group',
  'user.signed_out': 'signed a member out everywhere',
};

let section = 'reports';
let opener = null;
let people = new Map();      // id -> User, as the console last read them
let reportStatus = 'open';
let reports = { items: [], hasMore: false };
let audit = { items: [], hasMore: false };
let members = [];
let organization = null;
let confirming = null;       // {userId, kind: 'deactivate' | 'erase'}
let loadNo = 0;

export function initAdmin() {
  const panel = $('#admin-panel');
  $('#admin-open').addEventListener('click', () => { closeMenu(); openAdmin($('#menu-open')); });
  $('#admin-close').addEventListener('click', closeAdmin);
  panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.stopPropagation(); closeAdmin(); } });
  panel.addEventListener('click', (e) => { if (e.target === panel) closeAdmin(); });
  for (const tab of document.querySelectorAll('.admin-tabs [data-section]')) {
    tab.addEventListener('click', () => showSection(tab.dataset.section));
  }
}

function closeMenu() {
  $('#app-menu').hidden = true;
  $('#menu-open').setAttribute('aria-expanded', 'false');
}

// The menu entry shows for admins only (the role can change: hello brings the current one).
export function renderAdminAccess() {
  $('#admin-open').hidden = !isAdmin();
}

export function openAdmin(from) {
  opener = from instanceof HTMLElement ? from : document.activeElement;
  $('#admin-panel').hidden = false;
  confirming = null;
  showSection(section);
  $(`#admin-tab-${section}`).focus();
}

export function closeAdmin() {
  const panel = $('#admin-panel');
  if (panel.hidden) return;
  panel.hidden = true;
  loadNo++;
  if (opener && document.contains(opener) && !opener.hidden && opener.offsetParent !== null) opener.focus();
  opener = null;
}

function showSection(name) {
  if (!SECTIONS.includes(name)) return;
  section = name;
  for (const tab of document.querySelectorAll('.admin-tabs [data-section]')) {
    tab.setAttribute('aria-selected', String(tab.dataset.section === name));
  }
  $('#admin-body').setAttribute('aria-labelledby', `admin-tab-${name}`);
  $('#admin-body').dataset.section = name;
  setError('');
  setChildren($('#admin-body'), h('p', { class: 'muted pad' }, t('Loading…')));
  load();
}

function setError(text) { $('#admin-error').textContent = text; }
function say(text) { $('#admin-status').textContent = text; }

// A refusal in words: a member who reached the console, or a role taken away meanwhile.
function fail(e) {
  if (e.status === 403) setError(t('Only admins of your organization can use the admin console. ({reason})', { reason: e.message }));
  else setError(e.message);
}

function nameOf(id) {
  if (!id) return '';
  if (id === store.me?.id) return store.me.displayName;
  const u = people.get(id) || store.users.get(id);
  return u ? u.displayName : t('unknown user {id}…', { id: id.slice(0, 8) });
}

function when(iso) {
  if (!iso) return '';
  return `${formatDay(iso)} ${formatTime(iso)}`;
}

async function loadPeople() {
  const res = await api('GET', `/users${qs({ limit: 500 })}`);
  people = new Map(res.users.map((u) => [u.id, u]));
  return res.users;
}

// Reads what the open section shows, then draws it; a stale answer (another tab, the panel
// closed) is dropped.
async function load() {
  const mine = ++loadNo;
  const shown = section;
  try {
    if (shown === 'reports') {
      const [page] = await Promise.all([api('GET', `/organization/reports${qs({ status: reportStatus, limit: 50 })}`), loadPeople()]);
      if (mine !== loadNo) return;
      reports = { items: page.reports || [], hasMore: !!page.hasMore };
    } else if (shown === 'members') {
      const users = await loadPeople();
      if (mine !== loadNo) return;
      members = users;
    } else if (shown === 'organization') {
      const res = await api('GET', '/organization');
      if (mine !== loadNo) return;
      organization = res.organization;
    } else if (shown === 'audit') {
      const [page] = await Promise.all([api('GET', `/organization/audit${qs({ limit: 50 })}`), loadPeople()]);
      if (mine !== loadNo) return;
      audit = { items: page.entries || [], hasMore: !!page.hasMore };
    }
    render();
  } catch (e) {
    if (mine !== loadNo) return;
    setChildren($('#admin-body'));
    fail(e);
  }
}

function render() {
  if ($('#admin-panel').hidden) return;
  const body = $('#admin-body');
  if (section === 'reports') setChildren(body, reportsView());
  else if (section === 'members') setChildren(body, membersView());
  else if (section === 'organization') setChildren(body, organizationView());
  else setChildren(body, auditView());
}

// Runs an admin action: errors to the console's error line, then the section read again.
async function act(button, work, done) {
  setError('');
  if (button) button.disabled = true;
  try {
    await work();
    if (done) say(done);
    await load();
  } catch (e) {
    fail(e);
    if (button) button.disabled = false;
  }
}

// ---- reports ----
function reportsView() {
  const select = h('select', { id: 'admin-report-status', 'aria-label': t('Which reports') },
    ['open', 'resolved', 'dismissed'].map((s) => h('option', { value: s }, s === 'open' ? t('Open') : s === 'resolved' ? t('Resolved') : t('Dismissed'))));
  select.value = reportStatus;
  select.addEventListener('change', () => { reportStatus = select.value; load(); });
  const items = reports.items.map(reportRow);
  return [
    h('div', { class: 'admin-toolbar' }, h('label', { class: 'inline-label', for: 'admin-report-status' }, t('Show')), select,
      h('span', { class: 'hint', id: 'admin-report-count' }, `${reports.items.length}${reports.hasMore ? '+' : ''} ` + t(reportStatus))),
    h('ul', { id: 'admin-reports', class: 'admin-list', 'aria-label': t('Reports') },
      items.length ? items : h('li', { class: 'muted pad admin-empty' }, reportStatus === 'open' ? t('No open reports. All clear.') : t(`No ${reportStatus} reports.`))),
    reports.hasMore ? h('button', { type: 'button', id: 'admin-reports-more', class: 'text-btn', onclick: (e) => moreReports(e.currentTarget) }, t('Older reports')) : null,
  ];
}

function reportRow(r) {
  const m = r.message;
  let quote = null;
  if (r.messageId) {
    quote = m
      ? h('blockquote', { class: `report-message${m.deletedAt ? ' deleted' : ''}` },
        h('div', { class: 'reply-sender' }, nameOf(m.senderId), ' ', h('span', { class: 'hint' }, when(m.createdAt))),
        h('div', { class: 'report-message-text', dir: 'auto' }, m.deletedAt ? deletedText(m) : (m.text || m.attachment?.name || '')))
      : h('blockquote', { class: 'report-message deleted' }, h('div', { class: 'report-message-text' }, t('The message no longer exists.')));
  }
  const buttons = [];
  if (r.status === 'open') {
    buttons.push(h('button', {
      type: 'button', class: 'text-btn accent report-resolve', 'aria-label': t('Resolve the report by {name}', { name: nameOf(r.reporterId) }),
      onclick: (e) => act(e.currentTarget, () => api('PATCH', `/organization/reports/${r.id}`, { status: 'resolved' }), t('Report resolved.')),
    }, t('Resolve')));
    buttons.push(h('button', {
      type: 'button', class: 'text-btn report-dismiss', 'aria-label': t('Dismiss the report by {name}', { name: nameOf(r.reporterId) }),
      onclick: (e) => act(e.currentTarget, () => api('PATCH', `/organization/reports/${r.id}`, { status: 'dismissed' }), t('Report dismissed.')),
    }, t('Dismiss')));
  } else {
    buttons.push(h('button', {
      type: 'button', class: 'text-btn report-reopen', 'aria-label': t('Reopen the report by {name}', { name: nameOf(r.reporterId) }),
      onclick: (e) => act(e.currentTarget, () => api('PATCH', `/organization/reports/${r.id}`, { status: 'open' }), t('Report reopened.')),
    }, t('Reopen')));
  }
  if (m && !m.deletedAt && r.conversationId) {
    buttons.push(h('button', {
      type: 'button', class: 'text-btn danger report-delete-message', 'aria-label': t('Delete the reported message of {name}', { name: nameOf(m.senderId) }),
      onclick: (e) => act(e.currentTarget, () => api('DELETE', `/conversations/${r.conversationId}/messages/${r.messageId}`), t('Message deleted.')),
    }, t('Delete message')));
  }
  return h('li', { class: 'admin-report', dataset: { reportId: r.id, status: r.status } },
    h('div', { class: 'report-meta' },
      h('span', null, t('Reported by '), h('strong', { class: 'report-reporter' }, nameOf(r.reporterId))),
      r.userId ? h('span', null, ' about ', h('strong', { class: 'report-user' }, nameOf(r.userId))) : null,
      h('span', { class: 'hint' }, ` · ${when(r.createdAt)}`)),
    h('div', { class: 'report-reason-line' }, h('span', { class: 'hint' }, t('Reason: ')), h('span', { class: 'report-reason', dir: 'auto' }, r.reason)),
    quote,
    h('div', { class: 'admin-actions' }, buttons));
}

async function moreReports(button) {
  const last = reports.items[reports.items.length - 1];
  if (!last) return;
  button.disabled = true;
  try {
    const page = await api('GET', `/organization/reports${qs({ status: reportStatus, before: last.id, limit: 50 })}`);
    reports = { items: reports.items.concat(page.reports || []), hasMore: !!page.hasMore };
    render();
  } catch (e) { fail(e); button.disabled = false; }
}

// ---- members and roles ----
function membersView() {
  const sorted = [...members].sort((a, b) => (b.id === store.me?.id) - (a.id === store.me?.id)
    || (a.role === 'admin' ? 0 : 1) - (b.role === 'admin' ? 0 : 1) || a.displayName.localeCompare(b.displayName));
  return [
    h('p', { class: 'hint admin-intro' }, t('Admins can invite people, handle reports, change roles and settings. Deactivating signs a person out for good; erasing also removes their messages, files and name.')),
    h('ul', { id: 'admin-members', class: 'admin-list', 'aria-label': t('Members') }, sorted.map(memberRow)),
  ];
}

function memberRow(u) {
  const me = u.id === store.me?.id;
  const role = u.role || 'member';
  const name = u.displayName;
  const controls = [];
  if (confirming && confirming.userId === u.id) {
    const erase = confirming.kind === 'erase';
    controls.push(h('div', { class: 'admin-confirm', role: 'group', 'aria-label': t(erase ? 'Confirm erasing {name}' : 'Confirm deactivating {name}', { name }) },
      h('p', { class: 'admin-confirm-text' }, erase
        ? t('Erase {name}? Their messages become “deleted”, their files are removed and their name becomes “Deleted user”. This cannot be undone.', { name })
        : t('Deactivate {name}? They are signed out everywhere and cannot sign in again.', { name })),
      h('div', { class: 'admin-actions' },
        h('button', { type: 'button', class: 'text-btn admin-confirm-cancel', onclick: () => { confirming = null; render(); } }, t('Cancel')),
        h('button', {
          type: 'button', class: 'text-btn danger admin-confirm-yes',
          onclick: (e) => {
            confirming = null;
            act(e.currentTarget, () => api('DELETE', `/users/${u.id}${erase ? qs({ erase: 'true' }) : ''}`), erase ? `${name} erased.` : `${name} deactivated.`);
          },
        }, t(erase ? 'Erase {name}' : 'Deactivate {name}', { name })))));
  } else if (!me) {
    const next = role === 'admin' ? 'member' : 'admin';
    controls.push(h('div', { class: 'admin-actions' },
      h('button', {
        type: 'button', class: 'text-btn admin-role', dataset: { role: next }, 'aria-label': t(next === 'admin' ? 'Make {name} an admin' : 'Make {name} a member', { name }),
        onclick: (e) => act(e.currentTarget, () => api('PATCH', `/users/${u.id}`, { role: next }), `${name} is now ${next === 'admin' ? 'an admin' : 'a member'}.`),
      }, next === 'admin' ? t('Make admin') : t('Make member')),
      h('button', {
        type: 'button', class: 'text-btn admin-deactivate', 'aria-label': t('Deactivate {name}', { name }),
        onclick: () => { confirming = { userId: u.id, kind: 'deactivate' }; render(); document.querySelector('#admin-members .admin-confirm-cancel')?.focus(); },
      }, t('Deactivate')),
      h('button', {
        type: 'button', class: 'text-btn danger admin-erase', 'aria-label': t('Erase {name}', { name }),
        onclick: () => { confirming = { userId: u.id, kind: 'erase' }; render(); document.querySelector('#admin-members .admin-confirm-cancel')?.focus(); },
      }, t('Erase…'))));
  }
  return h('li', { class: 'admin-member', dataset: { userId: u.id, role } },
    h('div', { class: 'admin-member-main' },
      h('span', { class: 'user-name' }, me ? t('{name} (you)', { name }) : name),
      h('span', { class: `role-badge ${role}` }, role),
      h('div', { class: 'user-email' }, u.email || '')),
    controls);
}

// ---- the organization: invites, allowed domains, retention ----
function organizationView() {
  const org = organization || {};
  const domains = h('input', { id: 'admin-domains', value: (org.allowedEmailDomains || []).join(', '), spellcheck: 'false', autocomplete: 'off', placeholder: 'example.com, example.org' });
  const days = h('input', { id: 'admin-retention-days', type: 'number', min: '1', max: '36500', step: '1', inputmode: 'numeric', value: org.messageRetentionDays ? String(org.messageRetentionDays) : '' });
  const retention = org.messageRetentionDays
    ? tn(org.messageRetentionDays, 'Messages older than {n} day are deleted.', 'Messages older than {n} days are deleted.')
    : t('Messages are kept for ever.');
  const saveDomains = (e) => {
    e.preventDefault();
    const list = domains.value.split(/[\s,]+/).map((d) => d.trim()).filter(Boolean);
    act($('#admin-domains-save'), () => api('PATCH', '/organization', { allowedEmailDomains: list }), t('Allowed domains saved.'));
  };
  const saveRetention = (e) => {
    e.preventDefault();
    const n = Number(days.value.trim());
    if (!Number.isInteger(n) || n < 1 || n > 36500) { setError(t('Retention is a whole number of days from 1 to 36500.')); return; }
    act($('#admin-retention-save'), () => api('PATCH', '/organization', { messageRetentionDays: n }), tn(n, 'Messages are now kept {n} day.', 'Messages are now kept {n} days.'));
  };
  return [
    h('section', { class: 'admin-block' },
      h('h3', null, t('Invites')),
      h('p', { class: 'hint' }, t('New people join with an invite link. Create one, copy it, see who used which and revoke the rest.')),
      h('button', { type: 'button', id: 'admin-invites', class: 'text-btn accent', onclick: () => { closeAdmin(); openInvites($('#menu-open')); } }, t('Invite people and manage invites…'))),
    h('section', { class: 'admin-block' },
      h('h3', null, t('Allowed email domains')),
      h('p', { class: 'hint' }, t('Addresses at these domains may join without an invite (they confirm their address by email). Separate them with commas; empty: invites only.')),
      h('form', { class: 'admin-inline-form', onsubmit: saveDomains }, h('label', { class: 'visually-hidden', for: 'admin-domains' }, t('Allowed email domains')), domains,
        h('button', { type: 'submit', id: 'admin-domains-save', class: 'text-btn accent' }, t('Save')))),
    h('section', { class: 'admin-block' },
      h('h3', null, t('Message retention')),
      h('p', { id: 'admin-retention-current', class: 'admin-current' }, retention),
      h('form', { class: 'admin-inline-form', onsubmit: saveRetention },
        h('label', { for: 'admin-retention-days', class: 'inline-label' }, t('Delete messages after')), days, h('span', { class: 'inline-label' }, t('days')),
        h('button', { type: 'submit', id: 'admin-retention-save', class: 'text-btn accent' }, t('Save')),
        h('button', {
          type: 'button', id: 'admin-retention-off', class: 'text-btn', disabled: !org.messageRetentionDays,
          onclick: (e) => act(e.currentTarget, () => api('PATCH', '/organization', { messageRetentionDays: null }), t('Messages are now kept for ever.')),
        }, t('Keep for ever')))),
  ];
}

// ---- the audit log ----
function auditView() {
  return [
    h('ul', { id: 'admin-audit', class: 'admin-list audit-list', 'aria-label': t('Audit log, newest first') },
      audit.items.length ? audit.items.map(auditRow) : h('li', { class: 'muted pad admin-empty' }, t('Nothing recorded yet.'))),
    audit.hasMore ? h('button', { type: 'button', id: 'admin-audit-more', class: 'text-btn', onclick: (e) => moreAudit(e.currentTarget) }, t('Older entries')) : null,
  ];
}

function auditRow(entry) {
  const target = entry.targetId ? (people.has(entry.targetId) || entry.targetId === store.me?.id ? nameOf(entry.targetId) : entry.targetId) : '';
  return h('li', { class: 'audit-entry', dataset: { entryId: entry.id, action: entry.action } },
    h('time', { class: 'audit-time', datetime: entry.at || '' }, when(entry.at)),
    h('div', { class: 'audit-main' },
      h('span', { class: 'audit-actor' }, nameOf(entry.actorId)), ' ', t(ACTIONS[entry.action] || 'acted'), ' ',
      h('code', { class: 'audit-action mono' }, entry.action),
      target ? h('div', { class: 'audit-target' }, h('span', { class: 'hint' }, t('Target: ')), target) : null,
      entry.detail ? h('div', { class: 'audit-detail' }, h('span', { class: 'hint' }, t('Detail: ')), entry.detail) : null));
}

async function moreAudit(button) {
  const last = audit.items[audit.items.length - 1];
  if (!last) return;
  button.disabled = true;
  try {
    const page = await api('GET', `/organization/audit${qs({ before: last.id, limit: 50 })}`);
    audit = { items: audit.items.concat(page.entries || []), hasMore: !!page.hasMore };
    render();
  } catch (e) { fail(e); button.disabled = false; }
}
