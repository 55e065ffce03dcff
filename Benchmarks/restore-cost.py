#!/usr/bin/env python3
"""What a snapshot restore costs: POST /snapshot?prefix=r/&replace=1 with
`--lines` one-line text values, over a prefix already holding 200 keys,
three rounds, each replacing the set before; prints the seconds of each.

    python3 Benchmarks/restore-cost.py --bin .build/release/larder [--lines 30000] [--no-fsync]

Run two binaries in one session (before and after a change) and compare:
the machine's noise moves both alike. Builds nothing.
"""
import argparse, http.client, json, subprocess, tempfile, time, urllib.parse, shutil


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=".build/release/larder")
    ap.add_argument("--lines", type=int, default=30_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-fsync", action="store_true")
    a = ap.parse_args()
    data = tempfile.mkdtemp(prefix="larder-restore-cost-")
    proc = subprocess.Popen([a.bin, "serve", "--port", "0", "--data-dir", data, "--log-level", "warning"]
                            + (["--no-fsync"] if a.no_fsync else []), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        url = urllib.parse.urlparse(proc.stdout.readline().decode().strip())

        def request(method, path, body=None):
            c = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
            c.request(method, path, body)
            r = c.getresponse()
            out = r.read()
            c.close()
            return r.status, out

        for i in range(200):
            request("PUT", f"/store/r/old{i}", b"old")
        seconds = []
        for r in range(a.rounds):
            doc = "".join(json.dumps({"key": f"r/k{r}-{i:05d}", "contentType": "text/plain", "text": f"value {i}"}) + "\n"
                          for i in range(a.lines)).encode()
            started = time.monotonic()
            status, body = request("POST", "/snapshot?prefix=r/&replace=1", doc)
            seconds.append(round(time.monotonic() - started, 3))
            assert status == 200, (status, body[:300])
        print(json.dumps({"binary": a.bin, "lines": a.lines, "fsync": not a.no_fsync, "seconds": seconds}))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
