#!/usr/bin/env bash
# Larder against nginx on this machine, in one session: 1 KiB GET and PUT
# with wrk (2 threads, 64 connections), alternating rounds, median of each.
#
#   bash bench/run.sh [seconds-per-round] [rounds]
#   BASELINE=/path/to/older/larder bash bench/run.sh 8 3   # also an older build, same rounds
#
# nginx is the peer: static GET of a 1 KiB file, WebDAV PUT (dav_methods),
# no fsync. Larder runs twice: with --no-fsync (the like-for-like figure)
# and for PUT also with fsync on (its default durability). With BASELINE,
# that binary runs the same GET/PUT --no-fsync workloads in the same rounds,
# so a change can be judged before/after against one nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
ROUNDS=${2:-3}
CONNS=${CONNS:-64}
WORK=$(mktemp -d /tmp/larder-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null; rm -rf "$WORK"' EXIT

for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light curl >/dev/null; break; }
done

swift build -c release --product larder >/dev/null
BIN=.build/release/larder

LPORT=18181; FPORT=18182; NPORT=18183; BPORT=18184
"$BIN" --port $LPORT --data-dir "$WORK/larder" --no-fsync --log-level warning 2>"$WORK/larder.log" &
"$BIN" --port $FPORT --data-dir "$WORK/larder-fsync" --log-level warning 2>"$WORK/larder-fsync.log" &
if [ -n "${BASELINE:-}" ]; then
  "$BASELINE" --port $BPORT --data-dir "$WORK/baseline" --no-fsync --log-level warning 2>"$WORK/baseline.log" &
fi

. bench/nginx-peer.sh
start_nginx "$WORK" "$NPORT"
sleep 1

head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > "$WORK/value"
PORTS="$LPORT $FPORT $NPORT"
[ -n "${BASELINE:-}" ] && PORTS="$PORTS $BPORT"
for port in $PORTS; do
  curl -sf -T "$WORK/value" "http://127.0.0.1:$port/store/bench/get" -o /dev/null
done

rate() { wrk -t2 -c"$CONNS" -d"${DURATION}s" "$@" | awk '/Requests\/sec/ {print int($2)}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A R
for round in $(seq "$ROUNDS"); do
  R[nginx_get]+="$(rate "http://127.0.0.1:$NPORT/store/bench/get") "
  R[larder_get]+="$(rate "http://127.0.0.1:$LPORT/store/bench/get") "
  [ -n "${BASELINE:-}" ] && R[baseline_get]+="$(rate "http://127.0.0.1:$BPORT/store/bench/get") "
  R[nginx_put]+="$(rate -s bench/put.lua "http://127.0.0.1:$NPORT") "
  R[larder_put]+="$(rate -s bench/put.lua "http://127.0.0.1:$LPORT") "
  [ -n "${BASELINE:-}" ] && R[baseline_put]+="$(rate -s bench/put.lua "http://127.0.0.1:$BPORT") "
  R[larder_put_fsync]+="$(rate -s bench/put.lua "http://127.0.0.1:$FPORT") "
  echo "round $round/$ROUNDS done" >&2
done

m() { echo "${R[$1]}" | tr ' ' '\n' | grep . | median; }
ratio() { awk "BEGIN {printf \"%.2f\", $1/$2}"; }
NG=$(m nginx_get); LG=$(m larder_get); NP=$(m nginx_put); LP=$(m larder_put); LF=$(m larder_put_fsync)
printf '%-28s %10s %8s\n' "1 KiB, wrk -t2 -c$CONNS" "req/s" "vs nginx"
printf '%-28s %10s %8s\n' "nginx GET" "$NG" "1.00"
printf '%-28s %10s %8s\n' "larder GET" "$LG" "$(ratio "$LG" "$NG")"
if [ -n "${BASELINE:-}" ]; then BG=$(m baseline_get); printf '%-28s %10s %8s\n' "baseline GET" "$BG" "$(ratio "$BG" "$NG")"; fi
printf '%-28s %10s %8s\n' "nginx WebDAV PUT" "$NP" "1.00"
printf '%-28s %10s %8s\n' "larder PUT --no-fsync" "$LP" "$(ratio "$LP" "$NP")"
if [ -n "${BASELINE:-}" ]; then BP=$(m baseline_put); printf '%-28s %10s %8s\n' "baseline PUT --no-fsync" "$BP" "$(ratio "$BP" "$NP")"; fi
printf '%-28s %10s %8s\n' "larder PUT (fsync)" "$LF" "$(ratio "$LF" "$NP")"
echo "rounds: ${R[@]@K}" >&2
