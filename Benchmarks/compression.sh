#!/usr/bin/env bash
# Adaptive compression, measured: PUTs of SIZE_MB (64) MiB of raw random
# bytes, base64 of random bytes and JSON (curl, median of ROUNDS) with the
# file size each left on disk, zlib itself on the same bytes (one core:
# level 1, Huffman-only, stored), and random 8 KiB / 64 KiB PUTs (wrk,
# Benchmarks/put-sampled.lua), which pay for the sampling decision.
#
#   bash Benchmarks/compression.sh [rounds]
#   BASELINE=/path/to/older/larder bash Benchmarks/compression.sh   # that build too, in alternation
#
# (Benchmarks/run.sh measures the same large PUTs against nginx; this one
# shows what the store chose for each kind of data and what it cost.)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-3}
SIZE_MB=${SIZE_MB:-64}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
. "$ROOT/Benchmarks/common.sh"
need_tools wrk curl python3
WORK=$(mktemp -d /tmp/larder-compression.XXXXXX)
trap bench_cleanup EXIT

build_larder
for kind in raw base64 json; do $BENCH gen "$kind" $((SIZE_MB << 20)) "$WORK/big.$kind"; done
start_larder after --ephemeral --no-fsync
NAMES=(after)
if [ -n "${BASELINE:-}" ]; then start_binary "$BASELINE" before --ephemeral --no-fsync; NAMES=(before after); fi
stored_bytes() { curl -s "$1/metrics" | awk '/^larder_stored_bytes /{print $2}'; }

echo "== ${SIZE_MB} MiB PUT (MB/s, median of $ROUNDS; file size / value size)"
for kind in raw base64 json; do
  for name in "${NAMES[@]}"; do
    u=URL_$name; key="${!u}/store/bench/$kind"
    for _ in $(seq "$ROUNDS"); do
      curl -s -X DELETE -o /dev/null "$key"
      add "$name.$kind" "$(put_mbs "$key" "$WORK/big.$kind")"
    done
    echo "$kind  $name  $(med "$name.$kind") MB/s  file/value $(awk -v s="$(stored_bytes "${!u}")" -v n=$((SIZE_MB << 20)) 'BEGIN {printf "%.3f", s/n}')"
    curl -s -X DELETE -o /dev/null "$key"
  done
done

echo "== zlib, one core, same bytes (MB/s; output/input)"
for kind in raw base64 json; do
  declare -A Z=()
  for kv in $($BENCH zlib "$WORK/big.$kind"); do Z[${kv%%=*}]=${kv#*=}; done
  for mode in deflate1 huffman stored; do
    printf '%-7s %-9s %8.1f MB/s  %.3f\n' "$kind" "$mode" "${Z[$mode]}" "${Z[${mode}_ratio]}"
  done
done

echo "== sampled sizes: random 8 KiB and 64 KiB PUT (wrk -t2 -c$CONNS, $DURATION s; median of $ROUNDS)"
for size in 8192 65536; do
  for _ in $(seq "$ROUNDS"); do
    for name in "${NAMES[@]}"; do
      u=URL_$name; add "$name.s$size" "$(SIZE=$size rate -s "$ROOT/Benchmarks/put-sampled.lua" "${!u}")"
    done
  done
  for name in "${NAMES[@]}"; do echo "$name  $size B random: $(med "$name.s$size") req/s"; done
done
