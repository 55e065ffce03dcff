#!/usr/bin/env bash
# The LarderClient round trip for a 1 KiB fetch next to curl's, on one
# release `larder` (ephemeral data, no fsync): curl on one connection, then
# LarderClient over each transport, in ROUNDS alternating rounds (the
# machine's noise moves all of them together), and the median of the round
# medians with LarderClient's ratio to curl. Prints µs.
#   bash Benchmarks/client-roundtrip.sh [count]     ROUNDS=3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
COUNT=${1:-5000}
ROUNDS=${ROUNDS:-3}
. "$ROOT/Benchmarks/common.sh"
need_tools curl
WORK=$(mktemp -d /tmp/larder-client.XXXXXX)
trap bench_cleanup EXIT

build_larder
# The benchmark lives in the test bundle; this builds it (without
# LARDER_BENCH_URL the test is skipped) so the rounds run the binary alone.
swift test -c release --filter ClientRoundTripBenchmark >/dev/null 2>&1
BUNDLE=$(ls -d "$ROOT"/.build/release/*PackageTests.xctest | head -1)
start_larder server --ephemeral --no-fsync
URL=$URL_server
echo "server: $URL"
head -c 1024 /dev/urandom | curl -s -o /dev/null -X PUT --data-binary @- "$URL/store/bench/1k"

# curl, one connection: one invocation fetching the URL COUNT times, the
# per-transfer time_total of each (connection reuse after the first).
ARGS=()
# (`-o` applies to one URL, so each gets its own.)
for _ in $(seq "$COUNT"); do ARGS+=(-o /dev/null "$URL/store/bench/1k"); done
: > "$WORK/medians"
for round in $(seq "$ROUNDS"); do
  curl -s -w '%{time_total}\n' "${ARGS[@]}" \
    | tail -n +2 | sort -g | awk -v r="$round" '{a[NR]=$1} END {m=a[int(NR/2)+1]; p=a[int(NR*0.99)+1];
        printf "round %d: curl (one connection) 1 KiB fetch x%d: median %.0f us, p99 %.0f us\n", r, NR, m*1e6, p*1e6}' \
    | tee -a "$WORK/medians"
  for transport in larderWire urlSession; do
    LARDER_BENCH_URL="$URL" LARDER_BENCH_COUNT="$COUNT" LARDER_BENCH_TRANSPORT=$transport \
      "$BUNDLE" --testing-library swift-testing --filter ClientRoundTripBenchmark 2>&1 \
      | grep -E "LarderClient \(|error|failed" | sed "s/^/round $round: /" | tee -a "$WORK/medians"
  done
done

# curl, a new process per fetch (what a shell script pays), 500 times.
for _ in $(seq 500); do curl -s -o /dev/null -w '%{time_total}\n' "$URL/store/bench/1k"; done \
  | sort -g | awk '{a[NR]=$1} END {printf "curl (new process each) 1 KiB fetch x%d: median %.0f us, p99 %.0f us\n", NR, a[int(NR/2)+1]*1e6, a[int(NR*0.99)+1]*1e6}'

python3 - "$WORK/medians" <<'PY'
import re, statistics, sys
rounds = {}
for line in open(sys.argv[1]):
    m = re.search(r"round (\d+): (curl|LarderClient \((\w+)\)).*median (\d+) us", line)
    if m:
        rounds.setdefault(m.group(3) or "curl", []).append(int(m.group(4)))
curl = statistics.median(rounds["curl"])
print(f"median of {len(rounds['curl'])} rounds: curl {curl:.0f} us", end="")
for name in ("larderWire", "urlSession"):
    if name in rounds:
        value = statistics.median(rounds[name])
        print(f", LarderClient ({name}) {value:.0f} us = {value / curl:.2f}x curl", end="")
print()
PY
