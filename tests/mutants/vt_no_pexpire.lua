-- valkey_token_bucket.lua -- a token bucket whose reply is all strings, in the style of the Go
-- clients' limiter packages (valkey-go's valkeylimiter and its kin: a hash-tagged key per
-- identifier, the script's reply parsed field by field by the client).
--
-- Style: the bucket is a hash {tokens, ts}; tokens refill continuously at limit per window, up to
-- the capacity; the reply fields are strings because the token count is fractional and a Lua
-- number would be truncated to an integer on its way out of Redis.
-- Own choice: tokens are stored scaled by window_ms (token-milliseconds), so refill, admission and
-- the retry delay are exact integer arithmetic; the reply divides back.
--
-- KEYS[1]  the subject's bucket, e.g. valkeylimiter:{user42}
-- ARGV[1]  capacity: the most tokens the bucket holds
-- ARGV[2]  limit: tokens added per window
-- ARGV[3]  window in ms
-- ARGV[4]  now in ms
-- ARGV[5]  tokens this request takes (default 1)
--
-- Reply: {allowed, tokens, retry_after_ms, reset_after_ms}, all strings
--   allowed         "true" or "false"
--   tokens          tokens left after this call, fractional (e.g. "3.25")
--   retry_after_ms  "0" when allowed; "-1" when the request asks for more than the capacity (it
--                   never fits); else ms until enough tokens have refilled
--   reset_after_ms  ms until the bucket is full again
-- TTL: when a request leaves the bucket short of full, the hash lives exactly until it has
--   refilled; a full bucket is deleted (it is worth the same as no bucket).

local capacity = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local want = tonumber(ARGV[5] or '1')

local full = capacity * window                 -- token-ms
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local level, ts = tonumber(state[1]), tonumber(state[2])
if level == nil or ts == nil then
  level, ts = full, now
end
if now > ts then
  level = level + (now - ts) * limit
  if level > full then level = full end
end

local function ceil_div(a, b) return (a + b - 1 - (a + b - 1) % b) / b end
local function text(x) return tostring(x / window) end

local need = want * window
if level >= need then
  level = level - need
  if level >= full then
    redis.call('DEL', KEYS[1])
  else
    local reset = ceil_div(full - level, limit)
    redis.call('HSET', KEYS[1], 'tokens', level, 'ts', now)
  end
  return {'true', text(level), '0', tostring(ceil_div(full - level, limit))}
end

local reset = tostring(ceil_div(full - level, limit))
if want > capacity then
  return {'false', text(level), '-1', reset}
end
return {'false', text(level), tostring(ceil_div(need - level, limit)), reset}
