// What brings a person back to a conversation: the unread count in the tab's title, a
// system notification for a message elsewhere (when they allowed it), and a link per
// conversation (`#c=ID`) that survives a reload. Text from others is only ever text here:
// a title and a notification body are plain strings.
import { t } from '/web/i18n.js';
import { store, userName, conversationName } from '/web/store.js';

const BASE_TITLE = 'Parley';
const ASKED_KEY = 'parley.askedNotifications';
const LINK = /^#c=([0-9a-fA-F-]{36})$/;

// "(3) Parley": every unread message over the conversations, none shown as just "Parley".
export function updateTitle() {
  let unread = 0;
  for (const c of store.conversations.values()) unread += Math.max(0, c.unreadCount || 0);
  const title = unread > 0 ? `(${unread > 999 ? '999+' : unread}) ${BASE_TITLE}` : BASE_TITLE;
  if (document.title !== title) document.title = title;
}

// Asked once, when the person sends their first message (inside that gesture), not at load:
// the prompt then comes with its reason.
export function askForNotificationsOnce() {
  if (!('Notification' in window) || Notification.permission !== 'default') return;
  try { if (localStorage.getItem(ASKED_KEY)) return; localStorage.setItem(ASKED_KEY, '1'); } catch { return; }
  Promise.resolve(Notification.requestPermission()).catch(() => {});
}

// A message from someone else: a notification unless its conversation is on screen in a
// visible tab. Clicking it brings the tab forward on that conversation.
export function notifyIncoming(message, open) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  if (!document.hidden && store.openId === message.conversationId) return;
  const conv = store.conversations.get(message.conversationId);
  const sender = userName(message.senderId);
  const title = conv && conv.type !== 'direct' ? t('{name} in {conversation}', { name: sender, conversation: conversationName(conv) }) : sender;
  const first = (message.text || '').split('\n')[0].slice(0, 140);
  const body = first || (message.attachment ? `📎 ${message.attachment.name || t('attachment')}` : t('New message'));
  try {
    const shown = new Notification(title, { body, tag: message.conversationId });
    shown.onclick = () => { window.focus(); open(message.conversationId); shown.close(); };
  } catch { /* a browser that allows only service-worker notifications: the title count stays */ }
}

// The address of the conversation on screen, kept in the address bar (replaced, not pushed:
// Back leaves the app rather than walking through every chat opened).
export function rememberOpen(id) {
  const target = id ? `#c=${id}` : '';
  if (location.hash === target || (!id && !LINK.test(location.hash))) return;
  history.replaceState(history.state, '', location.pathname + location.search + target);
}

// The conversation a link names, if any.
export function linkedConversation() {
  const match = LINK.exec(location.hash);
  return match ? match[1].toLowerCase() : null;
}
