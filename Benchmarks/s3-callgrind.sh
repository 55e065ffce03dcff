#!/usr/bin/env bash
# Instructions per S3 request of the release `larder` under callgrind, as
# Benchmarks/callgrind.sh counts the plain API's: 1 KiB GetObject of one
# object and 1 KiB PutObject over 1000 keys (--no-fsync), each signed in an
# Authorization header by boto3 (`get`, `put`) and through presigned URLs
# as wrk sends them (`pget`, `pput`), on one keep-alive connection with an
# exact request count (Benchmarks/s3_requests.py makes and signs every
# request before the counters are zeroed, so the client's time counts for
# nothing).
#
#   bash Benchmarks/s3-callgrind.sh                          # this checkout (builds it; SKIP_BUILD=1 uses the one there)
#   LARDER=/path/to/larder bash Benchmarks/s3-callgrind.sh  # that binary, no build
#   BASELINE=/path/to/older/larder bash Benchmarks/s3-callgrind.sh   # and an older build
#   N=500 REPEAT=1 PHASES="get put" bash Benchmarks/s3-callgrind.sh  # quicker
#
# For each phase: zero the counters, N requests, dump; zero, 2N requests,
# dump; the difference over N is one request's cost (start-up and the dump
# cancel); REPEAT (3) times, the median. Results, with the top functions of
# each phase's last 2N run, go to .build/benchmarks/s3-callgrind-*.txt.
# Needs valgrind, boto3. Not part of CI.
set -euo pipefail
shopt -s inherit_errexit  # a failed request inside $(measure ...) stops the run
cd "$(dirname "$0")/.."
N=${N:-1000}
WARMUP=${WARMUP:-200}
REPEAT=${REPEAT:-3}
PHASES=${PHASES:-get put pget pput}
ROOT=$PWD
. "$ROOT/Benchmarks/common.sh"
OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
need_tools valgrind python3 curl
python3 -c "import boto3" 2>/dev/null || python3 -m pip install -q boto3
WORK=$(mktemp -d /tmp/larder-s3-callgrind.XXXXXX)
VPID=""
cleanup() {
  if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; fi
  bench_cleanup
}
trap cleanup EXIT

if [ -n "${LARDER:-}" ]; then BIN=$LARDER; else build_larder; fi
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
RESULTS=$OUTDIR/s3-callgrind-$STAMP.txt
REQ="python3 $ROOT/Benchmarks/s3_requests.py"

# measure NAME BINARY: prints the instructions per request of each phase, in PHASES order
measure() {
  # Run inside $(...): its own trap stops its valgrind when a request fails.
  trap 'if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null || true; fi' EXIT
  local name=$1 dir
  dir=$WORK/$(printf '%.8s' "${1}________")
  mkdir -p "$dir"
  local bin=$dir/larder
  cp "$2" "$bin" && strip --strip-debug "$bin"
  local port; port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --dump-instr=no \
    --vgdb=yes "$bin" --port 0 --s3-port "$port" --data-dir "$dir/data" --no-fsync --log-level warning \
    >"$dir/stdout" 2>"$dir/valgrind.log" &
  VPID=$!
  local url=http://127.0.0.1:$port ok=""
  for _ in $(seq 600); do curl -s -o /dev/null "$url/" && { ok=1; break; }; sleep 0.1; done
  [ -n "$ok" ] || { cat "$dir/valgrind.log" >&2; echo "larder did not start" >&2; exit 1; }
  $REQ setup "$url"
  for phase in $PHASES; do $REQ send "$url" "$phase" "$WARMUP"; done
  sleep 0.5
  local ctl f1 f2 n
  local -A per last
  for phase in $PHASES; do
    for rep in $(seq "$REPEAT"); do
      for n in "$N" $((2 * N)); do
        BEFORE_SEND="callgrind_control -z $VPID && sleep 0.3" $REQ send "$url" "$phase" "$n"
        ctl=$(find "$dir" -maxdepth 1 -name 'cg.out.*' | wc -l)
        callgrind_control -d "$phase-$n" "$VPID" >/dev/null 2>&1
        for _ in $(seq 100); do [ "$(find "$dir" -maxdepth 1 -name 'cg.out.*' | wc -l)" -gt "$ctl" ] && break; sleep 0.1; done
        sleep 0.2
        f2=$dir/cg.out.$((ctl + 1))
        [ "$n" = "$N" ] && f1=$f2
      done
      local one=$(( ($(total "$f2") - $(total "$f1")) / N ))
      # A dump that lands late (a loaded machine) can mismatch a pair: that
      # repetition is left out of the median (a failed request stops the run).
      if [ "$one" -gt 1000 ]; then per[$phase]+="$one "; else echo "$phase: repetition $rep left out ($one a request)" >&2; fi
      last[$phase]=$f2
      echo "$phase, repetition $rep: $(total "$f1") instructions for $N requests, $(total "$f2") for $((2 * N))" >>"$RESULTS.$name"
    done
  done
  kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; VPID=""
  local medians=()
  {
    echo "== $name ($2), N=$N, $REPEAT repetitions"
    cat "$RESULTS.$name"; rm -f "$RESULTS.$name"
    for phase in $PHASES; do
      echo "per $phase, each repetition: ${per[$phase]}-> median $(echo "${per[$phase]}" | tr ' ' '\n' | grep . | median)"
    done
    for phase in $PHASES; do top "${last[$phase]}" "$((2 * N)) $phase" 30 25; done
    echo
  } >>"$RESULTS"
  for phase in $PHASES; do
    [ -n "${per[$phase]:-}" ] || { echo "$phase: no repetition counted" >&2; exit 1; }
    medians+=("$(echo "${per[$phase]}" | tr ' ' '\n' | grep . | median)")
  done
  echo "${medians[*]}"
}

header="phases (instructions per request): $PHASES"
echo "$header" | tee -a "$RESULTS"
printf 'larder:   %s\n' "$(measure larder "$BIN")" | tee -a "$RESULTS"
if [ -n "${BASELINE:-}" ]; then
  printf 'baseline: %s\n' "$(measure baseline "$BASELINE")" | tee -a "$RESULTS"
fi
echo "details: $RESULTS"
