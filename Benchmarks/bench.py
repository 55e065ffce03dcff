#!/usr/bin/env python3
"""Helpers for Benchmarks/*.sh (standard library only), through $BENCH of common.sh.

  bench.py requests URL COUNT [get|put] [SIZE]   COUNT requests on one keep-alive
                                                 connection, exactly; PUTs go to
                                                 COUNT/1000-cycled keys under the path
  bench.py gen KIND SIZE FILE                    KIND: raw | base64 | json
  bench.py zlib FILE                             MB/s of one core: deflate level 1,
                                                 Huffman-only, stored (level 0),
                                                 inflate (raw deflate); output/input
  bench.py snapshot PREFIX COUNT                 an NDJSON snapshot of COUNT small keys
  bench.py median                                median of numbers on stdin
"""
import base64, json, os, socket, sys, time, urllib.parse, zlib


def read_response(s, buf):
    """One response from socket `s` after the bytes already in `buf`:
    (status, body, the bytes after it). Bodies are Content-Length framed."""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    head, _, buf = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(buf) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    return status, buf[:length], buf[length:]


def requests(url, count, method="get", size=1024):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = (b"0123456789abcdef" * (size // 16 + 1))[:size]
    buf = b""
    for i in range(count):
        if method == "get":
            req = f"GET {u.path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        else:
            req = (f"PUT {u.path}-{i % 1000} HTTP/1.1\r\nHost: x\r\n"
                   f"Content-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n").encode() + body
        s.sendall(req)
        status, _, buf = read_response(s, buf)
        if status >= 300:
            raise SystemExit(f"request {i}: HTTP {status}")
    s.close()


def gen(kind, size, path):
    size = int(size)
    with open(path, "wb") as f:
        if kind == "raw":
            left = size
            while left:
                n = min(left, 1 << 20)
                f.write(os.urandom(n)); left -= n
        elif kind == "base64":
            left = size
            while left:
                chunk = base64.b64encode(os.urandom(3 << 18))[: min(left, 1 << 20)]
                f.write(chunk); left -= len(chunk)
        elif kind == "json":
            # records like an API's export: repeated keys, numbers, short strings
            import random
            rnd = random.Random(9)
            words = ["alpha", "beta", "gamma", "delta", "larder", "store", "value", "key",
                     "north", "south", "east", "west", "red", "green", "blue", "amber"]
            f.write(b"[")
            written, i = 1, 0
            while True:
                rec = json.dumps({"id": i, "name": " ".join(rnd.choice(words) for _ in range(3)),
                                  "email": f"user{rnd.randrange(10**6)}@example.com",
                                  "score": round(rnd.random() * 1000, 3), "active": rnd.random() < 0.5,
                                  "tags": rnd.sample(words, 3), "created": 1700000000 + rnd.randrange(10**8)},
                                 separators=(",", ":")).encode()
                if written + len(rec) + 2 > size:
                    break
                if i:
                    f.write(b","); written += 1
                f.write(rec); written += len(rec); i += 1
            pad = size - written - 1
            f.write(b" " * pad + b"]")
        else:
            raise SystemExit(f"unknown kind {kind}")


def zlib_speeds(path):
    data = open(path, "rb").read()
    mb = len(data) / 1e6
    out = {}
    for name, level, strategy in (("deflate1", 1, zlib.Z_DEFAULT_STRATEGY), ("huffman", 1, zlib.Z_HUFFMAN_ONLY),
                                  ("stored", 0, zlib.Z_DEFAULT_STRATEGY)):
        best = None
        for _ in range(2):
            t = time.perf_counter()
            c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)
            z = c.compress(data) + c.flush()
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        out[name] = mb / best
        out[name + "_ratio"] = len(z) / len(data)
        if name == "deflate1":
            z1 = z
    best = None
    for _ in range(2):
        t = time.perf_counter()
        zlib.decompressobj(-15).decompress(z1)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    out["inflate"] = mb / best
    print(" ".join(f"{k}={v:.3f}" for k, v in out.items()))


def snapshot(prefix, count):
    w = sys.stdout.buffer
    for i in range(int(count)):
        w.write(b'{"key":"%s%07d","contentType":"text/plain","expires":null,"text":"value %d"}\n'
                % (prefix.encode(), i, i))


def median():
    xs = sorted(float(x) for x in sys.stdin.read().split())
    if not xs:
        print("nan")
    else:
        m = xs[(len(xs) - 1) // 2]
        print(int(m) if m == int(m) else m)


if __name__ == "__main__":
    a = sys.argv[1:]
    if not a:
        raise SystemExit(__doc__)
    if a[0] == "requests":
        requests(a[1], int(a[2]), a[3] if len(a) > 3 else "get", int(a[4]) if len(a) > 4 else 1024)
    elif a[0] == "gen":
        gen(a[1], a[2], a[3])
    elif a[0] == "zlib":
        zlib_speeds(a[1])
    elif a[0] == "snapshot":
        snapshot(a[1], a[2])
    elif a[0] == "median":
        median()
    else:
        raise SystemExit(__doc__)
