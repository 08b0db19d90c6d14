-- A token bucket of this crate's own (not limitlab's): the bucket is a hash of tokens and the time
-- of the last refill, refilled at `rate` tokens per window.
--
-- KEYS[1]  the bucket
-- ARGV[1]  capacity   ARGV[2]  window in ms   ARGV[3]  now in ms   ARGV[4]  cost
-- Reply: {allowed (1/0), tokens left (floored)}
local capacity = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local ts = tonumber(state[2]) or now
if now > ts then
  tokens = math.min(capacity, tokens + (now - ts) * capacity / window)
  ts = now
end
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', ts)
redis.call('PEXPIRE', KEYS[1], window * 2)
return {allowed, math.floor(tokens)}
