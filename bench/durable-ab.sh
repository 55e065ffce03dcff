#!/usr/bin/env bash
# Durable (or --no-fsync) 1 KiB PUT, wrk -t2 -c64, this build against an
# older one in alternating rounds: the group-commit comparison of the README.
#
#   BASELINE=/path/to/older/larder bash bench/durable-ab.sh [rounds] [seconds] [fsync|nofsync]
#
# Each run gets a fresh data directory under DATA_ROOT (default /tmp) and is
# deleted after. DATA_ROOT=/ puts each directly under the filesystem's root,
# where ext4 spreads new directories over block groups: on an ext4 without a
# journal (this machine's), inodes freed in the last minutes are skipped, one
# by one, by every create in their group, so rounds sharing a group slow each
# other down. Prints one line per run (req/s, then for this build the
# durable flush and write counters) and the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}; SECS=${2:-10}; MODE=${3:-fsync}
: "${BASELINE:?set BASELINE=/path/to/older/larder}"
DATA_ROOT=${DATA_ROOT:-/tmp}
swift build -c release --product larder >/dev/null
NEW=$PWD/.build/release/larder
EXTRA=""; [ "$MODE" = nofsync ] && EXTRA="--no-fsync"
WORK=$(mktemp -d /tmp/durable-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
declare -A RESULTS
run() { # name binary
  local name=$1 bin=$2 dir out pid url="" rate counters
  dir=$(mktemp -d "${DATA_ROOT%/}/durable-ab-$name.XXXXXX"); out=$WORK/$name.out
  "$bin" --port 0 --log-level warning --data-dir "$dir" $EXTRA >"$out" 2>>"$WORK/$name.log" &
  pid=$!
  for _ in $(seq 400); do url=$(head -1 "$out" 2>/dev/null || true); [ -n "$url" ] && break; sleep 0.05; done
  rate=$(wrk -t2 -c64 -d"${SECS}s" -s bench/put.lua "$url" 2>/dev/null | awk '/Requests\/sec/ {print $2}')
  counters=$(curl -s "$url/metrics" | awk '/^larder_durable/ {printf "%s=%s ", $1, $2}')
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "$name $MODE ${rate:-failed} $counters"
  RESULTS[$name]="${RESULTS[$name]:-} ${rate:-}"
}
for i in $(seq "$ROUNDS"); do
  if (( i % 2 )); then run baseline "$BASELINE"; run this "$NEW"; else run this "$NEW"; run baseline "$BASELINE"; fi
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
b=$(echo "${RESULTS[baseline]}" | median); t=$(echo "${RESULTS[this]}" | median)
echo "median req/s: baseline $b, this build $t, ratio $(awk -v t="$t" -v b="$b" 'BEGIN {printf "%.2f", t/b}')"
