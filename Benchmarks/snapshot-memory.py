#!/usr/bin/env python3
"""Memory of GET /snapshot over a 1 GiB store, against a release build of `larder`:

- fills a store with 1 GiB of incompressible values (twelve 64 MiB values and
  4,096 64 KiB ones, so the gzip files are as large as the values);
- reads GET /snapshot through a slow reader (small receive buffer, paced to
  about --rate MB/s) while sampling the server's VmRSS;
- prints RSS before, the peak during, the growth, and the throughput;
- restores the document into a second, empty server (POST /snapshot,
  streamed from disk) and checks that every value came back (CRC32).

    python3 Benchmarks/snapshot-memory.py [--bin path/to/larder] [--cache-mb N] [--rate MB/s] [--no-restore]

Builds nothing: run `swift build -c release` first (the default binary is
.build/release/larder). Needs about 3.5 GiB of free disk in $TMPDIR.
"""
import argparse, http.client, os, random, shutil, socket, subprocess, sys, tempfile, time, zlib

LARGE = 12, 64 << 20
SMALL = 4096, 64 << 10


def rss_kib(pid, field="VmRSS:"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])


def start(binary, data, port, cache_mb):
    server = subprocess.Popen([binary, "--port", str(port), "--data-dir", data, "--no-fsync",
                               "--log-level", "warning", "--cache-mb", str(cache_mb)], stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.05)
    sys.exit("larder did not start")


def fill(port):
    """PUTs the values; returns {key: crc32}."""
    rng = random.Random(1)
    crcs = {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    block = os.urandom(LARGE[1])
    for i in range(LARGE[0]):
        # A different first 8 bytes per value, incompressible throughout.
        value = i.to_bytes(8, "little") + block[8:]
        conn.request("PUT", f"/store/large/{i:02d}", body=value)
        r = conn.getresponse(); r.read()
        assert r.status == 201, r.status
        crcs[f"large/{i:02d}"] = zlib.crc32(value)
    small = os.urandom(SMALL[1] + SMALL[0])
    for i in range(SMALL[0]):
        value = small[i:i + SMALL[1]]
        conn.request("PUT", f"/store/small/{i:04d}", body=value)
        r = conn.getresponse(); r.read()
        assert r.status == 201, r.status
        crcs[f"small/{i:04d}"] = zlib.crc32(value)
    conn.close()
    return crcs


def read_snapshot(port, pid, out_path, rate_mb):
    """Reads the chunked document slowly into out_path; returns (bytes, seconds, peak RSS KiB)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /snapshot HTTP/1.1\r\nHost: x\r\n\r\n")
    f = sock.makefile("rb", buffering=1 << 16)
    status = f.readline()
    assert b" 200 " in status, status
    while f.readline() not in (b"\r\n", b""):
        pass
    peak = rss_kib(pid)
    total = 0
    start = time.monotonic()
    budget = 0.0
    with open(out_path, "wb") as out:
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                f.readline()
                break
            left = size
            while left:
                piece = f.read(min(left, 1 << 16))
                out.write(piece)
                left -= len(piece)
                total += len(piece)
                # Pace the reader: never ahead of rate_mb MB/s.
                budget = total / (rate_mb * 1e6) - (time.monotonic() - start)
                if budget > 0:
                    time.sleep(budget)
            f.readline()
            if total // (1 << 20) != (total - size) // (1 << 20):
                peak = max(peak, rss_kib(pid))
    sock.close()
    return total, time.monotonic() - start, peak


def restore(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600, blocksize=1 << 16)
    size = os.path.getsize(path)
    start = time.monotonic()
    with open(path, "rb") as body:
        conn.request("POST", "/snapshot", body=body, headers={"Content-Length": str(size)})
        r = conn.getresponse()
        text = r.read()
    return r.status, text, time.monotonic() - start


def check(port, crcs):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    bad = 0
    for key, crc in crcs.items():
        conn.request("GET", "/store/" + key)
        r = conn.getresponse()
        if r.status != 200 or zlib.crc32(r.read()) != crc:
            bad += 1
    return bad


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=".build/release/larder")
    p.add_argument("--cache-mb", type=int, default=32)
    p.add_argument("--rate", type=float, default=100.0, help="reader pace, MB/s")
    p.add_argument("--no-restore", action="store_true")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="larder-snapshot-")
    try:
        server = start(args.bin, work + "/a", 18601, args.cache_mb)
        try:
            crcs = fill(18601)
            time.sleep(0.5)
            before = rss_kib(server.pid)
            doc = work + "/snapshot.ndjson"
            total, seconds, peak = read_snapshot(18601, server.pid, doc, args.rate)
            print(f"store: {LARGE[0]} x {LARGE[1] >> 20} MiB + {SMALL[0]} x {SMALL[1] >> 10} KiB = "
                  f"{(LARGE[0] * LARGE[1] + SMALL[0] * SMALL[1]) / (1 << 30):.2f} GiB, --cache-mb {args.cache_mb}")
            print(f"GET /snapshot: {total / 1e6:.0f} MB in {seconds:.1f} s ({total / 1e6 / seconds:.0f} MB/s, reader paced to {args.rate:g} MB/s)")
            print(f"server RSS: {before / 1024:.1f} MiB before, peak {peak / 1024:.1f} MiB during, growth {(peak - before) / 1024:.1f} MiB")
        finally:
            server.terminate(); server.wait()
        if not args.no_restore:
            shutil.rmtree(work + "/a")
            target = start(args.bin, work + "/b", 18602, args.cache_mb)
            try:
                before = rss_kib(target.pid)
                status, text, seconds = restore(18602, doc)
                peak = rss_kib(target.pid, "VmHWM:")
                print(f"POST /snapshot into an empty server: {status} {text.decode()} in {seconds:.1f} s; "
                      f"RSS {before / 1024:.1f} MiB before, peak {peak / 1024:.1f} MiB")
                print(f"values that differ after the round trip: {check(18602, crcs)} of {len(crcs)}")
            finally:
                target.terminate(); target.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
