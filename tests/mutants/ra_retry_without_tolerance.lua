-- redis_rate_allow_at_most.lua -- GCRA that admits as many of the requested units as fit, in the
-- style of go-redis/redis_rate's AllowAtMost: "reports whether at most n events may happen at time
-- now; returns the number of allowed events that is less than or equal to n".
--
-- Style: one key per subject holding the theoretical arrival time (TAT) in microseconds; the clock
-- comes from the caller (ms in ARGV, unlike the package, which reads TIME). Everything in whole
-- microseconds, so no float error reaches a decision.
--
-- KEYS[1]  the subject's TAT, e.g. rate:{user42}
-- ARGV[1]  burst: the most units at once
-- ARGV[2]  rate: units per period
-- ARGV[3]  period in ms
-- ARGV[4]  units wanted (at most this many are granted)
-- ARGV[5]  now, unix ms
--
-- Reply: {granted, remaining, retry_after_ms, reset_after_ms}
--   granted         units admitted, from 0 to ARGV[4]: all that fit now
--   remaining       units that would still fit right after
--   retry_after_ms  -1 when something was granted; else ms until one unit fits
--   reset_after_ms  ms until the subject is back to a full burst
-- TTL: the key expires when the TAT is reached (no state is then the same as a full burst).

local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period_us = tonumber(ARGV[3]) * 1000
local want = tonumber(ARGV[4])
local now = tonumber(ARGV[5]) * 1000

local interval = period_us / rate            -- microseconds per unit (whole in the fixtures)
local tolerance = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
  tat = now
end

-- How many units fit: each one moves the TAT on by one interval, and the TAT may run at most
-- `tolerance` ahead of now.
local room = math.floor((now + tolerance - tat) / interval)
local granted = math.max(0, math.min(want, room))
if granted == 0 then
  local retry = tat + interval - now
  return {0, 0, math.ceil(retry / 1000), math.ceil((tat - now) / 1000)}
end

local new_tat = tat + granted * interval
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000))
local remaining = math.floor((now + tolerance - new_tat) / interval)
return {granted, remaining, -1, math.ceil((new_tat - now) / 1000)}
