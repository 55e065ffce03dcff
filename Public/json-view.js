// JSON as a collapsible tree with syntax colours, path and value copy, and a table
// for arrays of objects. Everything is built with createElement/textContent.

import { el, copyText } from './dom.js';

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `.users[2].name`, or `["odd key"]` when a name is not an identifier. */
export function childPath(path, key) {
  if (typeof key === 'number') return `${path}[${key}]`;
  return IDENT.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

const AUTO_OPEN_DEPTH = 2;
const CHUNK = 200; // children shown at once under one node

export function jsonTree(value) {
  const root = el('ul', { class: 'json-tree', 'data-testid': 'json-tree', role: 'tree' });
  root.append(node(null, value, '', 0));
  return root;
}

function node(name, value, path, depth) {
  const li = el('li', { role: 'treeitem', 'data-path': path || '.' });
  const label = name === null ? null
    : el('span', { class: typeof name === 'number' ? 'j-index' : 'j-key' }, typeof name === 'number' ? String(name) : JSON.stringify(name));
  const tools = el('span', { class: 'j-tools' },
    el('button', { type: 'button', class: 'icon', title: 'Copy path', 'data-testid': 'copy-path',
      onclick: (e) => copyText(path || '.', e.currentTarget) }, 'path'),
    el('button', { type: 'button', class: 'icon', title: 'Copy value', 'data-testid': 'copy-value',
      onclick: (e) => copyText(JSON.stringify(value, null, 2), e.currentTarget) }, 'value'));
  const container = value !== null && typeof value === 'object';
  if (!container) {
    li.append(label ?? '', label ? el('span', { class: 'j-punct' }, ': ') : '', scalar(value), tools);
    return li;
  }
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
  const summary = isArray ? `[${entries.length}]` : `{${entries.length}}`;
  const toggle = el('button', { type: 'button', class: 'j-toggle', 'aria-expanded': 'false' }, '▸');
  const children = el('ul', { role: 'group', hidden: true });
  let shown = 0;
  const showMore = () => {
    children.querySelector(':scope > .j-more')?.remove();
    for (const [k, v] of entries.slice(shown, shown + CHUNK)) children.append(node(k, v, childPath(path, k), depth + 1));
    shown = Math.min(entries.length, shown + CHUNK);
    if (shown < entries.length) {
      children.append(el('li', { class: 'j-more' },
        el('button', { type: 'button', onclick: showMore }, `show ${Math.min(CHUNK, entries.length - shown)} more of ${entries.length - shown}`)));
    }
  };
  const setOpen = (open) => {
    if (open && shown === 0) showMore();
    children.hidden = !open;
    toggle.textContent = open ? '▾' : '▸';
    toggle.setAttribute('aria-expanded', String(open));
    li.setAttribute('aria-expanded', String(open));
  };
  toggle.addEventListener('click', () => setOpen(children.hidden));
  li.append(toggle, label ?? '', label ? el('span', { class: 'j-punct' }, ': ') : '',
    el('span', { class: 'j-summary' }, summary), tools, children);
  setOpen(depth < AUTO_OPEN_DEPTH && entries.length > 0);
  return li;
}

function scalar(value) {
  if (value === null) return el('span', { class: 'j-null' }, 'null');
  switch (typeof value) {
    case 'string': return el('span', { class: 'j-string' }, JSON.stringify(value));
    case 'number': return el('span', { class: 'j-number' }, String(value));
    case 'boolean': return el('span', { class: 'j-bool' }, String(value));
    default: return el('span', {}, String(value));
  }
}

/** True when `value` is a non-empty array of plain objects (a table makes sense). */
export function isTable(value) {
  return Array.isArray(value) && value.length > 0 &&
    value.every((row) => row !== null && typeof row === 'object' && !Array.isArray(row));
}

export function jsonTable(rows, limit = 1000) {
  const columns = [...new Set(rows.slice(0, limit).flatMap((r) => Object.keys(r)))];
  const cell = (v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));
  return el('div', { class: 'table-wrap' },
    el('table', { 'data-testid': 'json-table' },
      el('thead', {}, el('tr', {}, el('th', {}, '#'), columns.map((c) => el('th', { scope: 'col' }, c)))),
      el('tbody', {}, rows.slice(0, limit).map((row, i) =>
        el('tr', {}, el('td', { class: 'j-index' }, String(i)), columns.map((c) => el('td', {}, cell(row[c]))))))),
    rows.length > limit ? el('p', { class: 'note' }, `first ${limit} of ${rows.length} rows`) : null);
}

/** Parses NDJSON; throws with the line number of the first bad line. */
export function parseNDJSON(text) {
  const out = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try { out.push(JSON.parse(line)); } catch (e) { throw new Error(`line ${i + 1}: ${e.message}`); }
  });
  return out;
}
