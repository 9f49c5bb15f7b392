// "@" mentions in a composer: the word being typed, who it may mean, completing it, and the
// participants a text mentions when it is sent. The same rules as the SDK's ChatPresentation
// (mentionQuery, mentionCandidates, completingMention, mentions(in:)).
import { h } from '/web/dom.js';
import { store, userName } from '/web/store.js';

// The "@" word at the end of the text, lowercased; null when the text does not end in one.
export function mentionQuery(text) {
  const at = text.lastIndexOf('@');
  if (at < 0) return null;
  if (at > 0 && !/\s/.test(text[at - 1])) return null; // inside an address
  const word = text.slice(at + 1);
  if (/\s/.test(word) || word.length > 40) return null;
  return word.toLowerCase();
}

// Participants (not me) with a word of their name starting with the query, by name; at most 6.
export function mentionCandidates(query, conv) {
  const me = store.me?.id;
  return (conv?.participantIds || []).filter((id) => id !== me)
    .map((id) => ({ id, name: userName(id) }))
    .filter((c) => !query || c.name.toLowerCase().split(' ').some((w) => w.startsWith(query)))
    .sort((a, b) => a.name.localeCompare(b.name)).slice(0, 6);
}

export function completingMention(text, name) {
  if (mentionQuery(text) === null) return text;
  return `${text.slice(0, text.lastIndexOf('@'))}@${name} `;
}

// Every participant whose full name follows an "@" in the text (longest names first).
export function mentionsIn(text, conv) {
  const lowered = text.toLowerCase();
  const named = (conv?.participantIds || []).map((id) => ({ id, name: userName(id).toLowerCase() }))
    .filter((c) => c.name).sort((a, b) => b.name.length - a.name.length);
  const found = [];
  const taken = [];
  for (const c of named) {
    let from = 0;
    for (;;) {
      const at = lowered.indexOf(`@${c.name}`, from);
      if (at < 0) break;
      const end = at + c.name.length + 1;
      from = end;
      const startsWord = at === 0 || /\s/.test(lowered[at - 1]);
      const endsWord = end >= lowered.length || !/[\p{L}\p{N}]/u.test(lowered[end]);
      if (!startsWord || !endsWord || taken.some(([s, e]) => at < e && s < end)) continue;
      taken.push([at, end]);
      if (!found.includes(c.id)) found.push(c.id);
    }
  }
  return found.slice(0, 50);
}

// Attaches the completion popup to a composer: candidates appear under it while an "@" word
// is typed; ↑/↓ move, Enter or Tab choose, Escape closes. `conversation()` gives the open one.
export function attachMentionCompletion(composer, popup, conversation) {
  let choices = [];
  let index = 0;
  const close = () => { popup.hidden = true; choices = []; };
  const choose = (c) => {
    composer.value = completingMention(composer.value, c.name);
    close();
    composer.focus();
    composer.dispatchEvent(new Event('input'));
  };
  const render = () => {
    popup.replaceChildren(...choices.map((c, i) => h('li', {
      role: 'option', class: i === index ? 'active' : '', 'aria-selected': i === index ? 'true' : 'false',
      onmousedown: (e) => { e.preventDefault(); choose(c); },
    }, `@${c.name}`)));
    popup.hidden = choices.length === 0;
  };
  composer.addEventListener('input', () => {
    const query = mentionQuery(composer.value);
    if (query === null) { close(); return; }
    choices = mentionCandidates(query, conversation());
    index = 0;
    render();
  });
  composer.addEventListener('keydown', (e) => {
    if (popup.hidden || !choices.length) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      index = (index + (e.key === 'ArrowDown' ? 1 : choices.length - 1)) % choices.length;
      render();
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      e.preventDefault(); e.stopImmediatePropagation(); choose(choices[index]);
    } else if (e.key === 'Escape') { e.preventDefault(); e.stopImmediatePropagation(); close(); }
  }, true);
  composer.addEventListener('blur', () => setTimeout(close, 150));
  return { close };
}

