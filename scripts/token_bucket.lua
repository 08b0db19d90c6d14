-- token_bucket.lua: a token bucket for one subject (Redis 7.0, Lua 5.1). limitlab.
--
-- The bucket holds up to burst tokens and refills at limit tokens per window_ms, continuously; a
-- request takes cost tokens when the bucket has them. Tokens are kept in units of 1/window_ms of a
-- token, so the refill (limit units per ms) and every comparison are exact integer arithmetic.
-- For the same parameters it allows exactly the requests gcra.lua allows, as long as clocks do
-- not go backwards.
--
-- KEYS[1]  the subject's key, hash-tagged: rate:{user42}
-- ARGV[1]  limit      tokens added per window (the sustained rate), integer 1..999999999999999
-- ARGV[2]  window_ms  the refill period in ms, integer 1..999999999999999
-- ARGV[3]  now_ms     the caller's clock in ms since the epoch, integer 0..999999999999999
-- ARGV[4]  cost       optional, default 1: tokens this request takes, integer 0..999999999999999;
--                     0 asks without taking anything
-- ARGV[5]  burst      optional, default limit: the bucket's capacity (the largest burst), integer
--                     1..999999999999999, with burst * window_ms <= 2^50 (1125899906842624)
--
-- Reply: {allowed, remaining, retry_after_ms, reset_after_ms}, all integers
--   allowed         1 when the tokens were taken, 0 when refused (a refusal writes nothing)
--   remaining       whole tokens left in the bucket after this call
--   retry_after_ms  -1 when allowed. When refused: the EXACT number of ms until the bucket holds
--                   cost tokens if nothing else arrives (rounded up to the next whole ms). Also -1,
--                   with allowed = 0, when cost > burst: such a request never fits and is always
--                   refused.
--   reset_after_ms  ms until the bucket is full again, 0 when it is full
--
-- Storage: one hash (listpack, two integer fields): n = tokens * window_ms, t = the time of n in ms.
--   88 bytes per subject for rate:{user42} (MEMORY USAGE). A full bucket is the same as no key.
-- TTL: set on every allowed request to the time the bucket is full again (reset_after_ms), after
--   which the state equals no state.
-- Clock skew: a now_ms before t (a lagging clock) adds no tokens and keeps t, so nothing is
--   refunded and the count never goes negative; retry_after and reset_after are still measured
--   from the caller's own now_ms.
-- Changing window_ms or burst for a live key rescales or clamps its stored tokens.
-- Errors: redis.error_reply('ERR ...') for a wrong number of keys or arguments or an argument that
--   is not a plain decimal integer in range.

local MAXS = '999999999999999' -- the largest argument: 15 digits, below 2^50

-- ARGV[i] as an integer in [lo, 999999999999999], or nil when it is not a plain decimal integer in range.
local function int(i, lo)
  local s = ARGV[i]
  if type(s) ~= 'string' or #s > 15 or not string.match(s, '^%d+$') then return nil end
  local v = tonumber(s)
  if v < lo then return nil end
  return v
end

local function bad(name, lo)
  return redis.error_reply('ERR invalid ' .. name .. ': expected an integer from ' .. lo .. ' to ' .. MAXS)
end

if #KEYS ~= 1 then
  return redis.error_reply('ERR token_bucket takes exactly 1 key: the subject, e.g. rate:{user42}')
end
if #ARGV < 3 or #ARGV > 5 then
  return redis.error_reply('ERR token_bucket takes ARGV limit window_ms now_ms [cost [burst]]')
end
local limit = int(1, 1)
if not limit then return bad('limit', 1) end
local window = int(2, 1)
if not window then return bad('window_ms', 1) end
local now = int(3, 0)
if not now then return bad('now_ms', 0) end
local cost = 1
if ARGV[4] then
  cost = int(4, 0)
  if not cost then return bad('cost', 0) end
end
local burst = limit
if ARGV[5] then
  burst = int(5, 1)
  if not burst then return bad('burst', 1) end
end
if burst * window > 2^50 then
  return redis.error_reply('ERR invalid burst and window_ms: burst * window_ms must not exceed 2^50')
end

-- ceil(a / b) for integers a >= 0, b >= 1 (exact below 2^52).
local function ceil_div(a, b) return math.floor((a + b - 1) / b) end

local key = KEYS[1]
local cap = burst * window
local s = redis.call('HMGET', key, 'n', 't')
local n, t = tonumber(s[1]), tonumber(s[2])
if n == nil or t == nil then
  n, t = cap, now
elseif now > t then
  -- (now - t) * limit may be inexact when huge, but then it is far above cap - n either way.
  local add = (now - t) * limit
  if add >= cap - n then n = cap else n = n + add end
  t = now
end
-- A lagging clock (now < t) adds nothing and keeps t.
if n > cap then n = cap end
if n < 0 then n = 0 end
local lag = t - now

local function reset()
  if n >= cap then return 0 end
  return lag + ceil_div(cap - n, limit)
end

if cost > burst then
  return {0, math.floor(n / window), -1, reset()}
end
local need = cost * window
if n < need then
  return {0, math.floor(n / window), lag + ceil_div(need - n, limit), reset()}
end
if cost > 0 then
  n = n - need
  redis.call('HSET', key, 'n', n, 't', t)
  redis.call('PEXPIRE', key, reset())
end
return {1, math.floor(n / window), -1, reset()}
