-- seed/token_bucket.lua: the seed article's token-bucket snippet, completed as little as possible
-- into a whole script so its tables can be reproduced with its own code. Not for production: see
-- ../token_bucket.lua.
--
-- KEYS[1]  the subject's key (one hash)
-- ARGV     limit (the capacity, refilled once per window), window_ms, now_ms (no cost: 1 token)
-- Reply    1 when allowed, 0 when refused
-- Storage  one hash: tok = tokens (a Lua number, sent with %.17g, so often a long float string),
--          ts = now_ms of the last call; written on every call, TTL 2 * window_ms. A clock that
--          goes backwards takes tokens away.
local cap = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local s = redis.call('HMGET', KEYS[1], 'tok', 'ts')
local tok = tonumber(s[1]) or cap
local ts = tonumber(s[2]) or now
local ok = 0

tok = tok + (now - ts) * cap / w
if tok >= 1 then tok = tok - 1; ok = 1 end

redis.call('HSET', KEYS[1], 'tok', tok, 'ts', now)
redis.call('PEXPIRE', KEYS[1], w * 2)
return ok
