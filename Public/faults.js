// The Faults pane: the fault rules of the shown namespace (GET /faults) with
// their remaining counts, a form that appends a rule (POST /faults) and a
// Remove button per rule. Without --allow-faults the server has no /faults
// (404): the pane says so and offers no editing.
//
// The server validates rules; its 400 message is shown as it is, so fields
// this page does not know yet still get a clear answer. Fields of a rule the
// page does not know are shown as "name: value", so new ones appear.

import { request, apiURL, errorText } from './api.js';
import { el, confirmDialog, toast } from './dom.js';

const METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS'];
// How often a rule matched and fired: the server's, not the rule's.
const COUNTERS = ['remaining', 'matched', 'fired'];
// The fields the table has columns for; any other one goes to "Other".
const KNOWN = ['id', 'prefix', 'methods', 'delayMs', 'jitterMs', 'status', 'probability', 'count',
  'drop', 'truncate', 'bytesPerSecond', ...COUNTERS];

/** A rule as PUT /faults takes it back, from its GET form. */
function definitionOf(rule) {
  const definition = {};
  for (const [name, value] of Object.entries(rule)) {
    if (value === null || COUNTERS.includes(name)) continue;
    // a name the server made up ("rule-3") follows the rule's position; pinning
    // it would make the next unnamed rule's name collide with it
    if (name === 'id' && /^rule-\d+$/.test(value)) continue;
    definition[name] = value;
  }
  // sent again, a rule starts counting anew: it may fire as often as it had left
  if (rule.count !== null && rule.count !== undefined && rule.remaining !== null && rule.remaining !== undefined) {
    definition.count = rule.remaining;
  }
  return definition;
}

/** What a rule does, in words: "delay 200 ms ± 50 · status 503 · drop before". */
function effectOf(rule) {
  const parts = [];
  if (rule.delayMs) parts.push(`delay ${rule.delayMs} ms` + (rule.jitterMs ? ` ± ${rule.jitterMs}` : ''));
  else if (rule.jitterMs) parts.push(`delay up to ${rule.jitterMs} ms`);
  if (rule.status !== null && rule.status !== undefined) parts.push(`status ${rule.status}`);
  if (rule.drop) parts.push(`drop ${rule.drop}`);
  if (rule.truncate !== null && rule.truncate !== undefined) parts.push(`truncate after ${rule.truncate} B`);
  if (rule.bytesPerSecond) parts.push(`${rule.bytesPerSecond} B/s`);
  return parts.join(' · ') || 'nothing (matches only)';
}

const shownValue = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

export class FaultsPane {
  constructor(root) {
    this.root = root;
    this.loadSeq = 0;
    this.status = el('p', { class: 'note', 'data-testid': 'faults-status', role: 'status' });
    this.body = el('div', { class: 'pane-body' });
    this.refreshButton = el('button', { type: 'button', 'data-testid': 'faults-refresh', onclick: () => this.load() }, 'Refresh');
    root.append(
      el('header', { class: 'pane-head' },
        el('h2', {}, 'Fault rules'),
        el('div', { class: 'actions' }, this.refreshButton)),
      this.status,
      this.body);
  }

  show() { this.load(); }
  hide() { this.loadSeq++; }  // an answer still on its way is not shown
  namespaceChanged() { if (!this.root.hidden) this.load(); }

  async load() {
    const seq = ++this.loadSeq;
    this.status.textContent = 'Loading…';
    let res;
    try {
      res = await request(apiURL('/faults'));
    } catch (e) {
      if (seq === this.loadSeq) this.showError('The server did not answer: ' + e.message);
      return;
    }
    if (seq !== this.loadSeq) return;
    if (res.status === 404) return this.showOff();
    if (!res.ok) return this.showError(await errorText(res));
    const list = await res.json();
    if (seq !== this.loadSeq) return;
    this.showRules(list);
  }

  showError(message) {
    this.status.textContent = '';
    this.body.replaceChildren(el('p', { class: 'error', 'data-testid': 'faults-error' }, message));
  }

  showOff() {
    this.status.textContent = '';
    this.body.replaceChildren(el('div', { class: 'warning', 'data-testid': 'faults-off' },
      el('p', {}, 'Faults are off on this server.'),
      el('p', {}, 'Start it with ', el('code', {}, '--allow-faults'),
        ' (or LARDER_ALLOW_FAULTS=1) to delay requests, answer them with an error or break connections on purpose.')));
  }

  showRules({ rules, seed }) {
    const count = rules.length;
    this.status.textContent = `${count} rule${count === 1 ? '' : 's'} in force · ` +
      (seed === null || seed === undefined ? 'random draws' : `draws from seed ${seed}`) +
      ` · loaded ${new Date().toLocaleTimeString()}`;
    const clearAll = el('button', { type: 'button', class: 'danger', 'data-testid': 'faults-clear', disabled: count === 0,
      onclick: () => this.clearAll() }, 'Remove all');
    const table = count === 0
      ? el('p', { class: 'placeholder', 'data-testid': 'faults-empty' }, 'No rules: every request is answered as usual.')
      : this.rulesTable(rules);
    this.body.replaceChildren(table, el('div', { class: 'actions pane-actions' }, clearAll), this.addForm());
  }

  rulesTable(rules) {
    const otherOf = (rule) => Object.entries(rule).filter(([name, value]) => !KNOWN.includes(name) && value !== null);
    // the "Other" column shows only when a rule has a field this page has no column for
    const hasOther = rules.some((rule) => otherOf(rule).length > 0);
    const head = ['Name', 'Prefix', 'Methods', 'Effect', 'Probability', 'Remaining', 'Matched', 'Fired', hasOther ? 'Other' : null, '']
      .filter((title) => title !== null).map((title) => el('th', { scope: 'col' }, title));
    const rows = rules.map((rule) => {
      const other = otherOf(rule);
      const remaining = rule.remaining === null || rule.remaining === undefined
        ? 'no limit' : `${rule.remaining} of ${rule.count}`;
      return el('tr', { 'data-testid': 'fault-rule', 'data-rule-id': rule.id },
        el('td', { class: 'mono' }, rule.id),
        el('td', { class: 'mono' }, rule.prefix === '' ? el('span', { class: 'note' }, '(every key)') : rule.prefix),
        el('td', {}, rule.methods ? rule.methods.join(', ') : 'all'),
        el('td', {}, effectOf(rule)),
        el('td', { class: 'num' }, String(rule.probability ?? 1)),
        el('td', { class: 'num', 'data-testid': 'fault-remaining' }, remaining),
        el('td', { class: 'num', 'data-testid': 'fault-matched' }, String(rule.matched ?? '')),
        el('td', { class: 'num', 'data-testid': 'fault-fired' }, String(rule.fired ?? '')),
        hasOther ? el('td', { class: 'mono', 'data-testid': 'fault-other' },
          other.map(([name, value]) => el('div', {}, `${name}: ${shownValue(value)}`))) : null,
        el('td', {}, el('button', { type: 'button', class: 'danger', 'data-testid': 'fault-remove',
          'aria-label': `Remove ${rule.id}`, onclick: () => this.remove(rule.id) }, 'Remove')));
    });
    return el('div', { class: 'table-wrap' },
      el('table', { class: 'grid', 'data-testid': 'fault-rules' }, el('thead', {}, el('tr', {}, head)), el('tbody', {}, rows)));
  }

  addForm() {
    const input = (testid, label, attrs = {}) => {
      const field = el('input', { 'data-testid': testid, name: testid, autocomplete: 'off', ...attrs });
      return [field, el('label', { class: 'field' }, el('span', {}, label), field)];
    };
    const [id, idField] = input('fault-id', 'Name (optional)', { type: 'text', placeholder: 'rule-N', maxlength: '64' });
    const [prefix, prefixField] = input('fault-prefix', 'Key prefix, or a path from /', { type: 'text', placeholder: 'users/  (empty: every key)', size: '28' });
    const [delay, delayField] = input('fault-delay', 'Delay ms', { type: 'number', min: '0', step: '1' });
    const [jitter, jitterField] = input('fault-jitter', 'Jitter ms', { type: 'number', min: '0', step: '1' });
    const [status, statusField] = input('fault-status', 'Status', { type: 'number', min: '400', max: '599', placeholder: 'e.g. 503' });
    const [probability, probabilityField] = input('fault-probability', 'Probability', { type: 'number', min: '0', max: '1', step: 'any', placeholder: '1' });
    const [count, countField] = input('fault-count', 'Count', { type: 'number', min: '1', step: '1', placeholder: 'no limit' });
    const [truncate, truncateField] = input('fault-truncate', 'Truncate after bytes', { type: 'number', min: '0', step: '1' });
    const [rate, rateField] = input('fault-rate', 'Bytes per second', { type: 'number', min: '1', step: '1' });
    const drop = el('select', { 'data-testid': 'fault-drop', name: 'fault-drop' },
      el('option', { value: '' }, 'no'),
      el('option', { value: 'before' }, 'before handling'),
      el('option', { value: 'after' }, 'after handling'));
    const methodBoxes = METHODS.map((method) =>
      el('label', { class: 'check' }, el('input', { type: 'checkbox', value: method, 'data-testid': 'fault-method', 'data-method': method }), method));
    const error = el('p', { class: 'error', 'data-testid': 'fault-error', role: 'alert', hidden: true });
    const add = el('button', { type: 'submit', class: 'primary', 'data-testid': 'fault-add' }, 'Add rule');

    const submit = async (e) => {
      e.preventDefault();
      error.hidden = true;
      const rule = { prefix: prefix.value };
      if (id.value.trim()) rule.id = id.value.trim();
      const methods = methodBoxes.map((label) => label.querySelector('input')).filter((box) => box.checked).map((box) => box.value);
      if (methods.length) rule.methods = methods;
      // numbers go as the user typed them; the server says what is out of range
      for (const [name, field] of [['delayMs', delay], ['jitterMs', jitter], ['status', status], ['probability', probability],
        ['count', count], ['truncate', truncate], ['bytesPerSecond', rate]]) {
        if (field.value.trim() !== '') rule[name] = Number(field.value);
        else if (field.validity.badInput) return showError(`${name} is not a number`);
      }
      if (drop.value) rule.drop = drop.value;
      add.disabled = true;
      try {
        const res = await request(apiURL('/faults'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(rule) });
        if (!res.ok) return showError('The server refused the rule: ' + await errorText(res));
        toast('Rule added');
        this.showRules(await res.json());
      } catch (err) {
        showError('The server did not answer: ' + err.message);
      } finally {
        add.disabled = false;
      }
    };
    const showError = (message) => { error.textContent = message; error.hidden = false; };

    return el('form', { class: 'fault-form', 'data-testid': 'fault-form', onsubmit: submit, novalidate: true },
      el('h3', {}, 'Add a rule'),
      el('div', { class: 'form-grid' }, idField, prefixField,
        el('fieldset', { class: 'methods' }, el('legend', {}, 'Methods (none: all)'), methodBoxes)),
      el('div', { class: 'form-grid' }, delayField, jitterField, statusField, probabilityField, countField),
      el('div', { class: 'form-grid' },
        el('label', { class: 'field' }, el('span', {}, 'Drop the connection'), drop), truncateField, rateField),
      error,
      el('div', { class: 'actions' }, add));
  }

  /** Removes one rule: PUT /faults with the others, as the server has them
   *  right after the confirmation (another client may have changed them). */
  async remove(id) {
    const ok = await confirmDialog(`Remove the rule ${id}? The other rules are sent again (PUT /faults): their counters ` +
      'start over, with the firings they had left; a spent rule (0 left) goes too.', 'Remove');
    if (!ok) return;
    const res = await request(apiURL('/faults'));
    if (!res.ok) return toast(await errorText(res), 'error');
    const { rules, seed } = await res.json();
    // a rule with no firing left cannot be sent again (count ≥ 1) and does nothing any more
    const kept = rules.filter((rule) => rule.id !== id && rule.remaining !== 0);
    const body = { rules: kept.map(definitionOf) };
    if (seed !== null && seed !== undefined) body.seed = seed;
    const put = await request(apiURL('/faults'), { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (!put.ok) return toast(await errorText(put), 'error');
    toast(`Removed ${id}`);
    this.showRules(await put.json());
  }

  async clearAll() {
    if (!(await confirmDialog('Remove every fault rule of this namespace?', 'Remove all'))) return;
    const res = await request(apiURL('/faults'), { method: 'DELETE' });
    if (!res.ok) return toast(await errorText(res), 'error');
    this.load();
  }
}
