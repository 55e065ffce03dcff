#!/usr/bin/env python3
"""Figures for the sharing features, against a release build of `larder`:

- watcher wake-up latency: a client waiting on GET ?wait with If-None-Match
  is answered after another client's PUT; time from the PUT's answer to the
  watcher's answer (median and max of 50 rounds);
- memory per idle watcher: RSS growth with 5,000 parked watch requests;
- change-feed throughput: events per second delivered to each of 10
  /events readers while one writer PUTs as fast as it can (pipelined).

    python3 Benchmarks/sharing.py [path/to/larder]     (default .build/release/larder)
"""
import http.client, os, resource, socket, statistics, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release/larder"
PORT = 18501


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def etag(conn, key):
    conn.request("HEAD", "/store/" + key)
    r = conn.getresponse(); r.read()
    return r.getheader("ETag")


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    data = tempfile.mkdtemp(prefix="larder-sharing-")
    server = subprocess.Popen([BIN, "--port", str(PORT), "--data-dir", data, "--no-fsync", "--log-level", "warning"],
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", PORT)).close(); break
            except OSError:
                time.sleep(0.05)
        writer = http.client.HTTPConnection("127.0.0.1", PORT)
        writer.request("PUT", "/store/w", body=b"0"); writer.getresponse().read()

        # 1. wake-up latency
        lat = []
        for i in range(50):
            tag = etag(writer, "w")
            watcher = http.client.HTTPConnection("127.0.0.1", PORT)
            done = {}
            def wait():
                watcher.request("GET", "/store/w?wait=10", headers={"If-None-Match": tag})
                r = watcher.getresponse(); r.read()
                done["t"] = time.perf_counter(); done["s"] = r.status
            t = threading.Thread(target=wait); t.start()
            time.sleep(0.02)
            put_start = time.perf_counter()
            writer.request("PUT", "/store/w", body=str(i + 1).encode()); writer.getresponse().read()
            put_done = time.perf_counter()
            t.join()
            assert done["s"] == 200
            lat.append(((done["t"] - put_start) * 1000, (put_done - put_start) * 1000))
            watcher.close()
        wake = [w for w, _ in lat]
        put = [p for _, p in lat]
        print(f"watcher answered {statistics.median(wake):.2f} ms (median; max {max(wake):.2f}) after the PUT was sent; "
              f"the PUT itself took {statistics.median(put):.2f} ms (50 rounds)")

        # 2. memory per idle watcher
        n = 5000
        tag = etag(writer, "w")
        before = rss_kib(server.pid)
        socks = []
        req = f"GET /store/w?wait=300 HTTP/1.1\r\nHost: x\r\nIf-None-Match: {tag}\r\n\r\n".encode()
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", PORT)); s.sendall(req); socks.append(s)
        time.sleep(1.0)
        after = rss_kib(server.pid)
        threads = int(open(f"/proc/{server.pid}/status").read().split("Threads:")[1].split()[0])
        print(f"{n} idle watchers: RSS {before} -> {after} KiB, {(after - before) * 1024 / n:.0f} bytes each, {threads} threads")
        writer.request("PUT", "/store/w", body=b"wake"); writer.getresponse().read()
        for s in socks: s.close()

        # 3. change feed to 10 readers (and the same writer with none, for comparison)
        def put_rate(seconds, prefix):
            s = socket.create_connection(("127.0.0.1", PORT))
            body = b"x" * 100
            batch = b"".join(f"PUT /store/{prefix}/{k} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n".encode() + body
                             for k in range(50))
            sent, buf, start = 0, b"", time.perf_counter()
            while time.perf_counter() - start < seconds:
                s.sendall(batch)
                while buf.count(b"HTTP/1.1 20") < 50:
                    buf += s.recv(1 << 16)
                buf = b""
                sent += 50
            s.close()
            return sent, time.perf_counter() - start
        alone, alone_t = put_rate(5, "alone")
        print(f"writer alone: {alone / alone_t:.0f} PUTs/s")
        readers = []
        counts = [0] * 10
        stop = threading.Event()
        def read(i):
            s = socket.create_connection(("127.0.0.1", PORT))
            s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(0.5)
            while not stop.is_set():
                try:
                    chunk = s.recv(1 << 16)
                except socket.timeout:
                    continue
                if not chunk: break
                counts[i] += chunk.count(b"event: put")
            s.close()
        for i in range(10):
            t = threading.Thread(target=read, args=(i,)); t.start(); readers.append(t)
        time.sleep(0.5)
        sent, elapsed = put_rate(5, "feed")
        time.sleep(1.0)
        stop.set()
        for t in readers: t.join()
        print(f"change feed: {sent} PUTs in {elapsed:.1f} s ({sent / elapsed:.0f}/s); each of 10 readers got "
              f"{min(counts)}-{max(counts)} put events ({min(counts) / elapsed:.0f}/s per reader, "
              f"{sum(counts) / elapsed:.0f}/s in all)")
    finally:
        server.terminate(); server.wait()
        subprocess.run(["rm", "-rf", data])


if __name__ == "__main__":
    main()
