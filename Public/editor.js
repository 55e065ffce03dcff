// Editing: a textarea saved with If-Match; a 412 opens the conflict dialog
// (Reload, Compare, Overwrite). Also creating a key and uploading a file.

import { request, keyURL, errorText } from './api.js';
import { el, toast } from './dom.js';

export const isJSONType = (type) => /^application\/(.+\+)?json\b/i.test(type || '');

/** Parse error with line/column when the engine gives a position. */
export function jsonError(text) {
  try { JSON.parse(text); return null; } catch (e) {
    const pos = /position (\d+)/.exec(e.message);
    if (!pos) return e.message;
    const before = text.slice(0, Number(pos[1])).split('\n');
    return `${e.message} (line ${before.length}, column ${before[before.length - 1].length + 1})`;
  }
}

function ttlQuery(ttl) {
  const s = String(ttl ?? '').trim();
  return s ? '?ttl=' + encodeURIComponent(s) : '';
}

/**
 * Shows the editor in `pane`. doc: {key, etag, contentType, text}.
 * hooks: onSaved(newEtag), onCancel(), onReload()
 */
export function showEditor(pane, doc, hooks) {
  const area = el('textarea', { 'data-testid': 'editor', spellcheck: 'false', 'aria-label': `Value of ${doc.key}` });
  area.value = doc.text;
  const type = el('input', { type: 'text', value: doc.contentType, 'data-testid': 'editor-type', 'aria-label': 'Content type' });
  const ttl = el('input', { type: 'number', min: '1', placeholder: 'none', 'data-testid': 'ttl', 'aria-label': 'TTL in seconds', class: 'ttl' });
  const error = el('p', { class: 'error', 'data-testid': 'editor-error', role: 'alert', hidden: true });
  const save = el('button', { type: 'submit', class: 'primary', 'data-testid': 'save' }, 'Save');
  const formatButton = el('button', { type: 'button', 'data-testid': 'format', onclick: () => {
    const problem = jsonError(area.value);
    if (problem) return showError(problem);
    area.value = JSON.stringify(JSON.parse(area.value), null, 2);
  } }, 'Format JSON');
  const showError = (message) => { error.textContent = message; error.hidden = !message; };

  const put = async (ifMatch) => {
    const headers = { 'Content-Type': type.value || 'application/octet-stream' };
    if (ifMatch) headers['If-Match'] = ifMatch;
    return request(keyURL(doc.key, ttlQuery(ttl.value)), { method: 'PUT', headers, body: area.value });
  };

  const submit = async (e) => {
    e.preventDefault();
    showError('');
    if (isJSONType(type.value)) {
      const problem = jsonError(area.value);
      if (problem) return showError('Not valid JSON: ' + problem);
    }
    save.disabled = true;
    hooks.onSaving?.(true);
    try {
      // a value that did not exist when opened is created only if still absent
      const res = await put(doc.etag);
      if (res.status === 412) return conflict();
      if (!res.ok) return showError(await errorText(res));
      doc.etag = res.headers.get('ETag');
      doc.text = area.value;
      toast('Saved ' + doc.key);
      hooks.onSaved(doc.etag);
    } catch (err) {
      showError(String(err.message));
    } finally {
      save.disabled = false;
      hooks.onSaving?.(false);
    }
  };

  const conflict = () => conflictDialog(doc.key, area.value, {
    reload: () => hooks.onReload(),
    overwrite: async () => {
      const res = await put(null);
      if (!res.ok) return showError(await errorText(res));
      doc.etag = res.headers.get('ETag');
      toast('Overwritten ' + doc.key);
      hooks.onSaved(doc.etag);
    },
  });

  const form = el('form', { class: 'editor', onsubmit: submit },
    area,
    el('div', { class: 'toolbar' },
      el('label', {}, 'Content type ', type),
      el('label', {}, 'TTL (s) ', ttl),
      formatButton,
      el('button', { type: 'button', 'data-testid': 'cancel-edit', onclick: () => hooks.onCancel() }, 'Cancel'),
      save),
    error);
  pane.replaceChildren(form);
  area.focus();
}

/** The 412 dialog: Reload, Compare (side by side) or Overwrite (only on this click). */
function conflictDialog(key, mine, { reload, overwrite }) {
  const compare = el('div', { class: 'compare', hidden: true, 'data-testid': 'compare' });
  const dialog = el('dialog', { class: 'dialog wide', 'data-testid': 'conflict-dialog' },
    el('h2', {}, 'Changed by someone else'),
    el('p', {}, `The value of “${key}” changed on the server since you opened it. Your edits are not saved.`),
    compare,
    el('div', { class: 'actions' },
      el('button', { type: 'button', 'data-testid': 'cancel', onclick: () => close() }, 'Keep editing'),
      el('button', { type: 'button', 'data-testid': 'compare-button', onclick: () => showCompare() }, 'Compare'),
      el('button', { type: 'button', 'data-testid': 'reload', onclick: () => { close(); reload(); } }, 'Reload (discard mine)'),
      el('button', { type: 'button', class: 'danger', 'data-testid': 'overwrite', onclick: () => { close(); overwrite(); } }, 'Overwrite')));
  const close = () => { dialog.close(); dialog.remove(); };
  const showCompare = async () => {
    const res = await request(keyURL(key));
    const theirs = res.ok ? await res.text() : `(${await errorText(res)})`;
    // two JSON documents are compared pretty-printed, so their lines line up
    const pretty = (text) => { try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; } };
    const both = !jsonError(mine) && !jsonError(theirs);
    compare.replaceChildren(
      el('figure', {}, el('figcaption', {}, 'Yours'), el('pre', { 'data-testid': 'compare-mine' }, both ? pretty(mine) : mine)),
      el('figure', {}, el('figcaption', {}, 'On the server'), el('pre', { 'data-testid': 'compare-theirs' }, both ? pretty(theirs) : theirs)));
    compare.hidden = false;
  };
  dialog.addEventListener('cancel', (e) => { e.preventDefault(); close(); });
  document.body.append(dialog);
  dialog.showModal();
}

/**
 * The "new key" dialog: name, content type, body or file, TTL. Never replaces a
 * key silently: PUT with If-None-Match: *, and a 412 asks before replacing.
 */
export function createDialog({ prefix = '', file = null, onCreated }) {
  const name = el('input', { type: 'text', required: true, value: prefix + (file ? file.name : ''), 'data-testid': 'new-key', 'aria-label': 'Key' });
  const type = el('input', { type: 'text', value: file ? (file.type || 'application/octet-stream') : 'application/json', 'data-testid': 'new-type', 'aria-label': 'Content type' });
  const body = el('textarea', { 'data-testid': 'new-body', 'aria-label': 'Body', rows: 8, spellcheck: 'false' });
  body.value = file ? '' : '{}';
  const fileInput = el('input', { type: 'file', 'data-testid': 'upload-input', 'aria-label': 'File' });
  let chosen = file;
  const fileNote = el('p', { class: 'note' }, file ? `File: ${file.name} (${file.size} bytes)` : '');
  body.hidden = !!file;
  fileInput.addEventListener('change', () => {
    chosen = fileInput.files[0] || null;
    if (!chosen) return;
    if (!name.value || name.value === prefix) name.value = prefix + chosen.name;
    type.value = chosen.type || 'application/octet-stream';
    fileNote.textContent = `File: ${chosen.name} (${chosen.size} bytes)`;
    body.hidden = true;
  });
  const ttl = el('input', { type: 'number', min: '1', placeholder: 'none', 'data-testid': 'new-ttl', 'aria-label': 'TTL in seconds', class: 'ttl' });
  const error = el('p', { class: 'error', role: 'alert', hidden: true, 'data-testid': 'new-error' });
  const showError = (m) => { error.textContent = m; error.hidden = !m; };

  const send = async (replace) => {
    const headers = { 'Content-Type': type.value || 'application/octet-stream' };
    if (!replace) headers['If-None-Match'] = '*';
    return request(keyURL(name.value, ttlQuery(ttl.value)), { method: 'PUT', headers, body: chosen ?? body.value });
  };
  const submit = async (e) => {
    e.preventDefault();
    showError('');
    const key = name.value.trim();
    if (!key || key.endsWith('/') || key.startsWith('/')) return showError('A key is one or more segments separated by /, without a leading or trailing /.');
    name.value = key;
    if (!chosen && isJSONType(type.value)) {
      const problem = jsonError(body.value);
      if (problem) return showError('Not valid JSON: ' + problem);
    }
    let res = await send(false);
    if (res.status === 412) {
      replaceNote.hidden = false;
      return;
    }
    if (!res.ok) return showError(await errorText(res));
    close();
    onCreated(key);
  };
  const replaceNote = el('div', { class: 'warning', hidden: true },
    el('span', {}, 'This key exists already. '),
    el('button', { type: 'button', class: 'danger', 'data-testid': 'replace', onclick: async () => {
      const res = await send(true);
      if (!res.ok) return showError(await errorText(res));
      close();
      onCreated(name.value);
    } }, 'Replace it'));
  const dialog = el('dialog', { class: 'dialog', 'data-testid': 'create-dialog' },
    el('form', { onsubmit: submit },
      el('h2', {}, file ? 'Upload a file' : 'New key'),
      el('label', { class: 'field' }, 'Key', name),
      el('label', { class: 'field' }, 'Content type', type),
      el('label', { class: 'field' }, 'File (instead of the body)', fileInput),
      fileNote,
      body,
      el('label', { class: 'field' }, 'TTL (seconds)', ttl),
      error, replaceNote,
      el('div', { class: 'actions' },
        el('button', { type: 'button', 'data-testid': 'cancel', onclick: () => close() }, 'Cancel'),
        el('button', { type: 'submit', class: 'primary', 'data-testid': 'create' }, file ? 'Upload' : 'Create'))));
  const close = () => { dialog.close(); dialog.remove(); };
  dialog.addEventListener('cancel', (e) => { e.preventDefault(); close(); });
  document.body.append(dialog);
  dialog.showModal();
  name.focus();
}
