// @ts-check
// DOM helpers of the dashboard: element lookup, element building (text nodes only,
// never innerHTML), tables, timestamps and the status line.

/** @typedef {Node | string | number | false | null | undefined} Leaf */
/** @typedef {Leaf | Leaf[]} Child */
/** @typedef {(event: Event) => unknown} Handler */
/** @typedef {string | number | boolean | null | undefined | Handler | Record<string, string>} AttrValue */
/**
 * Attributes of `h`: `on<event>` handlers, `dataset` (an object of data-* values),
 * true for a bare attribute, false/null/undefined for none, anything else as a string.
 * @typedef {Record<string, AttrValue>} Attrs
 */

/**
 * The element with this id, checked to be of `type` (HTMLElement by default).
 * Example: `byId('api-key', HTMLInputElement).value`
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {new () => T} [type]
 * @returns {T}
 */
export function byId(id, type) {
  const el = document.getElementById(id);
  if (!el || !(el instanceof (type ?? HTMLElement)))
    throw new Error(`the page has no #${id}${type ? ` of type ${type.name}` : ''}`);
  return /** @type {T} */ (el);
}

/**
 * A new element with attributes and children (strings become text nodes).
 * Example: `h('button', { type: 'button', onclick: () => go() }, 'Go')`
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === 'function') {
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    } else if (typeof v === 'object') {
      if (k === 'dataset') Object.assign(el.dataset, v);
    } else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat())
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * A new SVG element with attributes (set as they are) and children.
 * Example: `svg('rect', { x: 0, y: 0, width: 10, height: 20, class: 'allow' })`
 * @param {string} tag
 * @param {Record<string, string | number | undefined>} [attrs]
 * @param {...(SVGElement | string)} children
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return /** @type {SVGElement} */ (el);
}

/**
 * The longest run of characters without a space that is never broken across lines
 * (an action, an agent id, a policy name): a table column is at least that wide. A
 * longer run (a 256-character id) may break after its separators, else anywhere.
 */
export const WORD_MAX = 32;

/**
 * A value's words as nodes: each word of up to WORD_MAX characters whole on one line
 * (`span.word`, never broken inside, not even after its hyphens), a longer one with
 * break opportunities after its separators (dot, hyphen, underscore, colon, slash, at sign) and anywhere as a last
 * resort (`span.breakable`), the spaces between them kept as text.
 * Example: `h('td', {}, words('payments.refund for order:1001'))`
 * @param {string} value
 * @returns {Array<Node | string>}
 */
export function words(value) {
  return value
    .split(/(\s+)/)
    .filter(Boolean)
    .map((part) => {
      if (/^\s+$/.test(part)) return part;
      if (part.length <= WORD_MAX) return h('span', { class: 'word' }, part);
      const pieces = part.split(/(?<=[.\-_:/@])/);
      return h(
        'span',
        { class: 'breakable' },
        pieces.flatMap((piece, i) => (i ? [document.createElement('wbr'), piece] : [piece])),
      );
    });
}

/**
 * A table cell holding a time (time()): on one line where the table has room, else
 * its date over its clock, each whole (never broken at the date's hyphens).
 * Example: `h('tr', {}, timeCell(d.evaluated_at))`
 * @param {string | null | undefined} iso
 * @returns {HTMLElement}
 */
export const timeCell = (iso) => h('td', { class: 'time' }, words(time(iso)));

/**
 * A value that may be long (an id, a URL, an error): its words kept whole (see
 * words()), cut after three lines, and the full value in its title.
 * Example: `h('td', {}, long(agent.agent_id))`
 * @param {string} value
 * @returns {HTMLSpanElement}
 */
export function long(value) {
  return h('span', { class: 'long', title: value }, words(value));
}

/**
 * The cells every list of decisions starts with: when, agent, action, resource.
 * Example: `h('tr', {}, ...decisionLeadCells(d), h('td', {}, d.reason))`
 * @param {{ evaluated_at: string, agent_id: string, action: string, resource?: string | null }} d
 * @returns {HTMLElement[]}
 */
export function decisionLeadCells(d) {
  return [
    timeCell(d.evaluated_at),
    h('td', {}, long(d.agent_id)),
    h('td', {}, long(d.action)),
    h('td', {}, d.resource == null ? '—' : long(d.resource)),
  ];
}

/**
 * An API timestamp as shown, the one time format of every view (UTC, to the second):
 * `2024-05-01T12:00:00.123Z` -> `2024-05-01 12:00:00Z`; none -> an em dash.
 * @param {string | null | undefined} iso
 * @returns {string}
 */
export const time = (iso) => (iso ? iso.replace('T', ' ').replace(/(:\d\d)(\.\d+)?Z$/, '$1Z') : '—');

/**
 * "Updated <now>" in the same format, for the views that refresh.
 * Example: `updated.textContent = updatedNow()`
 * @returns {string}
 */
export const updatedNow = () => `Updated ${time(new Date().toISOString())}`;

/**
 * A table with a caption (or, for a table under its own heading, the id of that
 * heading instead: no caption repeats it), column headings and body rows. Wide
 * tables scroll sideways inside their wrapper rather than squeeze their words.
 * Example: `table('Agents', ['Agent', 'Status'], rows)`, `table({ labelledBy: 'budgets-title' }, [...], rows)`
 * @param {string | { labelledBy: string }} caption
 * @param {string[]} headers
 * @param {HTMLTableRowElement[]} rows
 * @returns {HTMLElement}
 */
export function table(caption, headers, rows) {
  const titled = typeof caption === 'string';
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      titled ? {} : { 'aria-labelledby': caption.labelledBy },
      titled ? h('caption', {}, caption) : null,
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((t) => h('th', { scope: 'col' }, t)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

/**
 * Shows a message on the status line (announced to screen readers).
 * Example: `say('Policy saved.')`, `say('Could not save', 'error')`
 * @param {string} message
 * @param {'info' | 'error'} [kind]
 */
export function say(message, kind = 'info') {
  const s = byId('status');
  s.textContent = message;
  s.className = kind;
}

/**
 * A message in place of a view's content.
 * @param {string} message
 * @returns {HTMLParagraphElement}
 */
export const failure = (message) => h('p', { class: 'error' }, message);
