// rate-limiter-flexible (RateLimiterRedis over ioredis) through a fixed sequence of calls; one line of
// decisions per step on stdout. Usage: node rlflex_sequence.js URL serve|redis
//   Both modes run the steps that need no time to pass; their lines must be equal on limitlab serve
//   and on a real Redis. `serve` then moves the clock with CLOCK.ADVANCE and asserts the library's
//   documented decisions (msBeforeNext is the key's PTTL) at the window's edges.
const assert = require('node:assert');
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

const [url, mode] = process.argv.slice(2);
const show = (step, value) => console.log(`${step}: ${JSON.stringify(value)}`);
const outcome = (p) =>
  p.then(
    (r) => ({ ok: true, consumed: r.consumedPoints, remaining: r.remainingPoints, first: r.isFirstInDuration }),
    (r) => {
      if (r instanceof Error) throw r;
      return { ok: false, consumed: r.consumedPoints, remaining: r.remainingPoints, first: r.isFirstInDuration };
    },
  );

(async () => {
  const redis = new Redis(url);
  const limiter = new RateLimiterRedis({ storeClient: redis, points: 5, duration: 60, keyPrefix: 'rl' });
  const steps = [];
  for (let i = 0; i < 6; i++) steps.push(await outcome(limiter.consume('alice')));
  show('consume alice x6', steps);
  show('consume bob 3, 3', [await outcome(limiter.consume('bob', 3)), await outcome(limiter.consume('bob', 3))]);
  show('reward bob 4', await outcome(limiter.reward('bob', 4)));
  show('penalty carol 2', await outcome(limiter.penalty('carol', 2)));
  const got = await limiter.get('alice');
  show('get alice', { consumed: got.consumedPoints, remaining: got.remainingPoints });
  show('get nobody', await limiter.get('nobody'));
  show('delete alice', await limiter.delete('alice'));
  show('consume alice again', await outcome(limiter.consume('alice')));
  const block = new RateLimiterRedis({ storeClient: redis, points: 2, duration: 10, blockDuration: 30, keyPrefix: 'blk' });
  const b = [];
  for (let i = 0; i < 4; i++) b.push(await outcome(block.consume('eve')));
  show('block eve x4', b);

  if (mode === 'serve') {
    assert.equal((await limiter.consume('bob', 3)).remainingPoints, 0); // 2 + 3 of 5
    const frozen = await limiter.consume('bob').then(() => assert.fail('allowed'), (r) => r);
    assert.equal(frozen.msBeforeNext, 60000, 'no time has passed: the whole window is left');
    await redis.call('CLOCK.ADVANCE', 59999);
    const last = await limiter.consume('bob').then(() => assert.fail('allowed'), (r) => r);
    assert.equal(last.msBeforeNext, 1);
    // Like Redis, the key lives through its deadline's millisecond (PTTL 0), and is gone after it.
    await redis.call('CLOCK.ADVANCE', 1);
    const edge = await limiter.consume('bob').then(() => assert.fail('allowed'), (r) => r);
    assert.equal(edge.msBeforeNext, 0);
    await redis.call('CLOCK.ADVANCE', 1);
    const fresh = await limiter.consume('bob');
    assert.deepEqual([fresh.remainingPoints, fresh.isFirstInDuration, fresh.msBeforeNext], [4, true, 60000]);
    show('bob after the window', [fresh.remainingPoints, fresh.isFirstInDuration, fresh.msBeforeNext]);
  }
  console.log('done');
  redis.disconnect();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
