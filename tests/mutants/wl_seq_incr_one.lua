-- weighted_log.lua: a sliding log of weighted items in the style of pyrate-limiter's Redis bucket,
-- written for limitlab's mutation corpus (tests/mutants/README.md).
--
-- KEYS[1]  the log, a sorted set of one member per unit scored by its time: log:{user42}
-- KEYS[2]  the sequence that names the members, same hash tag: log:{user42}:seq
-- ARGV[1]  limit      units per sliding window
-- ARGV[2]  window_ms  the window in ms
-- ARGV[3]  now_ms     the caller's clock in ms
-- ARGV[4]  weight     units this request takes, default 1; 0 only reads
--
-- A request is admitted when the units in (t - window_ms, t] plus its weight are at most limit, where
-- t = max(now_ms, the newest score): a lagging clock is logged at the newest time, never earlier.
-- Reply: {allowed, remaining, retry_after_ms}; retry_after_ms -1 when admitted or weight > limit.
-- Storage: the log (members "<seq>", unique while the sequence lives) and the sequence, both with a
-- PX that ends when the newest member leaves the window.

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local weight = tonumber(ARGV[4] or '1')

local t = now
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) > t then
  t = tonumber(newest[2])
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t - window)
local used = redis.call('ZCARD', KEYS[1])

if weight > limit then
  return {0, math.max(limit - used, 0), -1}
end
if used + weight > limit then
  local rank = used + weight - limit - 1
  local oldest = redis.call('ZRANGE', KEYS[1], rank, rank, 'WITHSCORES')
  return {0, limit - used, tonumber(oldest[2]) + window - now}
end

if weight > 0 then
  local last = redis.call('INCR', KEYS[2])
  local args = {}
  for seq = last - weight + 1, last do
    args[#args + 1] = t
    args[#args + 1] = seq
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  redis.call('PEXPIRE', KEYS[1], t + window - now)
  redis.call('PEXPIRE', KEYS[2], t + window - now)
end
return {1, limit - used - weight, -1}
