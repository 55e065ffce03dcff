#!/usr/bin/env python3
"""Larder's S3 face and moto's server side by side, driven by one boto3 client.

    python3 Benchmarks/s3_vs_moto.py --larder .build/release/larder [--quick] [--out FILE]

Run by Benchmarks/s3-vs-moto.sh (which builds the release binary and installs
moto[server]). Each server is started here on a free loopback port, in turn,
never both at once, and measured the same way:

  - start: from spawning the process to its first HTTP answer (any status) to
    `GET /`, polled every 2 ms;
  - 1 KiB PutObject and GetObject per second, on 1 client and on 8 threads
    (one boto3 client each), for DURATION seconds after a short warm-up, over
    1000 keys;
  - a 64 MiB file: upload and download MB/s, each the median of ROUNDS calls of
    boto3's `upload_file` and `download_file` with their default TransferConfig
    (over the 8 MiB threshold: a multipart upload of 8 MiB parts, and ranged
    GETs of 8 MiB, 10 threads each), as a test suite moves a large file;
  - the server's resident memory after the run (VmRSS) and its peak (VmHWM).

Before them, the same loops and transfers run against a ceiling: nginx
answering every request at once with a fixed valid answer (200 and an ETag
for a PUT, a fixed 1 KiB body for a GET; the large object's multipart
upload with fixed XML, its parts read and dropped, its download served from
a file of the same bytes), so the server costs next to nothing and the rate
is what boto3 itself reaches on this machine. A second table gives each
server's rates as a fraction of that ceiling. (No nginx: no ceiling, said
so; `--no-ceiling` leaves it out.)

Larder runs as `--ephemeral` (its writes fsync'd, as by default) and, in
the full run, also with `--no-fsync` (moto keeps everything in memory).
The client is the same for all: boto3 with path-style addressing, no retries,
and checksums only where an operation requires them (so neither server is
charged for the client's CRC32 of every body). Python drives both: on a small
machine the client's own CPU is part of every figure, for both servers alike.
"""
import argparse
import concurrent.futures
import datetime
import http.client
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.client import Config

ACCESS_KEY, SECRET = "larder", "larder-secret"
KEYS = 1000  # 100 with --quick
SMALL = os.urandom(1024)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_answer(port, started, process, limit=60):
    """Seconds from `started` until `GET /` on `port` gets any HTTP answer."""
    while time.perf_counter() - started < limit:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode} before answering")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/")
            connection.getresponse().read()
            connection.close()
            return time.perf_counter() - started
        except OSError:
            time.sleep(0.002)
    raise SystemExit(f"no answer on port {port} within {limit} s")


def memory_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
    return fields


def cpu_ticks(pid):
    """The process's CPU so far, user + system over every thread, in clock
    ticks (/proc/PID/stat fields 14 and 15; the name in field 2 has no spaces here)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def client(port):
    return boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                      request_checksum_calculation="when_required",
                                      response_checksum_validation="when_required",
                                      max_pool_connections=16))


def rate(clients, operation, duration):
    """Calls per second of `operation(client, i)` over `duration` s, one thread per client."""
    stop = threading.Event()
    counts = [0] * len(clients)

    def loop(n):
        c, i = clients[n], n * 7919
        while not stop.is_set():
            operation(c, i % KEYS)
            i += 1
            counts[n] += 1

    with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
        # Warm-up: connections open, code paths hot.
        list(pool.map(lambda n: [operation(clients[n], (n * 10 + i) % KEYS) for i in range(10)], range(len(clients))))
        started = time.perf_counter()
        futures = [pool.submit(loop, n) for n in range(len(clients))]
        time.sleep(duration)
        stop.set()
        for f in futures:
            f.result()
        elapsed = time.perf_counter() - started
    return sum(counts) / elapsed


def put_small(c, i):
    c.put_object(Bucket="bench", Key=f"small/{i:04d}", Body=SMALL)


def get_small(c, i):
    body = c.get_object(Bucket="bench", Key=f"small/{i:04d}")["Body"].read()
    assert len(body) == 1024


CEILING_CONF = """
%(user)s
worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %(dir)s/tmp;
  proxy_temp_path %(dir)s/tmp;
  fastcgi_temp_path %(dir)s/tmp;
  uwsgi_temp_path %(dir)s/tmp;
  scgi_temp_path %(dir)s/tmp;
  keepalive_requests 100000000;
  client_max_body_size 0;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:%(port)d;
    # The large object: its multipart upload answered with fixed XML (each
    # part's body read and dropped), its download served from a file of the
    # same bytes (nginx's own HEAD, ranges and ETag, which download_file's
    # ranged GETs send back in If-Match).
    location = /bench/large {
      if ($arg_uploadId) { set $complete 1; }
      if ($request_method = PUT) { add_header ETag '"%(etag)s"' always; return 200 ""; }
      if ($complete) { return 200 '<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>bench</Bucket><Key>large</Key><ETag>"%(etag)s-8"</ETag></CompleteMultipartUploadResult>'; }
      if ($request_method = POST) { return 200 '<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>bench</Bucket><Key>large</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>'; }
      root %(dir)s/files;
    }
    location / {
      add_header ETag '"%(etag)s"' always;
      if ($request_method = GET) { return 200 "%(body)s"; }
      return 200 "";
    }
  }
}
"""


def ceiling_command(port, directory, big):
    """nginx answering any request at once: a GET with the same 1 KiB, anything else with an empty 200; an ETag on each;
    `bench/large`'s multipart upload with fixed XML, and its download from a file holding `big`."""
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if nginx is None:
        return None
    os.makedirs(os.path.join(directory, "tmp"), exist_ok=True)
    os.makedirs(os.path.join(directory, "files", "bench"), exist_ok=True)
    with open(os.path.join(directory, "files", "bench", "large"), "wb") as f:
        f.write(big)
    conf = os.path.join(directory, "nginx.conf")
    with open(conf, "w") as f:
        f.write(CEILING_CONF % {"user": "user root;" if os.geteuid() == 0 else "", "dir": directory, "port": port,
                               "etag": "0" * 32, "body": "x" * 1024})
    return [nginx, "-c", conf, "-e", os.path.join(directory, "error.log"), "-g", "daemon off;"]


def measure(name, command, port, args, ceiling=False):
    log = tempfile.TemporaryFile()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    try:
        result = {"start": first_answer(port, started, process)}
        print(f"  {name}: answering after {result['start'] * 1000:.0f} ms", file=sys.stderr)
        main = client(port)
        main.create_bucket(Bucket="bench")
        threads = [client(port) for _ in range(8)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: put_small(threads[i % 8], i), range(KEYS)))
        result["put1"] = rate([main], put_small, args.duration)
        result["get1"] = rate([main], get_small, args.duration)
        result["put8"] = rate(threads, put_small, args.duration)
        result["get8"] = rate(threads, get_small, args.duration)
        print(f"  {name}: 1 KiB PUT/GET per second done", file=sys.stderr)
        big = args.big
        ups, downs = [], []
        transfer = TransferConfig()  # boto3's defaults: 8 MiB threshold and parts, 10 threads
        with tempfile.TemporaryDirectory() as scratch:
            up_path, down_path = os.path.join(scratch, "up.bin"), os.path.join(scratch, "down.bin")
            with open(up_path, "wb") as f:
                f.write(big)
            upload_ticks = 0
            for _ in range(args.rounds):
                t = time.perf_counter()
                ticks = cpu_ticks(process.pid)
                main.upload_file(up_path, "bench", "large", Config=transfer)
                upload_ticks += cpu_ticks(process.pid) - ticks
                ups.append(time.perf_counter() - t)
                t = time.perf_counter()
                main.download_file("bench", "large", down_path, Config=transfer)
                downs.append(time.perf_counter() - t)
                with open(down_path, "rb") as f:
                    assert f.read() == big, "the large object came back different"
                os.remove(down_path)
        result["up"] = args.large_mib * 1.048576 / statistics.median(ups)
        result["down"] = args.large_mib * 1.048576 / statistics.median(downs)
        result["upcpu"] = upload_ticks / os.sysconf("SC_CLK_TCK") * 1000 / (args.large_mib * args.rounds)
        if ceiling:
            return result
        memory = memory_kib(process.pid)
        result["rss"], result["hwm"] = memory["VmRSS"] / 1024, memory["VmHWM"] / 1024
        return result
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.returncode not in (0, -15, 143):
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-2000:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--larder", required=True, help="the larder binary")
    parser.add_argument("--quick", action="store_true", help="0.5 s a rate, an 8 MiB object once: checks the script")
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--no-ceiling", action="store_true", help="leave out the nginx ceiling run")
    args = parser.parse_args()
    args.duration = 0.5 if args.quick else 5.0
    global KEYS
    KEYS = 100 if args.quick else 1000
    args.large_mib = 8 if args.quick else 64
    args.rounds = 1 if args.quick else 3
    args.big = os.urandom(args.large_mib * 1024 * 1024)

    moto = shutil.which("moto_server")
    moto_command = [moto] if moto else [sys.executable, "-m", "moto.server"]
    servers = [("larder", lambda p: [args.larder, "--ephemeral", "--port", "0", "--s3-port", str(p)])]
    if not args.quick:
        servers.append(("larder --no-fsync",
                        lambda p: [args.larder, "--ephemeral", "--no-fsync", "--port", "0", "--s3-port", str(p)]))
    servers.append(("moto", lambda p: moto_command + ["-H", "127.0.0.1", "-p", str(p)]))
    results = {}
    ceiling_dir = tempfile.mkdtemp(prefix="s3-ceiling-")
    ceiling_note = None
    try:
        port = free_port()
        command = None if args.no_ceiling else ceiling_command(port, ceiling_dir, args.big)
        if command is not None:
            results["ceiling"] = measure("ceiling (nginx, fixed answers)", command, port, args, ceiling=True)
        else:
            ceiling_note = "no ceiling run (--no-ceiling, or no nginx: apt-get install nginx)"
    finally:
        shutil.rmtree(ceiling_dir, ignore_errors=True)
    for name, command in servers:
        port = free_port()
        results[name] = measure(name, command(port), port, args)
    names = [name for name, _ in servers]
    larders = names[:-1]

    import moto as moto_module
    lines = []
    def out(text=""):
        lines.append(text)
        print(text)
    out(f"Larder's S3 face vs moto {moto_module.__version__} (server mode), one boto3 {boto3.__version__} client"
        f"{' (--quick: not figures to quote)' if args.quick else ''}")
    out(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, {os.cpu_count()} cores, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}")
    out()
    rows = [
        ("1 KiB PutObject/s, 1 client", "put1", "{:.0f}", True),
        ("1 KiB GetObject/s, 1 client", "get1", "{:.0f}", True),
        ("1 KiB PutObject/s, 8 threads", "put8", "{:.0f}", True),
        ("1 KiB GetObject/s, 8 threads", "get8", "{:.0f}", True),
        (f"{args.large_mib} MiB upload_file MB/s", "up", "{:.0f}", True),
        (f"{args.large_mib} MiB download_file MB/s", "down", "{:.0f}", True),
        ("server CPU per MiB uploaded, ms", "upcpu", "{:.2f}", False),
        ("start to first answer, ms", "start", "{:.0f}", False),
        ("RSS after the run, MiB", "rss", "{:.1f}", False),
        ("peak RSS, MiB", "hwm", "{:.1f}", False),
    ]
    width = {name: max(8, len(name)) for name in names}
    ratios = [f"{name} vs moto" for name in larders]
    for r in ratios:
        width[r] = max(15, len(r))
    out("| " + " | ".join([f"{'':34}"] + [f"{n:>{width[n]}}" for n in names + ratios]) + " |")
    out("| " + " | ".join(["-" * 34] + ["-" * (width[n] - 1) + ":" for n in names + ratios]) + " |")
    for label, key, fmt, higher_better in rows:
        scale = 1000 if key == "start" else 1
        cells = [f"{fmt.format(results[n][key] * scale):>{width[n]}}" for n in names]
        for n in larders:
            a, b = results[n][key], results["moto"][key]
            ratio = a / b if higher_better else b / a  # over 1: Larder does better
            better, worse = ("smaller", "larger") if key in ("rss", "hwm", "upcpu") else ("faster", "slower")
            said = f"{ratio:.1f}x {better}" if ratio >= 1 else f"{1 / ratio:.1f}x {worse}"
            cells.append(f"{said:>{width[n + ' vs moto']}}")
        out("| " + " | ".join([f"{label:34}"] + cells) + " |")
    out()
    if "ceiling" in results:
        out("The same boto3 client against nginx answering at once with fixed answers (the ceiling: what boto3 itself")
        out("reaches here), and each server's rate as a fraction of it:")
        out()
        cols = ["boto3 ceiling"] + [c for n in names for c in (n, f"{n} / ceiling")]
        cw = {c: max(8, len(c)) for c in cols}
        out("| " + " | ".join([f"{'':34}"] + [f"{c:>{cw[c]}}" for c in cols]) + " |")
        out("| " + " | ".join(["-" * 34] + ["-" * (cw[c] - 1) + ":" for c in cols]) + " |")
        for label, key, fmt, _ in rows[:6]:
            top = results["ceiling"][key]
            cells = [f"{top:>{cw['boto3 ceiling']}.0f}"]
            for n in names:
                cells.append(f"{results[n][key]:>{cw[n]}.0f}")
                cells.append(f"{results[n][key] / top:>{cw[n + ' / ceiling']}.2f}")
            out("| " + " | ".join([f"{label:34}"] + cells) + " |")
    else:
        out(ceiling_note)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


if __name__ == "__main__":
    main()
