# Helpers shared by Benchmarks/run.sh, postgres.sh and callgrind.sh; sourced,
# not run. Source it at the top level (its tables are global). The sourcing
# script sets, before calling the helpers:
#   WORK      scratch directory (larder's stdout/stderr go there)
#   BIN       the larder binary        BENCH  "python3 .../bench.py"
#   CONNS     wrk connections          DURATION  seconds per wrk run
#   SIZE_MB   MiB of the large value put_mbs/get_mbs count
# and runs its cleanup from a trap, killing the PIDs in PIDS.

PIDS=()
declare -gA HWM   # HWM[name] = VmHWM (kB) of a stopped larder
declare -gA R     # R[name] = "v1 v2 v3 " over rounds

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# need_tools CMD:PACKAGE...: installs with apt the packages of missing commands
need_tools() {
  local need=() t
  for t in "$@"; do command -v "${t%%:*}" >/dev/null || need+=("${t#*:}"); done
  if [ ${#need[@]} -gt 0 ]; then
    local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
    log "installing ${need[*]}"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  fi
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

# start_larder NAME ARGS...: starts, waits for the URL; sets URL_<NAME>, PID_<NAME>
start_larder() {
  local name=$1; shift
  "$BIN" --port 0 --log-level warning "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
  local pid=$! url
  PIDS+=("$pid")
  url=$(wait_url "$WORK/$name.out" "$WORK/$name.log" 400 0.05) || exit 1
  printf -v "URL_$name" '%s' "$url"; printf -v "PID_$name" '%s' "$pid"
}
# stop_larder PID NAME: records VmHWM (kB) of the process, then stops it
stop_larder() {
  local pid=$1 name=$2
  HWM[$name]=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

add() { R[$1]+="$2 "; }
med() { echo "${R[$1]:-}" | tr ' ' '\n' | grep . | $BENCH median; }
# rate WRK-ARGS... -> req/s of wrk -t2 -c$CONNS; errors it counts go to stderr
rate() {
  local out
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" "$@")
  grep -E 'Non-2xx|Socket errors' <<<"$out" | sed "s|^ *|[wrk ${*: -1}] |" >&2 || true
  awk '/Requests\/sec/ {print int($2)}' <<<"$out"
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
