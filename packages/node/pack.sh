#!/usr/bin/env bash
# Packs the npm packages from this directory: the main package `limitlab` (limitlab/, with
# README.md) and the platform package of this machine (platforms/<os>-<cpu>/, with BINARY copied to
# bin/limitlab and stripped of debug info), as tarballs in OUTDIR.
#
#   packages/node/pack.sh BINARY OUTDIR     e.g. pack.sh target/release/limitlab /tmp/npm
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
platform="$(node -p 'process.platform + "-" + process.arch')"
[ -d "$here/platforms/$platform" ] || { echo "pack.sh: no platform package for $platform" >&2; exit 2; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -R "$here/limitlab" "$stage/main"
cp "$here/README.md" "$stage/main/README.md"
cp -R "$here/platforms/$platform" "$stage/platform"
mkdir -p "$stage/platform/bin"
cp "$bin" "$stage/platform/bin/limitlab"
chmod 755 "$stage/platform/bin/limitlab"
if command -v strip >/dev/null 2>&1; then strip --strip-debug "$stage/platform/bin/limitlab"; fi
for p in platform main; do
  (cd "$stage/$p" && npm pack --silent --pack-destination "$out" >/dev/null)
done
ls "$out"/*.tgz
