"""The same through `limitlab serve --cluster 3`: redis-py's RedisCluster and limits'
redis+cluster storage, the one clock every node shares."""

import time

import pytest
from limits import parse, storage, strategies

pytestmark = pytest.mark.limitlab(cluster=3)


def test_three_nodes(limitlab):
    assert len(limitlab.ports) == 3 and len(set(limitlab.ports)) == 3
    nodes = limitlab.redis().get_nodes()
    assert sorted(n.port for n in nodes) == sorted(limitlab.ports)


def test_fixed_window_on_a_cluster(limitlab):
    uri = f"redis+cluster://{limitlab.host}:{limitlab.port}"
    limiter = strategies.FixedWindowRateLimiter(storage.storage_from_string(uri))
    three_a_second = parse("3/second")
    # Keys on every node (their slots: alice 1, bob 2, carol 0, ... in thirds of the 16384).
    users = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
    for u in users:
        assert [limiter.hit(three_a_second, u) for _ in range(4)] == [True, True, True, False]
    limitlab.clock.advance(1_001)
    assert all(limiter.hit(three_a_second, u) for u in users)
    assert [limitlab.command("DBSIZE", node=i) > 0 for i in range(3)] == [True] * 3


def test_flush_empties_every_node(limitlab):
    r = limitlab.redis()
    for i in range(20):
        r.set(f"k{i}", i)
    assert sum(limitlab.command("DBSIZE", node=i) for i in range(3)) == 20
    limitlab.flush()
    assert [limitlab.command("DBSIZE", node=i) for i in range(3)] == [0, 0, 0]


@pytest.mark.limitlab(cluster=3, process_clock=True)
def test_moving_window_on_a_cluster_with_one_clock(limitlab):
    uri = f"redis+cluster://{limitlab.host}:{limitlab.port}"
    limiter = strategies.MovingWindowRateLimiter(storage.storage_from_string(uri))
    two_a_minute = parse("2/minute")
    assert [limiter.hit(two_a_minute, "carol") for _ in range(3)] == [True, True, False]
    limitlab.clock.advance(59_999)
    assert not limiter.hit(two_a_minute, "carol")
    limitlab.clock.advance(2)
    assert limiter.hit(two_a_minute, "carol")
    assert time.time() * 1000 == limitlab.clock.now()
