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
  return redis.error_reply('ERR sliding_log takes exactly 1 key: the subject, e.g. rate:{user42}')
end
if #ARGV < 3 or #ARGV > 4 then
  return redis.error_reply('ERR sliding_log takes ARGV limit window_ms now_ms [cost]')
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

local key = KEYS[1]
local t = now
local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local newest = tonumber(top[2])
if newest and newest > t then t = newest end
redis.call('ZREMRANGEBYSCORE', key, '-inf', t - window)
local n = redis.call('ZCARD', key)
if n == 0 then newest = nil end

local function reset()
  if newest then return newest + window - now end
  return 0
end

if cost > limit then
  return {0, math.max(0, limit - n), -1, reset()}
end
if n + cost <= limit then
  if cost > 0 then
    local j = redis.call('ZCOUNT', key, t, t)
    local base = string.format('%d', t % window)
    local args = {}
    for i = j, j + cost - 1 do
      args[#args + 1] = t
      if i == 0 then args[#args + 1] = base else args[#args + 1] = base .. ':' .. string.format('%d', i) end
      if #args >= 512 then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', key, unpack(args)) end
    n = n + cost
    newest = t
    redis.call('PEXPIRE', key, t + window - now)
  end
  return {1, limit - n, -1, reset()}
end

-- Refused: the request fits once the (n + cost - limit)-th oldest member has left.
local rank = n + cost - limit - 1
local e = redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')
return {0, math.max(0, limit - n), tonumber(e[2]) + window - now, reset()}
