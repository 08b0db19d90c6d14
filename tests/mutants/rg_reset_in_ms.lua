-- redis_rate_gcra.lua -- GCRA in the style of go-redis/redis_rate (AllowN).
--
-- Style: the script reads the server's clock with TIME (so callers' clocks do not matter), keeps
-- one key per subject holding the theoretical arrival time (TAT), and replies the retry and reset
-- delays as strings of seconds, which the Go client parses into durations.
-- Own choices: time is kept in whole microseconds (TIME's two integers) rather than float seconds,
-- and the emission interval is rounded up to a whole microsecond, so comparisons are exact and the
-- rate is never above the one asked for.
--
-- KEYS[1]  the subject's TAT key, e.g. rate:{user42}
-- ARGV[1]  burst: units that may be taken at once (the bucket's depth)
-- ARGV[2]  rate: units per period
-- ARGV[3]  period in seconds (may be fractional)
-- ARGV[4]  units this request takes (default 1)
--
-- Reply: {allowed, remaining, retry_after, reset_after}
--   allowed      the units granted: ARGV[4] when allowed, 0 when refused
--   remaining    units that could still be taken right now after this call
--   retry_after  string, seconds: "-1" when allowed (and when the request can never fit, because it
--                asks for more than the burst); else how long until the same request fits
--   reset_after  string, seconds until the TAT is back to now (the whole burst is available again)
-- TTL: the TAT key expires when the TAT is reached (reset_after, rounded up to a ms): after that the
--   key is worth the same as no key.

local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local units = tonumber(ARGV[4] or '1')

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])        -- microseconds, exact below 2^53

local interval = math.ceil(period * 1000000 / rate)          -- us per unit
local tolerance = burst * interval                           -- how far the TAT may run ahead of now

local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end

-- seconds as text, exact to the microsecond
local function seconds(us)
  local s = us % 1000000
  return string.format('%d.%06d', (us - s) / 1000000, s)
end

local new_tat = tat + units * interval
local allow_at = new_tat - tolerance
if now >= allow_at then
  if units > 0 then
    redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000))
  end
  local remaining = math.floor((now - allow_at) / interval)
  return {units, remaining, '-1', seconds((new_tat - now) / 1000)}
end

local remaining = math.floor((now - (tat - tolerance)) / interval)
if remaining < 0 then remaining = 0 end
if units > burst then
  return {0, remaining, '-1', seconds(tat - now)}
end
return {0, remaining, seconds(allow_at - now), seconds(tat - now)}
