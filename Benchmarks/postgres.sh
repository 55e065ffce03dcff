#!/usr/bin/env bash
# Larder on PostgreSQL next to Larder on its disk store, in one session on
# this machine, against a throwaway PostgreSQL started for the run:
#   1. 1 KiB GET (wrk, one key) and PUT (wrk + Benchmarks/put.lua, 1000 cycled
#      keys) req/s: disk --no-fsync, disk with fsync (default), postgres
#      (fsync=on, synchronous_commit=on: durable like the fsync disk store);
#   2. a 64 MiB JSON value with curl: PUT, GET identity, GET gzip accepted (MB/s);
#   4. 1 KiB durable PUT from 8 writers on 8 keys (wrk + Benchmarks/put-own-key.lua,
#      a key per connection): the fsync disk store, one postgres larder, and
#      two postgres larders on the one database, 4 writers each, at once;
#   3. a 1 GiB base64 value through the postgres store: PUT, GET identity
#      (compared with cmp), larder's VmHWM before and after, and the spool
#      (unlinked files) freed: its descriptors closed, the directory empty.
#
#   bash Benchmarks/postgres.sh              # ~5 minutes: 3 rotating rounds, 10 s per wrk run, 1 GiB round trip
#   QUICK=1 bash Benchmarks/postgres.sh      # ~1 minute smoke run: 1 round, 3 s, 256 MiB round trip
#
# Knobs: ROUNDS, DURATION (s per wrk run), CONNS (64), SIZE_MB (the large
# value, 64), BIG_MB (the round trip, 1024; QUICK 256), PG_POOL (larder's
# --pg-pool, 8), PG_BIN (PostgreSQL's bin directory; default `pg_config
# --bindir`, else the newest /usr/lib/postgresql/*/bin). PostgreSQL runs from
# initdb in a temp directory on a free port (as the `postgres` user when run
# as root), shared_buffers=256MB, max_connections=200, and is stopped and
# removed at exit. Installs wrk, curl, python3, postgresql with apt if
# missing; builds only `larder` in release. The tables (markdown) go to
# stdout and to .build/benchmarks/postgres-<date>.txt (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -n "${QUICK:-}" ]; then
  ROUNDS=${ROUNDS:-1}; DURATION=${DURATION:-3}; BIG_MB=${BIG_MB:-256}
else
  ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-10}; BIG_MB=${BIG_MB:-1024}
fi
CONNS=${CONNS:-64}
SIZE_MB=${SIZE_MB:-64}
PG_POOL=${PG_POOL:-8}

. "$ROOT/Benchmarks/common.sh"
need_tools wrk curl python3
OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
RESULTS=$OUTDIR/postgres-$(date -u +%Y-%m-%dT%H%M%SZ).txt
WORK=$(mktemp -d /tmp/larder-pgbench.XXXXXX)
cleanup() {
  bench_cleanup
  stop_postgres
}
trap cleanup EXIT

build_larder

# ---- the throwaway database --------------------------------------------------
start_postgres
PG_SETTINGS=$(psql -c "select 'PostgreSQL ' || current_setting('server_version') || ', fsync=' || current_setting('fsync')
  || ', synchronous_commit=' || current_setting('synchronous_commit') || ', shared_buffers=' || current_setting('shared_buffers')
  || ', wal_level=' || current_setting('wal_level')")

mkdir -p "$WORK/spool"
start_larder disk --data-dir "$WORK/disk" --no-fsync
start_larder durable --data-dir "$WORK/durable"
# The postgres store spools in TMPDIR: a directory of its own, to be checked.
TMPDIR=$WORK/spool start_larder pg --store "$PG_URL" --pg-pool "$PG_POOL"
# The same database through a server with the read cache (GETs only).
start_larder pgc --store "$PG_URL" --pg-pool "$PG_POOL" --pg-cache-mb 32

one_kib_value "$WORK/value"
TARGETS=(disk durable pg)
for t in "${TARGETS[@]}"; do
  u=URL_$t; curl -sf -T "$WORK/value" "${!u}/store/bench/get" -o /dev/null
  curl -sf "${!u}/store/bench/get" | cmp -s - "$WORK/value" || { echo "larder $t: GET does not return the PUT value" >&2; exit 1; }
done
log "generating the ${SIZE_MB} MiB JSON value"
$BENCH gen json $((SIZE_MB << 20)) "$WORK/big.json"

# ---- 1 and 2: rounds, the order rotating --------------------------------------
for round in $(seq "$ROUNDS"); do
  k=$(( (round - 1) % 3 )); order=("${TARGETS[@]:k}" "${TARGETS[@]:0:k}")
  log "round $round/$ROUNDS: ${order[*]}"
  for s in "${order[@]}" pgc; do u=URL_$s; add "$s.get" "$(rate "${!u}/store/bench/get")"; done
  for s in "${order[@]}"; do u=URL_$s; add "$s.put" "$(rate -s "$PUTLUA" "${!u}")"; done
  for s in "${order[@]}"; do
    u=URL_$s; key="${!u}/store/big/json"
    add "$s.bput" "$(put_mbs "$key" "$WORK/big.json")"
    add "$s.bget" "$(get_mbs "$key")"
    add "$s.bgz" "$(get_mbs -H 'Accept-Encoding: gzip' "$key")"
  done
done

# ---- 4: eight writers on eight keys --------------------------------------------
OWNLUA=$ROOT/Benchmarks/put-own-key.lua
start_larder pgb --store "$PG_URL" --pg-pool "$PG_POOL"
# rate_own URL WRITERS TAG -> req/s of WRITERS connections, each on a key of its own
rate_own() {
  local out
  out=$(wrk -t"$2" -c"$2" -d"${DURATION}s" -s "$OWNLUA" "$1" -- "$3")
  grep -E 'Non-2xx|Socket errors' <<<"$out" | sed "s|^ *|[wrk $1 own] |" >&2 || true
  awk '/Requests\/sec/ {print int($2)}' <<<"$out"
}
for round in $(seq "$ROUNDS"); do
  log "round $round/$ROUNDS: 8 writers on 8 keys"
  add disk.own "$(rate_own "$URL_disk" 8 d)"
  add durable.own "$(rate_own "$URL_durable" 8 d)"
  add pg.own "$(rate_own "$URL_pg" 8 p)"
  rate_own "$URL_pg" 4 a >"$WORK/own.a" & own_a=$!
  rate_own "$URL_pgb" 4 b >"$WORK/own.b"
  wait "$own_a"
  add pg2.own "$(( $(cat "$WORK/own.a") + $(cat "$WORK/own.b") ))"
done
printf '0123456789abcdef%.0s' $(seq 64) >"$WORK/ownbody"
for k in a0 a1 a2 a3 b0 b1 b2 b3; do
  curl -sf "$URL_pgb/store/bench/own-$k" | cmp -s - "$WORK/ownbody" || { echo "own-$k: not the PUT value" >&2; exit 1; }
done
stop_larder "$PID_pgb" pgb

curl -sf "$URL_pg/store/big/json" | cmp -s - "$WORK/big.json" && BIGOK=same || BIGOK=DIFFERENT
curl -sf -H 'Accept-Encoding: gzip' "$URL_pg/store/big/json" | gzip -dc | cmp -s - "$WORK/big.json" && BIGGZOK=same || BIGGZOK=DIFFERENT
for t in "${TARGETS[@]}" pgc; do p=PID_$t; stop_larder "${!p}" "$t"; done
rm -f "$WORK/big.json"

# ---- 3: a BIG_MB round trip through the postgres store ------------------------
log "generating the ${BIG_MB} MiB base64 value"
$BENCH gen base64 $((BIG_MB << 20)) "$WORK/huge"
TMPDIR=$WORK/spool start_larder big --store "$PG_URL" --pg-pool "$PG_POOL"
fds() { ls "/proc/$PID_big/fd" | wc -l; }
hwm() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$PID_big/status"; }
# what the descriptors are: their targets, sockets and pipes without their inode
fd_targets() { for f in "/proc/$PID_big/fd"/*; do readlink "$f" || true; done 2>/dev/null | sed 's/:\[[0-9]*\]$//' | sort; }
# spool files have no name (O_TMPFILE: "<dir>/#inode (deleted)"), or an unlinked larder-spool-* one
spool_fds() { find "/proc/$PID_big/fd" -lname "$WORK/spool/*" 2>/dev/null | wc -l; }
# One small round trip first, so the pool and the process are warm.
curl -sf -T "$WORK/value" "$URL_big/store/bench/warm" -o /dev/null
curl -sf "$URL_big/store/bench/warm" -o /dev/null
sleep 0.5
FD0=$(fds); HWM0=$(hwm); fd_targets >"$WORK/fds.before"
log "PUT of ${BIG_MB} MiB to the postgres store"
BPUT=$(curl -sf -o /dev/null -T "$WORK/huge" -w '%{time_total}\n' "$URL_big/store/big/huge" | awk -v b=$((BIG_MB << 20)) '{printf "%.1f", b/$1/1e6}')
HWM1=$(hwm); FD1=$(fds)
log "GET of ${BIG_MB} MiB from the postgres store"
BGET=$(curl -sf -o "$WORK/huge.back" -w '%{time_total}\n' "$URL_big/store/big/huge" | awk -v b=$((BIG_MB << 20)) '{printf "%.1f", b/$1/1e6}')
for _ in $(seq 100); do (( $(fds) <= FD0 )) && break; sleep 0.1; done   # the spool closes once the response is done
HWM2=$(hwm); FD2=$(fds); SPOOLFD=$(spool_fds)
FDNEW=$(fd_targets | comm -13 "$WORK/fds.before" - | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
SPOOLFILES=$(find "$WORK/spool" -mindepth 1 | wc -l)
cmp -s "$WORK/huge" "$WORK/huge.back" && HUGEOK=same || HUGEOK=DIFFERENT
DBSIZE=$(psql -c "select pg_size_pretty(pg_database_size('larder'))")
STORED=$(psql -c "select pg_size_pretty(sum(pg_total_relation_size(c.oid))) from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'larder' and c.relkind in ('r', 't')")
stop_larder "$PID_big" big
rm -f "$WORK/huge" "$WORK/huge.back"
ERRS=$(cat "$WORK"/{disk,durable,pg,pgb,big}.log | grep -ciE 'error|fatal' || true)

# ---- the tables ------------------------------------------------------------------
{
echo "Larder on PostgreSQL vs its disk store, $(date -u +%Y-%m-%d) on $(hostname), $(nproc) cores, $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo '+dirty')"
echo "$PG_SETTINGS; larder --pg-pool $PG_POOL"
echo "rounds=$ROUNDS duration=${DURATION}s conns=$CONNS (medians of rotating rounds; MB = 10^6 bytes)"
echo
echo "| figure | disk --no-fsync | disk (fsync) | postgres | pg / disk fsync | pg / disk no-fsync |"
echo "|---|---:|---:|---:|---:|---:|"
row() { # LABEL KEY
  local a b c; a=$(med "disk.$2"); b=$(med "durable.$2"); c=$(med "pg.$2")
  echo "| $1 | $a | $b | $c | $(ratio "$c" "$b") | $(ratio "$c" "$a") |"
}
row "1 KiB GET, one key, wrk -t2 -c$CONNS (req/s)" get
echo "| 1 KiB GET, one key, postgres with --pg-cache-mb 32 (req/s) | $(med disk.get) | $(med durable.get) | $(med pgc.get) | $(ratio "$(med pgc.get)" "$(med durable.get)") | $(ratio "$(med pgc.get)" "$(med disk.get)") |"
row "1 KiB PUT, 1000 keys, wrk -t2 -c$CONNS (req/s)" put
row "1 KiB durable PUT, 8 writers on 8 keys, one larder (req/s)" own
echo "| 1 KiB durable PUT, 8 writers on 8 keys, two larders on one database, 4 each (req/s) | $(med disk.own) | $(med durable.own) | $(med pg2.own) | $(ratio "$(med pg2.own)" "$(med durable.own)") | $(ratio "$(med pg2.own)" "$(med disk.own)") |"
row "${SIZE_MB} MiB JSON PUT, curl (MB/s)" bput
row "${SIZE_MB} MiB JSON GET identity (MB/s)" bget
row "${SIZE_MB} MiB JSON GET gzip accepted (value MB/s)" bgz
echo "| peak RSS of the larder above (MiB) | $(awk -v k="${HWM[disk]}" 'BEGIN {printf "%.1f", k/1024}') | $(awk -v k="${HWM[durable]}" 'BEGIN {printf "%.1f", k/1024}') | $(awk -v k="${HWM[pg]}" 'BEGIN {printf "%.1f", k/1024}') | | |"
echo
echo "${SIZE_MB} MiB GET from postgres equal to the PUT: identity $BIGOK, gzip (gunzipped) $BIGGZOK"
echo
echo "| ${BIG_MB} MiB base64 round trip through the postgres store | |"
echo "|---|---:|"
echo "| PUT (MB/s) | $BPUT |"
echo "| GET identity (MB/s) | $BGET |"
echo "| GET equal to the PUT (cmp) | $HUGEOK |"
echo "| larder VmHWM before the PUT (MiB) | $HWM0 |"
echo "| larder VmHWM after the PUT (MiB) | $HWM1 |"
echo "| larder VmHWM after the GET (MiB) | $HWM2 |"
echo "| open descriptors: before / after PUT / after GET | $FD0 / $FD1 / $FD2 |"
echo "| descriptors added since before the PUT | ${FDNEW:-none} |"
echo "| spool descriptors open after the GET | $SPOOLFD |"
echo "| files left in the spool directory | $SPOOLFILES |"
echo "| Larder's tables in the database (with TOAST) / database size | $STORED / $DBSIZE |"
echo
echo "error or fatal lines in larder logs: $ERRS"
echo "rounds: $(for k in $(printf '%s\n' "${!R[@]}" | sort); do printf '%s=[%s] ' "$k" "${R[$k]% }"; done)"
} | tee "$RESULTS"
echo "results: $RESULTS" >&2
