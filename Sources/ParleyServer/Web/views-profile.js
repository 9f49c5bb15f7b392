// The user's own profile in the Account panel: their picture (choose an image, or remove it)
// and display name. Each change is one PATCH /users/me; the answer updates the page at once
// and user.updated brings it to everyone else in the organization.
import { t } from '/web/i18n.js';
import { $ } from '/web/dom.js';
import { uploadAttachment } from '/web/api.js';
import { store } from '/web/store.js';
import * as client from '/web/client.js';
import { avatar } from '/web/avatar.js';

const PICTURE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export function initProfile() {
  $('#profile-picture-choose').addEventListener('click', () => $('#profile-picture-input').click());
  $('#profile-picture-input').addEventListener('change', (e) => {
    const file = e.target.files && e.target.files[0];
    e.target.value = '';
    if (file) choosePicture(file);
  });
  $('#profile-picture-remove').addEventListener('click', () => change({ avatarId: null }, t('Picture removed.')));
  $('#profile-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const name = $('#profile-name').value.trim();
    if (!name) { say(t('Type a name.'), true); return; }
    if (name === store.me?.displayName) { say(t('That is your name already.')); return; }
    change({ displayName: name }, t('Name saved.'));
  });
}

// Fills the section from the signed-in user (when the panel opens, and after each change).
export function renderProfile() {
  const me = store.me;
  if (!me) return;
  $('#profile-avatar').replaceChildren(avatar(me.displayName, me.avatarUrl || null, { large: true }));
  $('#profile-picture-remove').hidden = !me.avatarUrl;
  if (document.activeElement !== $('#profile-name')) $('#profile-name').value = me.displayName;
}

async function choosePicture(file) {
  if (!PICTURE_TYPES.has(file.type)) { say(t('Choose a PNG, JPEG, GIF or WebP image.'), true); return; }
  say(t('Uploading…'));
  try {
    const attachment = await uploadAttachment(file, (f) => say(t('Uploading… {percent} %', { percent: Math.round(f * 100) })));
    await change({ avatarId: attachment.id }, t('Picture saved.'));
  } catch (e) { say(e.message, true); }
}

async function change(body, done) {
  const buttons = ['#profile-save', '#profile-picture-choose', '#profile-picture-remove'].map((s) => $(s));
  for (const b of buttons) b.disabled = true;
  try {
    await client.updateProfile(body);
    renderProfile();
    say(done);
  } catch (e) {
    say(e.message, true);
  } finally { for (const b of buttons) b.disabled = false; }
}

function say(text, error = false) {
  const status = $('#profile-status');
  status.textContent = text;
  status.classList.toggle('error', error);
}
