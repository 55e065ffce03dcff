// The body of the four workers-N.test.mjs files, which node --test runs in
// parallel processes: all write the same key names, and each must only ever
// see its own values and its own requests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { useLarder } from '../larder.mjs';

export function sameKeysTests(me) {
  const larder = useLarder({ fixtures: process.env.LARDER_TEST_FIXTURES });
  for (let n = 0; n < 25; n++) {
    test(`same keys, ${me} #${n}`, async () => {
      assert.deepEqual(await larder.keys('list/'), [], 'reset before each test');
      await larder.putJSON('shared', { me, n });
      await larder.putJSON(`list/${n % 3}`, n);
      await sleep(5);
      assert.deepEqual(await larder.getJSON('shared'), { me, n });
      assert.deepEqual(await larder.keys('list/'), [`list/${n % 3}`]);
      // The journal is the namespace's too: only this test's two writes, though
      // three other processes write the same keys on the same server.
      assert.deepEqual((await larder.requests({ method: 'PUT' })).map((r) => r.path), ['/store/shared', `/store/list/${n % 3}`]);
    });
  }
}
