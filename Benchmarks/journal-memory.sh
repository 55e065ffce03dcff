#!/usr/bin/env bash
# What an entry of the request journal costs in memory, with the release
# `larder`: two servers, --journal 0 and --journal N, each serve N cached
# 1 KiB GETs (one keep-alive connection, target /store/bench/journal-key-1,
# the length of a typical key); the difference of their resident sets
# (VmRSS, after the requests), divided by N, is the memory one entry holds:
# its slot in the ring and the request target it keeps.
#
#   bash Benchmarks/journal-memory.sh             # N=100000
#   N=200000 bash Benchmarks/journal-memory.sh
#
# The worst case of a server is --max-namespaces x --journal x this figure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
N=${N:-100000}
. "$ROOT/Benchmarks/common.sh"
need_tools curl python3
WORK=$(mktemp -d /tmp/larder-journal-memory.XXXXXX)
trap bench_cleanup EXIT
build_larder
one_kib_value "$WORK/value"
declare -A RSS
for journal in 0 "$N"; do
  name=j$journal
  start_larder "$name" --data-dir "$WORK/data-$journal" --no-fsync --journal "$journal"
  url_var=URL_$name pid_var=PID_$name
  url=${!url_var} pid=${!pid_var}
  target=$url/store/bench/journal-key-1
  curl -sf -T "$WORK/value" "$target" -o /dev/null
  $BENCH requests "$target" "$N" get >/dev/null
  sleep 0.5
  RSS[$journal]=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  log "--journal $journal: VmRSS ${RSS[$journal]} kB after $N GETs"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
per=$(( (RSS[$N] - RSS[0]) * 1024 / N ))
echo "journal memory: $per bytes per entry ((${RSS[$N]} - ${RSS[0]}) kB over $N entries)"
echo "  --journal 1000 x --max-namespaces 1024 (the defaults, every namespace full): $(( per * 1000 * 1024 / 1048576 )) MiB"
