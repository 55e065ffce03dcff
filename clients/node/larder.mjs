// Larder for node:test: one namespace per test process, reset to the
// fixtures before every test. ESM, no dependencies (Node 20's fetch).
//
//   import { useLarder } from './clients/node/larder.mjs';
//   const larder = useLarder({ fixtures: 'fixtures' });
//   test('reads a fixture', async () => { await larder.getJSON('users/1.json'); });
//
// The server: LARDER_URL when set (e.g. a docker compose sidecar), else a
// `larder --ephemeral --port 0 --no-fsync` started for this process
// (LARDER_BIN, else the binary the npm package carries, else `larder` on PATH). `node --test` runs each file in a
// process of its own, so with LARDER_URL the files share one server and
// never see each other's writes: each process has its own namespace.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { after, afterEach, before, beforeEach } from 'node:test';

export class LarderError extends Error {
  constructor(method, url, status, body) {
    super(`${method} ${url}: ${status} ${body.slice(0, 200)}`);
    this.status = status;
    this.body = body;
  }
}

const encodeKey = (key) => key.split('/').map(encodeURIComponent).join('/');

/** One namespace of a Larder server; `url` is its base URL. */
export class Larder {
  constructor(url) {
    this.url = url.replace(/\/+$/, '');
  }

  /** `{ status, headers, body }` of one request to `url + path` (never throws for a status). */
  async request(method, path, { body, headers } = {}) {
    const response = await fetch(this.url + path, { method, body, headers });
    return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
  }

  async #expect(method, path, ok, init) {
    const answer = await this.request(method, path, init);
    if (!ok.includes(answer.status)) throw new LarderError(method, this.url + path, answer.status, answer.body.toString());
    return answer;
  }

  /** The value's bytes (a Buffer), or null when absent. */
  async get(key) {
    const { status, body } = await this.#expect('GET', `/store/${encodeKey(key)}`, [200, 404]);
    return status === 200 ? body : null;
  }

  /** Stores a Buffer or string; returns the new ETag. */
  async put(key, value, contentType = 'application/octet-stream') {
    const { headers } = await this.#expect('PUT', `/store/${encodeKey(key)}`, [201, 204],
      { body: value, headers: { 'Content-Type': contentType } });
    return headers.get('etag');
  }

  async getJSON(key, fallback = null) {
    const bytes = await this.get(key);
    return bytes === null ? fallback : JSON.parse(bytes.toString());
  }

  async putJSON(key, value) {
    return this.put(key, JSON.stringify(value), 'application/json');
  }

  /** Deletes `key`; returns whether it existed. */
  async delete(key) {
    return (await this.#expect('DELETE', `/store/${encodeKey(key)}`, [204, 404])).status === 204;
  }

  /** Every key under `prefix`, in byte order. */
  async keys(prefix = '') {
    const keys = [];
    let after = null;
    do {
      const query = new URLSearchParams({ limit: '10000', ...(after ? { after } : {}) });
      const page = JSON.parse((await this.#expect('GET', `/store/${encodeKey(prefix)}?${query}`, [200])).body);
      keys.push(...page.keys.map((k) => k.key));
      after = page.next;
    } while (after);
    return keys;
  }

  /** Back to exactly the fixtures (constant time). */
  async reset() {
    return JSON.parse((await this.#expect('DELETE', '/store/', [200])).body).deleted;
  }

  /** The values under `prefix` as a snapshot document (NDJSON text). */
  async snapshot(prefix = '') {
    return (await this.#expect('GET', `/snapshot?${new URLSearchParams({ prefix })}`, [200])).body.toString();
  }

  /** Puts a snapshot document back, all or nothing. */
  async restore(document, { replace = false, prefix = '' } = {}) {
    const query = new URLSearchParams({ prefix, ...(replace ? { replace: '1' } : {}) });
    return JSON.parse((await this.#expect('POST', `/snapshot?${query}`, [200],
      { body: document, headers: { 'Content-Type': 'application/x-ndjson' } })).body);
  }

  /** Adds a fault rule for requests under `prefix` (the started server allows faults). */
  async fault(prefix, rule = {}) {
    return JSON.parse((await this.#expect('POST', '/faults', [200],
      { body: JSON.stringify({ ...rule, prefix }), headers: { 'Content-Type': 'application/json' } })).body);
  }

  async clearFaults() {
    await this.#expect('DELETE', '/faults', [200]);
  }

  /**
   * The requests the server answered in this namespace, oldest first: the
   * journal's entries (`{ seq, time, method, path, query, status, ms, bytesIn,
   * bytesOut, etag, fault }`, `path` inside the namespace: `/store/users/7`).
   * Filters: `method` ('GET'), `prefix` (a key prefix: 'users/7'), `status`
   * (404 or '4xx'), `since` (a `seq`: only later ones), `limit`. The reset
   * before each test empties the journal, so it holds that test's requests.
   */
  async requests({ method, prefix, status, since, limit } = {}) {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries({ method, prefix, status, since, limit })) {
      if (value !== undefined && value !== null) query.set(name, String(value));
    }
    const path = query.size ? `/journal?${query}` : '/journal';
    return JSON.parse((await this.#expect('GET', path, [200])).body).requests;
  }

  /** Empties this namespace's journal, so `requests()` sees only what follows. */
  async clearRequests() {
    await this.#expect('DELETE', '/journal', [204]);
  }

  /**
   * This namespace's clock (`/clock`): move time instead of sleeping. Expiry
   * (`?ttl=`), `Last-Modified` and the journal's times read it. `useLarder`
   * puts it back on the system clock after each test.
   */
  get clock() {
    return new Clock(this);
  }

  /** @internal: the body of a 2xx answer, parsed as JSON. */
  async expectJSON(method, path, ok, init) {
    return JSON.parse((await this.#expect(method, path, ok, init)).body);
  }
}

/**
 * A namespace's clock. Durations are `'500ms'`, `'90s'`, `'15m'`, `'2h'`,
 * `'3d'` (or combined: `'1h30m'`) or a number of milliseconds; every call
 * answers the state, `{ now, offsetMs, frozen }`.
 */
export class Clock {
  #larder;
  constructor(larder) {
    this.#larder = larder;
  }

  #move(move) {
    return this.#larder.expectJSON('POST', '/clock', [200],
      { body: JSON.stringify(move), headers: { 'Content-Type': 'application/json' } });
  }

  state() { return this.#larder.expectJSON('GET', '/clock', [200]); }
  /** The clock's time as a `Date`. */
  async now() { return new Date((await this.state()).now); }
  /** Forward; keys whose ttl it passes are gone, with their `expire` events, when it resolves. */
  advance(duration) { return this.#move({ advance: duration }); }
  /** Forward to `when` (a `Date` or an RFC 3339 string); never backwards. */
  set(when) { return this.#move({ set: when instanceof Date ? when.toISOString() : when }); }
  freeze() { return this.#move({ freeze: true }); }
  unfreeze() { return this.#move({ freeze: false }); }
  /** Back on the system clock (what expired while it was ahead stays gone). */
  reset() { return this.#larder.expectJSON('DELETE', '/clock', [200]); }
}

/** The binary the npm package carries (`bin/larder` beside this file), if this is the package. */
function packagedBinary() {
  const path = fileURLToPath(new URL('./bin/larder', import.meta.url));
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/** Starts `larder --ephemeral --port 0 --no-fsync`; resolves to `{ url, stop() }` once it is healthy. */
export async function startLarder({ binary = process.env.LARDER_BIN || packagedBinary() || 'larder', fixtures, args = [] } = {}) {
  const argv = ['--ephemeral', '--port', '0', '--host', '127.0.0.1', '--no-fsync', '--allow-faults'];
  if (fixtures) argv.push('--fixtures', fixtures);
  const child = spawn(binary, [...argv, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve(line.trim()));
    child.once('error', reject);
    exited.then((code) => reject(new Error(`larder exited (${code}) before starting: ${stderr}`)));
  });
  child.stdout.resume();
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`larder at ${url} did not become healthy: ${stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Registers node:test hooks: before all tests, connect (LARDER_URL) or start
 * a server and pick this process's namespace; before each test, reset it to
 * the fixtures; after all, drop the namespace (and stop a started server).
 * Returns the namespace's `Larder`, usable inside tests.
 */
export function useLarder(options = {}) {
  const larder = new Larder('http://unset');
  let server = null;
  let base = null;
  before(async () => {
    base = process.env.LARDER_URL;
    if (!base) {
      server = await startLarder(options);
      base = server.url;
    }
    larder.url = `${base.replace(/\/+$/, '')}/ns/node-${process.pid}-${randomBytes(3).toString('hex')}`;
  });
  beforeEach(async () => {
    await larder.reset();
  });
  afterEach(async () => {
    await larder.clock.reset();
  });
  after(async () => {
    if (base) await fetch(larder.url, { method: 'DELETE' }).catch(() => {});
    if (server) await server.stop();
  });
  return larder;
}
