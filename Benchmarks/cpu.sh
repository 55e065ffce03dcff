#!/usr/bin/env bash
# The server's CPU time per request, this build against an older one, in
# alternating rounds: 1 KiB GET (served from the read cache) and 1 KiB PUT
# (--no-fsync), wrk -t2 -c64. Steadier than req/s when other work shares
# the machine: what the server spends per request, not how much of the
# machine it got.
#
#   BASELINE=/path/to/older/larder bash bench/cpu.sh [seconds-per-round] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-8}
ROUNDS=${2:-5}
CONNS=${CONNS:-64}
: "${BASELINE:?set BASELINE to an older larder binary}"
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
WORK=$(mktemp -d /tmp/larder-cpu.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

swift build -c release --product larder >/dev/null
NEW_PORT=18191; OLD_PORT=18192
.build/release/larder --port $NEW_PORT --data-dir "$WORK/new" --no-fsync --log-level warning 2>"$WORK/new.log" >/dev/null &
NEW_PID=$!; PIDS+=("$NEW_PID")
"$BASELINE" --port $OLD_PORT --data-dir "$WORK/old" --no-fsync --log-level warning 2>"$WORK/old.log" >/dev/null &
OLD_PID=$!; PIDS+=("$OLD_PID")
sleep 1
head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > "$WORK/value"
for port in $NEW_PORT $OLD_PORT; do curl -sf -T "$WORK/value" "http://127.0.0.1:$port/store/bench/get" -o /dev/null; done

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
# measure PID ARGS...: "µs-per-request req/s"
measure() {
  local pid=$1; shift
  local before after out
  before=$(ticks "$pid")
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" "$@")
  after=$(ticks "$pid")
  echo "$out" | awk -v t=$((after - before)) -v hz="$HZ" \
    '/requests in/ {n=$1} /Requests\/sec/ {r=$2} END {printf "%.2f %d\n", t / hz * 1e6 / n, r}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A CPU RATE
for round in $(seq "$ROUNDS"); do
  # Which build goes first alternates: a PUT round leaves writeback and
  # journal work that the next writer pays for.
  order="new_get old_get new_put old_put"
  (( round % 2 == 0 )) && order="old_get new_get old_put new_put"
  for case in $order; do
    pid=$NEW_PID; port=$NEW_PORT
    [[ $case == old_* ]] && { pid=$OLD_PID; port=$OLD_PORT; }
    if [[ $case == *_get ]]; then r=$(measure "$pid" "http://127.0.0.1:$port/store/bench/get")
    else r=$(measure "$pid" -s bench/put.lua "http://127.0.0.1:$port"); fi
    CPU[$case]+="${r% *} "; RATE[$case]+="${r#* } "
  done
  echo "round $round/$ROUNDS done" >&2
done

m() { echo "$1" | tr ' ' '\n' | grep . | median; }
printf '%-22s %12s %10s\n' "1 KiB, wrk -t2 -c$CONNS" "µs CPU/req" "req/s"
for case in new_get old_get new_put old_put; do
  printf '%-22s %12s %10s\n' "$case" "$(m "${CPU[$case]}")" "$(m "${RATE[$case]}")"
done
# Medians of the per-round ratios (each round ran both builds back to back).
ratio() { paste -d' ' <(echo "$1" | tr ' ' '\n' | grep .) <(echo "$2" | tr ' ' '\n' | grep .) | awk '{print $1 / $2}' | median; }
printf 'new/old, median of rounds: GET CPU %.3f req/s %.3f; PUT CPU %.3f req/s %.3f\n' \
  "$(ratio "${CPU[new_get]}" "${CPU[old_get]}")" "$(ratio "${RATE[new_get]}" "${RATE[old_get]}")" \
  "$(ratio "${CPU[new_put]}" "${CPU[old_put]}")" "$(ratio "${RATE[new_put]}" "${RATE[old_put]}")"
echo "cpu: ${CPU[*]@K}" >&2
echo "rate: ${RATE[*]@K}" >&2
