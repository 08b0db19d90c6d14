-- seed/sliding_window.lua: the seed article's sliding-window-counter snippet, completed as little
-- as possible into a whole script so its tables can be reproduced with its own code. Not for
-- production: see ../sliding_window.lua.
--
-- KEYS[1]  the subject's key; the counters live in KEYS[1] .. ':' .. window index, for the current
--          and the previous window (two keys: hash-tag KEYS[1] in a cluster)
-- ARGV     limit, window_ms, now_ms (no cost: every call counts 1)
-- Reply    1 when allowed, 0 when refused
-- Storage  one integer string per window, TTL 2 * window_ms from the window's first counted call.
--          Only allowed calls are counted. The estimate is Lua floating point, as in the article;
--          a call is allowed when the estimate is below the limit.
local limit = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local cur = math.floor(now / w)
local kc = KEYS[1] .. ':' .. cur
local kp = KEYS[1] .. ':' .. (cur - w)
local current = tonumber(redis.call('GET', kc) or 0)
local previous = tonumber(redis.call('GET', kp) or 0)

local frac = (now % w) / w
local est = previous * (1 - frac) + current

if est < limit then
  if redis.call('INCR', kc) == 1 then redis.call('PEXPIRE', kc, w * 2) end
  return 1
end
return 0
