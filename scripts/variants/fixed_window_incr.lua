-- variants/fixed_window_incr.lua: the WRITE half of a NON-ATOMIC fixed window. limitlab.
--
-- Not for production: see fixed_window_get.lua. The application sends this after it has decided,
-- from the count fixed_window_get.lua returned, to admit a request. The counter gets a TTL of two
-- windows when it is created, as in the seed article.
--
-- KEYS[1]  the subject's key; the counter lives in KEYS[1] .. ':' .. floor(now_ms / window_ms)
-- ARGV[1]  window_ms
-- ARGV[2]  now_ms (the same value the GET half was given)
-- Reply    the window's count after this increment
local w = tonumber(ARGV[1])
local k = KEYS[1] .. ':' .. string.format('%d', math.floor(tonumber(ARGV[2]) / w))
local n = redis.call('INCR', k)
if n == 1 then redis.call('PEXPIRE', k, 2 * w) end
return n
