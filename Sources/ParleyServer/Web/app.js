// Boot, the auth screen, the connection banner and the wiring between store and views.
import { t, localize } from '/web/i18n.js';
import { $ } from '/web/dom.js';
import { api, getToken, getSavedUser, saveSession, clearSession, onUnauthorized } from '/web/api.js';
import { store, subscribe, resetStore } from '/web/store.js';
import * as client from '/web/client.js';
import * as outbox from '/web/outbox.js';
import * as cache from '/web/cache.js';
import { initList, renderList } from '/web/views-list.js';
import { initChat, renderChat, renderTyping, resetComposer, showOpenedChat } from '/web/views-chat.js';
import { initInvites, closeInvites, readJoinLink } from '/web/views-invites.js';
import { initGroup, renderGroupPanel, closeGroupPanel } from '/web/views-group.js';
import { initSafety, closeSafetyPanels, openAccount, renderPerson } from '/web/views-safety.js';
import { initViewer } from '/web/views-viewer.js';
import { initAdmin, openAdmin, closeAdmin } from '/web/views-admin.js';
import { updateTitle, askForNotificationsOnce, notifyIncoming, rememberOpen, linkedConversation } from '/web/attention.js';

const BANNER = { online: 'Connected', offline: 'Offline: messages will be sent when the connection returns', connecting: 'Connecting…', syncing: 'Syncing…' };
const bannerText = (state) => (BANNER[state] ? t(BANNER[state]) : '');

let toastTimer = null;
function showError(e) {
  const toast = $('#toast');
  toast.textContent = (e && e.message) || String(e);
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { toast.hidden = true; }, 5000);
}

function setScreen(name) { document.body.dataset.screen = name; }

function renderBanner() {
  const b = $('#banner');
  b.dataset.state = store.connection;
  $('#banner-text').textContent = bannerText(store.connection);
}

// ---- auth ----
function setAuthMode(mode) {
  const form = $('#auth-form');
  form.dataset.mode = mode;
  $('#auth-mode-login').setAttribute('aria-selected', String(mode === 'login'));
  $('#auth-mode-register').setAttribute('aria-selected', String(mode === 'register'));
  $('#auth-password').autocomplete = mode === 'login' ? 'current-password' : 'new-password';
  $('#auth-error').textContent = '';
  if (mode === 'login') $('#auth-note').hidden = true;
}

// A join link (`/#join=CODE&organization=NAME`, made by an admin in the Invite panel): read
// once and taken out of the address bar, so the code is not left in history or on screen.
// Signed out, it opens the sign-up form with the code (and the organization) filled in;
// signed in, it is ignored.
function takeJoinLink() {
  if (takeVerifyLink()) return;
  const join = readJoinLink();
  if (!join) return;
  history.replaceState(history.state, '', location.pathname + location.search);
  if (document.body.dataset.screen === 'main' || getToken()) return;
  setAuthMode('register');
  $('#auth-invite').value = join.code;
  if (join.organization) $('#auth-organization').value = join.organization;
  const note = $('#auth-note');
  note.textContent = join.organization
    ? t('You are invited to join {organization}. Create your account to accept.', { organization: join.organization })
    : t('You are invited: type the organization\'s name and create your account to accept.');
  note.hidden = false;
  const first = ['#auth-organization', '#auth-email', '#auth-password', '#auth-display-name'].map((id) => $(id)).find((e) => !e.value.trim());
  (first || $('#auth-register')).focus();
}

// The link mailed to confirm an address (`/#verify=TOKEN`): taken out of the address bar at
// once, then it finishes the sign-up it was sent for and signs in.
function takeVerifyLink() {
  const match = /^#verify=([A-Za-z0-9_-]{20,100})$/.exec(location.hash);
  if (!match) return false;
  history.replaceState(history.state, '', location.pathname + location.search);
  if (document.body.dataset.screen === 'main' || getToken()) return true;
  setScreen('auth');
  setAuthMode('register');
  const note = $('#auth-note');
  note.textContent = t('Confirming your address…');
  note.hidden = false;
  api('POST', '/auth/verify', { token: match[1] }).then(async (res) => {
    saveSession(res.token, res.user, res.refreshToken, res.expiresAt);
    note.hidden = true;
    await enterMain(res.user);
  }).catch((e) => {
    note.hidden = true;
    $('#auth-error').textContent = e.message;
  });
  return true;
}

async function authenticate(kind) {
  const err = $('#auth-error');
  err.textContent = '';
  const body = {
    organization: $('#auth-organization').value.trim(),
    email: $('#auth-email').value.trim(),
    password: $('#auth-password').value,
  };
  if (kind === 'register') {
    body.displayName = $('#auth-display-name').value.trim();
    const invite = $('#auth-invite').value.trim();
    if (invite) body.inviteCode = invite;
  }
  if (!body.organization || !body.email || !body.password || (kind === 'register' && !body.displayName)) {
    err.textContent = t(kind === 'register' ? 'Fill in organization, email, password and display name.' : 'Fill in organization, email and password.');
    return;
  }
  const buttons = [$('#auth-login'), $('#auth-register')];
  buttons.forEach((b) => { b.disabled = true; });
  try {
    const res = await api('POST', kind === 'register' ? '/auth/register' : '/auth/login', body);
    $('#auth-password').value = '';
    if (!res.token && res.email) {
      // Joining by the email's domain: a link went to the address; it finishes the sign-up.
      const note = $('#auth-note');
      note.textContent = t('Check your email: we sent a link to {email}. Open it within 24 hours to finish joining.', { email: res.email });
      note.hidden = false;
      return;
    }
    saveSession(res.token, res.user, res.refreshToken, res.expiresAt);
    $('#auth-invite').value = '';
    $('#auth-note').hidden = true;
    await enterMain(res.user);
  } catch (e) {
    err.textContent = e.message;
  } finally { buttons.forEach((b) => { b.disabled = false; }); }
}

function initAuth() {
  setAuthMode('login');
  $('#auth-mode-login').addEventListener('click', () => setAuthMode('login'));
  $('#auth-mode-register').addEventListener('click', () => setAuthMode('register'));
  $('#auth-form').addEventListener('submit', (e) => {
    e.preventDefault();
    authenticate($('#auth-form').dataset.mode === 'register' ? 'register' : 'login');
  });
  $('#auth-register').addEventListener('click', () => authenticate('register'));
  $('#auth-form').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && $('#auth-form').dataset.mode === 'register' && e.target.tagName === 'INPUT') { e.preventDefault(); authenticate('register'); }
  });
}

async function signOut(callServer) {
  const me = store.me;
  if (callServer) await client.endSession(); else client.socket.stop();
  // What this tab saved of the account goes with the session (a shared computer).
  if (me) await cache.clearUser(me.id);
  clearSession();
  resetStore();
  resetComposer();
  closeInvites();
  closeGroupPanel();
  closeSafetyPanels();
  closeAdmin();
  closeMenu();
  for (const id of ['#new-chat-panel', '#forward-panel']) $(id).hidden = true;
  renderList(); renderChat();
  updateTitle();
  rememberOpen(null);
  setScreen('auth');
}

// ---- main ----
let subscribed = false;
async function enterMain(user) {
  setScreen('main');
  store.connection = 'connecting';
  renderBanner();
  if (!subscribed) {
    subscribed = true;
    subscribe((notes) => {
      let list = false; let chat = false; let typing = false;
      for (const n of notes) {
        if (n.what === 'connection') { renderBanner(); list = true; chat = true; }
        if (n.what === 'list' || n.what === 'users' || n.what === 'typing') list = true;
        if (n.what === 'users' || (n.what === 'chat' && (!n.conversationId || n.conversationId === store.openId))) chat = true;
        if (n.what === 'typing' && n.conversationId === store.openId) typing = true;
      }
      if (list) { renderList(); updateTitle(); }
      if (chat) { renderChat(); renderGroupPanel(); renderPerson(); } else if (typing) renderTyping();
    });
  }
  await client.startSession(user);
  renderList(); renderChat();
  openLinkedConversation();
  openAdminLink();
}

// `#admin`: the admin console (the menu shows it to admins only; anyone else who opens the
// link reads the server's refusal in the console). Taken out of the address bar at once.
function openAdminLink() {
  if (location.hash !== '#admin' || document.body.dataset.screen !== 'main') return;
  history.replaceState(history.state, '', location.pathname + location.search);
  openAdmin($('#menu-open'));
}

// ---- the menu: Account and privacy; Admin console (admins) ----
function closeMenu() {
  $('#app-menu').hidden = true;
  $('#menu-open').setAttribute('aria-expanded', 'false');
}
function initMenu() {
  const button = $('#menu-open');
  const menu = $('#app-menu');
  button.addEventListener('click', () => {
    const open = menu.hidden;
    menu.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
    if (open) menu.querySelector('button:not([hidden])')?.focus();
  });
  menu.addEventListener('keydown', (e) => { if (e.key === 'Escape') { closeMenu(); button.focus(); } });
  document.addEventListener('click', (e) => { if (!menu.hidden && !e.target.closest('.menu-wrap')) closeMenu(); });
  $('#account-open').addEventListener('click', () => { closeMenu(); openAccount(button); });
  $('#me-open').addEventListener('click', (e) => openAccount(e.currentTarget));
}

async function accountErased() {
  const me = store.me;
  await signOut(false);
  if (me) await outbox.clearUser(me.id).catch(() => {});
  $('#auth-error').textContent = t('Your account has been deleted.');
}

// A link to a conversation (`#c=ID`, kept in the address bar while it is open): opened at
// sign-in and on reload, or when the address changes to one.
function openLinkedConversation() {
  const id = linkedConversation();
  if (id && document.body.dataset.screen === 'main' && store.openId !== id) openChat(id).catch(showError);
}

async function openChat(id, seq) {
  $('#search-input').value = '';
  $('#search-results').hidden = true;
  $('#conversation-list').hidden = false;
  if (store.openId !== id) resetComposer();
  await client.openConversation(id);
  if (seq) {
    // A search hit: page back until it is loaded, then show it.
    for (let i = 0; i < 20 && !document.querySelector(`#messages [data-seq="${seq}"]`); i++) {
      renderChat();
      if (!(await client.loadOlder(id))) break;
    }
    renderChat();
    const el = document.querySelector(`#messages [data-seq="${seq}"]`);
    if (el) { el.scrollIntoView({ block: 'center' }); el.classList.add('flash'); setTimeout(() => el.classList.remove('flash'), 2000); }
  } else {
    showOpenedChat();
    if (window.matchMedia('(min-width: 721px)').matches) $('#composer').focus();
  }
}

function boot() {
  localize(document.body);
  initAuth();
  initList({ openChat, showError });
  initChat({ showError });
  initInvites();
  initGroup({ showError });
  initSafety({ showError, onErased: accountErased });
  initViewer();
  initAdmin();
  initMenu();
  client.init({
    onAuthFailed: () => { signOut(false); $('#auth-error').textContent = t('Your session has ended. Please sign in again.'); },
    onError: showError,
    onIncoming: (m) => notifyIncoming(m, (id) => openChat(id).catch(showError)),
    onOpened: rememberOpen,
    onSending: askForNotificationsOnce,
  });
  onUnauthorized(() => client.socket.onAuthFailed());
  $('#logout').addEventListener('click', () => { closeMenu(); signOut(true); });
  $('#back').addEventListener('click', () => client.closeConversation());
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      for (const id of ['#new-chat-panel', '#forward-panel']) $(id).hidden = true;
      closeInvites();
      closeMenu();
      for (const p of document.querySelectorAll('.react-picker:not([hidden])')) p.hidden = true;
    }
  });
  window.parleyDebug = {
    outboxSize: () => outbox.size(store.me?.id),
    cacheWrites: () => cache.stats.puts,
    // How many messages a conversation's window holds in memory, and whether older ones are left to page in.
    window: (id) => { const c = store.caches.get(id); return c ? { size: c.messages.size, oldestSeq: c.oldestSeq, hasMoreBefore: c.hasMoreBefore } : null; },
    state: () => ({
      me: store.me, connection: store.connection, openId: store.openId, socketAuthorizedUntil: store.socketAuthorizedUntil || null,
      conversations: [...store.conversations.values()].map((c) => ({ id: c.id, lastSeq: c.lastSeq, unreadCount: c.unreadCount, readSeq: c.readSeq })),
      pending: [...store.pending.values()].map((i) => ({ clientMessageId: i.clientMessageId, conversationId: i.conversationId, failed: !!i.failed })),
    }),
  };
  const token = getToken();
  const user = getSavedUser();
  if (token && user) enterMain(user).catch(showError);
  else setScreen('auth');
  takeJoinLink();
  window.addEventListener('hashchange', () => { takeJoinLink(); openLinkedConversation(); openAdminLink(); });
}

boot();
