#!/usr/bin/env bash
# A large GET with gzip accepted (the stored gzip bytes as they are):
# Larder against nginx serving a file of the same bytes, curl on loopback,
# alternating rounds, median MB/s of each.
#
#   bash Benchmarks/large-get.sh [MiB] [rounds]
#   BASELINE=/path/to/older/larder bash Benchmarks/large-get.sh 64 5   # also an older build, same rounds
#
# The value is base64 of random bytes (the issue's 64 MiB workload); nginx
# serves a copy of Larder's value file, so both send the same byte count.
# (Benchmarks/run.sh compares Larder's gzip GET with nginx sending the
# value itself, a different byte count.)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MIB=${1:-64}
ROUNDS=${2:-5}
. "$ROOT/Benchmarks/common.sh"
need_tools nginx:nginx-light curl python3
WORK=$(mktemp -d /tmp/larder-large-get.XXXXXX)
trap bench_cleanup EXIT

build_larder
$BENCH gen base64 $((MIB << 20)) "$WORK/value"
start_larder larder --data-dir "$WORK/larder" --no-fsync
ORDER="nginx larder"
if [ -n "${BASELINE:-}" ]; then start_binary "$BASELINE" baseline --data-dir "$WORK/baseline" --no-fsync; ORDER="$ORDER baseline"; fi
for who in $ORDER; do
  [ "$who" = nginx ] && continue
  u=URL_$who; curl -sf -T "$WORK/value" "${!u}/store/bench/large" -o /dev/null
done

start_nginx
cp "$WORK/larder/values/bench\\/large" "$WORK/nginx/root/store/bench/large"
GZ=$(stat -c %s "$WORK/nginx/root/store/bench/large")
sleep 0.5

speed() { curl -s -o /dev/null -H 'Accept-Encoding: gzip' -w '%{speed_download}' "$1/store/bench/large"; }
for who in $ORDER; do u=URL_$who; speed "${!u}" >/dev/null; done   # warm the page cache
for round in $(seq "$ROUNDS"); do
  for who in $ORDER; do u=URL_$who; add "$who" "$(speed "${!u}")"; done
done
echo "value ${MIB} MiB (base64 of random bytes), gzip body $GZ bytes; curl on loopback, median of $ROUNDS"
NG=$(med nginx)
for who in $ORDER; do
  v=$(med "$who")
  awk -v w="$who" -v v="$v" -v n="$NG" 'BEGIN {printf "%-10s %8.0f MB/s  %5.2fx nginx\n", w, v/1e6, v/n}'
done
