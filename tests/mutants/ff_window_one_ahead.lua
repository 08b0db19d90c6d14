#!lua name=ratelimit
-- function_fixed_window.lua -- a fixed-window limiter shipped as a Redis 7 function library, in the
-- style of the function libraries Redis 7's documentation builds (`#!lua name=...` first line,
-- `redis.register_function{...}` with flags, keys and args as the callback's two arguments).
--
-- Load it once with FUNCTION LOAD (REPLACE to upgrade); call it with
--   FCALL ratelimit_fixed_window 1 <key> <limit> <window ms> <now ms> [cost]
--
-- keys[1]  the subject's counter, hash-tagged, e.g. rate:{user42} (the window index is kept inside)
-- args[1]  limit per window
-- args[2]  window length in ms
-- args[3]  now, in ms (from the caller, so replays and real-Redis runs share one clock)
-- args[4]  units this request takes (default 1)
--
-- Reply: {allowed (0/1), remaining, retry_after_ms (-1 when allowed, and when the cost can never
--   fit), reset_after_ms}.
-- TTL: the counter lives until its window ends (PEXPIRE by what is left of the window, measured on the
--   caller's clock, so that a server whose own clock differs keeps it just as long), never longer.
--
-- A second function, ratelimit_peek, reads the state without changing it (flags no-writes, so it
-- may be called with FCALL_RO and on replicas).

local function window_of(now, window)
  local start = now - now % window + window
  return start, start + window
end

local function fixed_window(keys, args)
  local limit = tonumber(args[1])
  local window = tonumber(args[2])
  local now = tonumber(args[3])
  local cost = tonumber(args[4] or '1')
  if not (limit and window and now and cost) or window <= 0 or limit < 0 or cost < 0 then
    return redis.error_reply('ERR ratelimit_fixed_window: limit, window, now and cost must be numbers')
  end
  local start, stop = window_of(now, window)
  local state = redis.call('HMGET', keys[1], 'w', 'n')
  local used = 0
  if tonumber(state[1]) == start then
    used = tonumber(state[2]) or 0
  elseif state[1] and tonumber(state[1]) > start then
    -- a caller whose clock is behind the stored window: count against the newer window, never refund
    start, stop = tonumber(state[1]), tonumber(state[1]) + window
    used = tonumber(state[2]) or 0
  end
  if cost > limit then
    return {0, math.max(limit - used, 0), -1, stop - now}
  end
  if used + cost > limit then
    return {0, math.max(limit - used, 0), math.max(stop - now, 0), math.max(stop - now, 0)}
  end
  redis.call('HSET', keys[1], 'w', start, 'n', used + cost)
  redis.call('PEXPIRE', keys[1], stop - now)
  return {1, limit - used - cost, -1, stop - now}
end

local function peek(keys, args)
  local window = tonumber(args[1])
  local now = tonumber(args[2])
  local start = now - now % window
  local state = redis.call('HMGET', keys[1], 'w', 'n')
  if tonumber(state[1]) == start then
    return tonumber(state[2]) or 0
  end
  return 0
end

redis.register_function{
  function_name = 'ratelimit_fixed_window',
  callback = fixed_window,
  description = 'fixed window: {allowed, remaining, retry_after_ms, reset_after_ms}',
}
redis.register_function{
  function_name = 'ratelimit_peek',
  callback = peek,
  flags = {'no-writes'},
  description = 'units used in the current window',
}
