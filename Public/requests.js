// The Requests pane: the request journal of the shown namespace (GET /journal),
// newest on top, followed live by a long poll (?since=<next>&wait=25) while
// the pane shows. The filters (method, status, key prefix) go to the server
// as query parameters, so the list is what the server picked, not a filter
// over what this page happened to load.

import { request, apiURL, errorText } from './api.js';
import { el, formatBytes, confirmDialog, toast } from './dom.js';

const WAIT_SECONDS = 25;
const FIRST_PAGE = 200;      // the first request's limit (oldest first): rows at once; the next request brings the rest
const KEPT_ROWS = 500;       // rows kept in the page; older ones fall off the bottom
const MAX_BACKOFF_MS = 30000;
const METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS'];

/** The key of a `/store/<key>` path (percent-decoded), or null for any other
 *  path, a listing (`/store/a/`) included. */
export function keyOfPath(path) {
  if (typeof path !== 'string' || !path.startsWith('/store/') || path.endsWith('/')) return null;
  try {
    return path.slice('/store/'.length).split('/').map(decodeURIComponent).join('/');
  } catch {
    return null;
  }
}

/** `12:34:56.789` in local time. */
function clockOf(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso ?? '');
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

const statusClass = (status) => (status === null || status === undefined ? 'st-none'
  : status >= 500 ? 'st-5xx' : status >= 400 ? 'st-4xx' : status >= 300 ? 'st-3xx' : 'st-2xx');

export class RequestsPane {
  /** `keyHash(key)`: the address that opens a key in the Keys pane. */
  constructor(root, { keyHash }) {
    this.root = root;
    this.keyHash = keyHash;
    this.visible = false;
    this.run = 0;            // the poll loop that is current; an older one stops at its next step
    this.controller = null;  // aborts the request in flight when the pane hides or a filter changes
    this.next = null;
    this.followedQuery = null;  // the filters of the loop that is current, as a query string

    this.method = el('select', { 'data-testid': 'journal-method', 'aria-label': 'Method' },
      el('option', { value: '' }, 'any method'), METHODS.map((m) => el('option', { value: m }, m)));
    this.statusFilter = el('input', { type: 'text', inputmode: 'numeric', 'data-testid': 'journal-status-filter',
      placeholder: '404 or 4xx', 'aria-label': 'Status (404 or 4xx)', size: '8', autocomplete: 'off' });
    this.prefix = el('input', { type: 'search', 'data-testid': 'journal-prefix', placeholder: 'key prefix',
      'aria-label': 'Key prefix', autocomplete: 'off' });
    let typing = null;
    const changed = () => { clearTimeout(typing); typing = setTimeout(() => this.filtersChanged(), 300); };
    this.method.addEventListener('change', () => { clearTimeout(typing); this.filtersChanged(); });
    this.statusFilter.addEventListener('input', changed);
    this.prefix.addEventListener('input', changed);

    this.live = el('span', { class: 'live', 'data-testid': 'journal-live', 'data-state': 'connecting', role: 'status',
      title: 'The journal, followed by a long poll while this pane shows' }, 'stopped');
    this.summary = el('p', { class: 'note', 'data-testid': 'journal-summary' });
    // The namespace's clock, shown only when a test has moved it (GET /clock).
    this.clock = el('p', { class: 'note clock', 'data-testid': 'namespace-clock', role: 'status', hidden: true });
    this.rows = el('tbody', {});
    this.empty = el('p', { class: 'placeholder', 'data-testid': 'journal-empty', hidden: true }, 'No requests recorded (yet) that match.');
    this.error = el('p', { class: 'error', 'data-testid': 'journal-error', role: 'alert', hidden: true });
    const head = [['Time'], ['Method'], ['Path'], ['Status', 'num'], ['ms', 'num'], ['In', 'num'], ['Out', 'num'], ['Fault']]
      .map(([title, kind]) => el('th', { scope: 'col', class: kind }, title));
    // one click handler for every row: a row opens its key when it has one
    this.rows.addEventListener('click', (e) => {
      if (e.target.closest('a')) return;  // the link opens it itself
      const link = e.target.closest('tr')?.querySelector('a[data-testid="journal-key"]');
      if (link) location.hash = link.getAttribute('href');
    });

    root.append(
      el('header', { class: 'pane-head' },
        el('h2', {}, 'Requests'),
        el('div', { class: 'filters', role: 'group', 'aria-label': 'Filters' }, this.method, this.statusFilter, this.prefix),
        el('div', { class: 'actions' },
          el('button', { type: 'button', 'data-testid': 'journal-har', title: 'Save what matches the filters as an HTTP Archive (HAR)',
            onclick: () => this.saveHAR() }, 'Save HAR'),
          el('button', { type: 'button', class: 'danger', 'data-testid': 'journal-clear', onclick: () => this.clear() }, 'Clear'),
          this.live)),
      this.clock,
      this.summary,
      this.error,
      el('div', { class: 'table-wrap journal-wrap' },
        el('table', { class: 'grid journal', 'data-testid': 'journal' }, el('thead', {}, el('tr', {}, head)), this.rows)),
      this.empty);
  }

  show() { this.visible = true; this.restart(); }
  hide() { this.visible = false; this.stop(); this.setLive('stopped', 'stopped'); }
  namespaceChanged() { if (this.visible) this.restart(); }

  stop() {
    this.run++;
    this.controller?.abort();
    this.controller = null;
  }

  /** A filter changed: start over, unless the filters are the ones followed
   *  already (a typed filter's pending restart after the method select applied
   *  it too would empty the list and load the same page again). */
  filtersChanged() {
    if (this.filterQuery().toString() === this.followedQuery) return;
    this.restart();
  }

  /** Loads what matches the filters, then waits for more: one loop (`follow`),
   *  whose `next` is null until its first page is in. */
  restart() {
    this.stop();
    this.followedQuery = null;
    if (!this.visible) return;
    this.followedQuery = this.filterQuery().toString();
    this.rows.replaceChildren();
    this.next = null;
    this.showClock();
    this.follow(this.run);
  }

  /** Shows the namespace's clock when it is not the system's (moved ahead, or frozen). */
  async showClock() {
    let state = null;
    try {
      const res = await request(apiURL('/clock'));
      if (res.ok) state = await res.json();
    } catch {
      state = null;
    }
    const moved = state && (state.offsetMs !== 0 || state.frozen);
    this.clock.hidden = !moved;
    if (!moved) return;
    const ahead = state.offsetMs >= 3600000 ? `${(state.offsetMs / 3600000).toFixed(1)} h`
      : state.offsetMs >= 60000 ? `${(state.offsetMs / 60000).toFixed(1)} min` : `${(state.offsetMs / 1000).toFixed(1)} s`;
    this.clock.dataset.now = state.now;
    this.clock.textContent = `This namespace's clock reads ${state.now}, ${ahead} ahead of the system's`
      + (state.frozen ? ', frozen.' : '.');
  }

  /** Saves the entries that match the filters as a HAR file (GET /journal?format=har). */
  async saveHAR() {
    const query = this.filterQuery();
    query.set('format', 'har');
    query.set('limit', '10000');
    const res = await request(apiURL('/journal') + '?' + query);
    if (!res.ok) return toast(await errorText(res), 'error');
    const url = URL.createObjectURL(await res.blob());
    const link = el('a', { href: url, download: 'larder-journal.har', 'data-testid': 'journal-har-link', hidden: true });
    document.body.append(link);
    link.click();
    setTimeout(() => { URL.revokeObjectURL(url); link.remove(); }, 60000);
  }

  /** The filters as query parameters (only those set). */
  filterQuery() {
    const query = new URLSearchParams();
    if (this.method.value) query.set('method', this.method.value);
    if (this.statusFilter.value.trim()) query.set('status', this.statusFilter.value.trim());
    if (this.prefix.value) query.set('prefix', this.prefix.value);
    return query;
  }

  async follow(run) {
    let backoff = 1000;
    this.setLive('connecting', 'connecting…');
    while (run === this.run) {
      const query = this.filterQuery();
      if (this.next === null) {
        query.set('limit', String(FIRST_PAGE));
      } else {
        query.set('since', String(this.next));
        query.set('wait', String(WAIT_SECONDS));
      }
      const controller = this.controller = new AbortController();
      let res, body;
      try {
        res = await request(apiURL('/journal') + '?' + query, { signal: controller.signal });
        if (res.ok) body = await res.json();
      } catch (e) {
        if (run !== this.run) return;  // aborted on purpose
        res = null;
        body = null;
        this.showError('The server did not answer: ' + e.message);
      }
      if (run !== this.run) return;
      if (res?.status === 404) {
        this.setLive('offline', 'off');
        this.showError('This server keeps no request journal (started with --journal 0, or a version without /journal).');
        return;
      }
      if (res && !res.ok) this.showError(await errorText(res));
      if (run !== this.run) return;
      if (res?.status === 400 || res?.status === 401) {
        // a filter the server refuses, or no token given: asking again changes nothing until
        // the filter or the token does (a filter change starts over; so does the header's Refresh)
        this.setLive('offline', res.status === 400 ? 'filter refused' : 'needs the token');
        return;
      }
      if (!body) {
        // the server is down or refused: try again later, less often each time. It may
        // come back as a new process whose journal (in memory) counts from 1 again:
        // start over from the first page then, rather than wait for a seq it may never reach
        this.next = null;
        this.setLive('offline', `retrying in ${Math.round(backoff / 1000)} s`);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        continue;
      }
      backoff = 1000;
      // A move of the clock shows in the journal: read the clock again then,
      // not on every answer (the read is a request the journal records,
      // which would wake this poll again, and again).
      if ((body.requests ?? []).some((r) => r.path === '/clock' && r.method !== 'GET' && r.method !== 'HEAD')) this.showClock();
      this.error.hidden = true;
      this.setLive('live', 'following');
      if (this.next === null) this.rows.replaceChildren();  // a first page is the whole list
      this.add(body.requests ?? []);
      this.next = body.next ?? this.next ?? 0;
      this.summarize(body);
    }
  }

  showError(message) {
    this.error.textContent = message;
    this.error.hidden = false;
  }

  setLive(state, text) {
    this.live.dataset.state = state;
    this.live.textContent = text;
  }

  summarize(body) {
    const dropped = body.dropped ? ` · ${body.dropped} older dropped by the server` : '';
    this.summary.textContent = `${this.rows.children.length} shown, newest on top${dropped}`;
    this.empty.hidden = this.rows.children.length > 0;
  }

  /** Puts `entries` (oldest first, as the server sends them) on top. */
  add(entries) {
    for (const entry of entries) {
      if (this.rows.querySelector(`tr[data-seq="${Number(entry.seq)}"]`)) continue;  // a page seen twice after a retry
      this.rows.prepend(this.row(entry));
    }
    while (this.rows.children.length > KEPT_ROWS) this.rows.lastElementChild.remove();
  }

  row(entry) {
    const key = keyOfPath(entry.path);
    const target = entry.path + (entry.query ? '?' + entry.query : '');
    const pathCell = key !== null
      ? el('a', { href: this.keyHash(key), 'data-testid': 'journal-key', title: `Open ${key}` }, target)
      : target;
    const status = entry.status === null || entry.status === undefined ? 'no answer' : String(entry.status);
    return el('tr', {
      'data-testid': 'journal-entry', 'data-seq': entry.seq, 'data-method': entry.method, 'data-path': entry.path,
      'data-status': entry.status ?? '', class: key !== null ? 'opens' : null,
    },
      el('td', { class: 'mono', title: entry.time }, clockOf(entry.time)),
      el('td', { class: 'mono' }, entry.method, entry.op ? el('span', { class: 'op' }, entry.op) : null),
      el('td', { class: 'mono path' }, pathCell),
      el('td', { class: 'num ' + statusClass(entry.status) }, status),
      el('td', { class: 'num' }, typeof entry.ms === 'number' ? entry.ms.toFixed(entry.ms < 10 ? 2 : 0) : ''),
      el('td', { class: 'num' }, entry.bytesIn ? formatBytes(entry.bytesIn) : ''),
      el('td', { class: 'num' }, entry.bytesOut ? formatBytes(entry.bytesOut) : ''),
      el('td', {}, entry.fault ? el('span', { class: 'badge fault', 'data-testid': 'fault-badge' }, entry.fault) : null));
  }

  /** DELETE /journal, then starts over. */
  async clear() {
    if (!(await confirmDialog('Empty the request journal of this namespace, for every client?', 'Clear'))) return;
    const res = await request(apiURL('/journal'), { method: 'DELETE' });
    if (!res.ok) return toast(await errorText(res), 'error');
    toast('Journal cleared');
    this.restart();
  }
}
