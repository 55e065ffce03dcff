#!/usr/bin/env python3
"""Record a history of concurrent operations on a real Larder server, in the
format linearizability.py checks.

    python3 Tests/cluster/record_history.py [--url URL | --bin PATH] [--clients 8]
        [--keys 3] [--seconds D] [--ops M] [--out history.jsonl] [--check] [--seed S]

Without --url it starts `$LARDER_BIN` (default .build/debug/larder) with
`--ephemeral --port 0 --no-fsync` and stops it at the end. N client threads,
each with its own keep-alive `http.client.HTTPConnection`, issue a random mix of

- get     GET /store/<key>
- put     PUT /store/<key> with a JSON value no other write uses ({"c": client, "n": seq})
- cas     PUT with `If-Match: <the last ETag this client saw on the key>`, or with
          `If-None-Match: *` when it last saw the key absent (or never saw it)
- append  POST /store/<key> with a small integer no other append uses
- delete  DELETE /store/<key>

on K keys with fresh random names (so every key starts absent, as the checker's
model assumes), until D seconds have passed or M operations were issued. Each
operation is one line with `time.monotonic()` read just before the request is
sent (`invoke`) and just after its answer was read (`return`). A transport error,
a timeout or an answer the model has no place for (a 5xx, an unexpected status)
is recorded with `"return": null`, outcome unknown, and a `note`; the client then
opens a new connection. Requests say `Accept-Encoding: identity`, so the ETags
recorded are the identity ones (a gzip answer's would end in `-gz`).

`--check` runs the checker on the history and exits with its code (0
linearizable, 1 violation, 2 undecided); otherwise the exit code is 0. A summary
(operations, ops/s, share of each kind, unknown outcomes) goes to stderr.
"""
from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from urllib.parse import quote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "..", ".build", "debug", "larder")

# How often each kind of operation is chosen (cas picks If-Match or
# If-None-Match: * from what the client last saw).
MIX = (("get", 35), ("put", 20), ("cas", 25), ("append", 12), ("delete", 8))


def larder_bin() -> str:
    """The server binary: $LARDER_BIN, or the debug build in this checkout."""
    return os.path.abspath(os.environ.get("LARDER_BIN") or DEFAULT_BIN)


# --- A server of our own -------------------------------------------------------

@contextmanager
def running_server(binary: str | None = None, extra_args=(), start_timeout: float = 15.0):
    """Start `larder --ephemeral --port 0 --no-fsync`; yields its base URL."""
    binary = binary or larder_bin()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise FileNotFoundError(f"no larder binary at {binary}")
    with tempfile.TemporaryDirectory(prefix="larder-history.") as work:
        out_path, err_path = os.path.join(work, "server.out"), os.path.join(work, "server.err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([binary, "--ephemeral", "--port", "0", "--no-fsync",
                                     "--log-level", "notice", *extra_args],
                                    stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + start_timeout
            url = ""
            while time.monotonic() < deadline:
                with open(out_path, encoding="utf-8", errors="replace") as out:
                    first = out.readline()
                if first.endswith("\n"):
                    url = first.strip()
                    break
                if proc.poll() is not None:
                    break
                time.sleep(0.02)
            if not url:
                with open(err_path, encoding="utf-8", errors="replace") as err:
                    tail = err.read()[-2000:]
                raise RuntimeError(f"larder did not print its URL (exit {proc.poll()}): {tail}")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# --- Clients ---------------------------------------------------------------------

class _Shared:
    """What the client threads share: the stop rule and the unique-value counters."""

    def __init__(self, max_ops: int | None, stop_at: float):
        self.lock = threading.Lock()
        self.max_ops = max_ops
        self.stop_at = stop_at
        self.issued = 0
        self.elements = itertools.count(1)

    def take(self) -> bool:
        """Whether one more operation may be issued (and count it)."""
        with self.lock:
            if time.monotonic() >= self.stop_at:
                return False
            if self.max_ops is not None and self.issued >= self.max_ops:
                return False
            self.issued += 1
            return True

    def element(self) -> int:
        with self.lock:
            return next(self.elements)


class _Client:
    def __init__(self, number: int, url: str, keys: list[str], shared: _Shared, rng: random.Random,
                 request_timeout: float):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.base = parts.path.rstrip("/")
        self.number = number
        self.keys = keys
        self.shared = shared
        self.rng = rng
        self.request_timeout = request_timeout
        self.kinds = [kind for kind, weight in MIX for _ in range(weight)]
        self.seen: dict[str, str | None] = {}   # key -> last ETag seen there, None: seen absent
        self.seq = 0
        self.records: list[dict] = []
        self.conn = None

    def _connection(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.request_timeout)
        return self.conn

    def _drop_connection(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def run(self):
        try:
            while self.shared.take():
                self.one()
        finally:
            self._drop_connection()

    def one(self):
        key = self.rng.choice(self.keys)
        kind = self.rng.choice(self.kinds)
        path = f"{self.base}/store/{quote(key)}"
        headers = {"Accept-Encoding": "identity"}
        body = None
        arg: dict = {}
        if kind in ("put", "cas"):
            self.seq += 1
            value = {"c": self.number, "n": self.seq}
            arg["value"] = value
            body = json.dumps(value, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
            if kind == "cas":
                etag = self.seen.get(key)
                if etag is None:
                    arg["if_absent"] = True
                    headers["If-None-Match"] = "*"
                else:
                    arg["if_match"] = etag
                    headers["If-Match"] = etag
            method = "PUT"
        elif kind == "append":
            element = self.shared.element()
            arg["element"] = element
            body = str(element).encode()
            headers["Content-Type"] = "application/json"
            method = "POST"
        elif kind == "get":
            method = "GET"
        else:
            method = "DELETE"

        record = {"client": self.number, "key": key, "op": kind, "invoke": None, "return": None,
                  "arg": arg, "result": None}
        conn = self._connection()
        record["invoke"] = time.monotonic()
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            returned = time.monotonic()
        except (OSError, http.client.HTTPException) as error:
            record["note"] = f"{type(error).__name__}: {error}"
            self._drop_connection()
            self.records.append(record)
            return
        status = response.status
        etag = response.getheader("ETag")
        result = self._result(kind, status, etag, payload)
        if result is None:
            # An answer the model has no place for: its effect is unknown.
            record["note"] = f"unexpected {status}: {payload[:200].decode('utf-8', 'replace')}"
            if response.will_close:
                self._drop_connection()
            self.records.append(record)
            # A client that honours Retry-After (capped at a second), as a
            # well-behaved one does: a database failing over answers 503 at
            # once, and a client that retried at full speed would fill the
            # history with thousands of calls of unknown outcome.
            retry_after = response.getheader("Retry-After")
            if status == 503 and retry_after:
                try:
                    time.sleep(min(float(retry_after), 1.0))
                except ValueError:
                    pass
            return
        result["status"] = status
        record["return"] = returned
        record["result"] = result
        self._learn(key, kind, result)
        if response.will_close:
            self._drop_connection()
        self.records.append(record)

    @staticmethod
    def _result(kind: str, status: int, etag: str | None, payload: bytes) -> dict | None:
        if kind == "get":
            if status == 404:
                return {"found": False}
            if status == 200 and etag:
                text = payload.decode("utf-8", "replace")
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text    # not what anyone wrote: the checker will say so
                return {"found": True, "value": value, "etag": etag}
            return None
        if kind == "delete":
            return {"found": True} if status == 204 else {"found": False} if status == 404 else None
        if kind == "append":
            if status != 200 or not etag:
                return None
            try:
                count = json.loads(payload)["count"]
            except (ValueError, KeyError, TypeError):
                return None
            return {"ok": True, "count": count, "etag": etag}
        # put, cas
        if status in (200, 201, 204) and etag:
            return {"ok": True, "etag": etag}
        if kind == "cas" and status == 412:
            return {"ok": False}
        return None

    def _learn(self, key: str, kind: str, result: dict):
        if kind == "get":
            self.seen[key] = result["etag"] if result["found"] else None
        elif kind == "delete":
            self.seen[key] = None
        elif result.get("ok"):
            self.seen[key] = result["etag"]
        # A failed cas teaches nothing about the current ETag; the next get will.


def record_history(url: str | list[str], clients: int = 8, keys: int = 3, seconds: float | None = 5.0,
                   max_ops: int | None = None, seed: int | None = None,
                   request_timeout: float = 5.0, key_prefix: str | None = None,
                   started_file: str | None = None) -> list[dict]:
    """History records (dicts in the checker's line format), sorted by invoke time.
    With several URLs (servers of one store), client n talks to url[n % len]."""
    if seconds is None and max_ops is None:
        raise ValueError("give a duration, a number of operations, or both")
    master = random.Random(seed)
    prefix = key_prefix or f"linz-{uuid.uuid4().hex[:12]}"
    key_names = [f"{prefix}/k{i}" for i in range(keys)]
    stop_at = time.monotonic() + seconds if seconds is not None else float("inf")
    shared = _Shared(max_ops, stop_at)
    urls = [url] if isinstance(url, str) else list(url)
    workers = [_Client(n, urls[n % len(urls)], key_names, shared, random.Random(master.random()), request_timeout)
               for n in range(clients)]
    threads = [threading.Thread(target=w.run, name=f"client-{w.number}") for w in workers]
    for t in threads:
        t.start()
    if started_file:
        # For a test that injects faults while the clients run.
        open(started_file, "w").close()
    for t in threads:
        t.join()
    records = [r for w in workers for r in w.records]
    records.sort(key=lambda r: r["invoke"])
    return records


def write_history(records: list[dict], path: str):
    with open(path, "w", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r, separators=(",", ":")) + "\n")


def summarize(records: list[dict]) -> dict:
    """Counts for a report: per kind, unknown outcomes, failed cas, wall time."""
    kinds = Counter(r["op"] for r in records)
    unknown = [r for r in records if r["return"] is None]
    cas_kinds = Counter("if_absent" if r["arg"].get("if_absent") else "if_match"
                        for r in records if r["op"] == "cas")
    cas_failed = sum(1 for r in records if r["op"] == "cas" and r["result"] and not r["result"]["ok"])
    gets_found = sum(1 for r in records if r["op"] == "get" and r["result"] and r["result"]["found"])
    if records:
        ends = [r["return"] for r in records if r["return"] is not None] or [records[-1]["invoke"]]
        span = max(ends) - records[0]["invoke"]
    else:
        span = 0.0
    return {"operations": len(records), "seconds": span,
            "ops_per_second": len(records) / span if span > 0 else 0.0,
            "kinds": dict(kinds), "cas": dict(cas_kinds), "cas_failed": cas_failed,
            "gets_found": gets_found, "unknown": len(unknown),
            "unknown_notes": dict(Counter(r.get("note", "").split(":")[0] for r in unknown))}


def format_summary(s: dict) -> str:
    n = s["operations"] or 1
    shares = ", ".join(f"{k} {v} ({100 * v / n:.0f}%)" for k, v in sorted(s["kinds"].items()))
    text = (f"{s['operations']} operations in {s['seconds']:.2f} s ({s['ops_per_second']:.0f}/s): {shares};"
            f" cas {s['cas']} of which {s['cas_failed']} failed (412); {s['gets_found']} gets found a value;"
            f" {s['unknown']} outcome unknown")
    if s["unknown"]:
        text += f" {s['unknown_notes']}"
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Record a history of concurrent Larder operations.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", action="append",
                       help="a running server's base URL (else one is started); again for more servers of one "
                            "store, the clients spread over them")
    where.add_argument("--bin", help="the larder binary to start (default $LARDER_BIN or .build/debug/larder)")
    parser.add_argument("--clients", type=int, default=8, metavar="N")
    parser.add_argument("--keys", type=int, default=3, metavar="K")
    parser.add_argument("--seconds", type=float, default=None, metavar="D",
                        help="stop after D seconds (default 5 unless --ops is given)")
    parser.add_argument("--ops", type=int, default=None, metavar="M", help="stop after M operations")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--request-timeout", type=float, default=5.0, metavar="S",
                        help="socket timeout per request; past it the outcome is unknown")
    parser.add_argument("--out", "-o", default="history.jsonl", help="where to write the history")
    parser.add_argument("--started-file", default=None, metavar="PATH",
                        help="create PATH once the clients run (a fault injector waits for it)")
    parser.add_argument("--check", action="store_true", help="run the checker and exit with its code")
    parser.add_argument("--check-timeout", type=float, default=None, metavar="S")
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (None if args.ops else 5.0)

    def record(url):
        return record_history(url, args.clients, args.keys, seconds, args.ops, args.seed, args.request_timeout,
                              started_file=args.started_file)

    if args.url:
        records = record(args.url)
    else:
        try:
            with running_server(args.bin) as url:
                records = record(url)
        except (FileNotFoundError, RuntimeError) as error:
            print(f"record_history: {error}", file=sys.stderr)
            return 2
    write_history(records, args.out)
    print(f"{args.out}: {format_summary(summarize(records))}", file=sys.stderr)
    if not args.check:
        return 0
    sys.path.insert(0, HERE)
    import linearizability
    check_args = [args.out] + (["--timeout", str(args.check_timeout)] if args.check_timeout else [])
    return linearizability.main(check_args)


if __name__ == "__main__":
    sys.exit(main())
