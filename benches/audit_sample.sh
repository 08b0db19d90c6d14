#!/usr/bin/env bash
# The README's sample audit: the tests' mixed keyspace (limitlab_cli::audit::demo::Mix::small) loaded
# into a private Redis started here, audited with `limitlab audit --markdown`.
# Usage: benches/audit_sample.sh > sample.md
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'kill $redis_pid 2>/dev/null; rm -rf "$dir"' EXIT
. benches/private_redis.sh
start_private_redis "$dir"
port=$redis_port
[ -n "${NO_BUILD:-}" ] || cargo build --quiet --release --example audit_populate --bin limitlab
./target/release/examples/audit_populate "redis://127.0.0.1:$port/" small >&2
./target/release/limitlab audit --redis "redis://127.0.0.1:$port/" --match 'rl*' "$@"
echo
./target/release/limitlab audit --redis "redis://127.0.0.1:$port/" "$@"
