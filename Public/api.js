// HTTP helpers: the token, key URLs, listing, and one retry after a 401.

const TOKEN_KEY = 'larder-token';

export function getToken() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token); else sessionStorage.removeItem(TOKEN_KEY);
}

const encodeSegments = (path) => path.split('/').map(encodeURIComponent).join('/');

// The namespace the viewer shows: '' is the default one, else every path
// of the API is under /ns/<name> (namespaces.js switches it).
let base = '';
export function currentNamespace() { return base ? decodeURIComponent(base.slice('/ns/'.length)) : ''; }
export function setNamespace(name) { base = name ? '/ns/' + encodeURIComponent(name) : ''; }
/** A path of the API (`/events`, `/store/...`) in the current namespace. */
export function apiURL(path) { return base + path; }

/** `/store/<key>` with every segment percent-encoded. */
export function keyURL(key, query = '') { return apiURL('/store/' + encodeSegments(key) + query); }

/** `/store/<prefix>` for a prefix ending in `/` (or `''` for the root). */
export function prefixURL(prefix, query = '') {
  return apiURL((prefix ? '/store/' + encodeSegments(prefix.slice(0, -1)) + '/' : '/store/') + query);
}

let askToken = null;
let asking = null;
/** `fn()` shows the token form and resolves to true once a token was entered. */
export function onUnauthorized(fn) { askToken = fn; }

/** fetch with the bearer token; on a 401 asks for the token (once for concurrent calls) and retries once. */
export async function request(url, { method = 'GET', headers = {}, body, signal } = {}) {
  for (let attempt = 0; ; attempt++) {
    const h = new Headers(headers);
    const token = getToken();
    if (token) h.set('Authorization', 'Bearer ' + token);
    const res = await fetch(url, { method, headers: h, body, signal, cache: 'no-store' });
    if (res.status !== 401 || attempt > 0 || !askToken) return res;
    asking ??= askToken().finally(() => { asking = null; });
    if (!(await asking)) return res;
  }
}

/** A readable sentence for a failed answer (the server's JSON `message` when there is one). */
export async function errorText(res) {
  try {
    const body = await res.json();
    return `${res.status} ${body.error || ''}: ${body.message || ''}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

/** One page of one level: `{keys, prefixes, next}`. */
export async function listLevel(prefix, after = null, limit = 500) {
  let query = `?delimiter=%2F&limit=${limit}`;
  if (after) query += '&after=' + encodeURIComponent(after);
  const res = await request(prefixURL(prefix, query));
  if (!res.ok) throw new Error(await errorText(res));
  return res.json();
}

/** Metadata of one value from its HEAD answer, or null when absent. */
export async function head(key) {
  const res = await request(keyURL(key), { method: 'HEAD' });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  const meta = metaFrom(key, res);
  if (res.headers.get('Content-Encoding')) meta.size = await sizeByRange(key) ?? meta.size;
  return meta;
}

/** A browser always offers gzip, so HEAD's Content-Length may be the gzip size:
 *  a one-byte Range request (sent as identity) tells the real size in Content-Range. */
async function sizeByRange(key) {
  const res = await request(keyURL(key), { headers: { Range: 'bytes=0-0' } });
  const total = /\/(\d+)$/.exec(res.headers.get('Content-Range') || '');
  res.body?.cancel();
  return total ? Number(total[1]) : null;
}

export function metaFrom(key, res) {
  const h = res.headers;
  const expires = h.get('Larder-Expires');
  const modified = h.get('Last-Modified');
  return {
    key,
    // the gzip representation's tag is the identity one with a suffix; events carry the identity tag
    etag: h.get('ETag')?.replace(/-gz"$/, '"') ?? null,
    size: Number(h.get('Content-Length') ?? 0),
    contentType: h.get('Content-Type') || 'application/octet-stream',
    modified: modified ? new Date(modified).toISOString() : null,
    expires: expires ? new Date(expires).toISOString() : null,
    source: h.get('Larder-Source') || 'store',
  };
}
