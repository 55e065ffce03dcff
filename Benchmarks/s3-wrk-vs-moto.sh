#!/usr/bin/env bash
# Request rates of Larder's S3 face and of moto's server mode, measured by
# wrk rather than by a Python client: boto3 signing each call costs more
# than either server's answer on these 2 cores, so Benchmarks/s3-vs-moto.sh
# measures the client as much as the server. Here each server gets the same
# presigned URLs (made once by boto3, signed for an hour): wrk GETs one
# 1 KiB object, PUTs 1 KiB to one key, and PUTs 1 KiB to 1000 keys in turn
# (a presigned URL names one key, so boto3 presigns 1000 and the wrk script
# cycles through them, each thread from its own place), over keep-alive
# connections, and only the server's work differs. PUTs to one key queue on
# that key in Larder (a key takes one write at a time); over 1000 keys they
# do not. Larder runs --no-fsync, as moto keeps everything in memory; it
# runs twice, with its data on the disk under $TMPDIR and on /dev/shm
# (tmpfs), since a PUT's cost here is mostly the file system's: an ext4
# mounted with `discard` frees the replaced value's blocks with a
# synchronous discard on each rename over it.
#
#   bash Benchmarks/s3-wrk-vs-moto.sh          # builds .build/release/larder (SKIP_BUILD=1 uses the one there)
#   SECONDS_EACH=10 CONNECTIONS=32 bash Benchmarks/s3-wrk-vs-moto.sh
#
# Not part of CI. Needs wrk (Debian's) and moto[server] (pip).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${SECONDS_EACH:-5}
CONNECTIONS=${CONNECTIONS:-16}
LARDER=${LARDER:-$ROOT/.build/release/larder}
if [ -z "${SKIP_BUILD:-}" ] || [ ! -x "$LARDER" ]; then
  echo "building release larder" >&2
  swift build -c release --product larder >/dev/null
fi
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
python3 -c "import boto3, moto.server" 2>/dev/null || python3 -m pip install -q boto3 'moto[server]'

WORK=$(mktemp -d)
PIDS=()
# Servers started inside $(...) write their pid to $WORK/pids, which the trap reads too.
trap 'for p in "${PIDS[@]}" $(cat "$WORK/pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cat > "$WORK/put.lua" <<'LUA'
wrk.method = "PUT"
wrk.body = string.rep("x", 1024)
LUA
# PUT 1 KiB to the presigned paths of the file named after `--`, one a line, cycling.
cat > "$WORK/put-many.lua" <<'LUA'
wrk.method = "PUT"
wrk.body = string.rep("x", 1024)
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
local paths, i = {}, 0
function init(args)
  for line in io.lines(args[1]) do paths[#paths + 1] = line end
  i = (id or 0) * 397
end
function request()
  i = i + 1
  return wrk.format(nil, paths[i % #paths + 1])
end
LUA

# presign URL PATHS: prints a presigned GET and PUT URL for bench/k (1 KiB
# stored); writes to PATHS the path and query of presigned PUTs of
# bench/many-0000 … many-0999.: prints a presigned GET and PUT URL for bench/k (1 KiB stored).
presign() {
  python3 - "$1" "$2" <<'PY'
import sys, boto3, urllib.parse
from botocore.client import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="larder",
                  aws_secret_access_key="larder-secret", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="bench")
s3.put_object(Bucket="bench", Key="k", Body=b"x" * 1024)
print(s3.generate_presigned_url("get_object", Params={"Bucket": "bench", "Key": "k"}, ExpiresIn=3600))
print(s3.generate_presigned_url("put_object", Params={"Bucket": "bench", "Key": "k"}, ExpiresIn=3600))
with open(sys.argv[2], "w") as f:
    for i in range(1000):
        u = urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={"Bucket": "bench", "Key": f"many-{i:04d}"},
                                                            ExpiresIn=3600))
        f.write(f"{u.path}?{u.query}\n")
PY
}

# rate URL [script [script arguments]]: requests per second wrk reaches.
rate() {
  local out
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_EACH}s" ${2:+-s "$2"} "$1" ${3:+-- "$3"})
  local errors
  errors=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
  [ -z "$errors" ] || echo "  (non-2xx answers: $errors)" >&2
  echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}'
}

wait_for() { for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 1; }

measure() {
  local name=$1 url=$2
  mapfile -t urls < <(presign "$url" "$WORK/$name-paths")
  local get put many
  get=$(rate "${urls[0]}")
  put=$(rate "${urls[1]}" "$WORK/put.lua")
  many=$(rate "$url/" "$WORK/put-many.lua" "$WORK/$name-paths")
  echo "$name $get $put $many"
}

# run_larder NAME [TMPDIR]: measures a fresh --ephemeral server.
run_larder() {
  local port s3port pid
  port=$(free_port); s3port=$(free_port)
  TMPDIR=${2:-${TMPDIR:-/tmp}} "$LARDER" --ephemeral --no-fsync --port "$port" --s3-port "$s3port" --log-level error \
    >"$WORK/$1.log" 2>&1 &
  pid=$!
  echo "$pid" >>"$WORK/pids"
  wait_for "http://127.0.0.1:$port/healthz"
  measure "$1" "http://127.0.0.1:$s3port"
  kill "$pid"
}
larder=$(run_larder larder)
larder_shm=""
[ -d /dev/shm ] && [ -w /dev/shm ] && larder_shm=$(run_larder larder-shm /dev/shm)

mport=$(free_port)
moto_server -H 127.0.0.1 -p "$mport" >"$WORK/moto.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$mport/"
moto=$(measure moto "http://127.0.0.1:$mport")

read -r _ lget lput lmany <<<"$larder"
read -r _ mget mput mmany <<<"$moto"
printf '%s, wrk -t2 -c%s -d%ss on presigned URLs, 1 KiB objects\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$CONNECTIONS" "$SECONDS_EACH"
printf 'larder data under %s (%s)\n' "${TMPDIR:-/tmp}" "$(findmnt -n -o FSTYPE,OPTIONS -T "${TMPDIR:-/tmp}" 2>/dev/null || echo '?')"
printf '| requests/s | larder --no-fsync | moto | larder / moto |\n| --- | ---: | ---: | ---: |\n'
printf '| GetObject | %s | %s | %.1f× |\n' "$lget" "$mget" "$(echo "$lget / $mget" | bc -l)"
printf '| PutObject, one key | %s | %s | %.1f× |\n' "$lput" "$mput" "$(echo "$lput / $mput" | bc -l)"
printf '| PutObject, 1000 keys | %s | %s | %.1f× |\n' "$lmany" "$mmany" "$(echo "$lmany / $mmany" | bc -l)"
if [ -n "$larder_shm" ]; then
  read -r _ sget sput smany <<<"$larder_shm"
  printf '| GetObject, data on /dev/shm | %s | %s | %.1f× |\n' "$sget" "$mget" "$(echo "$sget / $mget" | bc -l)"
  printf '| PutObject, one key, data on /dev/shm | %s | %s | %.1f× |\n' "$sput" "$mput" "$(echo "$sput / $mput" | bc -l)"
  printf '| PutObject, 1000 keys, data on /dev/shm | %s | %s | %.1f× |\n' "$smany" "$mmany" "$(echo "$smany / $mmany" | bc -l)"
fi
