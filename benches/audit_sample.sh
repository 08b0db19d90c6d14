#!/usr/bin/env bash
# The README's sample audit: the tests' mixed keyspace (limitlab::audit::demo::Mix::small) loaded
# into a private Redis started here, audited with `limitlab audit --markdown`.
# Usage: benches/audit_sample.sh > sample.md
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
[ -n "${NO_BUILD:-}" ] || cargo build --quiet --release --example audit_populate --bin limitlab
./target/release/examples/audit_populate "redis://127.0.0.1:$port/" small >&2
./target/release/limitlab audit --redis "redis://127.0.0.1:$port/" --match 'rl*' "$@"
echo
./target/release/limitlab audit --redis "redis://127.0.0.1:$port/" "$@"
