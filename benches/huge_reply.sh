#!/usr/bin/env bash
# Peak memory of `limitlab serve` answering one huge reply: a list of N elements of 60 bytes (built
# by a script), then LRANGE 0 -1 read by a client that counts the elements. The server's resident
# memory is read from /proc: before the LRANGE (the data held), and its high-water mark during it
# (reset first through clear_refs). The reply is streamed, so the peak should grow by about the
# reply's values once, not by its values plus its bytes.
#   benches/huge_reply.sh [N] [BINARY]   (default 3000000 and target/release/limitlab, built)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3000000}
bin=${2:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=target/release/limitlab
fi
dir=$(mktemp -d)
"$bin" serve --port 0 > "$dir/out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q 'listening' "$dir/out" 2>/dev/null && break; sleep 0.1; done
port=$(grep -o '127.0.0.1:[0-9]*' "$dir/out" | head -1 | cut -d: -f2)
rss() { awk -v f="$1" '$1 == f":" { print int($2 / 1024) }' "/proc/$pid/status"; }
redis-cli -p "$port" EVAL "for i = 1, tonumber(ARGV[1]) do redis.call('RPUSH', KEYS[1], string.format('%060d', i)) end return redis.call('LLEN', KEYS[1])" 1 big "$n" > /dev/null
echo 5 > "/proc/$pid/clear_refs"
before=$(rss VmRSS)
start=$(date +%s.%N)
got=$(redis-cli -p "$port" LRANGE big 0 -1 | wc -l)
end=$(date +%s.%N)
peak=$(rss VmHWM)
after=$(rss VmRSS)
bytes=$(( n * (60 + 2 + 5 + 2) + 12 ))
printf 'elements %s (read %s)  reply %s MB  RSS before %s MB  peak during LRANGE %s MB (+%s MB)  after %s MB  %.1f s\n' \
  "$n" "$got" "$(( bytes / 1048576 ))" "$before" "$peak" "$(( peak - before ))" "$after" "$(echo "$end - $start" | bc)"
