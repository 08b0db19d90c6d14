// Vitest through the limitlab helper: the same libraries and windows as the node:test suite, and
// Vitest's own fake timers (vi) moved with the server's clock.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startLimitlab } from 'limitlab';
import { rateLimiterFlexible, rateLimitRedis } from '../scenarios.mjs';

const START = 1_704_067_200_000;

let ll;
afterEach(async () => {
  await ll?.stop();
  ll = undefined;
  vi.useRealTimers();
});

describe.each([[undefined], [3]])('cluster %s', (cluster) => {
  it('rate-limiter-flexible over ioredis', async () => {
    ll = await startLimitlab({ cluster });
    const r = await rateLimiterFlexible(ll);
    for (const seen of Object.values(r.seen)) {
      expect(seen).toEqual({ remaining: [4, 3, 2, 1, 0], refusedMsBeforeNext: 60_000 });
    }
    expect(r.stillRefused).toBe(true);
    expect(r.after.every((left) => left === 4)).toBe(true);
  });

  it('rate-limit-redis over node-redis', async () => {
    ll = await startLimitlab({ cluster });
    const r = await rateLimitRedis(ll);
    expect(r.totals).toEqual([1, 2, 3]);
    expect(r.afterWindow).toBe(1);
  });
});

it("Vitest's fake timers move with the server's clock", async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  ll = await startLimitlab({ fakeTimers: vi });
  expect(Date.now()).toBe(START);
  await ll.advance(30_000);
  expect(Date.now()).toBe(START + 30_000);
  const r = await rateLimitRedis(ll);
  expect(r.resetOffset).toBe(60_000);
  expect(Date.now()).toBe(await ll.now());
});

it('fakeTimers: true on a cluster', async () => {
  ll = await startLimitlab({ cluster: 3, fakeTimers: true });
  await ll.advance(5);
  expect(Date.now()).toBe(START + 5);
  const r = await rateLimitRedis(ll);
  expect(r.resetOffset).toBe(60_000);
});
