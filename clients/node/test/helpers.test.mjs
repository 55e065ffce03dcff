import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useLarder } from '../larder.mjs';

const larder = useLarder({ fixtures: process.env.LARDER_TEST_FIXTURES });

test('the namespace starts from the fixtures', async () => {
  assert.deepEqual(await larder.getJSON('users/1.json'), { name: 'Ada' });
  assert.match(larder.url, /\/ns\/node-\d+-[0-9a-f]{6}$/);
});

test('snapshot, restore and a fault', async () => {
  await larder.putJSON('cart/1', { items: 1 });
  const saved = await larder.snapshot('cart/');
  await larder.putJSON('cart/1', { items: 99 });
  assert.equal((await larder.restore(saved, { replace: true, prefix: 'cart/' })).restored, 1);
  assert.deepEqual(await larder.getJSON('cart/1'), { items: 1 });
  await larder.fault('slow/', { status: 503, count: 1 });
  const faulted = await larder.request('GET', '/store/slow/x');
  assert.equal(faulted.status, 503);
  assert.ok(faulted.headers.get('larder-fault'));
  assert.equal((await larder.request('GET', '/store/slow/x')).status, 404);
});

test('requests: what this test sent, filtered', async () => {
  assert.deepEqual(await larder.requests(), [], 'the reset emptied the journal');
  // The code under test: its own fetch, the namespace's URL.
  await fetch(`${larder.url}/store/users/1.json`).then((r) => r.arrayBuffer());
  assert.equal((await larder.requests({ method: 'GET', prefix: 'users/1' })).length, 1);
  assert.equal(await larder.get('users/2.json'), null);
  await larder.putJSON('users/2.json', { name: 'Grace' });
  const all = await larder.requests();
  assert.deepEqual(all.map((r) => `${r.method} ${r.path} ${r.status}`),
    ['GET /store/users/1.json 200', 'GET /store/users/2.json 404', 'PUT /store/users/2.json 201']);
  assert.deepEqual((await larder.requests({ status: '4xx' })).map((r) => r.status), [404]);
  assert.deepEqual((await larder.requests({ status: 201 })).map((r) => r.method), ['PUT']);
  assert.deepEqual((await larder.requests({ since: all[1].seq })).map((r) => r.seq), [all[2].seq]);
  assert.equal((await larder.requests({ limit: 1 })).length, 1);
  await larder.clearRequests();
  assert.deepEqual(await larder.requests(), []);
});

test('the clock: a session that expires after 30 minutes, tested at once', async () => {
  assert.equal((await larder.request('PUT', '/store/sessions/abc?ttl=1800', { body: '{"user":1}' })).status, 201);
  await larder.clock.advance('29m');
  assert.deepEqual(await larder.getJSON('sessions/abc'), { user: 1 });
  const state = await larder.clock.advance(2 * 60 * 1000);
  assert.ok(state.offsetMs >= 31 * 60 * 1000 && !state.frozen);
  assert.equal(await larder.getJSON('sessions/abc'), null);
  await larder.clock.freeze();
  await larder.clock.set(new Date(Date.UTC(2030, 0, 2, 3, 4, 5)));
  assert.equal((await larder.clock.now()).toISOString(), '2030-01-02T03:04:05.000Z');
});

test('the clock is the system clock again in the next test', async () => {
  const state = await larder.clock.state();
  assert.equal(state.offsetMs, 0);
  assert.equal(state.frozen, false);
});
