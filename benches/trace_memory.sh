#!/usr/bin/env bash
# Peak memory of `limitlab run` on CSV traces of growing length (sorted by time, 1,000 users): a trace
# of 8 MiB or more streams, so the peak should not grow with the number of lines.
#   benches/trace_memory.sh [LINES...]      (default: 1000000 10000000; needs /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/limitlab
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%-12s %-10s %-12s %-10s\n' lines file_MB peak_RSS_MB wall_s
for n in "${@:-1000000 10000000}"; do
  for lines in $n; do
    awk -v n="$lines" 'BEGIN { print "time_ms,key"; t = 1704067200000; for (i = 0; i < n; i++) { t += (i % 7 == 0); printf "%d,user%d\n", t, (i * 7919) % 1000 } }' > "$dir/t.csv"
    cat > "$dir/s.toml" <<TOML
name = "trace_memory"
limit = 100
window_ms = 1000
algorithms = ["fixed_window"]
[traffic]
kind = "trace"
path = "t.csv"
TOML
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$dir/rss" "$bin" run "$dir/s.toml" > "$dir/out.txt"
    end=$(date +%s.%N)
    printf '%-12s %-10s %-12s %-10.1f\n' "$lines" "$(( $(stat -c %s "$dir/t.csv") / 1048576 ))" "$(( $(cat "$dir/rss") / 1024 ))" "$(echo "$end - $start" | bc)"
  done
done
