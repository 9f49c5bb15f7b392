// The "Invite people" panel (admins): create an invite, copy its join link, list the
// organization's invites and revoke one. Also the join link itself: `/#join=CODE&organization=NAME`,
// read (and removed from the address bar) by app.js when the page opens signed out.
import { t } from '/web/i18n.js';
import { h, $, setChildren } from '/web/dom.js';
import { api } from '/web/api.js';
import { store } from '/web/store.js';

export const isAdmin = () => store.me?.role === 'admin';

// The join link: in the fragment, so the code never reaches a server log or a Referer.
export function joinLink(code, organization) {
  const params = new URLSearchParams({ join: code });
  if (organization) params.set('organization', organization);
  return `${location.origin}/#${params}`;
}

// `{code, organization}` when the address is a join link, else null.
export function readJoinLink(hash = location.hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const code = params.get('join');
  if (code === null) return null;
  return { code: code.trim(), organization: (params.get('organization') || '').trim() };
}

let opener = null;
let orgName = { orgId: null, name: '' };
let loadNo = 0;

export function initInvites() {
  const panel = $('#invite-panel');
  $('#invite-open').addEventListener('click', (e) => openInvites(e.currentTarget));
  $('#invite-close').addEventListener('click', closeInvites);
  panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') closeInvites(); });
  panel.addEventListener('click', (e) => { if (e.target === panel) closeInvites(); });
  $('#invite-form').addEventListener('submit', (e) => { e.preventDefault(); createInvite(); });
}

// The header button shows for admins only (the role can change: hello brings the current one).
export function renderInviteAccess() {
  $('#invite-open').hidden = !isAdmin();
  if (!isAdmin() && !$('#invite-panel').hidden) closeInvites();
}

export function openInvites(from) {
  if (!isAdmin()) return;
  opener = from instanceof HTMLElement ? from : document.activeElement;
  const panel = $('#invite-panel');
  $('#invite-error').textContent = '';
  $('#invite-status').textContent = '';
  setChildren($('#invite-result'));
  for (const id of ['#invite-email', '#invite-max-uses', '#invite-expires']) $(id).value = '';
  panel.hidden = false;
  $('#invite-email').focus();
  loadInvites();
  organizationName().catch(() => {});
}

export function closeInvites() {
  const panel = $('#invite-panel');
  if (panel.hidden) return;
  panel.hidden = true;
  if (opener && document.contains(opener) && !opener.hidden) opener.focus();
  opener = null;
}

// The organization's name for the join link (any member may read it); asked once per session.
async function organizationName() {
  if (store.me && orgName.orgId === store.me.organizationId) return orgName.name;
  const res = await api('GET', '/organization');
  orgName = { orgId: store.me?.organizationId, name: res?.organization?.name || '' };
  return orgName.name;
}

// '' → undefined (the server's default); otherwise a whole number in range, or an error message.
function wholeNumber(input, what, min, max) {
  const raw = input.value.trim();
  if (!raw && !input.validity?.badInput) return { value: undefined };
  const n = Number(raw);
  if (!raw || !Number.isInteger(n) || n < min || n > max) return { error: t('{what} must be a whole number from {min} to {max}.', { what: t(what), min, max }) };
  return { value: n };
}

async function createInvite() {
  const err = $('#invite-error');
  err.textContent = '';
  const uses = wholeNumber($('#invite-max-uses'), 'Uses', 1, 1000);
  const hours = wholeNumber($('#invite-expires'), 'Expiry', 1, 2160);
  const problem = uses.error || hours.error;
  if (problem) { err.textContent = problem; return; }
  const body = {};
  const email = $('#invite-email').value.trim();
  if (email) body.email = email;
  if (uses.value !== undefined) body.maxUses = uses.value;
  if (hours.value !== undefined) body.expiresInHours = hours.value;
  const button = $('#invite-create');
  button.disabled = true;
  try {
    const res = await api('POST', '/organization/invites', body);
    const invite = res.invite;
    let name = '';
    try { name = await organizationName(); } catch { /* the link works without it; the name is typed then */ }
    showResult(invite, name);
    for (const id of ['#invite-email', '#invite-max-uses', '#invite-expires']) $(id).value = '';
    $('#invite-link').focus(); // selected: Ctrl+C copies it, Tab reaches Copy
    loadInvites();
  } catch (e) {
    err.textContent = e.message;
  } finally { button.disabled = false; }
}

function showResult(invite, name, fresh = true) {
  const link = joinLink(invite.code, name);
  const status = h('p', { id: 'invite-copy-status', class: 'hint copy-status' });
  const linkInput = h('input', { id: 'invite-link', readonly: true, value: link, spellcheck: 'false', onfocus: (e) => e.target.select() });
  const codeInput = h('input', { id: 'invite-code', readonly: true, value: invite.code, spellcheck: 'false', class: 'mono', onfocus: (e) => e.target.select() });
  setChildren($('#invite-result'),
    h('p', { class: 'invite-done' }, fresh ? t('Invite created. ') : '', invite.email
      ? t('Send this link to the person you are inviting ({email}); it opens the sign-up form with the code filled in.', { email: invite.email })
      : t('Send this link to the person you are inviting; it opens the sign-up form with the code filled in.')),
    h('label', { for: 'invite-link' }, t('Join link')),
    h('div', { class: 'copy-row' }, linkInput,
      h('button', { type: 'button', id: 'invite-copy', class: 'text-btn', onclick: () => copyText(link, linkInput, status) }, t('Copy'))),
    h('label', { for: 'invite-code' }, t('Code '), h('span', { class: 'hint' }, t('(for the Invite code field, or parley register --invite)'))),
    codeInput,
    status);
}

// The clipboard (not everywhere: it needs a secure context and may be refused or never answer).
function writeClipboard(text) {
  if (!navigator.clipboard?.writeText) return Promise.reject(new Error('no clipboard'));
  return Promise.race([navigator.clipboard.writeText(text), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000))]);
}

// The clipboard when the browser allows it; otherwise the text is selected for Ctrl+C / ⌘C.
async function copyText(text, input, status) {
  status.textContent = '';
  try {
    await writeClipboard(text);
    status.textContent = t('Copied to the clipboard.');
  } catch {
    input.focus();
    input.select();
    let copied = false;
    try { copied = document.execCommand('copy'); } catch { /* not supported */ }
    status.textContent = t(copied ? 'Copied to the clipboard.' : 'Selected: press Ctrl+C (⌘C on a Mac) to copy.');
  }
}

function formatExpiry(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  return d.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

function inviteState(invite) {
  if (invite.uses >= invite.maxUses) return 'used';
  if (new Date(invite.expiresAt).getTime() <= Date.now()) return 'expired';
  return 'open';
}

async function loadInvites() {
  const list = $('#invite-list');
  const mine = ++loadNo;
  list.setAttribute('aria-busy', 'true');
  try {
    const res = await api('GET', '/organization/invites');
    if (mine !== loadNo) return;
    renderInvites(res.invites || []);
  } catch (e) {
    if (mine !== loadNo) return;
    setChildren(list, h('li', { class: 'muted pad' }, t('Could not load the invites.')));
    $('#invite-error').textContent = e.message;
  } finally { if (mine === loadNo) list.removeAttribute('aria-busy'); }
}

function renderInvites(invites) {
  const list = $('#invite-list');
  $('#invite-count').textContent = invites.length ? `(${invites.length})` : '';
  if (!invites.length) { setChildren(list, h('li', { class: 'muted pad' }, t('No invites yet.'))); return; }
  setChildren(list, invites.map((invite) => {
    const state = inviteState(invite);
    const short = `${invite.code.slice(0, 8)}…`;
    const facts = [
      invite.email ? t('for {email}', { email: invite.email }) : t('for anyone with the link'),
      t('{uses}/{most} used', { uses: invite.uses, most: invite.maxUses }),
      t(state === 'expired' ? 'expired {when}' : 'expires {when}', { when: formatExpiry(invite.expiresAt) }),
    ];
    return h('li', { class: `invite-row ${state}`, dataset: { code: invite.code, state } },
      h('div', { class: 'invite-main' },
        h('code', { class: 'invite-code mono', title: invite.code }, invite.code),
        h('div', { class: 'invite-facts' },
          state !== 'open' ? h('span', { class: 'invite-badge' }, t(state === 'used' ? 'Used up' : 'Expired')) : null,
          facts.join(' · '))),
      h('div', { class: 'invite-actions' },
        state === 'open' ? h('button', {
          type: 'button', class: 'text-btn invite-copy-link', 'aria-label': t('Copy the join link of invite {code}', { code: short }),
          onclick: async (e) => {
            const button = e.currentTarget;
            let name = '';
            try { name = await organizationName(); } catch { /* without the name */ }
            try {
              await writeClipboard(joinLink(invite.code, name));
              button.textContent = t('Copied');
              $('#invite-status').textContent = t('The join link of invite {code} is copied.', { code: short });
            } catch {
              showResult(invite, name, false);
              $('#invite-link').focus();
            }
          },
        }, t('Copy link')) : null,
        h('button', {
          type: 'button', class: 'text-btn danger invite-revoke', 'aria-label': t('Revoke invite {code}', { code: short }),
          onclick: (e) => revoke(invite.code, e.currentTarget),
        }, t('Revoke'))));
  }));
}

async function revoke(code, button) {
  const err = $('#invite-error');
  err.textContent = '';
  button.disabled = true;
  const rows = [...document.querySelectorAll('#invite-list .invite-row')];
  const index = rows.findIndex((r) => r.dataset.code === code);
  try {
    await api('DELETE', `/organization/invites/${encodeURIComponent(code)}`);
    if ($('#invite-code')?.value === code) setChildren($('#invite-result'));
    $('#invite-status').textContent = t('Invite {code}… revoked.', { code: code.slice(0, 8) });
    await loadInvites();
    // Focus stays in the list: on the row that took this one's place, or the last one.
    const buttons = document.querySelectorAll('#invite-list .invite-revoke');
    (buttons[Math.min(index, buttons.length - 1)] || $('#invite-create')).focus();
  } catch (e) {
    err.textContent = e.message;
    button.disabled = false;
    if (e.code === 'not_found') loadInvites();
  }
}
