#!/usr/bin/env bash
# Resident memory per live key: `limitlab serve` (the emulator) and a redis-server, each loaded with
# N subjects' keys by one EVALSHA of a shipped script per subject (`rate:{user1}` ...), measured by
# VmRSS before and after, DBSIZE and MEMORY USAGE of a few keys (docs/performance.md, "Scale").
# Usage: benches/subject_rss.sh [N] [SCRIPTS]   (defaults 762746, the subjects of zipf_1m.toml, and
# "fixed_window sliding_window token_bucket"). Needs target/release/limitlab, redis-server, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-762746}
scripts=${2:-fixed_window sliding_window token_bucket}
# The pipe of EVALSHA calls: limit 100, window 60 s, one time, cost 1 (burst 100 for the token bucket).
calls() {
    python3 - "$1" "$n" "$2" <<'PY'
import sys
sha, n, script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
args = ["100", "60000", "1704067200000", "1"] + (["100"] if script == "token_bucket" else [])
out = sys.stdout.buffer
def cmd(parts):
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in (x.encode() for x in parts))
for start in range(0, n, 10000):
    out.write(b"".join(cmd(["EVALSHA", sha, "1", "rate:{user%d}" % (i + 1)] + args) for i in range(start, min(n, start + 10000))))
PY
}
for script in $scripts; do
    for server in emulator redis-server; do
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        if [ "$server" = emulator ]; then
            target/release/limitlab serve --port "$port" --out "$(mktemp -d)" > /dev/null &
        else
            redis-server --port "$port" --save "" --appendonly no > /dev/null &
        fi
        pid=$!
        until redis-cli -p "$port" PING > /dev/null 2>&1; do sleep 0.1; done
        rss() { awk '/VmRSS/ { print $2 }' "/proc/$pid/status"; }
        sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "scripts/$script.lua")")
        before=$(rss)
        calls "$sha" "$script" | redis-cli -p "$port" --pipe > /dev/null
        after=$(rss)
        keys=$(redis-cli -p "$port" DBSIZE)
        usage=$(for i in 1 1001 50001; do redis-cli -p "$port" MEMORY USAGE "rate:{user$i}" SAMPLES 0; done | tr '\n' ' ')
        # redis-server's clock is real: a key whose TTL is shorter than the load is gone by then.
        echo "$script on $server: $keys live keys, RSS $(( (after - before) * 1024 / (keys > 0 ? keys : 1) )) bytes per key, MEMORY USAGE of samples: $usage"
        kill "$pid"; wait "$pid" 2> /dev/null || true
    done
done
