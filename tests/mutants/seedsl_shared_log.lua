-- seed/sliding_log.lua: the seed article's sliding log ("every request in a sorted set scored by
-- timestamp; remove those that have left the window"), completed as little as possible into a
-- whole script so its tables can be reproduced. Not for production: see ../sliding_log.lua.
--
-- 'rate:log'  the subject's key (one sorted set)
-- ARGV     limit, window_ms, now_ms (no cost: every call counts 1)
-- Reply    1 when allowed, 0 when refused
-- Storage  one sorted set: score now_ms, member now_ms .. ':' .. (the count before it), TTL
--          window_ms from the last allowed call. Members are unique while now_ms never goes
--          backwards; a clock that goes back can reuse a member and undercount.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', 'rate:log', '-inf', now - window)
local n = redis.call('ZCARD', 'rate:log')
if n < limit then
  redis.call('ZADD', 'rate:log', now, now .. ':' .. n)
  redis.call('PEXPIRE', 'rate:log', window)
  return 1
end
return 0
