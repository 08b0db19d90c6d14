-- limits_moving_window.lua -- a moving window (sliding log) in the style of the Python `limits`
-- package's Redis storage (acquire_moving_window).
--
-- Style: the log is a Redis list of timestamps, newest first, trimmed to `limit` entries; the
-- timestamps are float seconds as Python's time.time() prints them. To admit n units the script
-- looks at the entry n places from the limit: if that one is still inside the window, there is no
-- room. The reply is Lua true/false, which Redis turns into 1 / nil.
-- Own choice: an entry exactly one window old is outside (the window is (now - expiry, now]).
--
-- KEYS[1]  the subject's log, e.g. LIMITS:LIMITER/{user42}/10/1/second
-- ARGV[1]  now, float seconds (e.g. 1704067200.123); stored as given
-- ARGV[2]  limit: entries per window
-- ARGV[3]  expiry: the window in seconds
-- ARGV[4]  units this request takes (default 1)
--
-- Reply: 1 when acquired, nil when refused (refusals write nothing).
-- TTL: reset to one window on every acquisition: the newest entry leaves the window exactly when
--   the list expires.

local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local expiry = tonumber(ARGV[3])
local amount = tonumber(ARGV[4] or '1')

if amount > limit then
  return false
end

-- the entry that would be pushed out of the first `limit` places
local entry = redis.call('LINDEX', KEYS[1], limit - amount)
if entry and tonumber(entry) > now - expiry then
  return false
end

for _ = 1, amount do
  redis.call('LPUSH', KEYS[1], ARGV[1])
end
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('PEXPIRE', KEYS[1], math.ceil(expiry * 1000))
return true
