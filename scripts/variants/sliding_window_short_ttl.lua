-- variants/sliding_window_short_ttl.lua: a DELIBERATELY BROKEN copy of ../sliding_window.lua.
-- Do not deploy. limitlab.
--
-- Identical to sliding_window.lua except for one line: after counting a request it sets the key's
-- TTL to one window (PEXPIRE key window_ms) instead of to the end of the next window. The current
-- window's count must survive until the end of the NEXT window, where it still weighs on the
-- estimate as the previous count; with this TTL it vanishes up to a window early, the estimate
-- forgets the previous window, and the limiter admits more than it should.
--
-- tests/accuracy_props.rs runs every script twice on the emulator, with key expiry on and off, and
-- requires the same replies; this variant exists to show that check catching a TTL that is too
-- short (and to keep it honest: a check that catches nothing proves nothing).
--
-- KEYS, ARGV and reply: as sliding_window.lua.

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
  return redis.error_reply('ERR sliding_window takes exactly 1 key: the subject, e.g. rate:{user42}')
end
if #ARGV < 3 or #ARGV > 4 then
  return redis.error_reply('ERR sliding_window takes ARGV limit window_ms now_ms [cost]')
end
local limit = int(1, 1)
if not limit then return bad('limit', 1) end
local window = int(2, 1)
if not window then return bad('window_ms', 1) end
if limit * window > 2^50 then
  return redis.error_reply('ERR invalid limit and window_ms: limit * window_ms must not exceed 2^50')
end
local now = int(3, 0)
if not now then return bad('now_ms', 0) end
local cost = 1
if ARGV[4] then
  cost = int(4, 0)
  if not cost then return bad('cost', 0) end
end

local key = KEYS[1]
local win = math.floor(now / window)
local s = redis.call('HMGET', key, 'w', 'c', 'p')
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
local cap = limit * window

-- The estimate scaled by window_ms.
local function used() return p * left + c * window end

local function remaining()
  local r = cap - used()
  if r <= 0 then return 0 end
  return math.floor(r / window)
end

local function reset()
  if c > 0 then return lag + left + window end
  if p > 0 then return lag + left end
  return 0
end

if cost > limit then
  return {0, remaining(), -1, reset()}
end
if used() + cost * window <= cap then
  if cost > 0 then
    c = c + cost
    redis.call('HSET', key, 'w', w, 'c', c, 'p', p)
    redis.call('PEXPIRE', key, window)  -- BROKEN: one window, see the header
  end
  return {1, remaining(), -1, reset()}
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
return {0, remaining(), lag + retry, reset()}
