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
