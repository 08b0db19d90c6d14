# A Python test of a `limits` rate limit against `limitlab serve`: no sleeping, time moves by command.
import os
import redis
from limits import parse, storage, strategies

url = os.environ["REDIS_URL"]  # redis://127.0.0.1:PORT, printed by `limitlab serve --port 0`
limiter = strategies.FixedWindowRateLimiter(storage.RedisStorage(url))
five_a_minute = parse("5/minute")
clock = redis.Redis.from_url(url)

assert [limiter.hit(five_a_minute, "alice") for _ in range(6)] == [True] * 5 + [False]
clock.execute_command("CLOCK.ADVANCE", 60_000)  # the window's last millisecond: still refused
assert not limiter.hit(five_a_minute, "alice")
clock.execute_command("CLOCK.ADVANCE", 1)  # the window is over
assert limiter.hit(five_a_minute, "alice")
