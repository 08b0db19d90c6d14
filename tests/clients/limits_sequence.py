# The Python `limits` library (Redis storage, redis-py) through a fixed sequence of calls; one line of
# decisions per step on stdout. Usage: limits_sequence.py URL serve|redis
#   Both modes run the steps that need no time to pass; their lines must be equal on limitlab serve and
#   on a real Redis. `serve` then moves the clock with CLOCK.ADVANCE and asserts the library's
#   documented decisions at the window's edges.
import sys

import redis
from limits import parse, storage, strategies

url, mode = sys.argv[1], sys.argv[2]
store = storage.RedisStorage(url)
raw = redis.Redis.from_url(url)
fixed = strategies.FixedWindowRateLimiter(store)
sliding = strategies.SlidingWindowCounterRateLimiter(store)
moving = strategies.MovingWindowRateLimiter(store)
five = parse("5/minute")
ten = parse("10/minute")
three = parse("3/minute")


def show(step, value):
    print(f"{step}: {value}", flush=True)


# Fixed window (INCRBY + EXPIRE in a script): the window starts at the first hit.
show("fixed alice x6", [fixed.hit(five, "alice") for _ in range(6)])
show("fixed alice remaining", fixed.get_window_stats(five, "alice").remaining)
show("fixed bob test", fixed.test(five, "bob"))
show("fixed bob cost 3, 3", [fixed.hit(five, "bob", cost=3), fixed.hit(five, "bob", cost=3)])
show("fixed bob remaining", fixed.get_window_stats(five, "bob").remaining)
# Sliding window counter (two counters weighted by the previous one's PTTL).
show("sliding carol x11", [sliding.hit(ten, "carol") for _ in range(11)])
show("sliding carol remaining", sliding.get_window_stats(ten, "carol").remaining)
# Moving window (a list of timestamps taken from the client's clock).
show("moving dave x4", [moving.hit(three, "dave") for _ in range(4)])
show("moving dave remaining", moving.get_window_stats(three, "dave").remaining)
show("storage check", store.check())

if mode == "serve":
    raw.execute_command("CLOCK.ADVANCE", 59_999)
    got = fixed.hit(five, "alice")
    assert got is False, "1 ms before the fixed window ends it still refuses"
    # EXPIRE 60 gave the counter a deadline 60,000 ms after the first hit: like Redis, the key lives
    # through that millisecond, so the next window starts 60,001 ms after the first hit.
    raw.execute_command("CLOCK.ADVANCE", 2)
    got = [fixed.hit(five, "alice") for _ in range(6)]
    assert got == [True] * 5 + [False], got
    show("fixed alice next window", got)
    # 60,001 ms after carol's first hit the current counter becomes the previous one, weighted by
    # the 59,999 ms it has left: floor(10 * 59999 / 60000) = 9, so one more hit fits.
    got = [sliding.hit(ten, "carol") for _ in range(2)]
    assert got == [True, False], got
    # Half a window later the previous counter weighs floor(10 * 29999 / 60000) = 4: with the 1
    # current hit, 5 more fit.
    raw.execute_command("CLOCK.ADVANCE", 30_000)
    got = [sliding.hit(ten, "carol") for _ in range(6)]
    assert got == [True] * 5 + [False], got
    show("sliding carol after the window", got)
print("done")
