// Tiny DOM helpers. Data never goes through HTML parsing: text is added as text nodes,
// attributes through setAttribute / properties. There is no innerHTML anywhere in this app.

// h('div', {class: 'x', dataset: {id}, onclick: fn, 'aria-label': '...'}, child, 'text', [more])
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'dataset') {
        for (const [k, v] of Object.entries(value)) if (v !== undefined && v !== null) el.dataset[k] = String(v);
      } else if (key.startsWith('on') && typeof value === 'function') {
        el.addEventListener(key.slice(2), value);
      } else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'hidden' || key === 'type' || key === 'max') {
        el[key] = value;
      } else if (value === true) {
        el.setAttribute(key, '');
      } else {
        el.setAttribute(key, String(value));
      }
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function setChildren(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

export function formatTime(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function dayKey(iso) {
  const d = new Date(iso || Date.now());
  return `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
}

export function formatDay(iso) {
  const d = new Date(iso || Date.now());
  const today = new Date();
  const yesterday = new Date(Date.now() - 86400000);
  // "Today" and "Yesterday" in the browser's language ("Aujourd’hui", "Gestern"), like its dates.
  if (dayKey(d) === dayKey(today)) return relativeDay(0);
  if (dayKey(d) === dayKey(yesterday)) return relativeDay(-1);
  return d.toLocaleDateString([], { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric' });
}

const relative = typeof Intl !== 'undefined' && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }) : null;
function relativeDay(offset) {
  const words = relative ? relative.format(offset, 'day') : (offset === 0 ? 'today' : 'yesterday');
  return words.charAt(0).toLocaleUpperCase() + words.slice(1);
}

export function formatListTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (dayKey(d) === dayKey(new Date())) return formatTime(iso);
  return d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

export function formatSize(n) {
  if (!(n >= 0)) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}
