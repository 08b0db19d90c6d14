-- variants/fixed_window_get.lua: the READ half of a NON-ATOMIC fixed window. limitlab.
--
-- Not for production. This and fixed_window_incr.lua are the two round trips of the limiter the
-- seed article warns against ("GET then INCR from the application"): the application sends this,
-- decides from the count it gets back (allowed when count < limit), and only then sends the INCR.
-- Each half is atomic on its own; the pair is not. Requests from other application servers that
-- run their GET between this GET and its INCR see the same count, so near the limit several of
-- them are admitted for one free slot. `limitlab race` measures how many (simulations/race.toml);
-- scripts/fixed_window.lua does the read, the decision and the write in one script and admits at
-- most the limit per window whatever the concurrency.
--
-- KEYS[1]  the subject's key; the counter lives in KEYS[1] .. ':' .. floor(now_ms / window_ms)
-- ARGV[1]  window_ms
-- ARGV[2]  now_ms (the application server's clock)
-- Reply    the window's count so far (0 when the counter does not exist)
local k = KEYS[1] .. ':' .. string.format('%d', math.floor(tonumber(ARGV[2]) / tonumber(ARGV[1])))
return tonumber(redis.call('GET', k) or 0)
