"""redis-py and Python `limits` through the `limitlab` fixture on one node: windows moved with
clock.advance, never with sleep."""

import os
import sysconfig
import time

import limitlab as ll
import pytest
from limits import parse, storage, strategies


def test_the_wheel_is_what_runs(limitlab):
    scripts = sysconfig.get_path("scripts")
    assert limitlab.args[0] == os.path.join(scripts, "limitlab"), limitlab.args
    assert ll.__file__.startswith(sysconfig.get_path("purelib")), ll.__file__
    assert limitlab.url == f"redis://127.0.0.1:{limitlab.port}"
    assert limitlab.ports == [limitlab.port]
    assert limitlab.command("PING") == "PONG"


def test_fixed_window_with_redis_py_and_limits(limitlab):
    limiter = strategies.FixedWindowRateLimiter(storage.RedisStorage(limitlab.url))
    five_a_minute = parse("5/minute")
    assert [limiter.hit(five_a_minute, "alice") for _ in range(6)] == [True] * 5 + [False]
    limitlab.clock.advance(60_000)  # the window's last millisecond: Redis keeps the key through it
    assert not limiter.hit(five_a_minute, "alice")
    limitlab.clock.advance(1)
    assert limiter.hit(five_a_minute, "alice")
    # redis-py sees the same keys and TTLs on the same clock.
    r = limitlab.redis()
    (key,) = r.keys("*alice*")
    assert r.pttl(key) == 60_000


def test_expiry_follows_the_clock_only(limitlab):
    r = limitlab.redis()
    r.set("k", "v", px=500)
    time.sleep(0.6)  # real time does not move the virtual clock
    assert r.get("k") == b"v"
    start = limitlab.clock.now()
    assert limitlab.clock.advance(501) == start + 501
    assert r.get("k") is None


def test_clock_set_and_now(limitlab):
    assert limitlab.clock.now() == 1_704_067_200_000  # the default start, 2024-01-01
    assert limitlab.clock.set(1_800_000_000_000) == 1_800_000_000_000
    assert limitlab.redis().time() == (1_800_000_000, 0)


@pytest.mark.limitlab(at=1_750_000_000_000)
def test_marker_sets_the_start(limitlab):
    assert limitlab.clock.now() == 1_750_000_000_000


@pytest.mark.limitlab(requirepass="s3cret")
def test_password(limitlab):
    assert limitlab.command("CLOCK.GET") == 1_704_067_200_000
    assert limitlab.redis().ping()
    assert limitlab.url.startswith("redis://:s3cret@")


def stamped_hits(limitlab):
    """limits' moving window, 2 per second: a hit, 800 ms, a hit, 400 ms, a hit. The first entry
    is 1.2 s old at the third hit, so it is allowed; each hit's stamp is the client's time.time()."""
    limiter = strategies.MovingWindowRateLimiter(storage.RedisStorage(limitlab.url))
    two_a_second = parse("2/second")
    out = [limiter.hit(two_a_second, "bob")]
    limitlab.clock.advance(800)
    out.append(limiter.hit(two_a_second, "bob"))
    limitlab.clock.advance(400)
    out.append(limiter.hit(two_a_second, "bob"))
    return out


def test_moving_window_needs_the_process_clock_too(limitlab):
    """Moving the server alone: the entries' stamps are the client's, which did not move (the
    key survives, its expiry refreshed at 800 ms), so the third hit is refused."""
    assert stamped_hits(limitlab) == [True, True, False]


@pytest.mark.limitlab(process_clock=True)
def test_moving_window_with_one_clock(limitlab):
    assert limitlab.clock.follows_process
    assert time.time() * 1000 == limitlab.clock.now()
    assert stamped_hits(limitlab) == [True, True, True]
    limitlab.flush()
    limiter = strategies.MovingWindowRateLimiter(storage.RedisStorage(limitlab.url))
    two_a_second = parse("2/second")
    assert [limiter.hit(two_a_second, "bob") for _ in range(3)] == [True, True, False]
    limitlab.clock.advance(999)
    assert not limiter.hit(two_a_second, "bob")
    limitlab.clock.advance(2)
    assert [limiter.hit(two_a_second, "bob") for _ in range(3)] == [True, True, False]
    assert time.time() * 1000 == limitlab.clock.now() == 1_704_067_202_201
    limitlab.clock.set(1_800_000_000_000)
    assert time.time() == 1_800_000_000.0


@pytest.mark.limitlab(clock="wall")
def test_wall_clock_follows_the_machine(limitlab):
    assert abs(limitlab.clock.now() - time.time() * 1000) < 5_000
    limitlab.clock.advance(3_600_000)  # a jump: the server is an hour ahead, and keeps ticking
    assert abs(limitlab.clock.now() - time.time() * 1000 - 3_600_000) < 5_000


@pytest.mark.limitlab(clock="wall", process_clock=True)
def test_wall_clock_with_the_process_clock(limitlab):
    limitlab.clock.advance(86_400_000)
    # Both a day ahead of the machine, and ticking together.
    a = limitlab.clock.now()
    assert abs(a - time.time() * 1000) < 5_000
    before = time.time()
    time.sleep(0.05)
    assert time.time() > before


def test_factory_servers_are_independent(limitlab_factory):
    a = limitlab_factory()
    b = limitlab_factory(at=0)
    a.clock.advance(10)
    assert (a.clock.now(), b.clock.now()) == (1_704_067_200_010, 0)
    a.redis().set("only-a", 1)
    assert b.redis().get("only-a") is None


def test_start_failure_carries_the_log():
    with pytest.raises(ll.LimitlabError) as e:
        ll.Server.start(extra_args=["--no-such-flag"])
    assert "--no-such-flag" in str(e.value)
    assert "did not start" in str(e.value)


def test_stop_ends_the_process():
    with ll.start() as server:
        assert server.running
    assert not server.running
    with pytest.raises(ll.LimitlabError):
        server.command("PING")


def test_session_server_a(limitlab_session):
    limitlab_session.redis().set("left-by-a", 1)


@pytest.mark.limitlab(flush=True)
def test_session_server_b_flushed(limitlab_session):
    assert limitlab_session.redis().dbsize() == 0
    limitlab_session.redis().set("left-by-b", 1)


def test_session_server_c_not_flushed(limitlab_session):
    assert limitlab_session.redis().get("left-by-b") == b"1"


def test_a_failing_test_gets_the_server_log(pytester):
    pytester.makepyfile(
        """
        def test_fails(limitlab):
            limitlab.command("CLOCK.ADVANCE", 5)
            assert limitlab.clock.now() == 0
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*limitlab serve log (ports *)*", "$ *limitlab serve --port 0 --exit-with-stdin*"])


def test_a_passing_test_gets_no_log(pytester):
    pytester.makepyfile(
        """
        def test_passes(limitlab):
            assert limitlab.clock.advance(5) == 1704067200005
        """
    )
    result = pytester.runpytest_subprocess("-rA")
    result.assert_outcomes(passed=1)
    assert "limitlab serve log" not in result.stdout.str()
