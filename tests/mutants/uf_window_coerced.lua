-- upstash_fixed_window.lua -- a fixed-window counter in the style of @upstash/ratelimit's fixedWindow.
--
-- Style: the key names the window (prefix:{subject}:<window index>), the script only counts, and the
-- client compares the count with its limit. Every hit is counted, refused ones included; that is
-- harmless here because the next window starts from a fresh key.
--
-- KEYS[1]  the counter of the current window, e.g. ratelimit:{user42}:1704067200
-- ARGV[1]  window length in ms (the counter's TTL)
-- ARGV[2]  units this request takes (default 1)
--
-- Reply: the window's count after this request (an integer). The caller allows the request when the
--   count is at most its limit; remaining = limit - count; the window ends at the next multiple of
--   the window length.
-- TTL: set once, when the INCRBY created the key: one window from the first hit, so the counter
--   always outlives the window it counts and is gone at most one window after it.

local window = ARGV[1] + 0
local units = tonumber(ARGV[2] or '1')

local count = redis.call('INCRBY', KEYS[1], units)
if count == units then
  -- first hit of this window (the counter did not exist before)
  redis.call('PEXPIRE', KEYS[1], window)
end
return count
