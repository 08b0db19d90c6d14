#!/usr/bin/env bash
# redis-benchmark against `limitlab serve` and a private redis-server, with the same client flags, in
# one run: PING (no work: the ceiling of the kernel and the client), EVALSHA of scripts/fixed_window.lua
# (one connection's worth of pipelining -P 16, and none), then GET, SET and INCR. Each test alternates
# between the two servers ROUNDS times and keeps each server's best round (this machine's speed drifts
# for tens of seconds at a time; alternating puts both servers in the same phases). Prints a markdown
# table (the one in docs/performance.md).
#
#   benches/serve_vs_redis.sh                 # N=200000 requests per round, C=50 clients, ROUNDS=3
#   N=50000 ROUNDS=1 benches/serve_vs_redis.sh
#
# Needs redis-server, redis-cli and redis-benchmark (7.0). Listens on loopback only; stops both
# servers when done. Targets: serve >= redis-server on EVALSHA, >= 80% of it on GET/SET/INCR.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-200000}"
C="${C:-50}"
ROUNDS="${ROUNDS:-3}"
KEYSPACE="${KEYSPACE:-100000}"

cargo build --release --quiet
tmp="$(mktemp -d)"
serve_pid=""
redis_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# limitlab serve on a port the system picks (the first stdout line says which), on the machine's clock
# as redis-server is: the script's keys then live as long on both (with a virtual clock at 2024 and
# now_ms from today they would expire at once on one server and not on the other).
target/release/limitlab serve --port 0 --clock wall >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 1 200); do
  [ -s "$tmp/serve.out" ] && break
  sleep 0.05
done
serve_port="$(sed -n '1s/^listening on [^ ]*:\([0-9]*\).*/\1/p' "$tmp/serve.out")"
[ -n "$serve_port" ] || { echo "limitlab serve did not start: $(cat "$tmp/serve.err")" >&2; exit 1; }

# A private redis-server on a free port.
. benches/private_redis.sh
start_private_redis "$tmp"

script="$(cat scripts/fixed_window.lua)"
sha_serve="$(redis-cli -p "$serve_port" SCRIPT LOAD "$script")"
sha_redis="$(redis-cli -p "$redis_port" SCRIPT LOAD "$script")"
[ "$sha_serve" = "$sha_redis" ] || { echo "SCRIPT LOAD differs: $sha_serve / $sha_redis" >&2; exit 1; }
sha="$sha_serve"

# requests per second of one redis-benchmark run: bench PORT ARGS...
bench() {
  local port="$1"
  shift
  redis-benchmark -p "$port" -n "$N" -c "$C" -r "$KEYSPACE" --csv "$@" 2>/dev/null |
    awk -F'","' 'NR > 1 { gsub(/"/, "", $2); print $2; exit }'
}

best() { # best of the arguments
  printf '%s\n' "$@" | sort -g | tail -n 1
}

echo "| Test | redis-benchmark flags | limitlab serve (req/s) | redis-server (req/s) | serve / redis |"
echo "|---|---|---:|---:|---:|"
run_test() {
  local name="$1" flags="$2"
  shift 2
  local s=() r=()
  for _ in $(seq 1 "$ROUNDS"); do
    # shellcheck disable=SC2086
    s+=("$(bench "$serve_port" $flags "$@")")
    # shellcheck disable=SC2086
    r+=("$(bench "$redis_port" $flags "$@")")
  done
  local bs br
  bs="$(best "${s[@]}")"
  br="$(best "${r[@]}")"
  awk -v n="$name" -v f="-n $N -c $C -r $KEYSPACE $flags" -v s="$bs" -v r="$br" \
    'BEGIN { printf "| %s | `%s` | %\047d | %\047d | %.2f |\n", n, f, s, r, s / r }'
}

# limit 100 per 60 s window, now_ms the time of this run: KEYSPACE subjects, each counted in one window.
now_ms="$(date +%s%3N)"
# Both servers give the same decision before anything is timed.
one_s="$(redis-cli -p "$serve_port" EVALSHA "$sha" 1 'rl:{check}' 100 60000 "$now_ms" | tr '\n' ' ')"
one_r="$(redis-cli -p "$redis_port" EVALSHA "$sha" 1 'rl:{check}' 100 60000 "$now_ms" | tr '\n' ' ')"
[ "$one_s" = "$one_r" ] || { echo "EVALSHA differs: serve '$one_s', redis '$one_r'" >&2; exit 1; }
# The ceiling the kernel and the client set on one request per round trip: PING does no work at all.
run_test "PING" "-t ping_mbulk"
run_test "EVALSHA fixed_window" "" EVALSHA "$sha" 1 'rl:{__rand_int__}' 100 60000 "$now_ms"
run_test "EVALSHA fixed_window, pipelined" "-P 16" EVALSHA "$sha" 1 'rl:{__rand_int__}' 100 60000 "$now_ms"
for t in get set incr; do
  run_test "$(echo "$t" | tr a-z A-Z)" "-t $t"
  run_test "$(echo "$t" | tr a-z A-Z), pipelined" "-P 16 -t $t"
done
