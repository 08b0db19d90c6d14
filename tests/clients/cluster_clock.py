"""redis-py's RedisCluster against `limitlab serve --cluster N`: the CLOCK.* commands, which COMMAND
lists as keyless, go to any master when the client routes by what COMMAND says (its dynamic policy
resolver), and the clock every node shares moves.

    python cluster_clock.py PORT
"""
import sys

from redis.cluster import RedisCluster
from redis.commands.policies import DynamicPolicyResolver

port = int(sys.argv[1])
probe = RedisCluster(host="127.0.0.1", port=port)
rc = RedisCluster(host="127.0.0.1", port=port, policy_resolver=DynamicPolicyResolver(probe.commands_parser))
before = rc.execute_command("CLOCK.GET")
assert rc.execute_command("CLOCK.ADVANCE", 1000) in (b"OK", "OK", True)
after = rc.execute_command("CLOCK.GET")
print(f"moved {after - before}")
rc.set("k", "v", px=1500)
rc.execute_command("CLOCK.ADVANCE", 1501)
print(f"expired {rc.get('k') is None}")
