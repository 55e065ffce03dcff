# Helpers shared by every Benchmarks/*.sh; sourced, not run. Source it at the
# top level (its tables are global): it sets
#   ROOT      the checkout (the folder above Benchmarks/)
#   BIN       the release larder that build_larder builds
#   BENCH     "python3 .../bench.py"    PUTLUA  the 1 KiB PUT wrk script
# and the sourcing script sets, before calling the helpers:
#   WORK      scratch directory (larder's stdout/stderr, nginx's files go there)
#   CONNS     wrk connections          DURATION  seconds per wrk run
#   SIZE_MB   MiB of the large value put_mbs/get_mbs count
# and runs bench_cleanup from its exit trap (it stops what PIDS and nginx
# name, then removes WORK).

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BIN=${LARDER_BIN:-$ROOT/.build/release/larder}   # LARDER_BIN: another build (with SKIP_BUILD=1), e.g. a baseline
BENCH="python3 $ROOT/Benchmarks/bench.py"
PUTLUA=$ROOT/Benchmarks/put.lua   # PUTs 1 KiB to /store/bench/put-0 ... put-999, cycling
JSONLUA=$ROOT/Benchmarks/get-json.lua   # GETs /store/bench/json/<0-999>.json at random
PIDS=()
declare -gA HWM   # HWM[name] = VmHWM (kB) of a stopped larder
declare -gA R     # R[name] = "v1 v2 v3 " over rounds

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# need_tools CMD[:PACKAGE]...: installs with apt the packages of missing commands
need_tools() {
  local need=() t
  for t in "$@"; do command -v "${t%%:*}" >/dev/null || need+=("${t#*:}"); done
  if [ ${#need[@]} -gt 0 ]; then
    local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
    log "installing ${need[*]}"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

# build_larder: the release `larder` at $BIN (SKIP_BUILD=1: use the one there)
build_larder() {
  [ -n "${SKIP_BUILD:-}" ] && return
  log "building release larder"
  (cd "$ROOT" && swift build -c release --product larder >/dev/null)
}

# release_larder: sets LARDER to the binary to measure: $LARDER as given,
# else this checkout's release build, built unless SKIP_BUILD=1 and there
# (the S3 scripts, which take LARDER=path)
release_larder() {
  if [ -z "${LARDER:-}" ]; then
    LARDER=$ROOT/.build/release/larder
    if [ -z "${SKIP_BUILD:-}" ] || [ ! -x "$LARDER" ]; then
      log "building release larder"
      (cd "$ROOT" && swift build -c release --product larder >/dev/null)
    fi
  fi
  [ -x "$LARDER" ] || { echo "no larder binary at $LARDER" >&2; exit 1; }
}

# bench_cleanup: the exit trap's work
bench_cleanup() {
  stop_nginx
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}

# wait_url OUT LOG TRIES DELAY: prints the URL a starting larder writes as
# the first line of OUT, polling TRIES times every DELAY s; on none, shows
# LOG and exits.
wait_url() {
  local out=$1 errlog=$2 url=""
  for _ in $(seq "$3"); do
    url=$(head -1 "$out" 2>/dev/null || true)
    [ -n "$url" ] && break
    sleep "$4"
  done
  [ -n "$url" ] || { cat "$errlog" >&2; echo "larder did not start ($out)" >&2; exit 1; }
  echo "$url"
}

# start_binary BINARY NAME ARGS...: starts that larder on a free port with
# warnings only, waits for its URL; sets URL_<NAME> and PID_<NAME>
start_binary() {
  local bin=$1 name=$2; shift 2
  "$bin" --port 0 --log-level warning "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
  local pid=$! url
  PIDS+=("$pid")
  url=$(wait_url "$WORK/$name.out" "$WORK/$name.log" 400 0.05) || exit 1
  printf -v "URL_$name" '%s' "$url"; printf -v "PID_$name" '%s' "$pid"
}
# start_larder NAME ARGS...: start_binary with this checkout's $BIN
start_larder() { start_binary "$BIN" "$@"; }
# stop_larder PID NAME: records VmHWM (kB) of the process, then stops it
stop_larder() {
  local pid=$1 name=$2
  HWM[$name]=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_nginx: the nginx every benchmark compares Larder with, set up in one
# place: static GET and WebDAV PUT under /store/ (no fsync), sendfile on,
# two workers, every file under $WORK/nginx (documents in $WORK/nginx/root).
# Sets URL_nginx; stop_nginx (or bench_cleanup) stops it.
start_nginx() {
  local port; port=$(free_port)
  mkdir -p "$WORK/nginx/root/store/bench" "$WORK/nginx/tmp"
  {
    [ "$(id -u)" -eq 0 ] && echo "user root;"
    cat <<CONF
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  client_body_temp_path $WORK/nginx/tmp;
  proxy_temp_path $WORK/nginx/tmp;
  fastcgi_temp_path $WORK/nginx/tmp;
  uwsgi_temp_path $WORK/nginx/tmp;
  scgi_temp_path $WORK/nginx/tmp;
  server {
    listen 127.0.0.1:$port;
    root $WORK/nginx/root;
    # JSON is served as JSON, as Larder serves the type it was given.
    default_type application/octet-stream;
    types { application/json json; }
    location /store/ { dav_methods PUT DELETE; create_full_put_path on; client_max_body_size 4g; }
  }
}
CONF
  } > "$WORK/nginx.conf"
  nginx -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log" 2>/dev/null || nginx -c "$WORK/nginx.conf"
  for _ in $(seq 100); do [ -s "$WORK/nginx.pid" ] && break; sleep 0.05; done
  URL_nginx=http://127.0.0.1:$port
}
stop_nginx() {
  [ -n "${WORK:-}" ] && [ -f "$WORK/nginx.pid" ] || return 0
  kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  rm -f "$WORK/nginx.pid"
}

add() { R[$1]+="$2 "; }
# median: of the numbers on stdin (the lower middle one of an even count)
median() { $BENCH median; }
med() { echo "${R[$1]:-}" | tr ' ' '\n' | grep . | median; }
# rate WRK-ARGS... -> req/s of wrk -t2 -c$CONNS; errors it counts go to stderr
rate() {
  local out
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" "$@")
  grep -E 'Non-2xx|Socket errors' <<<"$out" | sed "s|^ *|[wrk ${*: -1}] |" >&2 || true
  awk '/Requests\/sec/ {print int($2)}' <<<"$out"
}
# server_pids NAME -> the processes serving NAME: a larder started by
# start_larder/start_binary, or nginx's master and workers.
server_pids() {
  if [ "$1" = nginx ]; then
    local master; master=$(cat "$WORK/nginx.pid")
    echo "$master" $(pgrep -P "$master")
  else
    local v=PID_$1; echo "${!v}"
  fi
}
# proc_ticks PID... -> their CPU so far (user + system, every thread), in clock ticks.
proc_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
# cpu_rate NAME wrk-args... -> "req/s µs" : wrk's rate, and the server's CPU
# (user + system, kernel included, from /proc/PID/stat: every thread) per
# request over that run. Steadier than req/s on a shared machine.
cpu_rate() {
  local pids out before after
  pids=$(server_pids "$1"); shift
  before=$(proc_ticks $pids)
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" "$@")
  after=$(proc_ticks $pids)
  grep -E 'Non-2xx|Socket errors' <<<"$out" | sed "s|^ *|[wrk ${*: -1}] |" >&2 || true
  awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" '
    /requests in/ {n = $1} /Requests\/sec/ {rps = int($2)}
    END {printf "%d %.1f\n", rps, (n > 0 ? t / hz * 1e6 / n : 0)}' <<<"$out"
}
# latency URL -> "p50_us p99_us"
latency() {
  wrk -t1 -c1 -d"${DURATION}s" --latency "$1" | awk '
    function us(v) { if (v ~ /us$/) return v+0; if (v ~ /ms$/) return v*1000; if (v ~ /s$/) return v*1e6; return v }
    $1=="50%" {p50=us($2)} $1=="99%" {p99=us($2)} END {printf "%.0f %.0f\n", p50, p99}'
}
# MB/s of a curl transfer of SIZE_MB MiB; MB = 1e6 bytes. A GET with gzip
# accepted counts the value's bytes (SIZE_MB MiB) over the time of the
# transfer, whatever size its gzip form has.
put_mbs() { curl -sf -o /dev/null -T "$2" -w '%{time_total}\n' "$1" | awk -v b=$((SIZE_MB << 20)) '{printf "%.1f\n", b/$1/1e6}'; }
get_mbs() { curl -sf -o /dev/null -w '%{time_total}\n' "$@" | awk -v b=$((SIZE_MB << 20)) '{printf "%.1f\n", b/$1/1e6}'; }
# ratio A B -> A/B to two places, or nan
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || a == "nan" || b == "nan" || b+0 == 0) print "nan"; else printf "%.2f", a/b}'; }
# one_kib_value FILE: 1 KiB of base64 text (what the GET benchmarks serve)
one_kib_value() { head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > "$1"; }

# seed_json_keys URL DIR: PUTs 1,000 JSON documents of about 1 KiB each to
# URL/store/bench/json/<i>.json (one curl, one connection; files in DIR).
seed_json_keys() {
  local url=$1 dir=$2 i
  mkdir -p "$dir"
  if [ ! -s "$dir/0.json" ]; then
    python3 - "$dir" <<'PY'
import json, random, sys
random.seed(7)
for i in range(1000):
    doc = {"id": i, "name": f"user-{i}", "tags": [f"t{random.randrange(100)}" for _ in range(8)],
           "scores": [random.randrange(100000) for _ in range(60)], "active": i % 3 == 0}
    text = json.dumps(doc)
    open(f"{sys.argv[1]}/{i}.json", "w").write(text + " " * max(0, 1024 - len(text) - 1) + "\n")
PY
  fi
  # (A header in the config would be sent once per URL, all on every request.)
  for i in $(seq 0 999); do printf 'upload-file = "%s/%d.json"\nurl = "%s/store/bench/json/%d.json"\noutput = /dev/null\n' "$dir" "$i" "$url" "$i"; done \
    | curl -sf -H "Content-Type: application/json" -K -
}

# start_postgres: a throwaway PostgreSQL for the run (initdb in a temp
# directory, as the `postgres` user when run as root, since initdb refuses
# root), on a free loopback port, shared_buffers=256MB, max_connections=200,
# with a database `larder`; installs postgresql with apt when no initdb is
# found (PG_BIN: its bin directory; default `pg_config --bindir`, else the
# newest /usr/lib/postgresql/*/bin). Sets PG_BIN, PGPORT, PGROOT, PG_URL
# (schema `larder`) and the function psql (PG_EXTRA: more server options,
# e.g. -c shared_preload_libraries=pg_stat_statements); stop_postgres (from the exit
# trap) stops it and removes its files.
pg_bindir() {
  [ -n "${PG_BIN:-}" ] && { echo "$PG_BIN"; return; }
  local d; d=$(pg_config --bindir 2>/dev/null || true)
  [ -n "$d" ] && [ -x "$d/initdb" ] && { echo "$d"; return; }
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}
start_postgres() {
  PG_BIN=$(pg_bindir)
  if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
    log "installing postgresql"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
    PG_BIN=$(pg_bindir)
  fi
  [ -x "$PG_BIN/initdb" ] || { echo "no initdb found (PG_BIN=$PG_BIN)" >&2; exit 1; }
  PGROOT=$(mktemp -d /tmp/larder-pg.XXXXXX)   # data, socket and log; owned by the server's user
  PGRUN=()
  if [ "$(id -u)" -eq 0 ]; then
    PGRUN=(runuser -u postgres --)
    chown postgres: "$PGROOT"
  fi
  PGPORT=$(free_port)
  log "starting PostgreSQL ($PG_BIN) on port $PGPORT"
  "${PGRUN[@]}" "$PG_BIN/initdb" -D "$PGROOT/data" -A trust -U postgres -E UTF8 --locale=C >"$PGROOT/initdb.log" 2>&1 \
    || { cat "$PGROOT/initdb.log" >&2; exit 1; }
  "${PGRUN[@]}" "$PG_BIN/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/postgres.log" -w \
    -o "-p $PGPORT -k $PGROOT -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=256MB ${PG_EXTRA:-}" start >/dev/null \
    || { cat "$PGROOT/postgres.log" >&2; exit 1; }
  "$PG_BIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres larder
  PG_URL="postgres://postgres@127.0.0.1:$PGPORT/larder?schema=larder"
}
psql() { "$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d larder -XAtq "$@"; }
stop_postgres() {
  [ -n "${PGROOT:-}" ] || return 0
  [ -f "$PGROOT/data/postmaster.pid" ] && "${PGRUN[@]}" "$PG_BIN/pg_ctl" -D "$PGROOT/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PGROOT"
}

# Reading callgrind dumps (callgrind.sh, s3-callgrind.sh):
# total FILE: the dump's instruction total
total() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; elif command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; }

# top FILE LABEL [INCLUSIVE SELF]: the top functions by inclusive cost (25;
# the first ones are Dispatch's and the thread's wrappers) and by self cost (15)
top() {
  echo "-- top ${3:-25} functions by inclusive cost, $2 (whole process, all threads):"
  pick "$1" "${3:-25}" --inclusive=yes '!/PROGRAM TOTALS/'
  echo "-- top ${4:-15} functions by self cost, $2:"
  # (clone and start_thread show the whole total as self cost after a zero)
  pick "$1" "${4:-15}" --inclusive=no '!/PROGRAM TOTALS|:clone |:start_thread /'
}
# pick FILE COUNT OPTION AWK-FILTER: the first COUNT cost lines, demangled
pick() {
  local sel out
  sel=$(callgrind_annotate "$3" --threshold=100 "$1" 2>/dev/null \
    | awk -v n="$2" "/^ *[0-9,]+ \\(/ && $4 && k < n {print; k++}" || true)
  out=$(printf '%s\n' "$sel" | demangle 2>/dev/null) || out=$sel
  printf '%s\n' "$out"
}
