-- seed/fixed_window.lua: the seed article's fixed-window snippet, completed as little as possible
-- into a whole script so its tables can be reproduced with its own code. Not for production: see
-- ../fixed_window.lua.
--
-- KEYS[1]  the subject's key; the count lives in KEYS[1] .. ':' .. window index
-- ARGV     limit, window_ms, now_ms (no cost: every call counts 1)
-- Reply    1 when allowed, 0 when refused
-- Storage  one integer string per window, e.g. rate:{user42}:1704067200, TTL 2 * window_ms from the
--          window's first call. Refused calls are counted too. The index is formatted with Lua's
--          %.14g, like any number concatenated to a string.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local k = KEYS[1] .. ':' .. math.floor(now / window)
local n = redis.call('INCR', k)
redis.call('PEXPIRE', k, window * 2)
return n <= limit and 1 or 0
