// node:test through the limitlab helper: ioredis with rate-limiter-flexible and node-redis with
// rate-limit-redis, on one node and on a three-master cluster, windows crossed with advance; the
// process's clock moved with the server's (@sinonjs/fake-timers, node:test's mock.timers); start
// failures and stop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import { startLimitlab, findBinary, LimitlabError } from 'limitlab';
import { rateLimiterFlexible, rateLimitRedis } from '../scenarios.mjs';

const START = 1_704_067_200_000; // the virtual clock's default start, 2024-01-01

for (const cluster of [undefined, 3]) {
  const where = cluster ? 'a cluster' : 'one node';
  describe(`on ${where}`, () => {
    it('rate-limiter-flexible over ioredis', async () => {
      const ll = await startLimitlab({ cluster });
      try {
        const r = await rateLimiterFlexible(ll);
        for (const seen of Object.values(r.seen)) {
          assert.deepEqual(seen, { remaining: [4, 3, 2, 1, 0], refusedMsBeforeNext: 60_000 });
        }
        assert.equal(r.stillRefused, true);
        assert.ok(r.after.every((left) => left === 4), JSON.stringify(r.after));
        assert.equal(await ll.now(), START + 60_001);
      } finally {
        await ll.stop();
      }
    });

    it('rate-limit-redis over node-redis', async () => {
      const ll = await startLimitlab({ cluster });
      try {
        const r = await rateLimitRedis(ll);
        assert.deepEqual(r.totals, [1, 2, 3]);
        assert.equal(r.afterWindow, 1);
      } finally {
        await ll.stop();
      }
    });
  });
}

describe('one clock for client and server', () => {
  it('fakeTimers: true installs @sinonjs/fake-timers on Date', async () => {
    const ll = await startLimitlab({ fakeTimers: true });
    try {
      assert.equal(ll.followsProcess, true);
      assert.equal(Date.now(), START);
      assert.equal(await ll.advance(1_500), START + 1_500);
      assert.equal(Date.now(), START + 1_500);
      const r = await rateLimitRedis(ll);
      // The client's Date.now() is the server's time, so resetTime is exact.
      assert.equal(r.resetOffset, 60_000);
      await ll.set(1_800_000_000_000);
      assert.equal(new Date().getTime(), 1_800_000_000_000);
    } finally {
      await ll.stop();
    }
    assert.ok(Math.abs(Date.now() - performance.timeOrigin - performance.now()) < 5_000, 'the real clock is back');
  });

  it("node:test's mock.timers", async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 0 });
    const ll = await startLimitlab({ at: 1_750_000_000_000, fakeTimers: t.mock.timers });
    try {
      assert.equal(Date.now(), 1_750_000_000_000);
      await ll.advance(250);
      assert.equal(Date.now(), 1_750_000_000_250);
      assert.equal(await ll.now(), 1_750_000_000_250);
    } finally {
      await ll.stop();
    }
  });

  it('without fakeTimers only the server moves', async () => {
    const ll = await startLimitlab();
    try {
      const before = Date.now();
      await ll.advance(3_600_000);
      assert.ok(Date.now() - before < 60_000);
      assert.equal(await ll.now(), START + 3_600_000);
    } finally {
      await ll.stop();
    }
  });

  it("clock: 'wall' follows the machine, and advance jumps it", async () => {
    const ll = await startLimitlab({ clock: 'wall' });
    try {
      assert.ok(Math.abs((await ll.now()) - Date.now()) < 5_000);
      await ll.advance(86_400_000);
      assert.ok(Math.abs((await ll.now()) - Date.now() - 86_400_000) < 5_000);
    } finally {
      await ll.stop();
    }
  });
});

describe('life of the server', () => {
  it('stop ends the process; commands after it are refused', async () => {
    const ll = await startLimitlab({ cluster: 3 });
    assert.equal(ll.ports.length, 3);
    assert.equal(await ll.command('PING'), 'PONG');
    const client = new Cluster([{ host: ll.host, port: ll.port }]);
    for (let i = 0; i < 20; i++) await client.set(`k${i}`, i);
    client.disconnect();
    const sizes = async () => Promise.all([0, 1, 2].map((i) => ll.commandOn(i, 'DBSIZE')));
    assert.equal((await sizes()).reduce((a, b) => a + b), 20);
    assert.ok((await sizes()).every((n) => n > 0), 'keys on every node');
    await ll.flush();
    assert.deepEqual(await sizes(), [0, 0, 0]);
    await ll.stop();
    assert.equal(ll.running, false);
    assert.throws(() => process.kill(ll.pid, 0), { code: 'ESRCH' });
    await assert.rejects(ll.now(), LimitlabError);
  });

  it('a server that cannot start says why, with its log', async () => {
    await assert.rejects(startLimitlab({ args: ['--no-such-flag'] }), (err) => {
      assert.ok(err instanceof LimitlabError);
      assert.match(err.message, /did not start/);
      assert.match(err.message, /--no-such-flag/);
      return true;
    });
  });

  it('the binary is the platform package', () => {
    assert.match(findBinary(), /node_modules\/@limitlab\/linux-x64\/bin\/limitlab$/);
  });

  it('requirepass: the URL carries the password', async () => {
    const ll = await startLimitlab({ requirepass: 'pw' });
    try {
      assert.match(ll.url, /^redis:\/\/:pw@127\.0\.0\.1:\d+$/);
      assert.equal(await ll.now(), START);
    } finally {
      await ll.stop();
    }
  });
});

