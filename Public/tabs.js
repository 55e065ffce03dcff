// The header's tabs: Keys, Requests, Faults. One pane shows at a time; the
// address says which (#/requests, #/faults; a key's #/key/... is the Keys pane),
// so a reload or a shared link comes back to the same pane.
//
// Keyboard: the tab list is one stop for Tab; Left/Right/Home/End move
// between the tabs and show the pane (the WAI-ARIA tabs pattern).

/** The pane an address shows: 'requests', 'faults' or 'keys'. */
export function paneOfHash(hash) {
  if (hash === '#/requests') return 'requests';
  if (hash === '#/faults') return 'faults';
  return 'keys';
}

export class PaneTabs {
  /** `panes`: {name: {node, show(), hide()}}; show/hide let a pane start and
   *  stop its work (the journal's long poll runs only while it shows). */
  constructor(tablist, panes) {
    this.tabs = [...tablist.querySelectorAll('[role=tab]')];
    this.panes = panes;
    this.current = null;
    for (const tab of this.tabs) {
      tab.addEventListener('click', () => this.choose(tab.dataset.pane));
    }
    tablist.addEventListener('keydown', (e) => this.keydown(e));
  }

  /** Shows the pane `name` (the address follows through `onChoose`). */
  choose(name) {
    this.onChoose?.(name);
  }

  /** Shows `name` and hides the others; called for every address change. */
  select(name) {
    if (name === this.current) return;
    const previous = this.current;
    this.current = name;
    for (const tab of this.tabs) {
      const selected = tab.dataset.pane === name;
      tab.setAttribute('aria-selected', String(selected));
      tab.tabIndex = selected ? 0 : -1;
    }
    // every other pane hides (at the start the page's markup shows the Keys pane)
    for (const [other, pane] of Object.entries(this.panes)) {
      if (other !== name) pane.node.hidden = true;
    }
    if (previous) this.panes[previous].hide?.();
    this.panes[name].node.hidden = false;
    this.panes[name].show?.();
  }

  keydown(e) {
    const at = this.tabs.findIndex((tab) => tab === document.activeElement);
    if (at < 0) return;
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: this.tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const tab = this.tabs[(to + this.tabs.length) % this.tabs.length];
    tab.focus();
    this.choose(tab.dataset.pane);
  }
}
