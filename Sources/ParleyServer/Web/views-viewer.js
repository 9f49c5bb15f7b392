// A picture full screen: as large as the window allows, with its name, a download link, and
// Escape, ✕ or a click beside it to close (the focus goes back to the picture in the chat).
import { $ } from '/web/dom.js';

let opener = null;

export function initViewer() {
  const overlay = $('#image-viewer');
  $('#viewer-close').addEventListener('click', closeViewer);
  overlay.addEventListener('click', (e) => { if (e.target === overlay) closeViewer(); });
  overlay.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.stopPropagation(); closeViewer(); } });
}

// src: the picture's object URL (already fetched with the token for the chat); name: its file name.
export function openViewer(src, name, from) {
  opener = from || null;
  const img = $('#viewer-image');
  img.src = src;
  img.alt = name || 'image';
  $('#viewer-name').textContent = name || 'image';
  const download = $('#viewer-download');
  download.href = src;
  download.download = name || 'image';
  $('#image-viewer').hidden = false;
  $('#viewer-close').focus();
}

export function closeViewer() {
  const overlay = $('#image-viewer');
  if (overlay.hidden) return;
  overlay.hidden = true;
  $('#viewer-image').removeAttribute('src');
  if (opener && document.contains(opener)) opener.focus();
  opener = null;
}
