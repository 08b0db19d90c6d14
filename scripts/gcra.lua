-- gcra.lua: the generic cell rate algorithm (a leaky bucket as a meter) for one subject
-- (Redis 7.0, Lua 5.1). limitlab.
--
-- One number per subject, the theoretical arrival time (TAT): when the subject's past requests
-- would be paid off at the sustained rate. A request of cost c moves it c emission intervals
-- (window_ms / limit) later, and is allowed when the new TAT is at most burst intervals ahead of
-- now. Time is counted in ticks of gcd(limit, window_ms) / limit ms, so one interval is a whole
-- number of ticks and the arithmetic is exact. For the same parameters it allows exactly the
-- requests token_bucket.lua allows, as long as clocks do not go backwards.
--
-- KEYS[1]  the subject's key, hash-tagged: rate:{user42}
-- ARGV[1]  limit      requests per window (the sustained rate), integer 1..999999999999999
-- ARGV[2]  window_ms  the period in ms, integer 1..999999999999999
-- ARGV[3]  now_ms     the caller's clock in ms since the epoch, integer 0..999999999999999, with
--                     now_ms * limit / gcd(limit, window_ms) <= 2^51 (2251799813685248): with
--                     today's clock, limit / gcd(limit, window_ms) up to about 1300
-- ARGV[4]  cost       optional, default 1: units this request takes, integer 0..999999999999999;
--                     0 asks without taking anything
-- ARGV[5]  burst      optional, default limit: how many units may arrive at once after a pause,
--                     integer 1..999999999999999, with burst * window_ms <= 2^50
--
-- Reply: {allowed, remaining, retry_after_ms, reset_after_ms}, all integers
--   allowed         1 when the request was admitted, 0 when refused (a refusal writes nothing)
--   remaining       whole units that could still be admitted at once after this call
--   retry_after_ms  -1 when allowed. When refused: the EXACT number of ms until the same request
--                   is admitted if nothing else arrives (rounded up to the next whole ms). Also -1,
--                   with allowed = 0, when cost > burst: such a request never fits and is always
--                   refused.
--   reset_after_ms  ms until the TAT is no longer ahead of now (a full burst is available again),
--                   0 when it is not ahead
--
-- Storage: one string holding an integer: the TAT in ticks since the epoch (ms * limit / gcd(limit,
--   window_ms); when limit divides window_ms, a tick is one ms). 56 bytes per subject for
--   rate:{user42} (MEMORY USAGE). A TAT not ahead of now is the same as no key.
-- TTL: set with the value (SET ... PX) to the time the TAT is reached (reset_after_ms), after which
--   the state equals no state.
-- Clock skew: a now_ms behind the TAT only makes the TAT further ahead of it, so a lagging clock is
--   refused sooner, never refunded; retry_after and reset_after are measured from its own now_ms.
-- Changing limit or window_ms for a live key changes the tick and misreads its TAT.
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
  return redis.error_reply('ERR gcra takes exactly 1 key: the subject, e.g. rate:{user42}')
end
if #ARGV < 3 or #ARGV > 5 then
  return redis.error_reply('ERR gcra takes ARGV limit window_ms now_ms [cost [burst]]')
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

local g, r = limit, window
while r > 0 do g, r = r, g % r end
local per_ms = limit / g          -- ticks per ms
local interval = window / g       -- ticks per unit
local tau = burst * interval      -- how far ahead of now the TAT may be, in ticks
local nt = now * per_ms
if nt > 2^51 then
  return redis.error_reply('ERR invalid now_ms for this limit: now_ms * limit / gcd(limit, window_ms) must not exceed 2^51')
end

local key = KEYS[1]
local tat = tonumber(redis.call('GET', key))
if tat == nil or tat < nt then tat = nt end

local function remaining()
  local r = tau - (tat - nt)
  if r <= 0 then return 0 end
  return math.floor(r / interval)
end

local function reset() return ceil_div(tat - nt, per_ms) end

if cost > burst then
  return {0, remaining(), -1, reset()}
end
local new = tat + cost * interval
if new - nt > tau then
  return {0, remaining(), ceil_div(new - tau - nt, per_ms), reset()}
end
if cost > 0 then
  tat = new
  redis.call('SET', key, tat, 'PX', reset())
end
return {1, remaining(), -1, reset()}
