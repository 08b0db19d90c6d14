"""limits' moving window gets the client's time (time.time()) as an argument of its script, and
the server's clock decides expiry. The same schedule decided by real sleeping (a server on the
wall clock, nothing mocked) and by clock.advance on the virtual clock with the process's clock
moved with it (no sleeping) gives the same decisions."""

import time

import pytest
from limits import parse, storage, strategies

# (seconds since the first hit, hits at that moment). The limit is 2 per 4 seconds. Delays of the
# real run only make entries older (sleeps are relative), and every decision is at least 1 s away
# from flipping that way: the refusals at 2 s and 6 s would need a stall of 2 s and 3 s, the
# allowances at 5 s and 10 s cannot flip at all.
SCHEDULE = [(0.0, 3), (2.0, 1), (5.0, 3), (6.0, 1), (10.0, 2)]
EXPECTED = [True, True, False, False, True, True, False, False, True, True]


def decisions(url, wait):
    limiter = strategies.MovingWindowRateLimiter(storage.RedisStorage(url))
    limit = parse("2 per 4 seconds")
    out, at = [], 0.0
    for when, hits in SCHEDULE:
        wait(when - at)
        at = when
        out += [limiter.hit(limit, "dave") for _ in range(hits)]
    return out


@pytest.mark.limitlab(clock="wall")
def test_real_sleeping(limitlab):
    assert decisions(limitlab.url, time.sleep) == EXPECTED


@pytest.mark.limitlab(process_clock=True)
def test_clock_advance_moves_client_and_server(limitlab):
    started = time.monotonic()
    assert decisions(limitlab.url, lambda s: limitlab.clock.advance(round(s * 1000))) == EXPECTED
    assert time.monotonic() - started < 5.0  # nothing slept through the 10 s schedule
