#!/usr/bin/env bash
# Instructions per EVALSHA, counted by callgrind, for every shipped and seed script: on the embedded
# emulator (examples/script_cost: `Scripting::evalsha` inclusive) and inside a private redis-server
# 7.0 (`evalShaCommand` inclusive: the script run and its redis.call commands, without reading the
# request or writing the reply, what INFO commandstats times). Both run `limitlab bench`'s calls:
# 100 users in turn, one call per virtual ms, ARGV `8 1000 now_ms`. Instruction counts do not depend
# on what else the machine is doing, so the ratio is the load-free counterpart of bench's "Redis
# server / emulator" column (which is time, and moves with the machine). Prints a markdown table.
#
#   benches/script_cost.sh                       # all nine scripts, 20,000 calls each
#   CALLS=5000 SCRIPTS="gcra seed_fixed_window" benches/script_cost.sh
#
# Needs valgrind, redis-server (7.0) and python3 (the Redis side's client: plain RESP over a socket).
# Listens on loopback only; every server it starts is shut down, its files removed.
set -euo pipefail
cd "$(dirname "$0")/.."

CALLS="${CALLS:-20000}"
SCRIPTS="${SCRIPTS:-fixed_window sliding_window sliding_log token_bucket gcra seed_fixed_window seed_sliding_window seed_sliding_log seed_token_bucket}"
for b in valgrind callgrind_annotate redis-server python3; do
  command -v "$b" >/dev/null || { echo "script_cost.sh: $b is not installed" >&2; exit 2; }
done
cargo build --release --quiet --example script_cost
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The Redis side's driver: loads the script, sends the calls in pipelines of 500, checks that no
# reply is an error, and shuts the server down (callgrind writes its counts when the server exits).
cat >"$tmp/drive.py" <<'EOF'
import socket, sys, time
port, path, calls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for _ in range(600):
    try:
        s = socket.create_connection(("127.0.0.1", port)); break
    except OSError:
        time.sleep(0.1)
f = s.makefile("rb")
def enc(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
def read():
    line = f.readline(); t = line[:1]
    if t == b"-": raise SystemExit("redis replied " + line.decode().strip())
    if t in b"+:": return line[1:-2]
    if t == b"$":
        n = int(line[1:-2]); return None if n < 0 else f.read(n + 2)[:-2]
    if t == b"*": return [read() for _ in range(int(line[1:-2]))]
    raise SystemExit("unexpected reply %r" % line)
s.sendall(enc("SCRIPT", "LOAD", open(path, "rb").read())); sha = read()
batch = []
for i in range(calls):
    batch.append(enc("EVALSHA", sha, 1, "rate:{user%d}" % (i % 100), 8, 1000, 1704067200000 + i))
    if len(batch) == 500 or i == calls - 1:
        s.sendall(b"".join(batch))
        for _ in batch: read()
        batch = []
s.sendall(enc("SHUTDOWN", "NOSAVE"))
EOF
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# The first line of the inclusive listing that names $2 (awk reads to the end: no broken pipe).
inclusive() { callgrind_annotate --inclusive=yes "$1" 2>/dev/null | awk -v pat="$2" '!found && index($0, pat) { gsub(",", "", $1); print $1; found = 1 }'; }

echo "| Script | Emulator (instructions per call) | Redis, inside EVALSHA | Redis / emulator |"
echo "|---|---:|---:|---:|"
for name in $SCRIPTS; do
  case "$name" in
    seed_*) file="scripts/seed/${name#seed_}.lua" ;;
    *) file="scripts/$name.lua" ;;
  esac
  valgrind --tool=callgrind --callgrind-out-file="$tmp/emu.cg" target/release/examples/script_cost "$file" "$CALLS" >/dev/null 2>&1
  emu=$(inclusive "$tmp/emu.cg" 'Scripting::evalsha [')
  port=$(free_port)
  mkdir -p "$tmp/redis"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/redis.cg" redis-server --port "$port" --bind 127.0.0.1 \
    --save "" --appendonly no --dir "$tmp/redis" >/dev/null 2>&1 &
  server=$!
  python3 "$tmp/drive.py" "$port" "$file" "$CALLS" || { kill "$server" 2>/dev/null; exit 1; }
  wait "$server" || true
  red=$(inclusive "$tmp/redis.cg" 'evalShaCommand')
  python3 -c "import sys; e, r, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]); print(f'| {sys.argv[4]} | {e // n:,} | {r // n:,} | {r / e:.2f}x |')" "$emu" "$red" "$CALLS" "$name"
done
