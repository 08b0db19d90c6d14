-- cell_throttle.lua: a GCRA in the shape of redis-cell's CL.THROTTLE reply, written for limitlab's
-- mutation corpus (tests/mutants/README.md), as a Lua script on the caller's clock.
--
-- KEYS[1]  the subject's TAT key, hash-tagged: cell:{user42}
-- ARGV[1]  burst      units that may arrive at once after a pause
-- ARGV[2]  count      units per period (the sustained rate)
-- ARGV[3]  period_ms  the period in ms; period_ms / count must be a whole number of ms
-- ARGV[4]  now_ms     the caller's clock in ms
-- ARGV[5]  quantity   units this request takes, default 1; 0 only reads
--
-- Reply: {limited, burst, remaining, retry_after_ms, reset_after_ms}
--   limited         0 when admitted, 1 when refused (a refusal writes nothing)
--   remaining       whole units that could still be admitted at once after this call
--   retry_after_ms  -1 when admitted, or when quantity > burst (it never fits); else the ms until
--                   the same request fits if nothing else arrives
--   reset_after_ms  ms until the TAT is reached (a full burst again), 0 when it is not ahead
-- Storage: one string, the TAT in ms, with a PX that ends when the TAT is reached.

local burst = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local quantity = tonumber(ARGV[5] or '1')

local interval = period / count           -- ms per unit
local tolerance = interval * burst        -- how far ahead of now the TAT may run

local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end

local increment = interval * quantity
local new_tat = tat + increment
local earliest = new_tat - tolerance

if quantity > burst or now < earliest then
  local ahead = tat - now
  local remaining = math.floor((tolerance - ahead) / interval)
  if remaining < 0 then remaining = 0 end
  local retry = -1
  if quantity <= burst then retry = earliest - now end
  return {1, burst, remaining, retry, ahead}
end

local ahead = new_tat - now
if quantity > 0 then
  redis.call('SET', KEYS[1], new_tat, 'PX', ahead)
end
return {0, burst, math.floor((tolerance - ahead) / interval), -1, ahead}
