#!/usr/bin/env bash
# A large GET with gzip accepted (the stored gzip bytes as they are):
# Larder against nginx serving a file of the same bytes, curl on loopback,
# alternating rounds, median MB/s of each.
#
#   bash bench/large-get.sh [MiB] [rounds]
#   BASELINE=/path/to/older/larder bash bench/large-get.sh 64 5   # also an older build, same rounds
#
# The value is base64 of random bytes (the issue's 64 MiB workload); nginx
# serves a copy of Larder's value file, so both send the same byte count.
set -euo pipefail
cd "$(dirname "$0")/.."
MIB=${1:-64}
ROUNDS=${2:-5}
WORK=$(mktemp -d /tmp/larder-large-get.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

for tool in nginx curl; do
  command -v "$tool" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light curl >/dev/null; break; }
done
swift build -c release --product larder >/dev/null
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts a larder on an ephemeral port; prints its port.
start_larder() { # binary name
  "$1" serve --port 0 --data-dir "$WORK/$2" --no-fsync --log-level warning >"$WORK/$2.out" 2>"$WORK/$2.log" &
  PIDS+=($!)
  for _ in $(seq 300); do
    line=$(head -n1 "$WORK/$2.out" 2>/dev/null || true)
    [ -n "$line" ] && { echo "${line##*:}" | tr -d '/\r'; return; }
    sleep 0.05
  done
  echo "larder did not start: $(cat "$WORK/$2.log")" >&2; exit 1
}

head -c $((MIB * 3 / 4 * 1024 * 1024)) /dev/urandom | base64 -w0 | head -c $((MIB * 1024 * 1024)) > "$WORK/value"
declare -A PORT
PORT[larder]=$(start_larder .build/release/larder larder)
[ -n "${BASELINE:-}" ] && PORT[baseline]=$(start_larder "$BASELINE" baseline)
for who in "${!PORT[@]}"; do
  curl -sf -T "$WORK/value" "http://127.0.0.1:${PORT[$who]}/store/bench/large" -o /dev/null
done

NPORT=$(freeport)
. bench/nginx-peer.sh
start_nginx "$WORK" "$NPORT"
cp "$WORK/larder/values/bench\\/large" "$WORK/nginx/root/store/bench/large"
GZ=$(stat -c %s "$WORK/nginx/root/store/bench/large")
PORT[nginx]=$NPORT
sleep 0.5

speed() { curl -s -o /dev/null -H 'Accept-Encoding: gzip' -w '%{speed_download}' "http://127.0.0.1:$1/store/bench/large"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ORDER="nginx larder"
[ -n "${BASELINE:-}" ] && ORDER="$ORDER baseline"
declare -A R
for who in $ORDER; do speed "${PORT[$who]}" >/dev/null; done   # warm the page cache
for round in $(seq "$ROUNDS"); do
  for who in $ORDER; do R[$who]+="$(speed "${PORT[$who]}") "; done
done
m() { echo "${R[$1]}" | tr ' ' '\n' | grep . | median; }
echo "value ${MIB} MiB (base64 of random bytes), gzip body $GZ bytes; curl on loopback, median of $ROUNDS"
NG=$(m nginx)
for who in $ORDER; do
  v=$(m "$who")
  awk -v w="$who" -v v="$v" -v n="$NG" 'BEGIN {printf "%-10s %8.0f MB/s  %5.2fx nginx\n", w, v/1e6, v/n}'
done
