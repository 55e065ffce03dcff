#!/usr/bin/env bash
# Instructions per 1 KiB PUT (keep-alive, one connection) under callgrind:
# the server's total for N2 PUTs minus that for N1, over N2 - N1, so start-up
# and shutdown cancel out. Stable where req/s on a shared machine is not.
#   bash bench/put-instructions.sh BINARY... (env N1=200 N2=1000)
set -euo pipefail
N1=${N1:-200}; N2=${N2:-1000}
WORK=$(mktemp -d /tmp/larder-putir.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/puts.py" <<'PY'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); n = int(sys.argv[2])
c = http.client.HTTPConnection(u.hostname, u.port)
body = b"0123456789abcdef" * 64  # bench/put.lua's body
for i in range(n):
    c.request("PUT", f"/store/bench/put-{i % 1000}", body, {"Content-Type": "application/octet-stream"})
    r = c.getresponse(); r.read()
    assert r.status in (201, 204), r.status
PY
total() { # binary puts -> instructions of the whole run
  local d; d=$(mktemp -d "$WORK/run.XXXX")
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$1" --port 0 --ephemeral --no-fsync --log-level warning \
    >"$d/out" 2>"$d/err" &
  local pid=$!
  for _ in $(seq 300); do grep -q http "$d/out" 2>/dev/null && break; sleep 0.2; done
  python3 "$WORK/puts.py" "$(grep -o 'http://[^ ]*' "$d/out" | head -1)" "$2"
  kill -INT "$pid"; wait "$pid" || true
  awk '/^summary:/{print $2}' "$d/cg.out"
}
for bin in "$@"; do
  a=$(total "$bin" "$N1"); b=$(total "$bin" "$N2")
  echo "$bin: $(( (b - a) / (N2 - N1) )) instructions per 1 KiB PUT"
done
