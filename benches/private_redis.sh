# Sourced by the bench scripts (after `cd` to the repository): start_private_redis DIR starts a
# redis-server (7.0) on a free loopback port, persistence off, its files and log (redis.log) in
# DIR, and waits (up to 10 s) for PING, failing with the log otherwise. It sets redis_port and
# redis_pid; the caller's EXIT trap kills $redis_pid.
start_private_redis() {
  local dir="$1"
  redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 200); do
    [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.05
  done
  echo "redis-server did not start on port $redis_port: $(cat "$dir/redis.log")" >&2
  return 1
}
