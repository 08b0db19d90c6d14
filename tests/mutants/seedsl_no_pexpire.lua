-- seed/sliding_log.lua: the seed article's sliding log ("every request in a sorted set scored by
-- timestamp; remove those that have left the window"), completed as little as possible into a
-- whole script so its tables can be reproduced. Not for production: see ../sliding_log.lua.
--
-- KEYS[1]  the subject's key (one sorted set)
-- ARGV     limit, window_ms, now_ms (no cost: every call counts 1)
-- Reply    1 when allowed, 0 when refused
-- Storage  one sorted set: score now_ms, member now_ms .. ':' .. (the count before it), TTL
--          window_ms from the last allowed call. Members are unique while now_ms never goes
--          backwards; a clock that goes back can reuse a member and undercount.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. n)
  return 1
end
return 0
