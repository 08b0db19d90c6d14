#!/usr/bin/env bash
# Runs units of Redis 7.0.15's own Tcl test suite against `limitlab serve`, a fresh server per unit,
# and compares every test's outcome with the one recorded on a real Redis 7.0.15 (see docs/fidelity.md).
#
#   tests/redis_suite/run.sh [--clock wall|virtual] [UNIT...|all]
#
# Env: LIMITLAB (the binary; default target/release/limitlab), SUITE (the suite's folder; default
# ../shared/redis-tests beside the repository), OUTDIR (results; default a new folder under /tmp),
# UNIT_TIMEOUT (seconds per unit, default 900). Exit 0 when every test that passes on Redis passed.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CLOCK=wall
if [ "${1:-}" = --clock ]; then CLOCK="$2"; shift 2; fi
SUITE="${SUITE:-$ROOT/../shared/redis-tests}"
BIN="${LIMITLAB:-$ROOT/target/release/limitlab}"
[ -x "$BIN" ] || { echo "no limitlab binary at $BIN (cargo build --release, or set LIMITLAB)" >&2; exit 2; }
[ -x "$SUITE/run_units.sh" ] || { echo "no Redis test suite at $SUITE (set SUITE)" >&2; exit 2; }
units=("$@")
if [ ${#units[@]} -eq 0 ] || [ "${units[0]}" = all ]; then
  mapfile -t units < <(cd "$SUITE/suite/tests/unit" && find . -name '*.tcl' ! -name 'list-common.tcl' | sed 's|^\./||; s|\.tcl$||' | sort)
fi
OUTDIR="${OUTDIR:-$(mktemp -d "${TMPDIR:-/tmp}/limitlab-redis-suite.XXXXXX")}"
mkdir -p "$OUTDIR"
status=0
printf '%-14s %6s %6s %6s\n' unit redis_ok serve_ok missing | tee "$OUTDIR/table.txt"
for u in "${units[@]}"; do
  log="$OUTDIR/serve-$(echo "$u" | tr / _).log"
  "$BIN" serve --port 0 --clock "$CLOCK" >"$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 200); do
    port=$(grep -o '127\.0\.0\.1:[0-9]*' "$log" | head -1 | cut -d: -f2)
    [ -n "$port" ] && break
    sleep 0.05
  done
  if [ -z "$port" ]; then echo "serve did not start for $u: $(cat "$log")" >&2; kill $pid 2>/dev/null; status=1; continue; fi
  OUTDIR="$OUTDIR/$u" UNIT_TIMEOUT="${UNIT_TIMEOUT:-900}" "$SUITE/run_units.sh" "$port" "$u" >"$OUTDIR/run-$(echo "$u" | tr / _).txt" 2>&1 || status=1
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  base="$SUITE/baselines/$(echo "$u" | tr / _).redis-7.0.15.txt"
  got="$OUTDIR/$u/$(echo "$u" | tr / _).target.txt"
  rok=$(awk -F'\t' '$1=="ok"' "$base" | wc -l)
  sok=0; [ -f "$got" ] && sok=$(awk -F'\t' 'NR==FNR{ if($1=="ok") ok[$2]=1; next} $1=="ok" && ($2 in ok)' "$base" "$got" | wc -l)
  printf '%-14s %6d %6d %6d\n' "$u" "$rok" "$sok" $((rok - sok)) | tee -a "$OUTDIR/table.txt"
done
echo "results in $OUTDIR"
exit $status
