// The change feed: /events with EventSource (the token as access_token, since an
// EventSource cannot send headers). Calls handlers.put/delete/bulk.

import { getToken, apiURL } from './api.js';

export class LiveFeed {
  constructor(handlers, statusNode) {
    this.handlers = handlers;
    this.status = statusNode;
    this.source = null;
  }

  connect() {
    this.close();
    const token = getToken();
    const url = apiURL('/events') + (token ? '?access_token=' + encodeURIComponent(token) : '');
    const source = this.source = new EventSource(url);
    this.setStatus('connecting', 'connecting…');
    source.addEventListener('open', () => this.setStatus('live', 'live'));
    source.addEventListener('error', () => {
      // the browser reconnects by itself (with Last-Event-ID) unless it gave up
      this.setStatus('offline', source.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting…');
    });
    const parse = (e) => { try { return JSON.parse(e.data); } catch { return null; } };
    source.addEventListener('put', (e) => { const d = parse(e); if (d?.key) this.handlers.put(d); });
    for (const kind of ['delete', 'expire']) {
      source.addEventListener(kind, (e) => {
        const d = parse(e);
        if (!d) return;
        if (d.key !== undefined) this.handlers.delete(d, kind);
        else if (d.prefix !== undefined) this.handlers.bulk(d);
      });
    }
    source.addEventListener('dropped', () => {
      // too far behind: start over and reload what is shown
      this.handlers.resync?.();
      this.connect();
    });
  }

  close() {
    this.source?.close();
    this.source = null;
  }

  setStatus(state, text) {
    if (!this.status) return;
    this.status.dataset.state = state;
    this.status.textContent = text;
  }
}
