#!/usr/bin/env python3
"""Resident memory per idle keep-alive connection.

    python3 Benchmarks/idle_connections.py --larder .build/release/larder [--connections 8000] [--idle 4]

Starts `larder --ephemeral` on a free port, stores one 1 KiB value, reads the
server's VmRSS, then opens CONNECTIONS keep-alive connections that each GET
the value once and stay open, waits IDLE seconds (an idle connection gives
its buffers' pages back after 2 s), and reads VmRSS again: the difference
over the connections is the figure (issue 21: under 8 KiB). Client and
server each need CONNECTIONS descriptors (the soft limit is raised to the
hard one).
"""
import argparse
import resource
import socket
import subprocess
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--larder", required=True)
    parser.add_argument("--connections", type=int, default=8000)
    parser.add_argument("--idle", type=float, default=4.0)
    args = parser.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    n = min(args.connections, hard - 100)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = subprocess.Popen([args.larder, "--ephemeral", "--port", str(port), "--max-connections", str(n + 100),
                               "--log-level", "warning"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.01)
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(b"PUT /store/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" + b"x" * 1024)
        c.recv(4096)
        c.close()
        time.sleep(0.5)
        before = rss_kib(server.pid)
        idle = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /store/k HTTP/1.1\r\nHost: x\r\n\r\n")
            idle.append(s)
        for s in idle:
            got = b""
            while len(got) < 1024 or b"\r\n\r\n" not in got:
                data = s.recv(65536)
                if not data:
                    break
                got += data
        busy = rss_kib(server.pid)
        time.sleep(args.idle)
        after = rss_kib(server.pid)
        print(f"{n} keep-alive connections, one 1 KiB GET each: server RSS {before} KiB before, "
              f"{busy} KiB just after ({(busy - before) * 1024 / n:.0f} bytes each), "
              f"{after} KiB after {args.idle:g} s idle ({(after - before) * 1024 / n:.0f} bytes each)")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    sys.exit(main())
