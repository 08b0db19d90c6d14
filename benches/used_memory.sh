#!/usr/bin/env bash
# The used_memory model at 1,000,000 subjects for every shipped script, against a private Redis 7.0
# started here on a free port (10,000 and 100,000 run in CI: tests/used_memory_real.rs).
# Usage: benches/used_memory.sh [SUBJECTS] [LIMIT] [SCRIPTS]   (defaults 1000000, 10 per minute and
# every shipped script; SCRIPTS a comma-separated list of their names)
set -euo pipefail
cd "$(dirname "$0")/.."
subjects=${1:-1000000}
limit=${2:-10}
scripts=${3:-}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-server --version
cargo run --quiet --release --example used_memory -- "redis://127.0.0.1:$port/" "$subjects" "$limit" ${scripts:+"$scripts"}
