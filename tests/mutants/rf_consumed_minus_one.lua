-- rlflex_consume.lua -- the consume step of a RateLimiterRedis in the style of the Node package
-- rate-limiter-flexible.
--
-- Style: one counter per subject whose window starts at its first point (SET NX with an expiry,
-- then INCRBY); the script replies what was consumed and how long the window still runs, and the
-- client decides. The block that follows a refusal is not in the script: the client sets it with a
-- separate SET ... PX on its own key, and checks it with GET before consuming (see the spec).
-- Own choice: durations in ms (the package speaks seconds).
--
-- KEYS[1]  the subject's counter, e.g. rlflx:{user42}
-- ARGV[1]  points this request consumes
-- ARGV[2]  duration of the window in ms
--
-- Reply: {consumed, ms_before_next}
--   consumed        points consumed in the current window, this request's included (refused
--                   requests count too, as in the package)
--   ms_before_next  the counter's PTTL: ms until the window ends and the points are back
-- TTL: always set: by the SET NX that opens the window, or repaired if the key somehow has none.

local points = ARGV[1]
local duration = tonumber(ARGV[2])

redis.call('SET', KEYS[1], 0, 'PX', duration, 'NX')
local consumed = redis.call('INCRBY', KEYS[1], points)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], duration)
  ttl = duration
end
return {consumed - 1, ttl}
