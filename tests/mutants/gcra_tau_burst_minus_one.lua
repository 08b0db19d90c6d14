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

local K, A, tonumber = KEYS, ARGV, tonumber
if #K ~= 1 then
  return redis.error_reply('ERR gcra takes exactly 1 key: the subject, e.g. rate:{user42}')
end
local nargs = #A
if nargs < 3 or nargs > 5 then
  return redis.error_reply('ERR gcra takes ARGV limit window_ms now_ms [cost [burst]]')
end
-- Every argument must be a plain decimal integer of 1 to 15 digits (so exact, below 2^50), limit,
-- window_ms and burst at least 1. All are checked at once; only when one fails are they checked again
-- one by one, in order, to name the first bad one. An absent cost is '1', which is valid; an absent
-- burst is limit, valid when limit is.
local s1, s2, s3, s4, s5 = A[1], A[2], A[3], A[4] or '1', A[5] or A[1]
local limit, window, now = tonumber(s1), tonumber(s2), tonumber(s3)
local cost, burst = s4 == '1' and 1 or tonumber(s4), s5 == s1 and limit or tonumber(s5)
if not (#s1 < 16 and #s2 < 16 and #s3 < 16 and s1:find('^%d+$') and s2:find('^%d+$') and s3:find('^%d+$')
    and (s4 == '1' or #s4 < 16 and s4:find('^%d+$')) and (s5 == s1 or #s5 < 16 and s5:find('^%d+$'))
    and limit > 0 and window > 0 and burst > 0) then
  -- s as an integer in [lo, 999999999999999], or nil when it is not a plain decimal integer in range.
  local function int(s, lo)
    if #s > 15 or not s:find('^%d+$') then return nil end
    local v = tonumber(s)
    if v < lo then return nil end
    return v
  end
  local function bad(name, lo)
    return redis.error_reply('ERR invalid ' .. name .. ': expected an integer from ' .. lo .. ' to 999999999999999')
  end
  if not int(s1, 1) then return bad('limit', 1) end
  if not int(s2, 1) then return bad('window_ms', 1) end
  if not int(s3, 0) then return bad('now_ms', 0) end
  if not int(s4, 0) then return bad('cost', 0) end
  if not int(s5, 1) then return bad('burst', 1) end
end
if burst * window > 2^50 then
  return redis.error_reply('ERR invalid burst and window_ms: burst * window_ms must not exceed 2^50')
end

local g, r = limit, window
while r > 0 do g, r = r, g % r end
local per_ms = limit / g          -- ticks per ms
local interval = window / g       -- ticks per unit
local tau = (burst - 1) * interval      -- how far ahead of now the TAT may be, in ticks
local nt = now * per_ms
if nt > 2^51 then
  return redis.error_reply('ERR invalid now_ms for this limit: now_ms * limit / gcd(limit, window_ms) must not exceed 2^51')
end

local call, key = redis.call, K[1]
local tat = tonumber(call('GET', key))
if tat == nil or tat < nt then tat = nt end

local new = tat + cost * interval
if cost > burst or new - nt > tau then   -- refused; cost > burst never fits
  -- The stored TAT may be anything here, so floor is math.floor. ceil(a / b) = floor((a + b - 1) / b).
  local floor = math.floor
  r = tau - (tat - nt)
  if r <= 0 then r = 0 else r = floor(r / interval) end
  local reset = floor((tat - nt + per_ms - 1) / per_ms)
  if cost > burst then return {0, r, -1, reset} end
  return {0, r, floor((new - tau - nt + per_ms - 1) / per_ms), reset}
end
if cost > 0 then tat = new end
-- Allowed: 0 <= tat - nt <= tau <= 2^50, so for these integers (a - a % b) / b is floor(a / b)
-- exactly, and ceil(a / b) is the floor of a + b - 1 over b.
r = tau - (tat - nt)
if r <= 0 then r = 0 else r = (r - r % interval) / interval end
local c = tat - nt + per_ms - 1
local reset = (c - c % per_ms) / per_ms
if cost > 0 then
  call('SET', key, tat, 'PX', reset)
end
return {1, r, -1, reset}
