#!/usr/bin/env bash
# Larder against nginx WebDAV on this machine, in one session, and against
# zlib itself on the same bytes: every figure and ratio of issue 9, and the
# by-the-clock ones of issue 21 (1 KiB GETs of 1,000 random JSON keys, the
# durable PUT beside nginx's PUT; its instruction counts are callgrind.sh's),
# and issue 37's server CPU per request (user + system from /proc, every
# thread and nginx's every worker, over each wrk run) for both servers.
#
#   bash Benchmarks/run.sh                 # ~8 minutes: 3 alternating rounds, 10 s each, 64 MiB, 100,000 keys
#   QUICK=1 bash Benchmarks/run.sh         # ~2 minutes smoke run: 1 round, 3 s, 16 MiB, 20,000 keys
#   KEYS=1000000 bash Benchmarks/run.sh    # the issue's start-up figure
#   BASELINE=/path/to/older/larder ...     # an older build in the same rounds: its 1 KiB GET,
#                                          # PUT --no-fsync and durable PUT, to judge a change
#
# Knobs: ROUNDS, DURATION (s per wrk run), SIZE_MB (large values), KEYS,
# CONNS (64), DURABLE_REF (req/s the durable PUT is compared with when no
# BASELINE is given). Installs wrk, nginx, curl, python3 with apt if missing;
# builds only `larder` in release. The table goes to stdout and to
# .build/benchmarks/run-<date>.txt (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -n "${QUICK:-}" ]; then
  ROUNDS=${ROUNDS:-1}; DURATION=${DURATION:-3}; SIZE_MB=${SIZE_MB:-16}; KEYS=${KEYS:-20000}; STARTS=${STARTS:-1}
else
  ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-10}; SIZE_MB=${SIZE_MB:-64}; KEYS=${KEYS:-100000}; STARTS=${STARTS:-3}
fi
CONNS=${CONNS:-64}
# Larder's durable (fsync on) 1 KiB PUT at 64 connections before group
# commit, one flush per write: docs/performance-history.md's figure for 2026-11-23 (1,402
# req/s on the 2-core development machine; this script's first full run
# measured 1,202). Prefer BASELINE=<build before group commit>,
# which measures it in the same rounds.
DURABLE_REF=${DURABLE_REF:-1400}

. "$ROOT/Benchmarks/common.sh"
need_tools wrk nginx:nginx-light curl python3

OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
RESULTS=$OUTDIR/run-$(date -u +%Y-%m-%dT%H%M%SZ).txt
WORK=$(mktemp -d /tmp/larder-bench.XXXXXX)
trap bench_cleanup EXIT

build_larder
start_larder fast --data-dir "$WORK/larder" --no-fsync
start_larder durable --data-dir "$WORK/larder-fsync"
if [ -n "${BASELINE:-}" ]; then
  start_binary "$BASELINE" basefast --data-dir "$WORK/baseline-fast" --no-fsync
  start_binary "$BASELINE" baseline --data-dir "$WORK/baseline"
fi
start_nginx

one_kib_value "$WORK/value"
TARGETS="fast durable nginx"; [ -n "${BASELINE:-}" ] && TARGETS="$TARGETS basefast baseline"
for t in $TARGETS; do
  u=URL_$t; curl -sf -T "$WORK/value" "${!u}/store/bench/get" -o /dev/null
done
log "seeding 1,000 JSON keys"
for t in fast nginx $([ -n "${BASELINE:-}" ] && echo basefast); do u=URL_$t; seed_json_keys "${!u}" "$WORK/json"; done

# ---- zlib on the same bytes, one core ------------------------------------
declare -A Z
log "generating ${SIZE_MB} MiB values and measuring zlib on them"
for kind in raw base64 json; do
  $BENCH gen "$kind" $((SIZE_MB << 20)) "$WORK/big.$kind"
  for kv in $($BENCH zlib "$WORK/big.$kind"); do Z[$kind.${kv%%=*}]=${kv#*=}; done
done

for round in $(seq "$ROUNDS"); do
  order="fast nginx"; (( round % 2 == 0 )) && order="nginx fast"
  # the 1 KiB rounds take the older build too (its place rotating)
  small=$order
  if [ -n "${BASELINE:-}" ]; then three=(fast nginx basefast); k=$(( (round - 1) % 3 )); small="${three[*]:k} ${three[*]:0:k}"; fi
  # req/s, and the server's CPU per request over the same run (issue 37)
  for s in $small; do u=URL_$s; read -r v c < <(cpu_rate "$s" "${!u}/store/bench/get"); add "$s.get" "$v"; add "$s.cpu.get" "$c"; done
  for s in $small; do u=URL_$s; read -r v c < <(cpu_rate "$s" -s "$JSONLUA" "${!u}"); add "$s.jget" "$v"; add "$s.cpu.jget" "$c"; done
  for s in $small; do u=URL_$s; read -r v c < <(cpu_rate "$s" -s "$PUTLUA" "${!u}"); add "$s.put" "$v"; add "$s.cpu.put" "$c"; done
  for s in $order; do
    u=URL_$s; read -r p50 p99 < <(latency "${!u}/store/bench/get")
    add "$s.p50" "$p50"; add "$s.p99" "$p99"
  done
  dorder="durable"; [ -n "${BASELINE:-}" ] && { dorder="durable baseline"; (( round % 2 == 0 )) && dorder="baseline durable"; }
  for s in $dorder; do u=URL_$s; add "$s.dput" "$(rate -s "$PUTLUA" "${!u}")"; done
  for kind in raw base64 json; do
    for s in $order; do
      u=URL_$s; key="${!u}/store/big/$kind"
      add "$s.put.$kind" "$(put_mbs "$key" "$WORK/big.$kind")"
      add "$s.get.$kind" "$(get_mbs "$key")"
      add "$s.gzget.$kind" "$(get_mbs -H 'Accept-Encoding: gzip' "$key")"
    done
  done
  log "round $round/$ROUNDS done"
done
stop_larder "$PID_durable" durable
[ -n "${BASELINE:-}" ] && { stop_larder "$PID_baseline" baseline; stop_larder "$PID_basefast" basefast; unset 'HWM[baseline]' 'HWM[basefast]'; }
stop_nginx

# ---- listing and start-up with KEYS keys ------------------------------------
log "storing $KEYS keys (POST /snapshot)"
stop_larder "$PID_fast" fast
start_larder keys --data-dir "$WORK/keys" --no-fsync
t0=$(date +%s.%N)
$BENCH snapshot p/ "$KEYS" | curl -sf -X POST -T - "$URL_keys/snapshot?prefix=p/" -o "$WORK/restore.json"
t1=$(date +%s.%N)
log "stored: $(cat "$WORK/restore.json") in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b-a}') s"
curl -sf -o /dev/null "$URL_keys/store/p/?limit=1000"
for _ in $(seq 11); do
  add list "$(curl -sf -o /dev/null -w '%{time_total}\n' "$URL_keys/store/p/?limit=1000" | awk '{printf "%.2f", $1*1000}')"
  add listmid "$(curl -sf -o /dev/null -w '%{time_total}\n' "$URL_keys/store/p/?limit=1000&after=p/$(printf %07d $((KEYS / 2)))" | awk '{printf "%.2f", $1*1000}')"
done
stop_larder "$PID_keys" keys
log "timing start-up with $KEYS keys ($STARTS times)"
for i in $(seq "$STARTS"); do
  sync; t0=$(date +%s%N)
  start_larder "start$i" --data-dir "$WORK/keys" --no-fsync
  t1=$(date +%s%N)
  add startup "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b-a)/1e9}')"
  # The header scan runs in the background: until larder_store_index_ready.
  u=URL_start$i
  for _ in $(seq 6000); do
    curl -sf "${!u}/metrics" | grep -q '^larder_store_index_ready 1' && break
    sleep 0.01
  done
  t2=$(date +%s%N)
  add scanned "$(awk -v a="$t0" -v b="$t2" 'BEGIN {printf "%.3f", (b-a)/1e9}')"
  p=PID_start$i; stop_larder "${!p}" "start$i"
  add startrss "$(awk -v k="${HWM[start$i]}" 'BEGIN {printf "%.1f", k/1024}')"
done
PEAK=0; for k in "${!HWM[@]}"; do (( HWM[$k] > PEAK )) && PEAK=${HWM[$k]}; done

# ---- the table ------------------------------------------------------------------
{
echo "Larder vs nginx WebDAV and zlib, $(date -u +%Y-%m-%d) on $(hostname), $(nproc) cores, $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo '+dirty')"
echo "rounds=$ROUNDS duration=${DURATION}s conns=$CONNS size=${SIZE_MB}MiB keys=$KEYS (medians of alternating rounds; MB = 10^6 bytes)"
echo
printf '%-44s %12s %12s\n' "figure" "Larder" "nginx"
row() { printf '%-44s %12s %12s\n' "$1" "$2" "$3"; }
row "1 KiB GET, wrk -t2 -c$CONNS (req/s)" "$(med fast.get)" "$(med nginx.get)"
[ -n "${BASELINE:-}" ] && row "  same, BASELINE build (req/s)" "$(med basefast.get)" "-"
row "1 KiB GET, 1,000 random JSON keys (req/s)" "$(med fast.jget)" "$(med nginx.jget)"
[ -n "${BASELINE:-}" ] && row "  same, BASELINE build (req/s)" "$(med basefast.jget)" "-"
row "1 KiB PUT --no-fsync, wrk -t2 -c$CONNS (req/s)" "$(med fast.put)" "$(med nginx.put)"
[ -n "${BASELINE:-}" ] && row "  same, BASELINE build (req/s)" "$(med basefast.put)" "-"
row "  server CPU per 1 KiB GET (us)" "$(med fast.cpu.get)" "$(med nginx.cpu.get)"
row "  server CPU per JSON-key GET (us)" "$(med fast.cpu.jget)" "$(med nginx.cpu.jget)"
row "  server CPU per 1 KiB PUT --no-fsync (us)" "$(med fast.cpu.put)" "$(med nginx.cpu.put)"
row "1 KiB GET, 1 connection, p50 (us)" "$(med fast.p50)" "$(med nginx.p50)"
row "1 KiB GET, 1 connection, p99 (us)" "$(med fast.p99)" "$(med nginx.p99)"
row "1 KiB PUT durable (fsync), c$CONNS (req/s)" "$(med durable.dput)" "$(med nginx.put)"
[ -n "${BASELINE:-}" ] && row "  same, BASELINE build (req/s)" "$(med baseline.dput)" "-"
for kind in raw base64 json; do
  row "${SIZE_MB} MiB PUT, $kind (MB/s)" "$(med fast.put.$kind)" "$(med nginx.put.$kind)"
  row "${SIZE_MB} MiB GET identity, $kind (MB/s)" "$(med fast.get.$kind)" "$(med nginx.get.$kind)"
  row "${SIZE_MB} MiB GET gzip accepted, $kind (value MB/s)" "$(med fast.gzget.$kind)" "-"
done
row "1,000-key page of $KEYS keys, first (ms)" "$(med list)" "-"
row "1,000-key page of $KEYS keys, middle (ms)" "$(med listmid)" "-"
row "start-up with $KEYS keys (s)" "$(med startup)" "-"
row "  background scan done (s after start)" "$(med scanned)" "-"
row "  peak RSS of a start-up (MiB)" "$(med startrss)" "-"
row "peak RSS, any larder process (MiB)" "$(awk -v k="$PEAK" 'BEGIN {printf "%.1f", k/1024}')" "-"
echo
printf '%-16s %10s %10s %10s %14s %14s\n' "zlib, one core" "deflate 1" "Huffman" "inflate" "ratio (lvl 1)" "ratio (Huff)"
for kind in raw base64 json; do
  printf '%-16s %10.1f %10.1f %10.1f %14.3f %14.3f\n' "$kind (MB/s)" "${Z[$kind.deflate1]}" "${Z[$kind.huffman]}" "${Z[$kind.inflate]}" "${Z[$kind.deflate1_ratio]}" "${Z[$kind.huffman_ratio]}"
done
echo
printf '%-56s %8s %10s  %s\n' "ratio (issue 9 target)" "value" "target" "verdict"
# check NAME VALUE OP TARGET
check() {
  local v=$2 op=$3 t=$4 ok
  ok=$(awk -v v="$v" -v t="$t" -v op="$op" 'BEGIN {if (v == "" || v == "nan") {print "n/a"; exit}
        if ((op == ">=" && v+0 >= t+0) || (op == "<=" && v+0 <= t+0) || (op == "<" && v+0 < t+0)) print "met"; else print "not met"}')
  printf '%-56s %8s %10s  %s\n' "$1" "$v" "$op $t" "$ok"
}
r() { ratio "$@"; }
DREF=$DURABLE_REF; DNAME="recorded $DURABLE_REF req/s"
[ -n "${BASELINE:-}" ] && { DREF=$(med baseline.dput); DNAME="BASELINE build"; }
check "1 KiB GET, Larder / nginx" "$(r "$(med fast.get)" "$(med nginx.get)")" ">=" 1.1
check "1 KiB GET p99 (1 conn), Larder / nginx" "$(r "$(med fast.p99)" "$(med nginx.p99)")" "<=" 1.0
check "1 KiB PUT --no-fsync, Larder / nginx" "$(r "$(med fast.put)" "$(med nginx.put)")" ">=" 1.2
check "durable PUT c$CONNS / one-flush-per-write ($DNAME)" "$(r "$(med durable.dput)" "$DREF")" ">=" 3
check "JSON PUT / one core of zlib level 1" "$(r "$(med fast.put.json)" "${Z[json.deflate1]}")" ">=" 1.5
check "base64 PUT / one core of Huffman-only zlib" "$(r "$(med fast.put.base64)" "${Z[base64.huffman]}")" ">=" 1.5
check "raw random PUT, Larder / nginx" "$(r "$(med fast.put.raw)" "$(med nginx.put.raw)")" ">=" 0.5
for kind in raw base64 json; do
  check "gzip-accepted GET ($kind), Larder / nginx GET" "$(r "$(med fast.gzget.$kind)" "$(med nginx.get.$kind)")" ">=" 1.0
done
for kind in raw base64 json; do
  check "identity GET ($kind) / one core of inflate" "$(r "$(med fast.get.$kind)" "${Z[$kind.inflate]}")" ">=" 1.5
done
check "1,000-key listing page, $KEYS keys stored (ms)" "$(med list)" "<" 20
check "start-up with $KEYS keys (s; target is for 1,000,000)" "$(med startup)" "<" 2
check "peak RSS (MiB)" "$(awk -v k="$PEAK" 'BEGIN {printf "%.1f", k/1024}')" "<" 64
echo
printf '%-56s %8s %10s  %s\n' "ratio (issue 37 target: server CPU per request)" "value" "target" "verdict"
check "CPU per 1 KiB GET, Larder / nginx" "$(r "$(med fast.cpu.get)" "$(med nginx.cpu.get)")" "<=" 1.0
check "CPU per JSON-key GET, Larder / nginx" "$(r "$(med fast.cpu.jget)" "$(med nginx.cpu.jget)")" "<=" 1.0
check "CPU per 1 KiB PUT --no-fsync, Larder / nginx" "$(r "$(med fast.cpu.put)" "$(med nginx.cpu.put)")" "<=" 1.0
echo
printf '%-56s %8s %10s  %s\n' "ratio (issue 21 target; instructions: callgrind.sh)" "value" "target" "verdict"
check "1 KiB GET, 1,000 random JSON keys, Larder / nginx" "$(r "$(med fast.jget)" "$(med nginx.jget)")" ">=" 1.1
check "1 KiB PUT --no-fsync, Larder / nginx" "$(r "$(med fast.put)" "$(med nginx.put)")" ">=" 1.0
for kind in raw base64 json; do
  check "gzip-accepted GET ($kind), Larder / nginx identity GET" "$(r "$(med fast.gzget.$kind)" "$(med nginx.get.$kind)")" ">=" 1.0
done
check "base64 PUT / one core of Huffman-only zlib" "$(r "$(med fast.put.base64)" "${Z[base64.huffman]}")" ">=" 1.5
printf '%-56s %8s\n' "durable PUT c$CONNS / nginx PUT (nginx never fsyncs)" "$(r "$(med durable.dput)" "$(med nginx.put)")"
printf '%-56s %8s\n' "durable PUT c$CONNS / Larder PUT --no-fsync" "$(r "$(med durable.dput)" "$(med fast.put)")"
echo
echo "rounds: $(for k in $(printf '%s\n' "${!R[@]}" | sort); do printf '%s=[%s] ' "$k" "${R[$k]% }"; done)"
echo "peak RSS per process (kB): ${HWM[*]@K}"
} | tee "$RESULTS"
echo "results: $RESULTS" >&2
