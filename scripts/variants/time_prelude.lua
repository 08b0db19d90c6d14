-- variants/time_prelude.lua: makes any limitlab script read the time from Redis. limitlab.
--
-- Prepend it to one of the production scripts (cat time_prelude.lua sliding_window.lua) and the
-- result ignores the now_ms its caller passes in ARGV[3] and uses Redis's own clock (TIME) in
-- whole milliseconds instead. Callers must still pass some now_ms (ARGV keeps its shape), but
-- their clocks no longer matter: every application server is judged on one clock, so skewed
-- servers cannot reopen windows or expire log entries early. `limitlab skew` compares the two
-- (simulations/skew.toml).
--
-- The price: replaying a trace or simulating with a chosen clock no longer works against a real
-- server (TIME is the server's wall clock; on limitlab's emulator it is the virtual clock), and in
-- Redis Cluster each shard reads its own clock. Redis 7.0 replicates scripts by their effects, so
-- reading TIME before writing is allowed.
local t = redis.call('TIME')
ARGV[3] = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
