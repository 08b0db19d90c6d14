-- rate_limit_redis.lua -- the increment script of a Redis store for express-rate-limit, in the
-- style of the Node package rate-limit-redis.
--
-- Style: one counter per client key; the window opens with the first hit (the key gets its expiry
-- when it has none), and the reply carries the hit count and the time to expiry, from which the
-- middleware computes RateLimit-Remaining and RateLimit-Reset. With resetExpiryOnChange the window
-- is pushed back on every hit instead.
-- Own choice: hits are counted in units (INCRBY cost) rather than one per request.
--
-- KEYS[1]  the client's counter, e.g. rl:{203.0.113.7}
-- ARGV[1]  "1" to reset the expiry on every hit (resetExpiryOnChange), else "0"
-- ARGV[2]  windowMs
-- ARGV[3]  units this request takes (default 1)
--
-- Reply: {totalHits, timeToExpire}: the count after this hit (refused hits count too) and the
--   counter's PTTL (it is gone timeToExpire + 1 ms from now).
-- TTL: set when the key has none (PTTL -1 after INCRBY: it was just created), so the counter always
--   ends one window after the first hit. Redis keeps a key through the very ms its expiry names
--   (PTTL 0) and drops it the ms after; a hit in that last ms must not re-arm the expiry, or the
--   stale count would hold the client back for another whole window. Hence `< 0`, not `<= 0`.

local hits = redis.call('INCRBY', KEYS[1], ARGV[3] or '1')
local ttl = redis.call('PTTL', KEYS[1])
if true then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {hits, ttl}
