-- two_counter_window.lua -- a base of the mutation corpus: tests/fixtures/upstash_sliding_window.lua
-- as it is (a sliding-window counter in the style of @upstash/ratelimit's slidingWindow).
--
-- Style: one counter per fixed window, named by the window's index; the previous window's count is
-- weighted by the part of it the sliding window still covers, rounded down, and added to the
-- current count. The two keys share the hash tag {subject}, so they hash to one slot in a cluster.
--
-- KEYS[1]  the current window's counter,  e.g. ratelimit:{user42}:1704067200
-- KEYS[2]  the previous window's counter, e.g. ratelimit:{user42}:1704067199
-- ARGV[1]  limit: units per window
-- ARGV[2]  now in ms
-- ARGV[3]  window length in ms
-- ARGV[4]  units this request takes (default 1)
--
-- Reply: -1 when refused (nothing is written), else the units left after this request:
--   limit - (current count + floor(previous count * uncovered share)), at least 0.
-- TTL: the current counter is given two windows when it is created, so it is still there while it
--   serves as the previous window (until the end of the next window).

local limit = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local units = tonumber(ARGV[4] or '1')

local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')

-- ms of the current window still ahead of us = ms of the previous window the sliding window covers
local left = window - now % window
local carried = previous * left
carried = (carried - carried % window) / window   -- floor(previous * left / window), exact on integers

if carried + current + units > limit then
  return -1
end

local count = redis.call('INCRBY', KEYS[1], units)
if count == units then
  redis.call('PEXPIRE', KEYS[1], window * 2)
end
local remaining = limit - count
if remaining < 0 then remaining = 0 end
return remaining
