// The rate-limiter scenarios both suites (node:test and Vitest) run through the helper: each
// returns what it saw, for the suite's own assertions. Windows are crossed with ll.advance, never
// by sleeping.
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { RedisStore } from 'rate-limit-redis';

/** ioredis (a Cluster client on a cluster) under rate-limiter-flexible: 5 a minute. */
export async function rateLimiterFlexible(ll) {
  const client = ll.ports.length > 1
    ? new Cluster([{ host: ll.host, port: ll.port }], { lazyConnect: false })
    : new Redis(ll.url);
  try {
    const limiter = new RateLimiterRedis({ storeClient: client, points: 5, duration: 60, keyPrefix: 'rlflex' });
    const users = ll.ports.length > 1 ? ['alice', 'bob', 'carol', 'dave'] : ['alice'];
    const seen = {};
    for (const u of users) {
      const remaining = [];
      for (let i = 0; i < 5; i++) remaining.push((await limiter.consume(u)).remainingPoints);
      const refused = await limiter.consume(u).then(() => null, (res) => res);
      seen[u] = { remaining, refusedMsBeforeNext: refused?.msBeforeNext };
    }
    await ll.advance(60_000); // the window's last millisecond: still refused
    const stillRefused = await limiter.consume(users[0]).then(() => false, () => true);
    await ll.advance(1);
    const after = [];
    for (const u of users) after.push((await limiter.consume(u)).remainingPoints);
    return { seen, stillRefused, after };
  } finally {
    client.disconnect();
  }
}

/** node-redis (createCluster on a cluster) under rate-limit-redis's store: a 60 s window. */
export async function rateLimitRedis(ll) {
  const cluster = ll.ports.length > 1;
  const client = cluster
    ? createCluster({ rootNodes: [{ url: ll.url }] })
    : createClient({ url: ll.url });
  await client.connect();
  try {
    const store = cluster
      ? new RedisStore({
          sendCommandCluster: ({ key, isReadOnly, command }) => client.sendCommand(key, isReadOnly, command),
        })
      : new RedisStore({ sendCommand: (...args) => client.sendCommand(args) });
    store.init({ windowMs: 60_000 });
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await store.increment('10.0.0.1'));
    const serverNow = await ll.now();
    await ll.advance(60_001);
    const next = await store.increment('10.0.0.1');
    return {
      totals: hits.map((h) => h.totalHits),
      // rate-limit-redis computes resetTime as the client's Date.now() + the key's PTTL.
      resetOffset: hits[0].resetTime.getTime() - serverNow,
      afterWindow: next.totalHits,
    };
  } finally {
    if (typeof client.close === 'function') await client.close();
    else await client.quit();
  }
}
