#!/usr/bin/env bash
# Instructions per request of the release `larder` under callgrind: 1 KiB
# GET (served from the read cache) and 1 KiB PUT (--no-fsync), each on one
# keep-alive connection with an exact request count.
#
#   bash Benchmarks/callgrind.sh                       # this checkout
#   N=2000 BASELINE=/path/to/older/larder bash Benchmarks/callgrind.sh   # and an older build
#   NAMESPACE=w1 bash Benchmarks/callgrind.sh          # also a 1 KiB GET in namespace w1 (/ns/w1/store/...)
#   NGINX=0 bash Benchmarks/callgrind.sh                # without nginx WebDAV (measured by default,
#                                                      # the same way: one process, N and 2N requests)
#   BASELINE=.build/release/larder BASELINE_FLAGS="--journal 0" bash Benchmarks/callgrind.sh
#                                                      # one build with a feature on and off (LARDER_FLAGS: this checkout's)
#   CLOCK_MOVE='{"advance":"1h"}' BASELINE=<the same binary> bash Benchmarks/callgrind.sh
#                                                      # a request's cost with the namespace clock moved, and not
#
# In one valgrind run: warm up, then for each workload zero the counters,
# do N requests, dump; zero, do 2N requests, dump. The difference of the
# two dumps' totals, divided by N, is the cost of one request: start-up and
# the dump itself cancel. That pair is repeated REPEAT (3) times and the
# median printed, so a stray timer wake-up does not move it. Results (and the top 10 functions by
# inclusive cost of the 2N GET phase) go to .build/benchmarks/callgrind-*.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
WARMUP=${WARMUP:-300}
REPEAT=${REPEAT:-3}
ROOT=$PWD
. "$ROOT/Benchmarks/common.sh"
OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
need_tools valgrind python3 curl nginx:nginx-light
WORK=$(mktemp -d /tmp/larder-callgrind.XXXXXX)
VPID=""
cleanup() {
  if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; fi
  # nginx under callgrind (one process, no master) once outlived its
  # SIGTERM: nothing measured here is left running.
  pkill -KILL -f "callgrind-out-file=$WORK/" 2>/dev/null || true
  bench_cleanup
}
trap cleanup EXIT

build_larder
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
RESULTS=$OUTDIR/callgrind-$STAMP.txt

# start_nginx_under_callgrind DIR: nginx WebDAV (the yardstick of
# Benchmarks/run.sh, its location and settings) as one process, no master,
# under callgrind; sets VPID, prints its URL
start_nginx_under_callgrind() {
  local dir=$1 port
  port=$(free_port)
  mkdir -p "$dir/root/store/bench" "$dir/tmp"
  {
    [ "$(id -u)" -eq 0 ] && echo "user root;"
    cat <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
events { worker_connections 1024; }
http {
  # One connection carries every request of a phase (nginx closes after
  # 1,000 by default).
  keepalive_requests 1000000;
  access_log off;
  sendfile on;
  client_body_temp_path $dir/tmp;
  proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp;
  scgi_temp_path $dir/tmp;
  server {
    listen 127.0.0.1:$port;
    root $dir/root;
    location /store/ { dav_methods PUT DELETE; create_full_put_path on; client_max_body_size 4g; }
  }
}
CONF
  } >"$dir/nginx.conf"
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --dump-instr=no \
    --vgdb=yes "$(command -v nginx)" -c "$dir/nginx.conf" -e "$dir/nginx-error.log" \
    >"$dir/stdout" 2>"$dir/valgrind.log" &
  VPID=$!
  for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  echo "http://127.0.0.1:$port"
}

# measure NAME BINARY: prints "GET PUT" instructions per request
measure() {
  # Every build runs in a directory whose path has the same length (the name
  # cut or padded to 8 characters: larder__, baseline): a PUT turns paths
  # under --data-dir into C strings and appends to them, and whether those
  # buffers must grow depends on the path's length, so the same binary costs
  # ~2,000 more instructions per PUT in $WORK/larder than in $WORK/baseline.
  local name=$1 dir
  dir=$WORK/$(printf '%.8s' "${1}________")
  mkdir -p "$dir"
  # A copy without debug info: this valgrind cannot read the DWARF 5 that
  # clang gives swift-crypto's BoringSSL, and the symbol table (kept) is
  # all the function names need.
  local url
  if [ "$name" = nginx ]; then
    url=$(start_nginx_under_callgrind "$dir") || exit 1
  else
    local bin=$dir/larder
    cp "$2" "$bin" && strip --strip-debug "$bin"
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --dump-instr=no \
      --vgdb=yes "$bin" --port 0 --data-dir "$dir/data" --no-fsync --log-level warning $3 \
      >"$dir/stdout" 2>"$dir/valgrind.log" &
    VPID=$!
    url=$(wait_url "$dir/stdout" "$dir/valgrind.log" 600 0.1) || exit 1
  fi
  one_kib_value "$dir/value"
  # CLOCK_MOVE: a /clock move (`{"advance":"1h"}`) made on this checkout's
  # server before the warm-up, to count a request's cost with the clock
  # moved; with BASELINE= the same binary, the two are side by side.
  if [ -n "${CLOCK_MOVE:-}" ] && [ "$name" = larder ]; then
    curl -sf -X POST -H 'Content-Type: application/json' --data "$CLOCK_MOVE" "$url/clock" -o /dev/null
  fi
  curl -sf -T "$dir/value" "$url/store/bench/get" -o /dev/null
  $BENCH requests "$url/store/bench/get" "$WARMUP" get
  $BENCH requests "$url/store/bench/put" "$WARMUP" put 1024
  # The namespaced GET (NAMESPACE set; this checkout only: an older build
  # may have no namespaces): the same value, read under /ns/$NAMESPACE/.
  local phases="get put" nsurl=""
  if [ -n "${NAMESPACE:-}" ] && [ "$name" = larder ]; then
    nsurl="$url/ns/$NAMESPACE/store/bench/get"
    curl -sf -T "$dir/value" "$nsurl" -o /dev/null
    $BENCH requests "$nsurl" "$WARMUP" get
    phases="get put nsget"
  fi
  sleep 0.5
  local ctl f1 f2 n
  local -A per last
  for phase in $phases; do
    for rep in $(seq "$REPEAT"); do
      for n in "$N" $((2 * N)); do
        callgrind_control -z "$VPID" >/dev/null 2>&1
        case $phase in
          get) $BENCH requests "$url/store/bench/get" "$n" get ;;
          nsget) $BENCH requests "$nsurl" "$n" get ;;
          *) $BENCH requests "$url/store/bench/put" "$n" put 1024 ;;
        esac
        ctl=$(find "$dir" -maxdepth 1 -name 'cg.out.*' | wc -l)
        callgrind_control -d "$phase-$n" "$VPID" >/dev/null 2>&1
        for _ in $(seq 100); do [ "$(find "$dir" -maxdepth 1 -name 'cg.out.*' | wc -l)" -gt "$ctl" ] && break; sleep 0.1; done
        sleep 0.2
        f2=$dir/cg.out.$((ctl + 1))
        [ "$n" = "$N" ] && f1=$f2
      done
      per[$phase]+="$(( ($(total "$f2") - $(total "$f1")) / N )) "
      last[$phase]=$f2
      echo "$phase, repetition $rep: $(total "$f1") instructions for $N requests, $(total "$f2") for $((2 * N))" >>"$RESULTS.$name"
    done
  done
  kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; VPID=""
  local get put nsget=""
  get=$(echo "${per[get]}" | tr ' ' '\n' | grep . | median)
  put=$(echo "${per[put]}" | tr ' ' '\n' | grep . | median)
  [ -n "$nsurl" ] && nsget=$(echo "${per[nsget]}" | tr ' ' '\n' | grep . | median)
  {
    echo "== $name ($2 $3), N=$N, $REPEAT repetitions"
    cat "$RESULTS.$name"; rm -f "$RESULTS.$name"
    echo "per GET, each repetition: ${per[get]}-> median $get"
    echo "per PUT, each repetition: ${per[put]}-> median $put"
    [ -n "$nsurl" ] && echo "per GET in namespace $NAMESPACE, each repetition: ${per[nsget]}-> median $nsget"
    top "${last[get]}" "$((2 * N)) cached 1 KiB GETs"
    top "${last[put]}" "$((2 * N)) 1 KiB PUTs --no-fsync"
    [ -n "$nsurl" ] && top "${last[nsget]}" "$((2 * N)) cached 1 KiB GETs in namespace $NAMESPACE"
    echo
  } >>"$RESULTS"
  echo "$get $put $nsget"
}

read -r GET PUT NSGET < <(measure larder "$BIN" "${LARDER_FLAGS:-}")
printf 'larder:   instructions per GET: %s, per PUT: %s\n' "$GET" "$PUT" | tee -a "$RESULTS"
if [ -n "${NSGET:-}" ]; then
  printf 'larder:   instructions per GET in namespace %s: %s (%s%% of the default GET)\n' "$NAMESPACE" "$NSGET" \
    "$(python3 -c "print(f'{100 * $NSGET / $GET:.1f}')")" | tee -a "$RESULTS"
fi
if [ -n "${BASELINE:-}" ]; then
  read -r BGET BPUT < <(measure baseline "$BASELINE" "${BASELINE_FLAGS:-}")
  printf 'baseline: instructions per GET: %s, per PUT: %s\n' "$BGET" "$BPUT" | tee -a "$RESULTS"
fi
if [ "${NGINX:-1}" = 1 ]; then
  read -r NGET NPUT < <(measure nginx nginx "")
  printf 'nginx:    instructions per GET: %s, per PUT: %s\n' "$NGET" "$NPUT" | tee -a "$RESULTS"
  printf 'larder / nginx: GET %s, PUT %s\n' "$(python3 -c "print(f'{$GET / $NGET:.2f}x')")" \
    "$(python3 -c "print(f'{$PUT / $NPUT:.2f}x')")" | tee -a "$RESULTS"
fi
echo "details: $RESULTS"
