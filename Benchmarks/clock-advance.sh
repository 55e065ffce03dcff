#!/usr/bin/env bash
# One clock advance past many keys' expiry (issue 38): KEYS (100,000) keys
# with a one-hour expiry are restored in one snapshot, a writer keeps
# PUTting other keys, and `POST /clock {"advance": "2h"}` expires them all.
# Prints the advance's answer time (the keys are gone, with their events,
# by then), the count of `expire` events a subscriber got, and the writer's
# slowest PUT during the advance (how long the namespace's writers waited).
#
#   bash Benchmarks/clock-advance.sh              # builds .build/release/larder (SKIP_BUILD=1 uses it; LARDER_BIN=another)
#   KEYS=10000 bash Benchmarks/clock-advance.sh   # quicker
#   STORE=postgres bash Benchmarks/clock-advance.sh   # on a throwaway PostgreSQL (installed with apt-get if missing)
#
# Not part of CI: ClockTests checks the behaviour; this is the figure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KEYS=${KEYS:-100000}
. "$ROOT/Benchmarks/common.sh"
need_tools curl python3
WORK=$(mktemp -d /tmp/larder-clock.XXXXXX)
trap bench_cleanup EXIT
build_larder
if [ "${STORE:-disk}" = postgres ]; then
  start_postgres
  start_larder fast --store "$PG_URL"
else
  start_larder fast --data-dir "$WORK/larder" --no-fsync
fi
python3 - "$URL_fast" "$KEYS" <<'PY'
import http.client, json, sys, threading, time, urllib.parse
url, keys = sys.argv[1], int(sys.argv[2])
host = urllib.parse.urlsplit(url).netloc
def conn(): return http.client.HTTPConnection(host, timeout=600)

expires = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 3600))
lines = "".join(json.dumps({"key": f"sessions/{i:06d}", "contentType": "application/json", "expires": expires,
                            "json": {"user": i}}) + "\n" for i in range(keys))
c = conn(); c.request("POST", "/snapshot", lines.encode(), {"Content-Type": "application/x-ndjson"})
r = c.getresponse(); body = r.read()
assert r.status == 200, (r.status, body[:300])

# A subscriber counts the expire events.
events = {"expire": 0}
ready = threading.Event()
def subscribe():
    s = conn(); s.request("GET", "/events?prefix=sessions/"); resp = s.getresponse(); ready.set()
    while events["expire"] < keys:
        line = resp.fp.readline()
        if not line: break
        if line.startswith(b"event: expire"): events["expire"] += 1
threading.Thread(target=subscribe, daemon=True).start()
ready.wait(10)

# A writer on other keys: its slowest PUT while the advance runs.
stop, slowest, puts = threading.Event(), [0.0], [0]
def write():
    w = conn(); n = 0
    while not stop.is_set():
        t = time.perf_counter()
        w.request("PUT", f"/store/other/{n % 100}", b"x" * 64); w.getresponse().read()
        slowest[0] = max(slowest[0], time.perf_counter() - t); n += 1
    puts[0] = n
writer = threading.Thread(target=write); writer.start()
time.sleep(0.5); slowest[0] = 0.0

a = conn(); t = time.perf_counter()
a.request("POST", "/clock", json.dumps({"advance": "2h"}).encode(), {"Content-Type": "application/json"})
r = a.getresponse(); r.read()
advance = time.perf_counter() - t
assert r.status == 200
time.sleep(0.3); stop.set(); writer.join()
g = conn(); g.request("GET", "/store/sessions/?limit=1"); left = json.loads(g.getresponse().read())["keys"]
deadline = time.time() + 60
while events["expire"] < keys and time.time() < deadline: time.sleep(0.1)
print(f"{keys} keys expired by one advance: answered after {advance * 1000:.0f} ms; "
      f"{events['expire']} expire events; {len(left)} keys listed after; "
      f"a writer's slowest PUT meanwhile {slowest[0] * 1000:.1f} ms ({puts[0]} PUTs)")
PY
