#!/usr/bin/env bash
# Instructions per request of the release `larder` under callgrind: 1 KiB
# GET (served from the read cache) and 1 KiB PUT (--no-fsync), each on one
# keep-alive connection with an exact request count.
#
#   bash Benchmarks/callgrind.sh                       # this checkout
#   N=2000 BASELINE=/path/to/older/larder bash Benchmarks/callgrind.sh
#
# In one valgrind run: warm up, then for each workload zero the counters,
# do N requests, dump; do 2N requests, dump. The difference of the two
# dumps' totals, divided by N, is the cost of one request: start-up, the
# dump itself and idle wake-ups cancel. Results (and the top 10 functions by
# inclusive cost of the 2N GET phase) go to .build/benchmarks/callgrind-*.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
WARMUP=${WARMUP:-300}
ROOT=$PWD
OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
for tool in valgrind python3 curl; do
  command -v "$tool" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind python3 curl >/dev/null; break; }
done
WORK=$(mktemp -d /tmp/larder-callgrind.XXXXXX)
VPID=""
cleanup() {
  if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "${SKIP_BUILD:-}" ]; then swift build -c release --product larder >/dev/null; fi
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
RESULTS=$OUTDIR/callgrind-$STAMP.txt

total() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; elif command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; }

# top FILE LABEL: the top functions by inclusive cost (the first ones are
# Dispatch's and the thread's wrappers, so 25 of them) and by self cost
top() {
  echo "-- top 25 functions by inclusive cost, $2 (whole process, all threads):"
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null | demangle \
    | awk '/^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ && k < 25 {print; k++}' || true
  echo "-- top 15 functions by self cost, $2:"
  callgrind_annotate "$1" 2>/dev/null | demangle \
    | awk '/^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ && k < 15 {print; k++}' || true
}

# measure NAME BINARY: prints "GET PUT" instructions per request
measure() {
  local name=$1 bin=$2 dir=$WORK/$1
  mkdir -p "$dir"
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --dump-instr=no \
    --vgdb=yes "$bin" --port 0 --data-dir "$dir/data" --no-fsync --log-level warning \
    >"$dir/stdout" 2>"$dir/valgrind.log" &
  VPID=$!
  local url=""
  for _ in $(seq 600); do
    url=$(head -1 "$dir/stdout" 2>/dev/null || true)
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$dir/valgrind.log" >&2; echo "larder did not start under valgrind" >&2; exit 1; }
  head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > "$dir/value"
  curl -sf -T "$dir/value" "$url/store/bench/get" -o /dev/null
  python3 Benchmarks/bench.py requests "$url/store/bench/get" "$WARMUP" get
  python3 Benchmarks/bench.py requests "$url/store/bench/put" "$WARMUP" put 1024
  sleep 0.5
  local files=() ctl
  for phase in get put; do
    for n in "$N" $((2 * N)); do
      callgrind_control -z "$VPID" >/dev/null 2>&1
      if [ "$phase" = get ]; then python3 Benchmarks/bench.py requests "$url/store/bench/get" "$n" get
      else python3 Benchmarks/bench.py requests "$url/store/bench/put" "$n" put 1024; fi
      ctl=$(ls "$dir"/cg.out* 2>/dev/null | wc -l)
      callgrind_control -d "$phase-$n" "$VPID" >/dev/null 2>&1
      # wait for the dump file to appear
      for _ in $(seq 100); do [ "$(ls "$dir"/cg.out* 2>/dev/null | wc -l)" -gt "$ctl" ] && break; sleep 0.1; done
      files+=("$(ls -t "$dir"/cg.out* | sed -n 1p)")
    done
  done
  kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; VPID=""
  local g1 g2 p1 p2
  g1=$(total "${files[0]}"); g2=$(total "${files[1]}"); p1=$(total "${files[2]}"); p2=$(total "${files[3]}")
  {
    echo "== $name ($bin), N=$N"
    echo "GET: ${g1} instructions for $N, ${g2} for $((2 * N))"
    echo "PUT: ${p1} instructions for $N, ${p2} for $((2 * N))"
    top "${files[1]}" "$((2 * N)) cached 1 KiB GETs"
    top "${files[3]}" "$((2 * N)) 1 KiB PUTs --no-fsync"
    echo
  } >>"$RESULTS"
  echo "$(( (g2 - g1) / N )) $(( (p2 - p1) / N ))"
}

read -r GET PUT < <(measure larder .build/release/larder)
printf 'larder:   instructions per GET: %s, per PUT: %s\n' "$GET" "$PUT" | tee -a "$RESULTS"
if [ -n "${BASELINE:-}" ]; then
  read -r BGET BPUT < <(measure baseline "$BASELINE")
  printf 'baseline: instructions per GET: %s, per PUT: %s\n' "$BGET" "$BPUT" | tee -a "$RESULTS"
fi
echo "details: $RESULTS"
