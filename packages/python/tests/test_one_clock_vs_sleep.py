"""limits' moving window gets the client's time (time.time()) as an argument of its script, and
the server's clock decides expiry. The same schedule decided by real sleeping (a server on the
wall clock, nothing mocked) and by clock.advance on the virtual clock with the process's clock
moved with it (no sleeping) gives the same decisions."""

import time

import pytest
from limits import parse, storage, strategies

# (seconds since the first hit, hits at that moment). The limit is 2 per 2 seconds; every
# decision is at least 0.5 s away from an entry's expiry, so scheduling delays of the real run
# cannot change it.
SCHEDULE = [(0.0, 3), (1.0, 1), (2.5, 3), (3.0, 1), (5.0, 2)]
EXPECTED = [True, True, False, False, True, True, False, False, True, True]


def decisions(url, wait):
    limiter = strategies.MovingWindowRateLimiter(storage.RedisStorage(url))
    limit = parse("2 per 2 seconds")
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
    assert time.monotonic() - started < 2.0  # nothing slept through the 5 s schedule
