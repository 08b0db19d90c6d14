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

local K, A, tonumber = KEYS, ARGV, tonumber
if #K ~= 1 then
  return redis.error_reply('ERR token_bucket takes exactly 1 key: the subject, e.g. rate:{user42}')
end
local nargs = #A
if nargs < 3 or nargs > 5 then
  return redis.error_reply('ERR token_bucket takes ARGV limit window_ms now_ms [cost [burst]]')
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
local cap = burst * window
if cap > 2^50 then
  return redis.error_reply('ERR invalid burst and window_ms: burst * window_ms must not exceed 2^50')
end

local call, key = redis.call, K[1]
local s = call('HMGET', key, 'n', 't')
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
-- From here n is in [0, cap], cap <= 2^50. For 0 <= a < 2^52 and an integer b >= 1, (a - a % b) / b
-- is floor(a / b) exactly, and ceil(a / b) is that floor for c = a + b - 1: whole tokens are
-- (n - n % window) / window, and the ms until the bucket holds x are ceil((x - n) / limit).

local need = cost * window
if cost > burst or n < need then   -- refused; cost > burst never fits
  local reset, c = 0, cap - n + limit - 1   -- ms until the bucket is full again
  if not (n >= cap) then reset = lag + (c - c % limit) / limit end
  if cost > burst then return {0, (n - n % window) / window, -1, reset} end
  c = need - n + limit - 1                  -- ms until it holds need
  return {0, (n - n % window) / window, lag + (c - c % limit) / limit, reset}
end
if cost > 0 then n = n - need end
local reset, c = 0, cap - n + limit - 1
if not (n >= cap) then reset = lag + (c - c % limit) / limit end
if cost > 0 then
  call('HSET', key, 'n', n, 't', t)
  call('EXPIRE', key, reset)
end
return {1, (n - n % window) / window, -1, reset}
