#!/usr/bin/env bash
# A crate of a user's own (tests/outside, outside this workspace) depends on limitlab and runs its
# property test, twice: by path, and from the `.crate` files `cargo package` makes of every crate
# of the workspace. Before them, `cargo publish --dry-run` of every crate. Called by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
# One target directory for all three, so that the dependencies are compiled once; the user's crate
# starts from this repository's Cargo.lock, so it resolves the versions this repository tests.
export CARGO_TARGET_DIR="$root/target"

echo "== cargo publish --dry-run, every crate of the workspace"
# --no-verify: the packaged crates are compiled below anyway, as the user's crate's dependencies.
cargo publish --workspace --dry-run --allow-dirty --no-verify --quiet

echo "== a user's crate, limitlab by path"
cp Cargo.lock tests/outside/Cargo.lock
cargo test --quiet --manifest-path tests/outside/Cargo.toml

echo "== a user's crate, limitlab from the packaged .crate files"
rm -f "$CARGO_TARGET_DIR"/package/limitlab*.crate
cargo package --workspace --allow-dirty --no-verify --quiet
unpacked="$CARGO_TARGET_DIR/outside/crates"
user="$CARGO_TARGET_DIR/outside/user"
rm -rf "$unpacked" "$user"
mkdir -p "$unpacked" "$user"
for c in "$CARGO_TARGET_DIR"/package/limitlab*-0.1.0.crate; do
  tar -xzf "$c" -C "$unpacked"
done
cp -r tests/outside/limiter tests/outside/tests "$user/"
cp Cargo.lock "$user/Cargo.lock"
{
  sed -e "s#^limitlab = { path = \"../..\" }#limitlab = { path = \"$unpacked/limitlab-0.1.0\" }#" tests/outside/Cargo.toml
  echo
  echo "# The packaged crates, unpacked: limitlab's own manifests ask for them by version."
  echo "[patch.crates-io]"
  for c in lua emulator engine server cli; do
    echo "limitlab-$c = { path = \"$unpacked/limitlab-$c-0.1.0\" }"
  done
} > "$user/Cargo.toml"
grep -q "$unpacked/limitlab-0.1.0" "$user/Cargo.toml"
cargo test --quiet --manifest-path "$user/Cargo.toml"
