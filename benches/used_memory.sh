#!/usr/bin/env bash
# The used_memory model at 1,000,000 subjects for every shipped script, against a private Redis 7.0
# started here on a free port (10,000 and 100,000 run in CI: tests/emulator/used_memory_real.rs).
# Usage: benches/used_memory.sh [SUBJECTS] [LIMIT] [SCRIPTS]   (defaults 1000000, 10 per minute and
# every shipped script; SCRIPTS a comma-separated list of their names)
set -euo pipefail
cd "$(dirname "$0")/.."
subjects=${1:-1000000}
limit=${2:-10}
scripts=${3:-}
dir=$(mktemp -d)
trap 'kill $redis_pid 2>/dev/null; rm -rf "$dir"' EXIT
. benches/private_redis.sh
start_private_redis "$dir"
port=$redis_port
redis-server --version
cargo run --quiet --release --example used_memory -- "redis://127.0.0.1:$port/" "$subjects" "$limit" ${scripts:+"$scripts"}
