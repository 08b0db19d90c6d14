-- sliding_log.lua: an exact sliding log for one subject (Redis 7.0, Lua 5.1). limitlab.
--
-- Every counted unit is one member of a sorted set scored by its time; a request is allowed when
-- the units in (t - window_ms, t] plus its cost are at most limit. Exact, but memory grows with
-- limit: use it for small limits and few subjects. No call scans the log: ZREMRANGEBYSCORE drops
-- the expired members, and ZCARD, ZCOUNT and ZRANGE by rank are O(log N).
--
-- KEYS[1]  the subject's key, hash-tagged: rate:{user42}
-- ARGV[1]  limit      units allowed per sliding window, integer 1..999999999999999
-- ARGV[2]  window_ms  window length in ms, integer 1..999999999999999
-- ARGV[3]  now_ms     the caller's clock in ms since the epoch, integer 0..999999999999999
-- ARGV[4]  cost       optional, default 1: units this request takes (one member each), integer
--                     0..999999999999999; 0 asks without taking anything
--
-- Reply: {allowed, remaining, retry_after_ms, reset_after_ms}, all integers
--   allowed         1 when the request was logged, 0 when refused (a refusal only drops expired
--                   members)
--   remaining       limit minus the units in the window after this call, at least 0
--   retry_after_ms  -1 when allowed. When refused: ms until enough members leave the window for
--                   the same request to fit if nothing else arrives, which is EXACT (one ZRANGE by
--                   rank). Also -1, with allowed = 0, when cost > limit: such a request never fits
--                   and is always refused.
--   reset_after_ms  ms until the newest member leaves the window (the log is then empty), 0 when
--                   the log is empty
--
-- Storage: one sorted set; score = the time t in ms (an integer), member = t mod window_ms in
--   decimal, followed by ":j" for the j-th (j >= 1) unit logged at the same t. Members are short
--   and unique: live scores always lie in (t - window_ms, t] with t the newest (see clock skew), so
--   t mod window_ms tells them apart, and members of one score are numbered 0, 1, 2, ... in order
--   and always leave together. A listpack up to 128 members, a skiplist beyond.
-- TTL: set on every logged request to when its members leave the window (window_ms when the clock
--   does not lag); afterwards the log is empty, which equals no state.
-- Clock skew: the effective time t is max(now_ms, the newest score), so a lagging clock logs at the
--   newest time and never makes members leave early; retry_after and reset_after are still measured
--   from the caller's own now_ms.
-- Changing window_ms for a key that has live members may give two members the same name; the later
--   one then replaces the earlier and the log undercounts by one. Let such keys expire first.
-- Errors: redis.error_reply('ERR ...') for a wrong number of keys or arguments or an argument that
--   is not a plain decimal integer in range.

local K, A, tonumber = KEYS, ARGV, tonumber
if #K ~= 1 then
  return redis.error_reply('ERR sliding_log takes exactly 1 key: the subject, e.g. rate:{user42}')
end
local nargs = #A
if nargs < 3 or nargs > 4 then
  return redis.error_reply('ERR sliding_log takes ARGV limit window_ms now_ms [cost]')
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
local t = now
local top = call('ZRANGE', key, -1, -1, 'WITHSCORES')
local newest = tonumber(top[2])
if newest and newest > t then t = newest end
call('ZREMRANGEBYSCORE', key, '-inf', t - window)
local n = call('ZCARD', key)
if n == 0 then newest = nil end

if cost <= limit and n + cost <= limit then
  if cost > 0 then
    -- Members already logged at t are numbered 0..j-1; there are none unless t is the newest score.
    local j = 0
    if t == newest then j = call('ZCOUNT', key, t, t) end
    local base = ('%d'):format(t % limit)
    if j == 0 and cost == 1 then
      call('ZADD', key, t, base)
    else
      local args = {}
      for i = j, j + cost - 1 do
        args[#args + 1] = t
        if i == 0 then args[#args + 1] = base else args[#args + 1] = base .. ':' .. ('%d'):format(i) end
        if #args >= 512 then
          call('ZADD', key, unpack(args))
          args = {}
        end
      end
      if #args > 0 then call('ZADD', key, unpack(args)) end
    end
    n = n + cost
    local reset = t + window - now
    call('PEXPIRE', key, reset)
    return {1, limit - n, -1, reset}
  end
  if newest then return {1, limit - n, -1, newest + window - now} end
  return {1, limit - n, -1, 0}
end

local left = limit - n
if left < 0 then left = 0 end
local reset = 0
if newest then reset = newest + window - now end
if cost > limit then
  return {0, left, -1, reset}
end
-- Refused: the request fits once the (n + cost - limit)-th oldest member has left.
local rank = n + cost - limit - 1
local e = call('ZRANGE', key, rank, rank, 'WITHSCORES')
return {0, left, tonumber(e[2]) + window - now, reset}
