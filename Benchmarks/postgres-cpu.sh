#!/usr/bin/env bash
# CPU time per write of larder and of PostgreSQL, for 8 writers on 8 keys
# (one larder, --pg-pool 8): utime+stime of each process over a wrk run,
# divided by the requests. The steadier figure than req/s on a shared
# machine, for changes to the PostgreSQL store's write path.
#
#   bash Benchmarks/postgres-cpu.sh                       # the release build
#   LARDER_BIN=/path/to/larder DURATION=8 bash Benchmarks/postgres-cpu.sh
# (the binary must be named `larder`: the processes are found by name)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD; DURATION=${DURATION:-8}; PG_POOL=8
. Benchmarks/common.sh
WORK=$(mktemp -d /tmp/cpusplit.XXXXXX)
trap 'bench_cleanup; stop_postgres' EXIT
BIN=${LARDER_BIN:-$ROOT/.build/release/larder}
[ -x "$BIN" ] || { echo "no $BIN: swift build -c release --product larder" >&2; exit 1; }
start_postgres
start_larder pg --store "$PG_URL" --pg-pool 8 ${EXTRA:-}
cpu() { # total utime+stime ticks of processes named $1
  local t=0
  for p in $(pgrep -x "$1"); do
    read -r -a f < <(sed 's/^.*) //' /proc/$p/stat)
    t=$((t + f[11] + f[12]))
  done
  echo $t
}
ticks=$(getconf CLK_TCK)
l0=$(cpu larder); p0=$(cpu postgres)
out=$(wrk -t8 -c8 -d${DURATION}s -s Benchmarks/put-own-key.lua "$URL_pg" -- p)
l1=$(cpu larder); p1=$(cpu postgres)
n=$(awk '/requests in/ {print $1}' <<<"$out")
rps=$(awk '/Requests\/sec/ {print int($2)}' <<<"$out")
echo "req/s $rps, requests $n"
awk -v l=$((l1-l0)) -v p=$((p1-p0)) -v n=$n -v hz=$ticks -v d=$DURATION 'BEGIN {
 printf "larder: %.0f us/request (%.0f%% of a core)\npostgres: %.0f us/request (%.0f%% of a core)\n", l/hz/n*1e6, l/hz/d*100, p/hz/n*1e6, p/hz/d*100 }'
vmstat 1 3 | tail -2
