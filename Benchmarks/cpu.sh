#!/usr/bin/env bash
# The server's CPU time per request, this build against an older one, in
# alternating rounds: 1 KiB GET (served from the read cache) and 1 KiB PUT
# (Benchmarks/put.lua: 1,000 cycled keys), wrk -t2 -c64. Steadier than req/s
# when other work shares the machine: what the server spends per request,
# not how much of the machine it got.
#
#   BASELINE=/path/to/older/larder bash Benchmarks/cpu.sh [seconds-per-round] [rounds]
#   DURABLE=1 BASELINE=... bash Benchmarks/cpu.sh    # PUTs with fsync on (group commit), not --no-fsync
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${1:-8}
ROUNDS=${2:-5}
CONNS=${CONNS:-64}
: "${BASELINE:?set BASELINE to an older larder binary}"
. "$ROOT/Benchmarks/common.sh"
need_tools wrk curl python3
WORK=$(mktemp -d /tmp/larder-cpu.XXXXXX)
trap bench_cleanup EXIT

build_larder
FSYNC=(--no-fsync); PUTNAME="PUT --no-fsync"
[ -n "${DURABLE:-}" ] && { FSYNC=(); PUTNAME="PUT durable"; }
start_larder new --data-dir "$WORK/new" "${FSYNC[@]}"
start_binary "$BASELINE" old --data-dir "$WORK/old" "${FSYNC[@]}"
one_kib_value "$WORK/value"
for url in "$URL_new" "$URL_old"; do curl -sf -T "$WORK/value" "$url/store/bench/get" -o /dev/null; done

HZ=$(getconf CLK_TCK)
# measure PID ARGS...: "µs-per-request req/s"
measure() {
  local pid=$1; shift
  local before after out
  before=$(proc_ticks "$pid")
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" "$@")
  after=$(proc_ticks "$pid")
  echo "$out" | awk -v t=$((after - before)) -v hz="$HZ" \
    '/requests in/ {n=$1} /Requests\/sec/ {r=$2} END {printf "%.2f %d\n", t / hz * 1e6 / n, r}'
}

declare -A CPU RATE
for round in $(seq "$ROUNDS"); do
  # Which build goes first alternates: a PUT round leaves writeback and
  # journal work that the next writer pays for.
  order="new_get old_get new_put old_put"
  (( round % 2 == 0 )) && order="old_get new_get old_put new_put"
  for case in $order; do
    pid=$PID_new; url=$URL_new
    [[ $case == old_* ]] && { pid=$PID_old; url=$URL_old; }
    if [[ $case == *_get ]]; then r=$(measure "$pid" "$url/store/bench/get")
    else r=$(measure "$pid" -s "$PUTLUA" "$url"); fi
    CPU[$case]+="${r% *} "; RATE[$case]+="${r#* } "
  done
  log "round $round/$ROUNDS done"
done

m() { echo "$1" | tr ' ' '\n' | grep . | median; }
printf '%-22s %12s %10s\n' "1 KiB, wrk -t2 -c$CONNS" "µs CPU/req" "req/s"
for case in new_get old_get new_put old_put; do
  printf '%-22s %12s %10s\n' "${case/_put/ $PUTNAME}" "$(m "${CPU[$case]}")" "$(m "${RATE[$case]}")"
done
# Medians of the per-round ratios (each round ran both builds back to back).
per_round() { paste -d' ' <(echo "$1" | tr ' ' '\n' | grep .) <(echo "$2" | tr ' ' '\n' | grep .) | awk '{print $1 / $2}' | median; }
printf 'new/old, median of rounds: GET CPU %.3f req/s %.3f; PUT CPU %.3f req/s %.3f\n' \
  "$(per_round "${CPU[new_get]}" "${CPU[old_get]}")" "$(per_round "${RATE[new_get]}" "${RATE[old_get]}")" \
  "$(per_round "${CPU[new_put]}" "${CPU[old_put]}")" "$(per_round "${RATE[new_put]}" "${RATE[old_put]}")"
echo "cpu: ${CPU[*]@K}" >&2
echo "rate: ${RATE[*]@K}" >&2
