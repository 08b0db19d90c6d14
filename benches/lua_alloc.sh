#!/usr/bin/env bash
# What Lua allocation costs on `limitlab serve` against a private redis-server, in one run: scripts
# that build a table of N strings of 1 KB that differ in their last chars, a table of N small tables,
# and a string grown by concatenation N times, for N = 10k .. 160k. Each EVAL is timed from redis-cli
# (wall clock: compare the ratios of one run, not figures from runs minutes apart); the replies must
# be equal. Then the unbounded loop `t[#t+1] = string.rep('x', 1024) .. #t` on each binary: how long
# until the memory cap (512 MiB by default) kills it, and the VM's Lua memory afterwards. Prints
# markdown tables (the ones in docs/performance.md).
#
#   benches/lua_alloc.sh                          # target/release/limitlab, built
#   benches/lua_alloc.sh OLD_BINARY NEW_BINARY    # several binaries side by side (before/after)
#   NS="10000 20000" KINDS="strings" ROUNDS=3 benches/lua_alloc.sh   # ROUNDS: best of, alternating
#   UNBOUNDED_LIMIT=60 benches/lua_alloc.sh       # give up on the unbounded loop after 60 s (default 120)
#
# Needs redis-server and redis-cli (7.0). Listens on loopback only; stops every server when done.
set -euo pipefail
cd "$(dirname "$0")/.."

NS="${NS:-10000 20000 40000 80000 160000}"
KINDS="${KINDS:-strings tables concat}"
ROUNDS="${ROUNDS:-1}"
UNBOUNDED_LIMIT="${UNBOUNDED_LIMIT:-120}"
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  cargo build --release --quiet
  bins=(target/release/limitlab)
fi

tmp="$(mktemp -d)"
pids=()
redis_pid=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# One `limitlab serve` per binary, each on a port the system picks (its first stdout line says which).
ports=()
for i in "${!bins[@]}"; do
  "${bins[$i]}" serve --port 0 >"$tmp/serve$i.out" 2>"$tmp/serve$i.err" &
  pids+=($!)
  for _ in $(seq 1 200); do
    [ -s "$tmp/serve$i.out" ] && break
    sleep 0.05
  done
  port="$(sed -n '1s/^listening on [^ ]*:\([0-9]*\).*/\1/p' "$tmp/serve$i.out")"
  [ -n "$port" ] || { echo "${bins[$i]} serve did not start: $(cat "$tmp/serve$i.err")" >&2; exit 1; }
  ports+=("$port")
done
. benches/private_redis.sh
start_private_redis "$tmp"

body() { # body KIND N
  case "$1" in
    strings) echo "local t = {} for i = 1, $2 do t[i] = string.rep('x', 1024) .. i end return #t" ;;
    tables) echo "local t = {} for i = 1, $2 do t[i] = {i, 'k' .. i, {x = i}} end return #t" ;;
    concat) echo "local s = '' for i = 1, $2 do s = s .. 'x' end return #s" ;;
  esac
}

# timed PORT BODY: prints "seconds reply"
timed() {
  local start end reply
  start="$(date +%s%N)"
  reply="$(redis-cli -p "$1" EVAL "$2" 0 | head -c 300)"
  end="$(date +%s%N)"
  echo "$(( (end - start) / 1000000 )) $reply"
}

best() { # the smallest of the arguments
  printf '%s\n' "$@" | sort -g | head -n 1
}

header="| Script | N |"
rule="|---|---:|"
for b in "${bins[@]}"; do header+=" $b (s) |"; rule+="---:|"; done
header+=" redis-server (s) |"
rule+="---:|"
for b in "${bins[@]}"; do header+=" $b / redis |"; rule+="---:|"; done
echo "$header"
echo "$rule"
for kind in $KINDS; do
  for n in $NS; do
    b="$(body "$kind" "$n")"
    declare -a ms=()
    rms=()
    for i in "${!bins[@]}"; do ms[$i]=""; done
    for _ in $(seq 1 "$ROUNDS"); do
      for i in "${!bins[@]}"; do
        read -r t reply < <(timed "${ports[$i]}" "$b")
        ms[$i]+="$t "
        [ "$reply" = "$n" ] || { echo "${bins[$i]}: $kind N=$n replied '$reply'" >&2; exit 1; }
      done
      read -r t reply < <(timed "$redis_port" "$b")
      rms+=("$t")
      [ "$reply" = "$n" ] || { echo "redis-server: $kind N=$n replied '$reply'" >&2; exit 1; }
      redis-cli -p "$redis_port" SCRIPT FLUSH >/dev/null
    done
    r="$(best "${rms[@]}")"
    row="| $kind | $n |"
    bests=()
    for i in "${!bins[@]}"; do
      # shellcheck disable=SC2086
      bests[$i]="$(best ${ms[$i]})"
      row+="$(awk -v s="${bests[$i]}" 'BEGIN { printf " %.2f |", s / 1000 }')"
    done
    row+="$(awk -v s="$r" 'BEGIN { printf " %.2f |", s / 1000 }')"
    for i in "${!bins[@]}"; do
      row+="$(awk -v s="${bests[$i]}" -v r="$r" 'BEGIN { printf " %.1f |", s / (r > 0 ? r : 1) }')"
    done
    echo "$row"
  done
done

echo
echo "| Binary | unbounded \`t[#t+1] = string.rep('x', 1024) .. #t\`: killed after (s) | reply | Lua memory before / after (KB) |"
echo "|---|---:|---|---:|"
count="return collectgarbage('count')"
loop="local t = {} while true do t[#t + 1] = string.rep('x', 1024) .. #t end"
for i in "${!bins[@]}"; do
  before="$(redis-cli -p "${ports[$i]}" EVAL "$count" 0)"
  start="$(date +%s%N)"
  if reply="$(timeout "$UNBOUNDED_LIMIT" redis-cli -p "${ports[$i]}" EVAL "$loop" 0)"; then
    t="$(( ($(date +%s%N) - start) / 1000000 ))"
    after="$(redis-cli -p "${ports[$i]}" EVAL "$count" 0)"
    awk -v b="${bins[$i]}" -v t="$t" -v r="$reply" -v kb0="$before" -v kb1="$after" \
      'BEGIN { printf "| %s | %.1f | `%s` | %s / %s |\n", b, t / 1000, substr(r, 1, 60) "...", kb0, kb1 }'
  else
    echo "| ${bins[$i]} | > $UNBOUNDED_LIMIT (still running: stopped) | | $before / |"
    kill "${pids[$i]}" 2>/dev/null || true  # it would take the CPU from the next binary's run
  fi
done
