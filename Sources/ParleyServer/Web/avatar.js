// A person's picture, or their initials while it loads, when they have none, or when it cannot
// be had. The picture needs the token, so it comes through attachmentBlobUrl (one download per
// address for the page's life); an address never changes its bytes, so a new picture is a new
// address. Addresses already loaded are shown at once, without a frame of initials.
import { h } from '/web/dom.js';
import { attachmentBlobUrl } from '/web/api.js';

const loaded = new Map();

// Up to two letters: "AL" for "Ada Lovelace", "A" for "ada", "#" for nothing.
export function initials(name) {
  const words = String(name || '').trim().split(/\s+/).filter(Boolean);
  if (!words.length) return '#';
  const first = [...words[0]][0] || '';
  const last = words.length > 1 ? [...words[words.length - 1]][0] || '' : '';
  return (first + last).toUpperCase();
}

// opts: {small} (24 px, beside a sender's name or in a member list), {large} (72 px, one's own
// profile), {presence} (a node shown at the corner).
export function avatar(name, pictureUrl, opts = {}) {
  const el = h('div', { class: `avatar${opts.small ? ' small' : ''}${opts.large ? ' large' : ''}`, 'aria-hidden': 'true' },
    h('span', { class: 'initials' }, initials(name)));
  if (pictureUrl) {
    const img = h('img', { class: 'avatar-img', alt: '', decoding: 'async', draggable: 'false' });
    if (loaded.has(pictureUrl)) {
      img.src = loaded.get(pictureUrl);
      el.classList.add('pictured');
    } else {
      // Shown once it decodes: bytes that are no image leave the initials.
      img.addEventListener('load', () => { loaded.set(pictureUrl, img.src); el.classList.add('pictured'); }, { once: true });
      attachmentBlobUrl(pictureUrl).then((src) => { img.src = src; }).catch(() => {});
    }
    el.appendChild(img);
  }
  if (opts.presence) el.appendChild(opts.presence);
  return el;
}
