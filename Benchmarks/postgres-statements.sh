#!/usr/bin/env bash
# What each write costs the database, statement by statement: 8 writers on
# 8 keys through one larder, with pg_stat_statements loaded; prints calls
# and execution time per write of the 15 costliest statements.
#
#   bash Benchmarks/postgres-statements.sh
#   LARDER_BIN=/path/to/larder DURATION=6 bash Benchmarks/postgres-statements.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD; DURATION=${DURATION:-6}
. Benchmarks/common.sh
WORK=$(mktemp -d /tmp/pgstat.XXXXXX)
trap 'bench_cleanup; stop_postgres' EXIT
BIN=${LARDER_BIN:-$ROOT/.build/release/larder}
[ -x "$BIN" ] || { echo "no $BIN: swift build -c release --product larder" >&2; exit 1; }
PG_EXTRA="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all" start_postgres
psql -c "CREATE EXTENSION pg_stat_statements"
start_larder pg --store "$PG_URL" --pg-pool 8 ${EXTRA:-}
wrk -t8 -c8 -d2s -s Benchmarks/put-own-key.lua "$URL_pg" -- p >/dev/null
psql -c "SELECT pg_stat_statements_reset()" >/dev/null
out=$(wrk -t8 -c8 -d${DURATION}s -s Benchmarks/put-own-key.lua "$URL_pg" -- p)
n=$(awk '/requests in/ {print $1}' <<<"$out")
echo "requests $n, $(awk '/Requests\/sec/ {print $2}' <<<"$out") req/s"
psql -F ' | ' -c "SELECT round(calls::numeric / $n, 2) AS per_write, round(total_exec_time::numeric * 1000 / $n) AS us_per_write, left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"
