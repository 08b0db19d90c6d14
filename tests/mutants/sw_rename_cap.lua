-- sliding_window.lua: a sliding-window counter for one subject (Redis 7.0, Lua 5.1). limitlab.
--
-- Two counters, the current fixed window's and the previous one's; the previous one is weighted by
-- the part of it that still lies inside the sliding window:
--   estimate = previous * (window_ms - elapsed) / window_ms + current
-- where elapsed is the time since the current window started. A request is allowed when
-- estimate + cost <= limit. All arithmetic is done on integers scaled by window_ms, so it is exact.
--
-- KEYS[1]  the subject's key, hash-tagged: rate:{user42}
-- ARGV[1]  limit      units allowed per sliding window, integer 1..999999999999999
-- ARGV[2]  window_ms  window length in ms, integer 1..999999999999999, with
--                     limit * window_ms <= 2^50 (1125899906842624) so the scaled sums stay exact
-- ARGV[3]  now_ms     the caller's clock in ms since the epoch, integer 0..999999999999999
-- ARGV[4]  cost       optional, default 1: units this request takes, integer 0..999999999999999;
--                     0 asks without taking anything
--
-- Reply: {allowed, remaining, retry_after_ms, reset_after_ms}, all integers
--   allowed         1 when the request was counted, 0 when refused (a refusal writes nothing)
--   remaining       floor(limit - estimate) after this call, at least 0
--   retry_after_ms  -1 when allowed. When refused: the EXACT number of ms until the estimate lets the
--                   same request through if nothing else arrives (the previous window's weight
--                   decays every ms, and the windows roll over). Also -1, with allowed = 0, when
--                   cost > limit: such a request never fits and is always refused.
--   reset_after_ms  ms until the estimate is back to 0: the end of the next window when the current
--                   one has a count, the end of the current one when only the previous has, else 0
--
-- Storage: one hash (listpack, three integer fields): w = the current window's index
--   floor(now_ms/window_ms), c = units counted in window w, p = units counted in window w-1.
--   88 bytes per subject for rate:{user42} (MEMORY USAGE).
-- TTL: set on every counted request to the end of the next window (between 1 and 2 windows): c
--   still weighs on the estimate until then, and afterwards the state equals no state.
-- Clock skew: a now_ms before the start of window w (a lagging clock) is treated as that start, so
--   the previous window weighs fully and nothing is refunded; retry_after and reset_after are still
--   measured from the caller's own now_ms.
-- Errors: redis.error_reply('ERR ...') for a wrong number of keys or arguments or an argument that
--   is not a plain decimal integer in range.

local K, A, tonumber = KEYS, ARGV, tonumber
if #K ~= 1 then
  return redis.error_reply('ERR sliding_window takes exactly 1 key: the subject, e.g. rate:{user42}')
end
local nargs = #A
if nargs < 3 or nargs > 4 then
  return redis.error_reply('ERR sliding_window takes ARGV limit window_ms now_ms [cost]')
end
-- Every argument must be a plain decimal integer of 1 to 15 digits (so exact, below 2^50), limit and
-- window_ms at least 1. All are checked at once; only when one fails are they checked again one by
-- one, in order, to name the first bad one. An absent cost is '1', which is valid.
local s1, s2, s3, s4 = A[1], A[2], A[3], A[4] or '1'
local limit, window, now, cost = tonumber(s1), tonumber(s2), tonumber(s3), s4 == '1' and 1 or tonumber(s4)
if not (#s1 < 16 and #s2 < 16 and #s3 < 16 and s1:find('^%d+$') and s2:find('^%d+$') and s3:find('^%d+$')
    and (s4 == '1' or #s4 < 16 and s4:find('^%d+$')) and limit > 0 and window > 0) then
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
  if limit * window <= 2^50 then
    if not int(s3, 0) then return bad('now_ms', 0) end
    if not int(s4, 0) then return bad('cost', 0) end
  end
end
local capacity = limit * window
if capacity > 2^50 then
  return redis.error_reply('ERR invalid limit and window_ms: limit * window_ms must not exceed 2^50')
end

local call, key = redis.call, K[1]
local win = (now - now % window) / window   -- floor(now / window_ms), exact: both are integers below 2^50
local s = call('HMGET', key, 'w', 'c', 'p')
local w, c, p = tonumber(s[1]), tonumber(s[2]), tonumber(s[3])
if w == nil or c == nil or p == nil then
  w, c, p = win, 0, 0
elseif win == w + 1 then
  w, c, p = win, 0, c
elseif win > w + 1 then
  w, c, p = win, 0, 0
end
-- A time before window w started (a lagging clock) is moved to its start.
local start = w * window
local lag = 0
if now < start then lag = start - now end
local left = window - (now + lag - start)   -- ms from the effective time to the end of window w
-- used: the estimate scaled by window_ms. r: the room left under capacity, an integer at most 2^50 when
-- the state is the script's own, so r - r % window is floor(r / window_ms) * window_ms exactly.
local used = p * left + c * window

if cost <= limit and used + cost * window <= capacity then
  if cost > 0 then
    c = c + cost
    call('HSET', key, 'w', w, 'c', c, 'p', p)
    call('PEXPIRE', key, lag + left + window)
    used = p * left + c * window
  end
  local r = capacity - used
  if r <= 0 then r = 0 elseif r <= capacity then r = (r - r % window) / window else r = math.floor(r / window) end
  if c > 0 then return {1, r, -1, lag + left + window} end
  if p > 0 then return {1, r, -1, lag + left} end
  return {1, r, -1, 0}
end

local r = capacity - used
if r <= 0 then r = 0 elseif r <= capacity then r = (r - r % window) / window else r = math.floor(r / window) end
local reset = 0
if c > 0 then reset = lag + left + window elseif p > 0 then reset = lag + left end
if cost > limit then
  return {0, r, -1, reset}
end
-- Refused: find the first ms at which p's decaying weight, or the rollover, makes room.
local retry
local room = (limit - c - cost) * window   -- what p * (left - d) may still weigh in window w
if room >= p and p > 0 then
  -- Still inside window w: p * (left - d) <= room.
  retry = left - math.floor(room / p)
else
  -- In window w+1, where c becomes the previous count: c * (window - x) <= (limit - cost) * window,
  -- x ms after it starts; x = window means the start of window w+2, where nothing is left.
  local x = 0
  if c > 0 then
    x = window - math.floor((limit - cost) * window / c)
    if x < 0 then x = 0 end
  end
  retry = left + x
end
return {0, r, lag + retry, reset}
