// The key tree: one level per `/` prefix, listed with delimiter=/ and paged,
// loaded when opened. Kept up to date by live.js through put/remove/refresh.

import { listLevel, head } from './api.js';
import { el, formatBytes, formatTime, toast } from './dom.js';

const PAGE = 500;

export class KeyTree {
  /** callbacks: onOpenKey(key, entry), onDeletePrefix(prefix) */
  constructor(root, { onOpenKey, onDeletePrefix }) {
    this.root = root;
    this.onOpenKey = onOpenKey;
    this.onDeletePrefix = onDeletePrefix;
    this.levels = new Map(); // prefix -> {group, next, items: Map name -> li, loading}
    this.filterText = '';
    this.selectedKey = null;
    root.setAttribute('role', 'tree');
    root.addEventListener('keydown', (e) => this.keydown(e));
  }

  async start() {
    this.root.replaceChildren();
    this.levels.clear();
    await this.loadLevel('', this.root);
  }

  // ---- levels ----

  async loadLevel(prefix, group, { append = false } = {}) {
    let level = this.levels.get(prefix);
    if (!level || !append) {
      level = { group, next: null, items: new Map(), loading: null };
      this.levels.set(prefix, level);
      group.replaceChildren(el('li', { class: 'loading', role: 'none' }, 'Loading…'));
    }
    const after = append ? level.next : null;
    const page = level.loading = listLevel(prefix, after, PAGE);
    let listing;
    try {
      listing = await page;
    } catch (error) {
      group.replaceChildren(el('li', { class: 'error', role: 'none' }, String(error.message)));
      return;
    } finally {
      level.loading = null;
    }
    if (this.levels.get(prefix) !== level) return; // reloaded meanwhile
    if (!append) group.replaceChildren();
    group.querySelector(':scope > .more')?.remove();
    const entries = [
      ...listing.prefixes.map((p) => ({ name: p, prefix: p })),
      ...listing.keys.map((k) => ({ name: k.key, entry: k })),
    ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const item of entries) {
      if (level.items.has(item.name)) continue;
      const li = item.prefix ? this.folderItem(item.prefix) : this.keyItem(item.entry);
      level.items.set(item.name, li);
      group.append(li);
    }
    level.next = listing.next;
    if (listing.next) {
      group.append(el('li', { class: 'more', role: 'none' },
        el('button', { type: 'button', 'data-testid': 'load-more', onclick: () => this.loadLevel(prefix, group, { append: true }) },
          'Load more…')));
    }
    if (!group.children.length) group.append(el('li', { class: 'empty', role: 'none' }, '(empty)'));
    this.applyFilter();
    this.ensureTabStop();
  }

  /** Reloads a loaded level, then reopens the sub-levels that were open and still exist. */
  async reloadLevel(prefix) {
    const level = this.levels.get(prefix);
    if (!level) return;
    const open = [...this.levels.keys()].filter((p) => p !== prefix && p.startsWith(prefix));
    for (const p of open) this.levels.delete(p);
    await this.loadLevel(prefix, level.group);
    for (const p of open.sort((a, b) => a.length - b.length)) {
      const li = this.findItem(p);
      if (li && li.getAttribute('aria-expanded') === 'false') await this.expand(li);
    }
  }

  findItem(name) {
    return this.levels.get(parentOf(name))?.items.get(name) ?? null;
  }

  // ---- items ----

  folderItem(prefix) {
    const label = lastSegment(prefix);
    const group = el('ul', { role: 'group', hidden: true });
    const row = el('div', { class: 'row folder', tabindex: -1 },
      el('span', { class: 'twisty', 'aria-hidden': 'true' }, '▸'),
      el('span', { class: 'name' }, label),
      el('button', { type: 'button', class: 'icon danger', title: `Delete everything under ${prefix}`,
        'aria-label': `Delete everything under ${prefix}`, 'data-testid': 'delete-prefix', tabindex: -1,
        onclick: (e) => { e.stopPropagation(); this.onDeletePrefix(prefix); } }, '🗑'));
    const li = el('li', { role: 'treeitem', 'aria-expanded': 'false', 'data-testid': 'tree-folder', 'data-prefix': prefix }, row, group);
    row.addEventListener('click', () => { this.focusRow(row); this.toggle(li); });
    return li;
  }

  keyItem(entry) {
    const li = el('li', { role: 'treeitem', 'data-testid': 'tree-item', 'data-key': entry.key });
    this.fillKeyItem(li, entry);
    return li;
  }

  fillKeyItem(li, entry) {
    li.entry = entry;
    const percent = entry.size && entry.storedSize ? (entry.storedSize / entry.size) * 100 : null;
    const ratio = percent === null ? '' : ` → ${formatBytes(entry.storedSize)} (${percent < 10 ? percent.toFixed(1) : Math.round(percent)}%)`;
    const meta = el('span', { class: 'meta' },
      el('span', { title: 'size → stored size (ratio)' }, formatBytes(entry.size) + ratio),
      el('span', { class: 'ctype' }, (entry.contentType || '').split(';')[0]),
      entry.modified ? el('span', { title: 'modified ' + entry.modified }, formatTime(entry.modified, true)) : null,
      entry.expires ? el('span', { class: 'expires', title: 'expires ' + entry.expires }, 'expires ' + formatTime(entry.expires)) : null);
    const row = el('div', { class: 'row key', tabindex: -1, title: entry.key },
      el('span', { class: 'twisty', 'aria-hidden': 'true' }, '·'),
      el('span', { class: 'name' }, lastSegment(entry.key)),
      entry.source === 'fixture' ? el('span', { class: 'badge', 'data-testid': 'fixture-badge', title: 'served from the fixtures' }, 'fixture') : null,
      meta);
    row.addEventListener('click', () => { this.focusRow(row); this.open(li); });
    const wasFocused = li.firstElementChild && li.firstElementChild === document.activeElement;
    li.replaceChildren(row);
    if (entry.key === this.selectedKey) row.classList.add('selected'), li.setAttribute('aria-selected', 'true');
    if (wasFocused) this.focusRow(row);
  }

  open(li) {
    this.select(li.dataset.key);
    this.onOpenKey(li.dataset.key, li.entry);
  }

  select(key) {
    this.selectedKey = key;
    for (const node of this.root.querySelectorAll('.row.selected')) node.classList.remove('selected');
    for (const node of this.root.querySelectorAll('[aria-selected]')) node.removeAttribute('aria-selected');
    const li = key ? this.findItem(key) : null;
    if (li) {
      li.firstElementChild.classList.add('selected');
      li.setAttribute('aria-selected', 'true');
    }
  }

  async toggle(li) {
    if (li.getAttribute('aria-expanded') === 'true') this.collapse(li); else await this.expand(li);
  }

  async expand(li) {
    li.setAttribute('aria-expanded', 'true');
    li.querySelector('.twisty').textContent = '▾';
    const group = li.querySelector(':scope > ul');
    group.hidden = false;
    if (!this.levels.has(li.dataset.prefix)) await this.loadLevel(li.dataset.prefix, group);
  }

  collapse(li) {
    li.setAttribute('aria-expanded', 'false');
    li.querySelector('.twisty').textContent = '▸';
    li.querySelector(':scope > ul').hidden = true;
  }

  /** Opens the folders down to `key` and selects it (loading a few more pages when needed). */
  async reveal(key) {
    const parts = key.split('/');
    let prefix = '';
    for (let i = 0; i < parts.length; i++) {
      const name = i === parts.length - 1 ? key : prefix + parts[i] + '/';
      const level = this.levels.get(prefix);
      if (!level) return;
      if (level.loading) await level.loading.catch(() => {});
      for (let pages = 0; !level.items.has(name) && level.next && level.next < name && pages < 20; pages++) {
        await this.loadLevel(prefix, level.group, { append: true });
      }
      const li = level.items.get(name);
      if (!li) return;
      if (name === key) {
        this.select(key);
        li.firstElementChild.scrollIntoView({ block: 'nearest' });
        return;
      }
      if (li.getAttribute('aria-expanded') !== 'true') await this.expand(li);
      prefix = name;
    }
  }

  // ---- live updates ----

  /** A key was written: update its row, or add it where its level is loaded. */
  async put(key, change = {}) {
    const parent = parentOf(key);
    const level = this.levels.get(parent);
    if (!level) return this.addFolderFor(key);
    if (level.next && key > level.next) return; // beyond the loaded pages: "load more" finds it
    let entry = { ...(level.items.get(key)?.entry ?? {}), key, etag: change.etag, size: change.size, storedSize: null };
    if (change.source) entry.source = change.source; else delete entry.source;
    try {
      const meta = await this.headLimited(key);
      if (!meta) return this.remove(key);
      entry = { ...entry, ...meta, size: change.size ?? meta.size };
    } catch { /* keep what the event said */ }
    const existing = level.items.get(key);
    if (existing) return this.fillKeyItem(existing, entry);
    const li = this.keyItem(entry);
    this.insertSorted(level, key, li);
  }

  /** HEAD with at most 4 in flight, so a burst of events does not flood the server. */
  async headLimited(key) {
    this.inFlight ??= 0;
    this.waiting ??= [];
    if (this.inFlight >= 4) await new Promise((resolve) => this.waiting.push(resolve));
    this.inFlight++;
    try { return await head(key); } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  /** Opens the folders down to `prefix` ("a/b/") and focuses it. */
  async revealPrefix(prefix) {
    let at = '';
    for (const part of prefix.split('/').slice(0, -1)) {
      const level = this.levels.get(at);
      if (!level) return false;
      if (level.loading) await level.loading.catch(() => {});
      const name = at + part + '/';
      for (let pages = 0; !level.items.has(name) && level.next && level.next < name && pages < 20; pages++) {
        await this.loadLevel(at, level.group, { append: true });
      }
      const li = level.items.get(name);
      if (!li) return false;
      if (li.getAttribute('aria-expanded') !== 'true') await this.expand(li);
      this.focusRow(li.firstElementChild);
      at = name;
    }
    return true;
  }

  /** A key under an unloaded level: make sure its folder shows in the deepest loaded level. */
  addFolderFor(key) {
    let prefix = '';
    for (const part of key.split('/').slice(0, -1)) {
      const level = this.levels.get(prefix);
      const name = prefix + part + '/';
      if (level && !level.items.has(name) && !(level.next && name > level.next)) {
        this.insertSorted(level, name, this.folderItem(name));
      }
      if (!this.levels.has(name)) return;
      prefix = name;
    }
  }

  insertSorted(level, name, li) {
    level.group.querySelector(':scope > .empty')?.remove();
    const before = [...level.items.keys()].filter((n) => n > name).sort()[0];
    const beforeNode = before ? level.items.get(before) : level.group.querySelector(':scope > .more');
    level.items.set(name, li);
    level.group.insertBefore(li, beforeNode ?? null);
    this.applyFilter();
  }

  remove(key) {
    const level = this.levels.get(parentOf(key));
    const li = level?.items.get(key);
    if (!li) return;
    const wasFocused = li.contains(document.activeElement);
    li.remove();
    level.items.delete(key);
    if (wasFocused) this.ensureTabStop(true);
  }

  /** A bulk delete of `prefix`: reload every loaded level it touches. */
  async bulkDeleted(prefix) {
    const touched = [...this.levels.keys()].filter((p) => p.startsWith(prefix) || prefix.startsWith(p));
    // the shortest loaded level that holds the deleted prefix (a parent) reloads the rest too
    const roots = touched.filter((p) => !touched.some((q) => q !== p && p.startsWith(q)));
    for (const p of roots) await this.reloadLevel(p);
  }

  // ---- filter ----

  setFilter(text) {
    this.filterText = text;
    this.applyFilter();
  }

  applyFilter() {
    const text = this.filterText.toLowerCase();
    const visit = (group) => {
      let any = false;
      for (const li of group.children) {
        if (li.dataset.key !== undefined) {
          li.hidden = !!text && !li.dataset.key.toLowerCase().includes(text);
        } else if (li.dataset.prefix !== undefined) {
          const inner = visit(li.querySelector(':scope > ul'));
          li.hidden = !!text && !inner && !li.dataset.prefix.toLowerCase().includes(text);
        } else continue;
        any ||= !li.hidden;
      }
      return any;
    };
    visit(this.root);
  }

  // ---- keyboard: roving tabindex over the visible rows ----

  visibleRows() {
    return [...this.root.querySelectorAll('.row')].filter((row) => row.offsetParent !== null);
  }

  ensureTabStop(focus = false) {
    const rows = this.visibleRows();
    if (rows.some((r) => r.tabIndex === 0)) return;
    if (rows[0]) {
      rows[0].tabIndex = 0;
      if (focus) rows[0].focus();
    }
  }

  focusRow(row) {
    for (const r of this.root.querySelectorAll('.row[tabindex="0"]')) r.tabIndex = -1;
    row.tabIndex = 0;
    row.focus();
  }

  keydown(e) {
    const row = e.target.closest?.('.row');
    if (!row || e.target !== row) return;
    const li = row.parentElement;
    const rows = this.visibleRows();
    const i = rows.indexOf(row);
    const folder = li.dataset.prefix !== undefined;
    switch (e.key) {
      case 'ArrowDown': if (rows[i + 1]) this.focusRow(rows[i + 1]); break;
      case 'ArrowUp': if (rows[i - 1]) this.focusRow(rows[i - 1]); break;
      case 'Home': if (rows[0]) this.focusRow(rows[0]); break;
      case 'End': if (rows.length) this.focusRow(rows[rows.length - 1]); break;
      case 'ArrowRight':
        if (folder && li.getAttribute('aria-expanded') !== 'true') this.expand(li);
        else if (folder && rows[i + 1]) this.focusRow(rows[i + 1]);
        break;
      case 'ArrowLeft': {
        if (folder && li.getAttribute('aria-expanded') === 'true') { this.collapse(li); break; }
        const parent = li.parentElement.closest('li[data-prefix]');
        if (parent) this.focusRow(parent.firstElementChild);
        break;
      }
      case 'Enter': case ' ':
        if (folder) this.toggle(li); else this.open(li);
        break;
      case 'Delete':
        if (folder) this.onDeletePrefix(li.dataset.prefix); else return;
        break;
      default: return;
    }
    e.preventDefault();
  }
}

export function parentOf(name) {
  const trimmed = name.endsWith('/') ? name.slice(0, -1) : name;
  const i = trimmed.lastIndexOf('/');
  return i < 0 ? '' : trimmed.slice(0, i + 1);
}

function lastSegment(name) {
  const trimmed = name.endsWith('/') ? name.slice(0, -1) : name;
  return trimmed.slice(trimmed.lastIndexOf('/') + 1) + (name.endsWith('/') ? '/' : '');
}

export { toast };
