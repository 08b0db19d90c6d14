-- fixed_window.lua: a fixed-window counter for one subject (Redis 7.0, Lua 5.1). limitlab.
--
-- KEYS[1]  the subject's key, hash-tagged so it can share a slot with the subject's other keys:
--          rate:{user42}
-- ARGV[1]  limit      units allowed per window, integer 1..999999999999999
-- ARGV[2]  window_ms  window length in ms, integer 1..999999999999999; windows are aligned on
--                     multiples of window_ms since the Unix epoch
-- ARGV[3]  now_ms     the caller's clock in ms since the epoch, integer 0..999999999999999
-- ARGV[4]  cost       optional, default 1: units this request takes, integer 0..999999999999999;
--                     0 asks without taking anything
--
-- Reply: {allowed, remaining, retry_after_ms, reset_after_ms}, all integers
--   allowed         1 when the request was counted, 0 when refused (a refusal writes nothing)
--   remaining       units still available in the current window after this call
--   retry_after_ms  -1 when allowed. When refused: ms until the same request fits if nothing else
--                   arrives, which is EXACT here (the start of the next window). Also -1, with
--                   allowed = 0, when cost > limit: such a request never fits and is always refused.
--   reset_after_ms  ms until the subject has its whole limit again (the end of the counted window),
--                   0 when nothing is counted
--
-- Storage: one hash (listpack, two integer fields): w = the window's index floor(now_ms/window_ms),
--   n = units counted in window w. 88 bytes per subject for rate:{user42} (MEMORY USAGE).
-- TTL: set when a window's first unit is counted: to that window's end plus one more window
--   (between 1 and 2 windows). The count is only needed until the window ends; the extra window
--   keeps it visible to clients whose clock lags the writer's by up to a window, so they are counted
--   in it rather than in a fresh count.
-- Clock skew: a now_ms in an older window than w is counted in window w (the newest one seen), so a
--   lagging clock can neither reopen an old window nor make the count go down; retry_after and
--   reset_after are still measured from the caller's own now_ms.
-- Errors: redis.error_reply('ERR ...') for a wrong number of keys or arguments or an argument that
--   is not a plain decimal integer in range.

local K, A, tonumber = KEYS, ARGV, tonumber
if #K ~= 1 then
  return redis.error_reply('ERR fixed_window takes exactly 1 key: the subject, e.g. rate:{user42}')
end
local nargs = #A
if nargs < 3 or nargs > 4 then
  return redis.error_reply('ERR fixed_window takes ARGV limit window_ms now_ms [cost]')
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
  if not int(s3, 0) then return bad('now_ms', 0) end
  if not int(s4, 0) then return bad('cost', 0) end
end

local call, key = redis.call, K[1]
local win = (now - now % window) / window   -- floor(now / window_ms), exact: both are integers below 2^50
local s = call('HMGET', key, 'w', 'n')
local w, n = tonumber(s[1]), tonumber(s[2])
local fresh = false
if w == nil or n == nil or win > w then
  w, n, fresh = win, 0, true
end
-- A window older than w (a lagging clock) is counted in w.
local reset = (w + 1) * window - now

if cost > limit or n + cost > limit then   -- refused
  local left = limit - n
  if not (left > 0) then left = 0 end
  if cost <= limit then return {0, left, reset, reset} end
  if n > 0 then return {0, left, -1, reset} end
  return {0, left, -1, 0}
end
if cost > 0 then
  n = n + cost
  if fresh then
    call('HSET', key, 'n', n, 'w', w)
    call('PEXPIRE', key, reset + window)
  else
    call('HINCRBY', key, 'n', cost)
  end
end
if n > 0 then return {1, limit - n, -1, reset} end
return {1, limit - n, -1, 0}
