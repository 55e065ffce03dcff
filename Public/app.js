// Larder viewer: browse, view, edit and follow the store from a browser.
//
// Stable hooks for browser tests (data-testid):
//   tree            the key tree (ul[role=tree])
//   tree-folder     a prefix in the tree, with data-prefix="users/"
//   tree-item       a key in the tree, with data-key="users/1"
//   fixture-badge   the "fixture" badge of a key served from the fixtures
//   load-more       "Load more" at the end of a loaded page of a level
//   delete-prefix   the delete button of a prefix (asks for confirmation)
//   filter          the filter box over the loaded levels
//   new-key-button, upload-button, refresh, token-button, live-status (header)
//   namespace-picker the namespace <select> (option value '' = the default one)
//   drop-zone       shown while a file is dragged over the page
//   value-view      the pane showing the open value (data-open-key = the open key)
//   value-meta      the open value's metadata line
//   json-tree       the JSON tree (li[data-path] per node); copy-path, copy-value
//   json-table      the table of an array of objects / NDJSON
//   view-tree, view-raw, view-table   view switches; raw-view is the raw <pre>
//   text-view, image-view, hex-view, not-found
//   large-value     the notice for a value over 2 MiB; load-anyway, show-hex
//   edit, delete, copy-key, download   actions on the open value
//   changed-mark    "changed on the server" notice; reload-changed reloads it
//   editor          the textarea; editor-type, ttl, format, save, cancel-edit, editor-error
//   conflict-dialog the 412 dialog: reload, compare-button (compare, compare-mine,
//                   compare-theirs), overwrite, cancel
//   confirm-dialog  confirmations: confirm, cancel
//   create-dialog   new key / upload: new-key, new-type, new-body, upload-input,
//                   new-ttl, create, replace, new-error, cancel
//   token-form      the token form (token-input, token-submit)
//   toast           the status line
//   pane-tabs       the header's tab list: tab-keys, tab-requests, tab-faults
//                   (aria-selected="true" on the shown one; #/requests, #/faults)
//   requests-pane   the request journal, newest on top: journal (the table),
//                   journal-entry (a row; data-seq, data-method, data-status,
//                   data-path), journal-key (the link of a /store/<key> row),
//                   fault-badge (the rule that acted), journal-method,
//                   journal-status-filter, journal-prefix (the filters),
//                   journal-clear, journal-live (data-state live/offline/...),
//                   journal-summary, journal-empty, journal-error
//   faults-pane     the fault rules: faults-off (no --allow-faults), faults-status,
//                   faults-refresh, faults-clear, faults-empty, faults-error,
//                   fault-rules (the table), fault-rule (a row, data-rule-id),
//                   fault-remaining, fault-matched, fault-fired, fault-other,
//                   fault-remove; fault-form: fault-id, fault-prefix, fault-method
//                   (checkboxes, data-method), fault-delay, fault-jitter,
//                   fault-status, fault-probability, fault-count, fault-drop,
//                   fault-truncate, fault-rate, fault-add, fault-error

import { request, keyURL, prefixURL, errorText, head, metaFrom, onUnauthorized, getToken, setToken } from './api.js';
import { el, formatBytes, formatTime, copyText, confirmDialog, toast } from './dom.js';
import { KeyTree, parentOf } from './tree.js';
import { jsonTree, jsonTable, isTable, parseNDJSON } from './json-view.js';
import { showEditor, createDialog, isJSONType } from './editor.js';
import { LiveFeed } from './live.js';
import { namespacePicker } from './namespaces.js';
import { PaneTabs, paneOfHash } from './tabs.js';
import { RequestsPane } from './requests.js';
import { FaultsPane } from './faults.js';

const LARGE = 2 * 1024 * 1024;
const HEX_BYTES = 4096;

const pane = document.getElementById('value');
const state = {
  key: null,        // the open key
  meta: null,       // its metadata (etag, size, contentType, ...)
  editing: false,
  saving: false,
  deferred: [],     // events for the open key that came during a save
  objectURL: null,
  openSeq: 0,
};

// ---- token ----

onUnauthorized(() => askToken());

function askToken(message = 'This server needs a token.') {
  return new Promise((resolve) => {
    const input = el('input', { type: 'password', required: true, autocomplete: 'off', 'data-testid': 'token-input', 'aria-label': 'Token' });
    const dialog = el('dialog', { class: 'dialog' },
      el('form', { 'data-testid': 'token-form', onsubmit: (e) => {
        e.preventDefault();
        setToken(input.value.trim());
        done(true);
        live.connect();
      } },
        el('h2', {}, 'Token'),
        el('p', {}, message),
        el('label', { class: 'field' }, 'Bearer token', input),
        el('div', { class: 'actions' },
          el('button', { type: 'button', 'data-testid': 'cancel', onclick: () => done(false) }, 'Cancel'),
          el('button', { type: 'submit', class: 'primary', 'data-testid': 'token-submit' }, 'Use token'))));
    const done = (ok) => { dialog.close(); dialog.remove(); resolve(ok); };
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}

// ---- the tree ----

const tree = new KeyTree(document.getElementById('tree'), {
  onOpenKey: (key) => { location.hash = keyHash(key); },
  onDeletePrefix: deletePrefix,
});

document.getElementById('filter').addEventListener('input', (e) => tree.setFilter(e.target.value));
document.getElementById('filter').addEventListener('keydown', (e) => {
  // Enter: a text ending in "/" opens that prefix in the tree (loading pages as
  // needed); a text with a "/" that names a key opens the key
  const text = e.target.value.trim();
  if (e.key !== 'Enter' || !text.includes('/')) return;
  e.target.value = '';
  tree.setFilter('');
  if (text.endsWith('/')) {
    tree.revealPrefix(text).then((found) => { if (!found) toast(`No prefix ${text} in the loaded pages`, 'error'); });
  } else {
    location.hash = keyHash(text);
  }
});

async function deletePrefix(prefix) {
  const ok = await confirmDialog(`Delete every key under “${prefix}”? Keys with a fixture revert to it.`, 'Delete all');
  if (!ok) return;
  const res = await request(prefixURL(prefix), { method: 'DELETE' });
  if (!res.ok) return toast(await errorText(res), 'error');
  const { deleted } = await res.json();
  toast(`Deleted ${deleted} key(s) under ${prefix}`);
  await tree.reloadLevel(parentOf(prefix));
}

// ---- the URL hash: #/key/<segments> ----

const keyHash = (key) => '#/key/' + key.split('/').map(encodeURIComponent).join('/');

function keyFromHash() {
  const m = /^#\/key\/(.+)$/.exec(location.hash);
  if (!m) return null;
  try { return m[1].split('/').map(decodeURIComponent).join('/'); } catch { return null; }
}

window.addEventListener('hashchange', () => {
  const name = paneOfHash(location.hash);
  tabs.select(name);
  if (name !== 'keys') return; // the open key stays open behind the other panes
  const key = keyFromHash();
  if (key !== null && key !== state.key) openKey(key);
  else if (key === null) closeValue();
});

// ---- the value pane ----

function closeValue() {
  state.key = null;
  state.meta = null;
  state.editing = false;
  revokeURL();
  tree.select(null);
  pane.removeAttribute('data-open-key');
  pane.replaceChildren(el('p', { class: 'placeholder' }, 'Choose a key on the left, or create one.'));
}

function revokeURL() {
  if (state.objectURL) URL.revokeObjectURL(state.objectURL);
  state.objectURL = null;
}

const kindOf = (type, key) => {
  const t = (type || '').split(';')[0].trim().toLowerCase();
  if (t === 'application/x-ndjson' || t === 'application/ndjson' || key.endsWith('.ndjson')) return 'ndjson';
  if (isJSONType(t)) return 'json';
  if (['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml'].includes(t)) return 'image';
  if (t.startsWith('text/') || /^application\/(xml|yaml|javascript|x-yaml|toml)$/.test(t) || t.endsWith('+xml')) return 'text';
  return 'binary';
};

/** Opens `key`: HEAD first (size, type), then loads what fits. */
async function openKey(key, { force = false, keepMark = false } = {}) {
  const seq = ++state.openSeq;
  const reopen = state.key === key;
  state.key = key;
  state.editing = false;
  revokeURL();
  tree.select(key);
  if (!reopen) tree.reveal(key).catch(() => {}); // a reload of the same key leaves the tree as it is
  pane.dataset.openKey = key;
  pane.replaceChildren(el('p', { class: 'placeholder' }, 'Loading…'));
  let meta;
  try {
    meta = await head(key);
  } catch (e) {
    if (seq === state.openSeq) pane.replaceChildren(header(key, null), el('p', { class: 'error' }, String(e.message)));
    return;
  }
  if (seq !== state.openSeq) return;
  state.meta = meta;
  if (!meta) {
    pane.replaceChildren(header(key, null), el('p', { class: 'error', 'data-testid': 'not-found' }, 'No such key (deleted or expired).'));
    return;
  }
  const kind = kindOf(meta.contentType, key);
  const body = el('div', { class: 'value-body' });
  pane.replaceChildren(header(key, meta, kind), body);
  if (keepMark) showChanged('Reloaded: the value changed on the server.', false);

  if (meta.size > LARGE && !force) {
    body.append(el('div', { class: 'warning', 'data-testid': 'large-value' },
      el('p', {}, `This value is ${formatBytes(meta.size)}; it is not loaded whole unless you ask.`),
      el('button', { type: 'button', 'data-testid': 'load-anyway', onclick: () => openKey(key, { force: true }) }, 'Load it anyway'),
      ' ',
      el('button', { type: 'button', 'data-testid': 'show-hex', onclick: () => showHex(key, body, seq) }, 'Hex of the first 4 KiB')));
    return;
  }
  if (kind === 'binary') return showHex(key, body, seq);

  const res = await request(keyURL(key));
  if (seq !== state.openSeq) return;
  if (!res.ok) {
    body.append(el('p', { class: 'error' }, await errorText(res)));
    return;
  }
  // the GET's ETag is the one the text belongs to (it may be newer than HEAD's)
  Object.assign(meta, metaFrom(key, res), { size: meta.size });
  if (kind === 'image') {
    const blob = await res.blob();
    if (seq !== state.openSeq) return;
    state.objectURL = URL.createObjectURL(blob);
    // an <img> never runs an SVG's scripts; the SVG is never put in the page as markup
    body.append(el('img', { class: 'image', 'data-testid': 'image-view', src: state.objectURL, alt: key }));
    return;
  }
  const text = await res.text();
  if (seq !== state.openSeq) return;
  meta.text = text;
  renderText(body, kind, text);
  const editButton = pane.querySelector('[data-testid="edit"]');
  if (editButton) editButton.hidden = false;
}

function header(key, meta, kind) {
  const actions = el('div', { class: 'actions' });
  if (meta) {
    if (kind === 'json' || kind === 'ndjson' || kind === 'text') {
      // shown once the text is loaded (not for a large value left unloaded)
      actions.append(el('button', { type: 'button', 'data-testid': 'edit', hidden: true, onclick: () => edit() }, 'Edit'));
    }
    actions.append(
      el('button', { type: 'button', 'data-testid': 'copy-key', onclick: (e) => copyText(key, e.currentTarget) }, 'Copy key'),
      el('button', { type: 'button', 'data-testid': 'download', onclick: () => download(key) }, 'Download'));
  }
  actions.append(el('button', { type: 'button', class: 'danger', 'data-testid': 'delete', onclick: () => deleteKey(key) }, 'Delete'));
  const facts = meta ? [
    formatBytes(meta.size),
    meta.contentType,
    meta.modified ? 'modified ' + formatTime(meta.modified) : null,
    meta.expires ? 'expires ' + formatTime(meta.expires) : 'no expiry',
    meta.etag ? 'ETag ' + meta.etag : null,
  ].filter(Boolean).join(' · ') : '';
  return el('header', { class: 'value-head' },
    el('h2', { class: 'key-name' }, key, meta?.source === 'fixture' ? el('span', { class: 'badge', 'data-testid': 'fixture-badge' }, 'fixture') : null),
    el('p', { class: 'meta', 'data-testid': 'value-meta' }, facts),
    el('div', { id: 'changed-slot' }),
    actions);
}

function renderText(body, kind, text) {
  let data, parseError = null;
  if (kind === 'json') {
    try { data = JSON.parse(text); } catch (e) { parseError = e.message; }
  } else if (kind === 'ndjson') {
    try { data = parseNDJSON(text); } catch (e) { parseError = e.message; }
  }
  if (kind === 'text' || parseError) {
    if (parseError) body.append(el('p', { class: 'warning' }, `Not valid ${kind === 'ndjson' ? 'NDJSON' : 'JSON'}: ${parseError}. Shown as text.`));
    body.append(el('pre', { class: 'text', 'data-testid': 'text-view' }, text));
    return;
  }
  const views = { tree: () => jsonTree(data), raw: () => el('pre', { class: 'text', 'data-testid': 'raw-view' }, kind === 'json' ? prettyOrRaw(text, data) : text) };
  if (isTable(data)) views.table = () => jsonTable(data);
  const content = el('div', { class: 'view-content' });
  const switches = el('div', { class: 'view-switch', role: 'group', 'aria-label': 'View' });
  const show = (name) => {
    content.replaceChildren(views[name]());
    for (const b of switches.children) b.setAttribute('aria-pressed', String(b.dataset.view === name));
  };
  for (const name of Object.keys(views)) {
    switches.append(el('button', { type: 'button', 'data-view': name, 'data-testid': 'view-' + name, onclick: () => show(name) },
      { tree: 'Tree', raw: 'Raw', table: 'Table' }[name]));
  }
  body.append(switches, content);
  show(kind === 'ndjson' && views.table ? 'table' : 'tree');
}

// the raw view is the stored text itself; it is pretty-printed only when it is one long line
const prettyOrRaw = (text, data) => (text.includes('\n') || text.length < 120 ? text : JSON.stringify(data, null, 2));

async function showHex(key, body, seq) {
  const res = await request(keyURL(key), { headers: { Range: `bytes=0-${HEX_BYTES - 1}` } });
  if (seq !== state.openSeq) return;
  if (res.status === 416) {
    body.replaceChildren(el('p', { class: 'note', 'data-testid': 'hex-view' }, '(empty value)'));
    return;
  }
  if (!res.ok) {
    body.replaceChildren(el('p', { class: 'error' }, await errorText(res)));
    return;
  }
  const bytes = new Uint8Array(await res.arrayBuffer()).slice(0, HEX_BYTES);
  if (seq !== state.openSeq) return;
  const lines = [];
  for (let off = 0; off < bytes.length; off += 16) {
    const row = bytes.slice(off, off + 16);
    const hex = [...row].map((b) => b.toString(16).padStart(2, '0')).join(' ').padEnd(47, ' ');
    const ascii = [...row].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex}  ${ascii}`);
  }
  const total = state.meta?.size ?? bytes.length;
  body.replaceChildren(
    el('p', { class: 'note' }, `Hex dump of the first ${bytes.length} of ${total} bytes.`),
    el('pre', { class: 'hex', 'data-testid': 'hex-view' }, lines.join('\n')));
}

/** Saves the value as a file (fetched with the token, then handed over as an object URL). */
async function download(key) {
  const res = await request(keyURL(key));
  if (!res.ok) return toast(await errorText(res), 'error');
  const url = URL.createObjectURL(await res.blob());
  const link = el('a', { href: url, download: key.split('/').pop() });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function deleteKey(key) {
  const fixture = state.meta?.source === 'fixture' ? ' It is served from the fixtures: the fixture stays.' : '';
  if (!(await confirmDialog(`Delete “${key}”?${fixture}`))) return;
  const headers = state.meta?.etag && state.key === key ? { 'If-Match': state.meta.etag } : {};
  const res = await request(keyURL(key), { method: 'DELETE', headers });
  if (res.status === 412) return showChanged('Not deleted: the value changed on the server since you opened it.', true);
  if (!res.ok && res.status !== 404) return toast(await errorText(res), 'error');
  toast('Deleted ' + key);
  state.ownDelete = key; // its delete event is no news
  tree.remove(key);
  openKey(key); // shows "no such key", or the fixture the key reverts to
}

function edit() {
  const meta = state.meta;
  if (!meta || meta.text === undefined) return;
  state.editing = true;
  pane.querySelector('[data-testid="edit"]').hidden = true;
  const body = pane.querySelector('.value-body');
  showEditor(body, { key: state.key, etag: meta.etag, contentType: meta.contentType, text: meta.text }, {
    onSaving: (on) => {
      state.saving = on;
      if (!on) flushDeferred();
    },
    onSaved: (etag) => {
      meta.etag = etag;
      state.editing = false;
      openKey(state.key);
    },
    onCancel: () => { state.editing = false; openKey(state.key); },
    onReload: () => { state.editing = false; openKey(state.key); },
  });
}

function showChanged(message, offerReload) {
  const slot = document.getElementById('changed-slot');
  if (!slot) return;
  slot.replaceChildren(el('div', { class: 'changed', role: 'status', 'data-testid': 'changed-mark' },
    el('span', {}, message),
    offerReload ? el('button', { type: 'button', 'data-testid': 'reload-changed', onclick: () => { state.editing = false; openKey(state.key); } }, 'Reload') : null));
}

// ---- live ----

function openValueChanged(change, kind) {
  if (state.saving) { state.deferred.push([change, kind]); return; }
  if (kind === 'put' && state.meta && change.etag === state.meta.etag) return; // our own write
  if (kind === 'delete' && state.ownDelete === change.key) { state.ownDelete = null; return; }
  if (state.editing) {
    showChanged(kind === 'put' ? 'Changed on the server while you edit. Saving will ask before overwriting.'
      : 'Deleted on the server while you edit.', true);
  } else if (kind === 'put') {
    openKey(state.key, { keepMark: true });
  } else {
    openKey(state.key).then(() => showChanged(kind === 'expire' ? 'The value expired.' : 'Deleted on the server.', false));
  }
}

function flushDeferred() {
  const events = state.deferred;
  state.deferred = [];
  for (const [change, kind] of events) openValueChanged(change, kind);
}

const live = new LiveFeed({
  put: (change) => {
    tree.put(change.key, change);
    if (change.key === state.key) openValueChanged(change, 'put');
  },
  delete: (change, kind) => {
    tree.remove(change.key);
    if (change.key === state.key) openValueChanged(change, kind);
  },
  bulk: (change) => {
    tree.bulkDeleted(change.prefix);
    if (state.key !== null && state.key.startsWith(change.prefix)) openValueChanged({ key: state.key }, 'delete');
  },
  resync: () => tree.start(),
}, document.getElementById('live-status'));

// ---- header actions, drag and drop ----

const currentPrefix = () => (state.key ? parentOf(state.key) : '');

document.getElementById('new-key-button').addEventListener('click', () =>
  createDialog({ prefix: currentPrefix(), onCreated: created }));
document.getElementById('upload-button').addEventListener('click', () => {
  const input = el('input', { type: 'file' });
  input.addEventListener('change', () => {
    if (input.files[0]) createDialog({ prefix: currentPrefix(), file: input.files[0], onCreated: created });
  });
  input.click();
});
document.getElementById('refresh').addEventListener('click', () => tree.start());
document.getElementById('token-button').addEventListener('click', async () => {
  if (await askToken(getToken() ? 'Replace the token for this tab.' : 'Enter the bearer token for this server.')) {
    tree.start();
    refreshPane();
  }
});

function created(key) {
  tree.put(key);
  location.hash = keyHash(key);
}

const dropZone = document.getElementById('drop-zone');
let dragDepth = 0;
window.addEventListener('dragenter', (e) => {
  if (![...(e.dataTransfer?.types ?? [])].includes('Files')) return;
  dragDepth++;
  dropZone.hidden = false;
});
window.addEventListener('dragleave', () => { if (--dragDepth <= 0) { dragDepth = 0; dropZone.hidden = true; } });
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', (e) => {
  e.preventDefault();
  dragDepth = 0;
  dropZone.hidden = true;
  const file = e.dataTransfer?.files?.[0];
  if (file) createDialog({ prefix: currentPrefix(), file, onCreated: created });
});

// ---- the panes: Keys, Requests, Faults ----

const requestsPane = new RequestsPane(document.getElementById('requests-pane'), { keyHash });
const faultsPane = new FaultsPane(document.getElementById('faults-pane'));
const tabs = new PaneTabs(document.querySelector('[data-testid="pane-tabs"]'), {
  keys: { node: document.getElementById('keys-pane') },
  requests: { node: requestsPane.root, show: () => requestsPane.show(), hide: () => requestsPane.hide() },
  faults: { node: faultsPane.root, show: () => faultsPane.show(), hide: () => faultsPane.hide() },
});
tabs.onChoose = (name) => {
  // the Keys tab comes back to the key that was open
  if (name === 'keys') location.hash = state.key !== null ? keyHash(state.key) : '#/';
  else location.hash = '#/' + name;
};
/** Loads the shown Requests or Faults pane again (Refresh, a new token). */
function refreshPane() {
  if (tabs.current === 'requests') requestsPane.restart();
  if (tabs.current === 'faults') faultsPane.load();
}
document.getElementById('refresh').addEventListener('click', refreshPane);

// ---- start ----

closeValue();
const switchNamespace = () => {
  // a key belongs to its namespace: it closes; the Requests and Faults panes stay, showing the new one's
  if (tabs.current === 'keys') history.replaceState(null, '', location.pathname);
  closeValue();
  tree.start();
  live.connect();
  requestsPane.namespaceChanged();
  faultsPane.namespaceChanged();
};
const picked = namespacePicker(document.getElementById('namespace-picker'), switchNamespace);
tabs.select(paneOfHash(location.hash)); // the picker has set the namespace before its first await
picked.then((refresh) => {
  document.getElementById('refresh').addEventListener('click', refresh);
}).finally(() => {
  tree.start().then(() => {
    const key = keyFromHash();
    if (key !== null) openKey(key);
  });
  live.connect();
});
