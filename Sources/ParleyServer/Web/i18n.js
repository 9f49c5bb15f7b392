// The web client's words in the browser's language: English as written in the code, French
// from the table below, keyed by the English text as gettext does. index.html's fixed texts
// are put in the language once at start (localize); the views call t() for what they write.
// Only the client's own words go through here: what people type (messages, names, searches)
// never does, so a message that reads "Delete" stays "Delete".
import { FRENCH } from '/web/i18n-fr.js';

const TABLES = { fr: FRENCH };

// The first of the browser's languages this client has, else English.
function choose() {
  const wanted = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en']);
  for (const tag of wanted) {
    const code = String(tag || '').toLowerCase().split('-')[0];
    if (code === 'en') return 'en';
    if (TABLES[code]) return code;
  }
  return 'en';
}

export const language = choose();
const table = TABLES[language] || null;

// `english` in the page's language, each {name} filled from `values` in one pass (a value that
// reads "{name}" stays as typed).
export function t(english, values = null) {
  const template = (table && table[english]) || english;
  if (!values) return template;
  return template.replace(/\{(\w+)\}/g, (whole, name) => (Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole));
}

// Plural choice: `one` when n is 1 (0 and 1 in French), else `other`; both are English keys.
export function tn(n, one, other, values = {}) {
  const single = language === 'fr' ? n === 0 || n === 1 : n === 1;
  return t(single ? one : other, { n, ...values });
}

const ATTRIBUTES = ['placeholder', 'aria-label', 'title', 'alt'];

// Puts the fixed texts under `root` in the page's language: text nodes and the attributes
// people read or hear. Called once on index.html, before anything of anybody's is shown.
export function localize(root = document.body) {
  document.documentElement.lang = language;
  if (!table) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const text = node.nodeValue.trim();
    if (text && table[text]) node.nodeValue = node.nodeValue.replace(text, table[text]);
  }
  for (const el of root.querySelectorAll(ATTRIBUTES.map((a) => `[${a}]`).join(','))) {
    for (const name of ATTRIBUTES) {
      const value = el.getAttribute(name);
      if (value && table[value]) el.setAttribute(name, table[value]);
    }
  }
}
