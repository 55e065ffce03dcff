#!/usr/bin/env bash
# What a namespace costs, on the disk store (--no-fsync) and on PostgreSQL
# (a throwaway database started for the run), with the release `larder`:
#   - making one: the first request to a new namespace (median of COUNT);
#   - resetting one that holds KEYS keys (restored from a snapshot first)
#     to the fixtures: DELETE /ns/<name>/store/ (median of ROUNDS);
#   - dropping one that holds KEYS keys: DELETE /ns/<name> (median of ROUNDS).
# Times are curl's (time_total, loopback), in ms.
#
#   bash Benchmarks/namespaces.sh               # KEYS=3000 COUNT=20 ROUNDS=3, about a minute
#   KEYS=30000 bash Benchmarks/namespaces.sh    # the figure docs/namespaces.md gives
#
# The table goes to stdout and to .build/benchmarks/namespaces-<date>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KEYS=${KEYS:-3000}
COUNT=${COUNT:-20}
ROUNDS=${ROUNDS:-3}
. "$ROOT/Benchmarks/common.sh"
need_tools curl python3
OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
RESULTS=$OUTDIR/namespaces-$(date -u +%Y-%m-%dT%H%M%SZ).txt
WORK=$(mktemp -d /tmp/larder-nsbench.XXXXXX)
cleanup() { bench_cleanup; stop_postgres; }
trap cleanup EXIT

build_larder
start_postgres
start_larder disk --data-dir "$WORK/disk" --no-fsync
start_larder pg --store "$PG_URL"
python3 - "$KEYS" >"$WORK/snapshot.ndjson" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print('{"key":"k/%d/%d","text":"value %d"}' % (i % 100, i, i))
PY

ms() { curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$@" | awk '$1 >= 400 {print "HTTP " $1 > "/dev/stderr"; exit 1} {printf "%.2f\n", $2 * 1000}'; }
for t in disk pg; do
  u=URL_$t; url=${!u}
  log "$t: $COUNT namespaces made"
  for i in $(seq "$COUNT"); do add "$t.make" "$(ms -X PUT --data-binary x "$url/ns/made$i/store/k")"; done
  for r in $(seq "$ROUNDS"); do
    log "$t: round $r, $KEYS keys restored, then reset and dropped"
    curl -sf -X POST --data-binary @"$WORK/snapshot.ndjson" "$url/ns/big$r/snapshot" -o /dev/null
    add "$t.reset" "$(ms -X DELETE "$url/ns/big$r/store/")"
    curl -sf -X POST --data-binary @"$WORK/snapshot.ndjson" "$url/ns/big$r/snapshot" -o /dev/null
    add "$t.drop" "$(ms -X DELETE "$url/ns/big$r")"
  done
done
{
  echo "Namespaces, $(date -u +%Y-%m-%d), $(nproc) cores, KEYS=$KEYS COUNT=$COUNT ROUNDS=$ROUNDS (ms, median; curl time_total on loopback)"
  echo
  echo "| store | make one (first request) | reset one of $KEYS keys | drop one of $KEYS keys |"
  echo "| --- | --- | --- | --- |"
  echo "| disk (--no-fsync) | $(med disk.make) | $(med disk.reset) | $(med disk.drop) |"
  echo "| PostgreSQL | $(med pg.make) | $(med pg.reset) | $(med pg.drop) |"
} | tee "$RESULTS"
