// A Node test of a rate-limiter-flexible limit against `limitlab serve`: no sleeping, time moves by command.
const assert = require('node:assert');
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

(async () => {
  const redis = new Redis(process.env.REDIS_URL); // redis://127.0.0.1:PORT, printed by `limitlab serve --port 0`
  const limiter = new RateLimiterRedis({ storeClient: redis, points: 5, duration: 60 });

  for (let left = 4; left >= 0; left--) assert.equal((await limiter.consume('alice')).remainingPoints, left);
  const refused = await limiter.consume('alice').then(() => assert.fail('allowed'), (res) => res);
  assert.equal(refused.msBeforeNext, 60000); // the whole window: no time has passed
  await redis.call('CLOCK.ADVANCE', 60001); // past the window's last millisecond
  assert.equal((await limiter.consume('alice')).remainingPoints, 4); // a new window
  redis.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
