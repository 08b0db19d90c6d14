-- limits_window_stats.lua -- the read-only companion of limits_moving_window.lua, in the style of
-- the Python `limits` package's get_moving_window: what the client asks after a refusal to fill in
-- its Retry-After header.
--
-- KEYS[1]  the subject's log (the list written by limits_moving_window.lua)
-- ARGV[1]  now, float seconds
-- ARGV[2]  limit: entries per window
-- ARGV[3]  expiry: the window in seconds
-- ARGV[4]  units the refused request wanted (default 1)
--
-- Reply: {blocking, count}
--   blocking  string, the timestamp (float seconds, as stored) of the entry that has to leave the
--             window before `units` fit again; nil when nothing blocks (Lua false: a Lua nil
--             would cut the reply short)
--   count     entries inside the window now
-- Writes nothing.

local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local expiry = tonumber(ARGV[3])
local amount = tonumber(ARGV[4] or '1')

local items = redis.call('LRANGE', KEYS[1], 0, limit - 1)
local count = 0
for i = 1, #items do
  if tonumber(items[i]) > now - expiry then
    count = count + 1
  else
    break
  end
end
local blocking = false
if amount >= 1 and amount <= limit and limit - amount < count then
  blocking = tostring(tonumber(items[limit - amount + 1]) - 0.001)
end
return {blocking, count}
