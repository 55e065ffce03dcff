#!/usr/bin/env bash
# Adaptive compression, measured: 64 MiB PUTs of raw random bytes, base64
# of random bytes and a JSON document (curl, median of ROUNDS), the file
# size each left on disk, 1 KiB PUT throughput and latency (wrk), and zlib
# itself on the same bytes (one core: level 1, Huffman-only, stored), and
# random 8 KiB / 64 KiB PUTs, which pay for the sampling decision.
#
#   bash bench/compression.sh [larder-binary] [rounds]
#   BASELINE=/tmp/adaptive-base/.build/release/larder bash bench/compression.sh
#
# With BASELINE, that binary runs the same workloads in alternation.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.build/release/larder}
ROUNDS=${2:-3}
WORK=$(mktemp -d /tmp/larder-compression.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

python3 - "$WORK" <<'PY'
import base64, json, os, random, sys
work, n = sys.argv[1], 64 << 20
open(f"{work}/random.bin", "wb").write(os.urandom(n))
open(f"{work}/base64.txt", "wb").write(base64.b64encode(os.urandom(n * 3 // 4))[:n])
random.seed(1)
words = ["alpha", "beta", "gamma", "delta", "order", "customer", "status", "shipped", "pending", "total", "Berlin", "Paris"]
out, size, i = [], 0, 0
while size < n:
    s = json.dumps({"id": i, "name": random.choice(words) + " " + random.choice(words),
                    "email": f"user{random.randint(0, 10**6)}@example.com", "status": random.choice(words),
                    "price": round(random.random() * 1000, 2), "tags": random.sample(words, 3),
                    "created": f"2025-{random.randint(1, 12):02d}-{random.randint(1, 28):02d}T{random.randint(0, 23):02d}:00:00Z"})
    out.append(s); size += len(s) + 2; i += 1
open(f"{work}/json.json", "wb").write(("[" + ",\n".join(out) + "]").encode()[:n])
PY

# Starts a server (in this shell, so that the exit trap knows its pid);
# url NAME prints its URL, the first line of its stdout.
start() {
  "$1" --port 0 --ephemeral --no-fsync --log-level warning >"$WORK/$2.out" 2>"$WORK/$2.log" &
  PIDS+=($!)
  for _ in $(seq 100); do grep -q http "$WORK/$2.out" 2>/dev/null && break; sleep 0.1; done
}
url() { grep -o 'http://[^ ]*' "$WORK/$1.out" | head -1; }
stored_bytes() { curl -s "$1/metrics" | awk '/^larder_stored_bytes /{print $2}'; }
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

declare -A URLS
start "$BIN" after; URLS[after]=$(url after)
NAMES=(after)
if [ -n "${BASELINE:-}" ]; then start "$BASELINE" before; URLS[before]=$(url before); NAMES=(before after); fi

echo "== 64 MiB PUT (MB/s, median of $ROUNDS; file size / value size)"
for f in random.bin base64.txt json.json; do
  for name in "${NAMES[@]}"; do
    url=${URLS[$name]}
    : >"$WORK/times"
    for r in $(seq "$ROUNDS"); do
      curl -s -X DELETE -o /dev/null "$url/store/bench/$f"
      curl -s -o /dev/null -w '%{time_total}\n' -T "$WORK/$f" "$url/store/bench/$f" >>"$WORK/times"
    done
    t=$(median <"$WORK/times")
    ratio=$(python3 -c "print(f'{$(stored_bytes "$url") / (64 << 20):.3f}')")
    python3 -c "print(f'$f  $name  {64 * 1.048576 / $t:8.1f} MB/s  file/value {$ratio}')"
    curl -s -X DELETE -o /dev/null "$url/store/bench/$f"
  done
done

echo "== zlib, one core, same bytes (MB/s; output/input)"
python3 - "$WORK" <<'PY'
import sys, time, zlib
modes = [("level 1", 1, zlib.Z_DEFAULT_STRATEGY), ("huffman-only", 1, zlib.Z_HUFFMAN_ONLY), ("stored", 0, zlib.Z_DEFAULT_STRATEGY)]
for f in ["random.bin", "base64.txt", "json.json"]:
    data = memoryview(open(f"{sys.argv[1]}/{f}", "rb").read())
    for name, level, strategy in modes:
        best = 1e9
        for _ in range(3):
            t = time.perf_counter()
            c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)
            out = sum(len(c.compress(data[i:i + (1 << 20)])) for i in range(0, len(data), 1 << 20)) + len(c.flush())
            best = min(best, time.perf_counter() - t)
        print(f"{f}  {name:13s} {len(data) / best / 1e6:8.1f} MB/s  {out / len(data):.3f}")
PY

echo "== 1 KiB PUT (wrk bench/put.lua; median of $ROUNDS)"
for name in "${NAMES[@]}"; do : >"$WORK/$name.rps"; : >"$WORK/$name.lat"; done
for r in $(seq "$ROUNDS"); do
  for name in "${NAMES[@]}"; do
    wrk -t2 -c64 -d5 -s bench/put.lua "${URLS[$name]}" | awk '/Requests\/sec/{print $2}' >>"$WORK/$name.rps"
    wrk -t1 -c1 -d5 --latency -s bench/put.lua "${URLS[$name]}" | awk '$1=="50%"{print $2}' >>"$WORK/$name.lat"
  done
done
for name in "${NAMES[@]}"; do
  echo "$name  64 conns: $(median <"$WORK/$name.rps") req/s   1 conn p50: $(sort "$WORK/$name.lat" | tr '\n' ' ')"
done

echo "== sampled sizes: random 8 KiB and 64 KiB PUT (wrk bench/put-sampled.lua, 64 conns; median of $ROUNDS)"
for size in 8192 65536; do
  for name in "${NAMES[@]}"; do : >"$WORK/$name.s"; done
  for r in $(seq "$ROUNDS"); do
    for name in "${NAMES[@]}"; do
      SIZE=$size wrk -t2 -c64 -d5 -s bench/put-sampled.lua "${URLS[$name]}" | awk '/Requests\/sec/{print $2}' >>"$WORK/$name.s"
    done
  done
  for name in "${NAMES[@]}"; do echo "$name  $size B random: $(median <"$WORK/$name.s") req/s"; done
done
