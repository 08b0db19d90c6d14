#!/usr/bin/env bash
# limitlab audit of 1,000,000 keys on a private Redis 7.0 started here, at the default settings:
# its wall time, and its effect on the server's latency (redis-cli --latency-history, 1 s
# intervals, before and during the audit). Then --rate honoured: an audit at a lower rate, its
# commands per second as it reports them.
# Usage: benches/audit.sh [KEYS] [RATE]   (defaults 1000000 and 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-1000000}
slow_rate=${2:-20000}
dir=$(mktemp -d)
trap 'kill $redis_pid 2>/dev/null; kill $lat 2>/dev/null || true; rm -rf "$dir"' EXIT
. benches/private_redis.sh
start_private_redis "$dir"
port=$redis_port
[ -n "${NO_BUILD:-}" ] || cargo build --quiet --release --example audit_populate --bin limitlab
./target/release/examples/audit_populate "redis://127.0.0.1:$port/" "$keys"
echo "DBSIZE $(redis-cli -p "$port" dbsize)"

# Each interval of redis-cli --latency-history ends with a line "min max avg samples" (ms) before
# its " -- " separator; summarise() prints those.
summarise() { python3 -c '
import sys
last, out = None, []
for l in open(sys.argv[1]):
    p = l.split()
    if l.startswith(" -- "):
        if last: out.append(last)
    elif len(p) == 4: last = p
if out:
    mx = max(int(p[1]) for p in out); av = sorted(float(p[2]) for p in out)
    print(f"{len(out)} intervals: PING average per interval median {av[len(av)//2]:.2f} ms, worst {av[-1]:.2f} ms; slowest PING {mx} ms")
' "$1"; }
redis-cli -p "$port" --latency-history -i 1 --raw >"$dir/idle" 2>&1 &
lat=$!
sleep 6
kill $lat 2>/dev/null || true
echo -n "latency, idle: "; summarise "$dir/idle"

redis-cli -p "$port" --latency-history -i 1 --raw >"$dir/latency" 2>&1 &
lat=$!
start=$(date +%s.%N)
./target/release/limitlab audit --redis "redis://127.0.0.1:$port/" --json >"$dir/audit.json"
end=$(date +%s.%N)
kill $lat 2>/dev/null || true
python3 - "$dir/audit.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"audit, default settings: {r['keys']:,} keys, {r['commands']:,} commands in {r['elapsed_s']:.1f} s "
      f"({r['commands']/r['elapsed_s']:,.0f}/s, limit {r['rate']:,}/s); wall time with start-up {wall:.1f} s")
print(f"patterns {len(r['patterns'])}, warnings {sum(1 for f in r['findings'] if f['severity']=='warning')}")
PY
echo -n "latency during the audit: "; summarise "$dir/latency"

./target/release/limitlab audit --redis "redis://127.0.0.1:$port/" --json --rate "$slow_rate" --match 'fw:*' >"$dir/slow.json"
python3 - "$dir/slow.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"--rate {r['rate']:,}: {r['keys']:,} keys, {r['commands']:,} commands in {r['elapsed_s']:.1f} s = {r['commands']/r['elapsed_s']:,.0f} commands/s")
PY
