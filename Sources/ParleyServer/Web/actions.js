// What a user does to messages and conversations besides sending: edits, deletes, reactions,
// forwards, threads, pins, mute, group changes, search, blocks and reports. Each is one REST
// call; its answer updates the store at once, and the server's events bring it to other devices.
import { api, qs, saveSession } from '/web/api.js';
import {
  store, emit, applyConversation, applyMessageToList, upsertMessage, forgetBlockMarks, applyProfile,
} from '/web/store.js';
import { hook, ensureUsers, closeConversation } from '/web/client.js';
import { sendMessage } from '/web/sending.js';

// ---- edits, deletes, reactions (REST; the events bring them to other devices) ----
async function mutate(method, path, body) {
  try {
    const m = await api(method, path, body);
    if (m && m.id) { upsertMessage(m); applyMessageToList(m, false); emit('chat', m.conversationId); emit('list'); }
    return m;
  } catch (e) { hook('onError', e); return null; }
}
const mpath = (c, id) => `/conversations/${c}/messages/${id}`;
export const editMessage = (c, id, text) => mutate('PATCH', mpath(c, id), { text });
export const deleteMessage = (c, id) => mutate('DELETE', mpath(c, id));
export const addReaction = (c, id, emoji) => mutate('POST', `${mpath(c, id)}/reactions`, { emoji });
export const removeReaction = (c, id, emoji) => mutate('DELETE', `${mpath(c, id)}/reactions/${encodeURIComponent(emoji)}`);
export const forwardMessage = (toConversationId, messageId) => sendMessage({ conversationId: toConversationId, forwardOf: messageId, type: 'text' });

// ---- threads, pins, mute ----
// A thread's root and newest replies into the cache (live replies arrive as any message does).
export async function loadThread(conversationId, rootId) {
  const res = await api('GET', `/conversations/${conversationId}/threads/${rootId}${qs({ limit: 200 })}`);
  upsertMessage(res.root);
  for (const m of res.messages) upsertMessage(m);
  ensureUsers(res.messages.map((m) => m.senderId));
  emit('chat', conversationId);
}
export const setPinned = (c, id, pinned) => (pinned
  ? mutate('POST', `/conversations/${c}/pins`, { messageId: id })
  : mutate('DELETE', `/conversations/${c}/pins/${id}`));
// Mute is the user's own, on every device: the server sends the others the new view.
export async function setMuted(conversationId, muted) {
  await api('PUT', `/conversations/${conversationId}/settings`, { muted });
  const conv = store.conversations.get(conversationId);
  if (conv) { conv.muted = muted; if (!muted) delete conv.mutedUntil; }
  emit('list'); emit('chat', conversationId);
}

// ---- groups: rename, members, leave (any participant of a group; the server writes a system
// message for each, and `conversation.updated` brings the change to every device) ----
async function changeGroup(method, path, body) {
  const conv = await api(method, path, body);
  if (conv && conv.participantIds && conv.participantIds.includes(store.me.id)) applyConversation(conv);
  emit('list'); emit('chat', conv?.id);
  return conv;
}
export const renameGroup = (id, name) => changeGroup('PATCH', `/conversations/${id}`, { name });
export const addToGroup = (id, userIds) => changeGroup('POST', `/conversations/${id}/participants`, { userIds });
export const removeFromGroup = (id, userId) => changeGroup('DELETE', `/conversations/${id}/participants/${userId}`);
export async function leaveGroup(id) {
  await api('DELETE', `/conversations/${id}/participants/${store.me.id}`);
  store.conversations.delete(id);
  if (store.openId === id) closeConversation();
  emit('list');
}

export const search = (q) => api('GET', `/search${qs({ q, limit: 30 })}`);

// ---- trust and safety: blocks are the user's own; reports go to the admins ----
export async function loadBlocked() {
  const res = await api('GET', '/users/blocked');
  store.blocked = new Set((res.users || []).map((u) => u.id));
  for (const u of res.users || []) if (!store.users.has(u.id)) store.users.set(u.id, u);
  emit('users');
}
export async function setBlocked(userId, blocked) {
  await api(blocked ? 'POST' : 'DELETE', `/users/${userId}/block`);
  if (blocked) store.blocked.add(userId);
  else { store.blocked.delete(userId); forgetBlockMarks(userId); }
  emit('users'); emit('list'); emit('chat');
}
// ---- one's own profile: {displayName?, avatarId?: id | null} → the user as changed ----
export async function updateProfile(change) {
  const { user } = await api('PATCH', '/users/me', change);
  applyProfile(user);
  saveSession(null, store.me);
  return user;
}
// {messageId?, userId?, reason} → {id, status}
export const report = (body) => api('POST', '/reports', body);
