#!/usr/bin/env bash
# The LarderClient round trip for a 1 KiB fetch next to curl's, on one
# release `larder` (ephemeral data, no fsync). Prints median and p99 in µs.
#   bash Benchmarks/client-roundtrip.sh [count]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
COUNT=${1:-5000}
. "$ROOT/Benchmarks/common.sh"
need_tools curl
WORK=$(mktemp -d /tmp/larder-client.XXXXXX)
trap bench_cleanup EXIT

build_larder
start_larder server --ephemeral --no-fsync
URL=$URL_server
echo "server: $URL"
head -c 1024 /dev/urandom | curl -s -o /dev/null -X PUT --data-binary @- "$URL/store/bench/1k"

# curl, one connection: one invocation fetching the URL COUNT times, the
# per-transfer time_total of each (connection reuse after the first).
ARGS=()
# (`-o` applies to one URL, so each gets its own.)
for _ in $(seq "$COUNT"); do ARGS+=(-o /dev/null "$URL/store/bench/1k"); done
curl -s -w '%{time_total}\n' "${ARGS[@]}" \
  | tail -n +2 | sort -g | awk '{a[NR]=$1} END {m=a[int(NR/2)+1]; p=a[int(NR*0.99)+1];
      printf "curl (one connection) 1 KiB fetch x%d: median %.0f us, p99 %.0f us\n", NR, m*1e6, p*1e6}'

# curl, a new process per fetch (what a shell script pays), 500 times.
for _ in $(seq 500); do curl -s -o /dev/null -w '%{time_total}\n' "$URL/store/bench/1k"; done \
  | sort -g | awk '{a[NR]=$1} END {printf "curl (new process each) 1 KiB fetch x%d: median %.0f us, p99 %.0f us\n", NR, a[int(NR/2)+1]*1e6, a[int(NR*0.99)+1]*1e6}'

LARDER_BENCH_URL="$URL" LARDER_BENCH_COUNT="$COUNT" swift test -c release --filter ClientRoundTripBenchmark 2>&1 \
  | grep -E "LarderClient \(|error|failed"
