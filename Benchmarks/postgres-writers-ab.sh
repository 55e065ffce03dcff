#!/usr/bin/env bash
# Durable 1 KiB PUTs, 8 writers on 8 keys, through two builds of larder on
# one throwaway PostgreSQL, in interleaved rounds: the way to compare a
# change to the PostgreSQL write path with the build before it on a noisy
# machine (both see the same machine, round by round). Each round runs, in
# turn: the durable disk store (for scale), one larder of each build with 8
# writers, and two larders of each build on one database with 4 writers
# each, at once. Each build has a database of its own (their schemas may
# differ). Prints one line a round, req/s.
#
#   bash Benchmarks/postgres-writers-ab.sh BASE_LARDER [NEW_LARDER]
#   ROUNDS=4 DURATION=6 bash Benchmarks/postgres-writers-ab.sh /tmp/base/larder
#
# NEW_LARDER defaults to this checkout's release build. Issue 22's baseline
# is a release build of 163f1b4 (one lock row for every write):
#   git worktree add /tmp/base 163f1b4 && (cd /tmp/base && swift build -c release --product larder)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD; DURATION=${DURATION:-6}; ROUNDS=${ROUNDS:-4}
BASE=${1:?usage: postgres-writers-ab.sh BASE_LARDER [NEW_LARDER]}
NEW=${2:-$ROOT/.build/release/larder}
. Benchmarks/common.sh
need_tools wrk curl python3
[ -x "$NEW" ] || { echo "no $NEW: swift build -c release --product larder" >&2; exit 1; }
WORK=$(mktemp -d /tmp/larder-writers-ab.XXXXXX)
trap 'bench_cleanup; stop_postgres' EXIT
start_postgres
"$PG_BIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres larderbase
BASE_URL="postgres://postgres@127.0.0.1:$PGPORT/larderbase?schema=larder"
start_binary "$BASE" base1 --store "$BASE_URL" --pg-pool 8
start_binary "$BASE" base2 --store "$BASE_URL" --pg-pool 8
start_binary "$NEW" new1 --store "$PG_URL" --pg-pool 8
start_binary "$NEW" new2 --store "$PG_URL" --pg-pool 8
start_binary "$NEW" disk --data-dir "$WORK/durable"
OWNLUA=$ROOT/Benchmarks/put-own-key.lua
# rate_own URL WRITERS TAG -> req/s of WRITERS connections, each on a key of its own
rate_own() { wrk -t"$2" -c"$2" -d"${DURATION}s" -s "$OWNLUA" "$1" -- "$3" | awk '/Requests\/sec/ {print int($2)}'; }
# two URL1 URL2 -> req/s of 4 writers on each at once
two() {
  rate_own "$1" 4 a >"$WORK/a" & local first=$!
  rate_own "$2" 4 b >"$WORK/b"
  wait "$first"
  echo $(( $(cat "$WORK/a") + $(cat "$WORK/b") ))
}
echo "durable 1 KiB PUT req/s, 8 writers on 8 keys; base: $BASE; new: $NEW; ${DURATION} s a run"
echo "| round | disk (fsync) | base, one larder | new, one larder | new / base | base, two larders | new, two larders | new / base |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  d=$(rate_own "$URL_disk" 8 d); b1=$(rate_own "$URL_base1" 8 p); n1=$(rate_own "$URL_new1" 8 p)
  b2=$(two "$URL_base1" "$URL_base2"); n2=$(two "$URL_new1" "$URL_new2")
  echo "| $round | $d | $b1 | $n1 | $(ratio "$n1" "$b1") | $b2 | $n2 | $(ratio "$n2" "$b2") |"
done
