#!/usr/bin/env python3
"""Edge behaviours of the real `larder` binary, checked from outside as
../shared/API.md (the HTTP API contract) states them:

- halfclose:   a client that half-closes (shutdown of writing) after a
               complete request still gets its answer, then the server
               closes; a write is applied exactly when it is answered
               ("Protocol"). PUT (fsync on), append, GET, HEAD, DELETE, and
               three pipelined requests.
- token_s3:    with --token and --s3-port, the default S3 key is off; with no
               S3 keys the server says so at start-up and every S3 request
               is 403 InvalidAccessKeyId; keys from the environment work
               ("S3-compatible face", last bullet).
- connections: silent or idle sockets never lock other clients out: past the
               open-connection cap the longest-idle connection is closed;
               only when every connection has a request in flight is a new
               one answered 503 too_many_connections; a connection that sends
               nothing gets the header-read timeout ("Protocol").
- restore:     POST /snapshot is all or nothing: readers during it see the
               old set or the new one, a kill -9 mid-apply leaves one set or
               the other after a restart, a bad line leaves the old set
               ("Snapshots").
- protocol:    a malformed trailer line of a chunked body is 400 and nothing
               is stored; a well-formed one is accepted ("Protocol");
               GET /events answers Cache-Control: no-store ("Change feed").

    python3 Tests/edges/edges_suite.py --binary .build/debug/larder
    python3 Tests/edges/edges_suite.py --binary ... --store-url postgres://postgres@127.0.0.1:5432/postgres?schema=t_1
    python3 Tests/edges/edges_suite.py --binary ... --only restore

Prints `ok <name>` or `FAIL <name>: why` per check, then `N passed, M failed`;
exits 1 when a check failed. Every server is a child process on 127.0.0.1
with its data in a temp directory (or the given database), killed at the end.
"""
import argparse
import http.client
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

GROUPS = ["halfclose", "token_s3", "connections", "restore", "protocol"]
TOKEN = "edge-token-7f3a"
DEFAULT_S3_KEY, DEFAULT_S3_SECRET = "larder", "larder-secret"


# ---------------------------------------------------------------- servers

def die_with_parent():
    """In the child before exec: SIGKILL when this script dies, even by
    SIGKILL (a test runner's deadline), so no server outlives the suite."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the finally blocks still kill them
        pass


class Server:
    """One `larder serve` child: `--port 0`, the store of the run, `extra`
    flags. Its URL is the first line of stdout; stdout and stderr are drained
    by threads into `lines` (so a chatty server never blocks)."""

    def __init__(self, suite, extra=(), env=None, data_dir=None, log_level="warning"):
        self.suite = suite
        if suite.store_url:
            store = ["--store", suite.store_url]
            self.data_dir = None
        else:
            self.data_dir = data_dir or tempfile.mkdtemp(prefix="data-", dir=suite.root)
            store = ["--data-dir", self.data_dir]
        args = [suite.binary, "serve", "--port", "0", *store]
        if log_level:
            args += ["--log-level", log_level]
        args += list(extra)
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("LARDER_")}
        child_env.update(env or {})
        self.args = args
        self.lines = []
        self.lock = threading.Lock()
        self.first_stdout = threading.Event()
        self.url = None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env,
                                     stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        suite.servers.append(self)
        threading.Thread(target=self._drain, args=(self.proc.stdout, "stdout"), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr, "stderr"), daemon=True).start()
        if not self.first_stdout.wait(60) or not self.url:
            self.kill()
            raise RuntimeError(f"larder did not print its URL within 60 s: {args}\n{self.log()[-3000:]}")
        u = urllib.parse.urlparse(self.url)
        if u.hostname != "127.0.0.1":
            self.kill()
            raise RuntimeError(f"larder is not on 127.0.0.1: {self.url}")
        self.addr = (u.hostname, u.port)

    def _drain(self, stream, name):
        first = True
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.lock:
                self.lines.append((name, line))
            if name == "stdout" and first:
                first = False
                self.url = line.strip() if line.strip().startswith("http://") else None
                self.first_stdout.set()
        if name == "stdout":
            self.first_stdout.set()

    def log(self):
        with self.lock:
            return "\n".join(f"[{n}] {l}" for n, l in self.lines)

    def wait_log(self, pattern, timeout):
        """The first match of `pattern` in the output within `timeout` s, or None."""
        end = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.log())
            if m or time.monotonic() >= end or self.proc.poll() is not None:
                return m
            time.sleep(0.02)

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        """SIGKILL (a crash), and wait for it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass

    def stop(self):
        """SIGTERM, as a user stops it; SIGKILL if it takes over 30 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


# ---------------------------------------------------------------- HTTP helpers

def request(addr, method, path, body=None, headers=None, timeout=30):
    """One request on a fresh connection: (status, headers lower-cased, body)."""
    c = http.client.HTTPConnection(*addr, timeout=timeout)
    try:
        c.request(method, path, body, headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


class KeepAlive:
    """Requests on one keep-alive connection (reopened if the server closed it)."""

    def __init__(self, addr, headers=None, timeout=60):
        self.addr, self.headers, self.timeout = addr, headers or {}, timeout
        self.conn = None

    def __call__(self, method, path, body=None, headers=None):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(*self.addr, timeout=self.timeout)
            try:
                self.conn.request(method, path, body, {**self.headers, **(headers or {})})
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 1:
                    raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def raw_connect(addr, timeout=10):
    s = socket.create_connection(addr, timeout=timeout)
    s.settimeout(timeout)
    return s


def read_until_eof(sock, timeout):
    """Everything the server sends until it closes, and how it ended:
    'eof' (a FIN), 'reset' (an RST) or 'timeout' (still open after `timeout` s)."""
    data, end = b"", time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return data, "timeout"
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return data, "timeout"
        except (ConnectionResetError, BrokenPipeError):
            return data, "reset"
        if not chunk:
            return data, "eof"
        data += chunk


def read_head(sock, timeout):
    """Bytes up to the end of the first response head (or what came before a close/timeout)."""
    data, end = b"", time.monotonic() + timeout
    while b"\r\n\r\n" not in data:
        left = end - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        data += chunk
    return data


def wait_closed(sock, timeout):
    """'eof'/'reset' when the server closed the socket within `timeout` s
    (any bytes it sent first are skipped), else 'open'."""
    data, how = read_until_eof(sock, timeout)
    return ("open" if how == "timeout" else how), data


def still_open(sock, wait=0.5):
    """True when nothing arrives and the socket is not closed within `wait` s."""
    sock.settimeout(wait)
    try:
        chunk = sock.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        return True, b""
    except (ConnectionResetError, BrokenPipeError):
        return False, b"<reset>"
    return False, chunk or b"<eof>"


class Response:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return f"{self.status} {self.body[:120]!r}"


def parse_responses(buf, methods, eof=True):
    """Splits the bytes a connection received into whole responses, one per
    method in `methods` (interim 1xx answers skipped). Returns (responses,
    leftover bytes): a response cut short is left out."""
    out, i = [], 0
    while len(out) < len(methods):
        end = buf.find(b"\r\n\r\n", i)
        if end < 0:
            break
        head = buf[i:end].decode("latin-1").split("\r\n")
        parts = head[0].split(" ", 2)
        try:
            status = int(parts[1])
        except (IndexError, ValueError):
            break
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        j = end + 4
        if 100 <= status < 200:
            i = j
            continue
        method = methods[len(out)]
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body, k = b"", j
            done = False
            while True:
                le = buf.find(b"\r\n", k)
                if le < 0:
                    break
                size = int(buf[k:le].split(b";")[0].strip() or b"0", 16)
                k = le + 2
                if size == 0:
                    te = buf.find(b"\r\n", k)
                    while te >= 0 and te != k:  # trailer lines
                        k = te + 2
                        te = buf.find(b"\r\n", k)
                    if te < 0:
                        break
                    k = te + 2
                    done = True
                    break
                if len(buf) < k + size + 2:
                    break
                body += buf[k:k + size]
                k += size + 2
            if not done:
                break
            j = k
        elif "content-length" in headers:
            n = int(headers["content-length"])
            if len(buf) < j + n:
                break
            body = buf[j:j + n]
            j += n
        else:
            if not eof:
                break
            body = buf[j:]
            j = len(buf)
        out.append(Response(status, parts[2] if len(parts) > 2 else "", headers, body))
        i = j
    return out, buf[i:]


def raw_request(method, path, body=b"", headers=None):
    h = {"Host": "127.0.0.1", **(headers or {})}
    if body and not any(k.lower() in ("content-length", "transfer-encoding") for k in h):
        h["Content-Length"] = str(len(body))
    return (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n").encode() + body


def json_error(resp):
    j = resp.json() if resp is not None else None
    return j.get("error") if isinstance(j, dict) else None


# ---------------------------------------------------------------- the suite

class Suite:
    def __init__(self, args):
        self.binary = os.path.abspath(args.binary)
        self.store_url = args.store_url
        self.rng = random.Random(args.seed)
        self.seed = args.seed
        # A kill -9 is a process crash, not a power cut: the page cache
        # survives it, so the restore checks need no fsync, and without it a
        # 30,000-line restore takes seconds, not minutes.
        self.restore_flags = [] if args.restore_fsync else ["--no-fsync"]
        self.root = tempfile.mkdtemp(prefix="larder-edges-")
        self.servers = []
        self.passed = self.failed = 0

    def result(self, name, ok, why=""):
        if ok:
            self.passed += 1
            print(f"ok {name}" + (f" ({why})" if why else ""), flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {why}", flush=True)

    def check(self, name, fn, *args):
        """Runs one check; an exception is its failure."""
        try:
            ok, why = fn(*args)
        except Exception as e:  # noqa: BLE001 - a check that blew up failed
            ok, why = False, f"{type(e).__name__}: {e} | " + traceback.format_exc(limit=3).replace("\n", " | ")[-600:]
        self.result(name, ok, why)
        return ok

    def server(self, *a, **kw):
        return Server(self, *a, **kw)

    def cleanup(self):
        for s in self.servers:
            s.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def store_name(self):
        return "postgres" if self.store_url else "disk"

    # ------------------------------------------------------------ 1. half-close

    def group_halfclose(self):
        srv = self.server()  # default flags: fsync on
        try:
            a = srv.addr
            ka = KeepAlive(a)
            ka("DELETE", "/store/hc/")
            repeats = 20
            self.check("halfclose.put", self.hc_put, a, repeats)
            self.check("halfclose.append", self.hc_append, a, ka, repeats)
            self.check("halfclose.get", self.hc_read, a, ka, "GET", repeats)
            self.check("halfclose.head", self.hc_read, a, ka, "HEAD", repeats)
            self.check("halfclose.delete", self.hc_delete, a, ka, repeats)
            self.check("halfclose.pipelined", self.hc_pipelined, a, repeats)
            ka.close()
        finally:
            srv.kill()

    @staticmethod
    def half_closed_exchange(addr, payload, methods, timeout=15):
        """Sends `payload` (complete requests), shuts down writing, reads until
        the server closes. Returns (responses, how it ended, raw bytes)."""
        s = raw_connect(addr)
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            data, how = read_until_eof(s, timeout)
        finally:
            s.close()
        responses, _ = parse_responses(data, methods, eof=True)
        return responses, how, data

    @staticmethod
    def summarize(problems, repeats):
        if problems:
            wrong = len({p.split(":", 1)[0] for p in problems})
            return False, f"{wrong}/{repeats} attempts wrong; first: " + " || ".join(problems[:3])
        return True, f"{repeats}/{repeats}"

    def hc_put(self, a, repeats):
        problems = []
        for i in range(repeats):
            key, value = f"hc/put/{i}", f"half-closed put {i}".encode()
            rs, how, raw = self.half_closed_exchange(
                a, raw_request("PUT", "/store/" + key, value, {"Content-Type": "text/plain"}), ["PUT"])
            st, _, got = request(a, "GET", "/store/" + key)
            stored = st == 200 and got == value
            answered = bool(rs) and rs[0].status in (200, 201, 204)
            if not rs:
                problems.append(f"#{i}: no answer ({how}, {len(raw)} bytes: {raw[:80]!r}); "
                                + ("the write WAS applied without its answer" if stored else "not applied"))
            elif rs[0].status != 201:
                problems.append(f"#{i}: answered {rs[0]!r}, want 201")
            elif how not in ("eof",):
                problems.append(f"#{i}: answered, then the connection {'was reset' if how == 'reset' else 'stayed open 15 s'}")
            if answered and not stored:
                problems.append(f"#{i}: answered {rs[0].status} but GET finds {st} {got[:40]!r}")
        return self.summarize(problems, repeats)

    def hc_append(self, a, ka, repeats):
        problems = []
        for i in range(repeats):
            key = f"hc/list/{i}"
            st, _, _ = ka("PUT", "/store/" + key, b"[0]", {"Content-Type": "application/json"})
            assert st in (201, 204), f"setup PUT {st}"
            rs, how, raw = self.half_closed_exchange(
                a, raw_request("POST", "/store/" + key, b"1", {"Content-Type": "application/json"}), ["POST"])
            st, _, got = ka("GET", "/store/" + key)
            now = json.loads(got) if st == 200 else None
            if not rs:
                problems.append(f"#{i}: no answer ({how}, {raw[:80]!r}); stored {now}"
                                + (" - the append WAS applied without its answer" if now == [0, 1] else ""))
                continue
            r = rs[0]
            if r.status != 200 or (r.json() or {}).get("count") != 2:
                problems.append(f"#{i}: answered {r!r}, want 200 {{\"count\": 2}}")
            elif how != "eof":
                problems.append(f"#{i}: answered, then the connection {how} (want a close)")
            if r.status == 200 and now != [0, 1]:
                problems.append(f"#{i}: answered 200 but the list is {now}")
            if r.status != 200 and now != [0]:
                problems.append(f"#{i}: answered {r.status} but the list is {now}")
        return self.summarize(problems, repeats)

    def hc_read(self, a, ka, method, repeats):
        value = b"half-closed read value"
        st, _, _ = ka("PUT", "/store/hc/read", value, {"Content-Type": "text/plain"})
        assert st in (201, 204), f"setup PUT {st}"
        problems = []
        for i in range(repeats):
            rs, how, raw = self.half_closed_exchange(a, raw_request(method, "/store/hc/read"), [method])
            if not rs:
                problems.append(f"#{i}: no answer ({how}, {raw[:80]!r})")
                continue
            r = rs[0]
            if r.status != 200:
                problems.append(f"#{i}: {r!r}, want 200")
            elif method == "GET" and r.body != value:
                problems.append(f"#{i}: body {r.body[:60]!r}")
            elif method == "HEAD" and r.headers.get("content-length") != str(len(value)):
                problems.append(f"#{i}: HEAD Content-Length {r.headers.get('content-length')}")
            elif how != "eof":
                problems.append(f"#{i}: answered, then the connection {how} (want a close)")
        return self.summarize(problems, repeats)

    def hc_delete(self, a, ka, repeats):
        problems = []
        for i in range(repeats):
            key = f"hc/del/{i}"
            st, _, _ = ka("PUT", "/store/" + key, b"doomed", {"Content-Type": "text/plain"})
            assert st in (201, 204), f"setup PUT {st}"
            rs, how, raw = self.half_closed_exchange(a, raw_request("DELETE", "/store/" + key), ["DELETE"])
            st, _, _ = ka("GET", "/store/" + key)
            if not rs:
                problems.append(f"#{i}: no answer ({how}, {raw[:80]!r})"
                                + ("; the delete WAS applied without its answer" if st == 404 else "; not applied"))
                continue
            r = rs[0]
            if r.status != 204:
                problems.append(f"#{i}: {r!r}, want 204")
            elif how != "eof":
                problems.append(f"#{i}: answered, then the connection {how} (want a close)")
            if r.status == 204 and st != 404:
                problems.append(f"#{i}: answered 204 but GET finds {st}")
        return self.summarize(problems, repeats)

    def hc_pipelined(self, a, repeats):
        problems = []
        for i in range(repeats):
            key, value = f"hc/pipe/{i}", f"pipelined {i}".encode()
            payload = (raw_request("PUT", "/store/" + key, value, {"Content-Type": "text/plain"})
                       + raw_request("GET", "/store/" + key)
                       + raw_request("DELETE", "/store/" + key))
            rs, how, raw = self.half_closed_exchange(a, payload, ["PUT", "GET", "DELETE"])
            st, _, got = request(a, "GET", "/store/" + key)
            got_statuses = [r.status for r in rs]
            if got_statuses != [201, 200, 204] or rs[1].body != value:
                problems.append(f"#{i}: answers {got_statuses} (want [201, 200, 204]), GET body "
                                f"{rs[1].body[:40] if len(rs) > 1 else None!r}, end {how}, {len(raw)} bytes")
            elif how != "eof":
                problems.append(f"#{i}: three answers, then the connection {how} (want a close)")
            # Applied exactly as answered: the DELETE answered means absent;
            # the PUT answered and the DELETE not means present.
            answered = [r.status for r in rs]
            if len(answered) >= 3 and answered[2] == 204:
                want = 404
            elif len(answered) >= 1 and answered[0] == 201:
                want = 200
            else:
                want = 404
            if st != want:
                problems.append(f"#{i}: answers {answered} but GET afterwards is {st} (want {want}): "
                                "a write applied without its answer, or answered and not applied")
        return self.summarize(problems, repeats)

    # ------------------------------------------------------------ 2. token and S3

    def group_token_s3(self):
        try:
            import boto3  # noqa: F401
            from botocore.config import Config  # noqa: F401
        except ImportError as e:
            self.result("token_s3.boto3", False, f"boto3 is not installed: {e}")
            return
        # A test's S3 client uses none of the machine's AWS configuration.
        os.environ.update({"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                           "AWS_EC2_METADATA_DISABLED": "true"})
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                  "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
            os.environ.pop(k, None)

        # No S3 keys: the default pair is off and every request is refused.
        srv = self.server(["--token", TOKEN, "--s3-port", "0"], log_level=None)
        try:
            m = srv.wait_log(r"S3 listening on (http://\S+)", 15)
            if not m:
                self.result("token_s3.no_keys.listening", False, f"no 'S3 listening on' line: {srv.log()[-1500:]}")
                return
            s3url = m.group(1)
            self.check("token_s3.no_keys.startup_says_so", self.s3_startup_message, srv)
            self.check("token_s3.no_keys.default_key_refused", self.s3_default_refused, srv, s3url)
            self.check("token_s3.no_keys.unsigned_refused", self.s3_unsigned_refused, s3url)
        finally:
            srv.kill()

        # Keys from the environment: they work, the default pair does not.
        key, secret = "edgeaccesskey", "edge-secret-key-0123456789"
        srv = self.server(["--token", TOKEN, "--s3-port", "0"], log_level=None,
                          env={"LARDER_S3_ACCESS_KEY": key, "LARDER_S3_SECRET_KEY": secret})
        try:
            m = srv.wait_log(r"S3 listening on (http://\S+)", 15)
            if not m:
                self.result("token_s3.env_keys.listening", False, f"no 'S3 listening on' line: {srv.log()[-1500:]}")
                return
            s3url = m.group(1)
            self.check("token_s3.env_keys.work", self.s3_env_keys_work, srv, s3url, key, secret)
            self.check("token_s3.env_keys.default_key_refused", self.s3_default_refused, srv, s3url, True)
        finally:
            srv.kill()

    @staticmethod
    def s3_client(url, key, secret):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
                            region_name="us-east-1",
                            config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1, "mode": "standard"},
                                          connect_timeout=10, read_timeout=30))

    def s3_startup_message(self, srv):
        # Whatever the wording: a start-up line (not the listening line) that
        # speaks of S3 and of keys/credentials, e.g. "no S3 access keys:
        # every S3 request is refused".
        time.sleep(1.0)
        pattern = re.compile(r"(?i)(?=.*\bS3\b)(?=.*(key|credential)).*")
        found = [l for _, l in srv.lines if "S3 listening on" not in l and pattern.search(l)]
        if found:
            return True, found[0].strip()[:200]
        return False, "no start-up line says the S3 listener has no keys; output was: " + srv.log()[-1200:]

    def s3_default_refused(self, srv, s3url, with_keys=False):
        from botocore.exceptions import ClientError
        c = self.s3_client(s3url, DEFAULT_S3_KEY, DEFAULT_S3_SECRET)
        calls = [("ListBuckets", lambda: c.list_buckets())]
        if not with_keys:
            calls += [("PutObject", lambda: c.put_object(Bucket="edgeb", Key="k", Body=b"should not be stored")),
                      ("GetObject", lambda: c.get_object(Bucket="edgeb", Key="k"))]
        problems = []
        for name, call in calls:
            try:
                call()
                problems.append(f"{name} with the default key succeeded")
            except ClientError as e:
                status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                code = e.response.get("Error", {}).get("Code")
                if status != 403 or code != "InvalidAccessKeyId":
                    problems.append(f"{name}: {status} {code}, want 403 InvalidAccessKeyId")
        st, _, body = request(srv.addr, "GET", "/store/edgeb/k", headers={"Authorization": f"Bearer {TOKEN}"})
        if st != 404:
            problems.append(f"the refused PutObject stored something: GET /store/edgeb/k is {st} {body[:40]!r}")
        return (not problems), "; ".join(problems)

    def s3_unsigned_refused(self, s3url):
        u = urllib.parse.urlparse(s3url)
        problems = []
        for path in ("/", "/edgeb/k"):
            st, _, body = request((u.hostname, u.port), "GET", path)
            text = body.decode("utf-8", "replace")
            if st != 403 or "<Code>InvalidAccessKeyId</Code>" not in text:
                problems.append(f"unsigned GET {path}: {st} {text[:160]!r}, want 403 InvalidAccessKeyId")
        return (not problems), "; ".join(problems)

    def s3_env_keys_work(self, srv, s3url, key, secret):
        from botocore.exceptions import ClientError
        c = self.s3_client(s3url, key, secret)
        bucket = "edge-env"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        request(srv.addr, "DELETE", f"/store/{bucket}/", headers=auth)
        try:
            c.create_bucket(Bucket=bucket)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou",):
                raise
        c.put_object(Bucket=bucket, Key="greeting", Body=b"hello from boto3", ContentType="text/plain")
        got = c.get_object(Bucket=bucket, Key="greeting")["Body"].read()
        if got != b"hello from boto3":
            return False, f"GetObject returned {got[:60]!r}"
        names = [b["Name"] for b in c.list_buckets().get("Buckets", [])]
        if bucket not in names:
            return False, f"ListBuckets shows {names}"
        st, _, body = request(srv.addr, "GET", f"/store/{bucket}/greeting", headers=auth)
        if st != 200 or body != b"hello from boto3":
            return False, f"the object is not at /store/{bucket}/greeting: {st} {body[:60]!r}"
        return True, ""

    # ------------------------------------------------------------ 3. connections

    def group_connections(self):
        self.check("connections.silent_sockets_at_default_cap", self.conn_silent_default_cap)
        self.check("connections.evicts_longest_idle", self.conn_evicts_longest_idle)
        self.check("connections.503_when_all_in_flight", self.conn_all_in_flight)
        self.check("connections.header_timeout_for_silent", self.conn_header_timeout)

    def conn_silent_default_cap(self, count=4200, cap=4096):
        need = count + 256
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < need:
            target = need if hard == resource.RLIM_INFINITY else min(hard, max(need, soft))
            if target < need:
                return False, f"RLIMIT_NOFILE hard limit {hard} is below the {need} descriptors this check needs"
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        srv = self.server()  # default flags: the default cap
        socks = []
        try:
            # Sanity before: the store answers.
            st, _, _ = request(srv.addr, "GET", "/healthz")
            if st != 200:
                return False, f"/healthz before the silent sockets: {st}"
            time.sleep(0.3)
            started = time.monotonic()
            failed = 0
            for _ in range(count):
                try:
                    s = socket.create_connection(srv.addr, timeout=3)
                    socks.append(s)
                except OSError:
                    failed += 1
                    if failed > 50:
                        break
            opened = time.monotonic() - started
            # A normal client, now: answered, not 503, promptly.
            t = time.monotonic()
            try:
                st1, _, b1 = request(srv.addr, "GET", "/healthz", timeout=10)
            except OSError as e:
                st1, b1 = f"error {e!r}", b""
            t1 = time.monotonic() - t
            t = time.monotonic()
            try:
                st2, _, b2 = request(srv.addr, "PUT", "/store/silent/after", b"still served",
                                     {"Content-Type": "text/plain"}, timeout=10)
            except OSError as e:
                st2, b2 = f"error {e!r}", b""
            t2 = time.monotonic() - t
            since_first = time.monotonic() - started
            facts = (f"{len(socks)} silent sockets open ({failed} connects failed) in {opened:.1f} s; "
                     f"GET /healthz {st1} in {t1 * 1000:.0f} ms, PUT {st2} in {t2 * 1000:.0f} ms")
            problems = []
            if len(socks) <= cap:
                problems.append(f"only {len(socks)} sockets opened, not past the cap {cap}")
            if st1 != 200:
                problems.append(f"GET /healthz answered {st1} {b1[:100]!r}")
            if st2 not in (201, 204):
                problems.append(f"PUT answered {st2} {b2[:100]!r}")
            if isinstance(t1, float) and (t1 > 5 or t2 > 5):
                problems.append("an answer took over 5 s")
            if since_first > 9:
                problems.append(f"inconclusive: {since_first:.1f} s passed since the first silent socket, "
                                "close to the default 10 s header timeout")
            return (not problems), "; ".join(problems) + (" | " if problems else "") + facts
        finally:
            for s in socks:
                try:
                    s.close()
                except OSError:
                    pass
            srv.kill()

    def conn_evicts_longest_idle(self):
        srv = self.server(["--max-connections", "8", "--idle-timeout", "300"])
        conns = []
        try:
            time.sleep(0.3)
            for i in range(8):
                s = raw_connect(srv.addr)
                s.sendall(raw_request("GET", "/healthz"))
                data = b""
                end = time.monotonic() + 10
                while time.monotonic() < end:
                    rs, _ = parse_responses(data, ["GET"], eof=False)
                    if rs:
                        break
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                rs, _ = parse_responses(data, ["GET"], eof=False)
                if not rs or rs[0].status != 200:
                    return False, f"keep-alive connection {i}: first request answered {rs}"
                conns.append(s)
                time.sleep(0.1)  # a clear idle order: connection 0 is the longest idle
            time.sleep(0.3)
            ninth = raw_connect(srv.addr)
            ninth.sendall(raw_request("GET", "/healthz"))
            head = read_head(ninth, 10)
            ninth.close()
            problems = []
            if not head.startswith(b"HTTP/1.1 200"):
                problems.append(f"the 9th connection got {head[:120]!r}, want 200")
            how, data = wait_closed(conns[0], 5)
            if how == "open":
                problems.append("the longest-idle connection (the first) was not closed")
            # The others are open and still served.
            for i, s in enumerate(conns[1:], start=1):
                ok, seen = still_open(s, 0.05)
                if not ok:
                    problems.append(f"connection {i} (not the longest idle) was closed or sent {seen[:60]!r}")
                    continue
                s.sendall(raw_request("GET", "/healthz"))
                h = read_head(s, 10)
                if not h.startswith(b"HTTP/1.1 200"):
                    problems.append(f"connection {i} not served after the eviction: {h[:80]!r}")
            return (not problems), "; ".join(problems)
        finally:
            for s in conns:
                s.close()
            srv.kill()

    def conn_all_in_flight(self):
        srv = self.server(["--max-connections", "8", "--idle-timeout", "300"])
        watchers = []
        try:
            st, h, _ = request(srv.addr, "PUT", "/store/watched", b"v1", {"Content-Type": "text/plain"})
            if st not in (201, 204) or "etag" not in h:
                return False, f"setup PUT {st}"
            etag = h["etag"]
            time.sleep(0.5)  # the setup connection is closed and no longer counted
            for i in range(8):
                s = raw_connect(srv.addr)
                s.sendall(raw_request("GET", "/store/watched?wait=30", headers={"If-None-Match": etag}))
                watchers.append(s)
                time.sleep(0.05)
            time.sleep(0.7)  # every watch parked
            for i, s in enumerate(watchers):
                ok, seen = still_open(s, 0.05)
                if not ok:
                    return False, f"watch {i} was answered or closed before the 9th connection: {seen[:80]!r}"
            ninth = raw_connect(srv.addr)
            try:
                ninth.sendall(raw_request("GET", "/healthz"))
            except OSError:
                pass
            data, how = read_until_eof(ninth, 10)
            ninth.close()
            rs, _ = parse_responses(data, ["GET"], eof=True)
            problems = []
            if not rs or rs[0].status != 503 or json_error(rs[0]) != "too_many_connections":
                problems.append(f"the 9th connection got {rs[0] if rs else data[:120]!r}, want 503 too_many_connections")
            for i, s in enumerate(watchers):
                ok, seen = still_open(s, 0.3 if i == 0 else 0.05)
                if not ok:
                    problems.append(f"watch {i} was closed or answered: {seen[:60]!r}")
            return (not problems), "; ".join(problems)
        finally:
            for s in watchers:
                s.close()
            srv.kill()

    def conn_header_timeout(self):
        srv = self.server(["--header-timeout", "1", "--idle-timeout", "300"])
        try:
            s = raw_connect(srv.addr)
            t = time.monotonic()
            how, data = wait_closed(s, 60)
            elapsed = time.monotonic() - t
            s.close()
            if how == "open":
                return False, "a connection that sent nothing was still open after 60 s (header timeout 1 s, idle 300 s)"
            if data and not data.startswith(b"HTTP/1.1 408"):
                return False, f"closed after {elapsed:.1f} s with {data[:100]!r} (a 408 or nothing expected)"
            return True, f"closed after {elapsed:.1f} s ({how}{', 408 first' if data else ''})"
        finally:
            srv.kill()

    # ------------------------------------------------------------ 4. restore

    OLD_COUNT, NEW_COUNT = 200, 30_000

    def old_set(self):
        """200 keys under r/: every 300th of the new keys (overlapping, old
        values) and, between them, keys the new set does not have."""
        old = {}
        for i in range(0, self.NEW_COUNT, self.NEW_COUNT // (self.OLD_COUNT // 2)):
            old[f"r/k{i:05d}"] = f"old value {i:05d} ........................".encode()
            old[f"r/k{i + 150:05d}-old"] = f"old value {i + 150:05d}-old ....................".encode()
        assert len(old) == self.OLD_COUNT
        return old

    def new_set(self):
        return {f"r/k{i:05d}": f"new {i:05d}".encode() for i in range(self.NEW_COUNT)}

    @staticmethod
    def document(values, bad_line=None):
        lines = [json.dumps({"key": k, "contentType": "text/plain", "expires": None, "text": v.decode()},
                            separators=(",", ":")) for k, v in sorted(values.items())]
        if bad_line is not None:
            lines.append(bad_line)
        return ("\n".join(lines) + "\n").encode()

    def seed_old(self, addr):
        """Makes r/ hold exactly the old set; returns key -> etag of each."""
        ka = KeepAlive(addr)
        st, _, body = ka("DELETE", "/store/r/")
        assert st == 200, f"setup: DELETE /store/r/ answered {st} {body[:400]!r}"
        etags = {}
        for k, v in sorted(self.old_set().items()):
            st, h, body = ka("PUT", "/store/" + k, v, {"Content-Type": "text/plain"})
            assert st == 201, f"setup: PUT {k} answered {st} {body[:300]!r}"
            etags[k] = h.get("etag")
        ka.close()
        return etags

    @staticmethod
    def listing_page(addr, after, limit, conn=None):
        q = f"/store/r/?limit={limit}" + (f"&after={urllib.parse.quote(after)}" if after else "")
        st, _, body = (conn or (lambda m, p: request(addr, m, p)))("GET", q)
        if st != 200:
            raise AssertionError(f"GET {q}: {st} {body[:200]!r}")
        return json.loads(body)

    def classify_page(self, page, after, limit, old_etags, new_keys_sorted):
        """'old' or 'new' when the page is exactly that state's page for
        (after, limit), else a description of the mix."""
        got = [(e["key"], e.get("etag"), e.get("size")) for e in page["keys"]]
        old_keys = sorted(old_etags)
        want_old = [k for k in old_keys if after is None or k > after][:limit]
        if [(k, t) for k, t, _ in got] == [(k, old_etags[k]) for k in want_old]:
            return "old"
        want_new = [k for k in new_keys_sorted if after is None or k > after][:limit]
        new_size = len(b"new 00000")
        if ([k for k, _, _ in got] == want_new and all(s == new_size for _, _, s in got)
                and not any(t == old_etags.get(k) for k, t, _ in got)):
            return "new"
        keys = [k for k, _, _ in got]
        olds = sum(1 for k, t, _ in got if old_etags.get(k) == t)
        return (f"mixed page (after={after}, limit={limit}): {len(keys)} keys, {olds} with old etags, "
                f"{sum(1 for k in keys if k.endswith('-old'))} old-only keys; first {keys[:3]}, last {keys[-3:]}")

    def restore_readers(self, srv, bad_line=None):
        """Seeds the old set, restores the new one (replace=1) while readers
        list r/; returns (problems, {"old": n, "new": n} listings seen, the answer, the old etags)."""
        a = srv.addr
        old_etags = self.seed_old(a)
        new = self.new_set()
        new_sorted = sorted(new)
        doc = self.document(new, bad_line)
        # Pages at the same places whatever the size (for 30,000: after
        # r/k14900 1,000 keys, after r/k19999 3,000, after r/k29000 1,000).
        n = self.NEW_COUNT
        pages = [(None, min(10000, n)), (f"r/k{n // 2 - n // 300:05d}", max(1, n // 30)), (None, 1),
                 (f"r/k{2 * n // 3 - 1:05d}", max(1, n // 10)), (f"r/k{n - n // 30:05d}", max(1, n // 30))]
        for after, limit in pages:
            kind = self.classify_page(self.listing_page(a, after, limit), after, limit, old_etags, new_sorted)
            assert kind == "old", f"before the restore the listing is not the old set: {kind}"
        done = threading.Event()
        answer = {}

        def restore():
            t = time.monotonic()
            try:
                answer["result"] = request(a, "POST", "/snapshot?prefix=r/&replace=1", doc,
                                           {"Content-Type": "application/x-ndjson"}, timeout=900)
            except Exception as e:  # noqa: BLE001
                answer["error"] = repr(e)
            answer["seconds"] = time.monotonic() - t
            done.set()

        seen = {"old": 0, "new": 0}
        problems = []
        lock = threading.Lock()

        def reader(offset):
            ka = KeepAlive(a)
            n = offset
            mine = []  # this reader's kinds, in order: old after new is a step back
            while not done.is_set():
                after, limit = pages[n % len(pages)]
                n += 1
                try:
                    page = self.listing_page(a, after, limit, ka)
                except Exception as e:  # noqa: BLE001
                    if not done.is_set():
                        with lock:
                            problems.append(f"listing failed during the restore: {e}")
                    break
                kind = self.classify_page(page, after, limit, old_etags, new_sorted)
                with lock:
                    if kind in seen:
                        seen[kind] += 1
                        if kind == "old" and "new" in mine:
                            problems.append("a reader's listing showed the old set after its earlier one showed the new set")
                    else:
                        problems.append(kind)
                mine.append(kind)
            ka.close()

        restorer = threading.Thread(target=restore, daemon=True)
        readers = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(2)]
        restorer.start()
        for r in readers:
            r.start()
        restorer.join(920)
        done.set()
        for r in readers:
            r.join(60)
        return problems[:5], seen, answer, old_etags

    def snapshot_state(self, addr):
        """key -> value bytes under r/, read with GET /snapshot."""
        st, _, body = request(addr, "GET", "/snapshot?prefix=r/", timeout=300)
        if st != 200:
            raise AssertionError(f"GET /snapshot?prefix=r/: {st} {body[:200]!r}")
        import base64
        state = {}
        for line in body.split(b"\n"):
            if not line.strip():
                continue
            o = json.loads(line)
            if "text" in o:
                v = o["text"].encode()
            elif "base64" in o:
                v = base64.b64decode(o["base64"])
            elif "json" in o:
                v = json.dumps(o["json"], separators=(",", ":")).encode()
            else:
                raise AssertionError(f"snapshot line without a value: {line[:200]!r}")
            state[o["key"]] = v
        return state

    def listed_keys(self, addr):
        keys, after = [], None
        for _ in range(100):
            page = self.listing_page(addr, after, 10000)
            keys += [e["key"] for e in page["keys"]]
            after = page.get("next")
            if not after:
                break
        return keys

    def describe_state(self, state, old, new):
        if state == old:
            return "old"
        if state == new:
            return "new"
        n_old = sum(1 for k, v in state.items() if old.get(k) == v)
        n_new = sum(1 for k, v in state.items() if new.get(k) == v)
        other = len(state) - n_old - n_new
        return (f"neither set: {len(state)} keys, {n_old} with old values, {n_new} with new values, "
                f"{other} other; {len(set(old) - set(state))} old keys and {len(set(new) - set(state))} new keys missing")

    def check_state(self, addr, allowed):
        """The prefix through /snapshot, the listing and a sample of GETs is
        exactly one of `allowed` ('old'/'new'); returns (ok, what it is)."""
        old, new = self.old_set(), self.new_set()
        state = self.snapshot_state(addr)
        what = self.describe_state(state, old, new)
        if what not in allowed:
            return False, what
        keys = self.listed_keys(addr)
        want = old if what == "old" else new
        if keys != sorted(want):
            return False, f"the snapshot shows the {what} set, the listing {len(keys)} keys that differ"
        for k in self.rng.sample(sorted(want), 20):
            st, _, v = request(addr, "GET", "/store/" + k)
            if st != 200 or v != want[k]:
                return False, f"the snapshot shows the {what} set, GET {k} gives {st} {v[:40]!r}"
        return True, what

    def group_restore(self):
        duration = None

        # 4a. Readers during a restore see one set or the other.
        srv = self.server(self.restore_flags)
        try:
            def readers_check():
                nonlocal duration
                problems, seen, answer, _ = self.restore_readers(srv)
                duration = answer.get("seconds")
                if "error" in answer:
                    return False, f"the restore failed: {answer['error']}"
                st, _, body = answer["result"]
                if st != 200:
                    return False, f"the restore answered {st} {body[:200]!r}"
                # API.md does not give the answer's body; the server's says {"restored": N, ...}.
                restored = (json.loads(body) or {}).get("restored", self.NEW_COUNT)
                if restored != self.NEW_COUNT:
                    problems.append(f"the answer says restored {restored}, want {self.NEW_COUNT}")
                ok, what = self.check_state(srv.addr, ("new",))
                if not ok:
                    problems.append(f"after the restore: {what}")
                facts = f"{seen['old']} old and {seen['new']} new listings during a {duration:.1f} s restore"
                if seen["old"] + seen["new"] < 3:
                    problems.append("inconclusive: fewer than 3 listings ran during the restore")
                return (not problems), "; ".join(problems) + (" | " if problems else "") + facts
            self.check("restore.readers_see_one_set", readers_check)
        finally:
            srv.kill()

        # A server of its own each (a restore a client gave up on may still be running in the last one).
        srv = self.server(self.restore_flags)
        try:
            # 4b. A bad last line: 400 invalid_snapshot naming it, the old set stays.
            def bad_line_check():
                bad = "this line is not JSON"
                problems, seen, answer, _ = self.restore_readers(srv, bad_line=bad)
                if "error" in answer:
                    return False, f"the restore request failed: {answer['error']}"
                st, _, body = answer["result"]
                try:
                    err = json.loads(body)
                except ValueError:
                    err = {}
                line_no = str(self.NEW_COUNT + 1)
                if st != 400 or err.get("error") != "invalid_snapshot":
                    problems.append(f"answered {st} {body[:200]!r}, want 400 invalid_snapshot")
                elif line_no not in str(err.get("message", "")):
                    problems.append(f"the message does not name line {line_no}: {err.get('message')!r}")
                if seen["new"]:
                    problems.append(f"{seen['new']} listings showed the new set during a restore that failed")
                ok, what = self.check_state(srv.addr, ("old",))
                if not ok:
                    problems.append(f"after the failed restore: {what}")
                facts = f"{seen['old']} listings during it, all old" if not seen["new"] else ""
                return (not problems), "; ".join(problems) + (" | " if problems and facts else "") + facts
            self.check("restore.bad_line_keeps_old_set", bad_line_check)
        finally:
            srv.kill()

        # 4c. kill -9 mid-apply, restart on the same data: one set or the other.
        # The moments: early ones, and fractions of how long a restore takes
        # on this machine without readers (the one above had readers).
        data_dir = tempfile.mkdtemp(prefix="data-", dir=self.root) if not self.store_url else None
        moments = [0.2, 0.5, 1.0]
        timing = {}
        self.check("restore.kill9_after_answer_keeps_new_set", self.restore_kill_after_answer, data_dir, timing)
        if timing.get("seconds"):
            duration = timing["seconds"]
            moments += [duration * f for f in (0.25, 0.5, 0.75, 0.9) if duration * f > 1.2]
            print(f"# a restore alone took {duration:.1f} s; kill moments {[round(m, 2) for m in moments]}", flush=True)
        for moment in moments:
            moment = round(moment + self.rng.uniform(0, 0.05), 3)
            self.check(f"restore.kill9_at_{moment}s", self.restore_crash, data_dir, moment)
        self.check("restore.kill9_after_answer_then_bulk_delete", self.restore_then_bulk_delete)

    def restore_kill_after_answer(self, data_dir, timing):
        """A restore answered 200, then kill -9 at once: after a restart the
        prefix holds the new set, and the store works on (a bulk delete of
        the prefix). Also times a restore without readers, for the moments."""
        srv = self.server(self.restore_flags, data_dir=data_dir)
        try:
            self.seed_old(srv.addr)
            t = time.monotonic()
            st, _, body = request(srv.addr, "POST", "/snapshot?prefix=r/&replace=1", self.document(self.new_set()),
                                  {"Content-Type": "application/x-ndjson"}, timeout=900)
            seconds = time.monotonic() - t
        finally:
            srv.kill()
        if st != 200:
            return False, f"the restore answered {st} {body[:200]!r}"
        timing["seconds"] = seconds
        srv = self.server(self.restore_flags, data_dir=data_dir)
        try:
            ok, what = self.check_state(srv.addr, ("new",))
            if not ok:
                return False, f"after the restart the prefix holds {what}"
            return True, f"restore {seconds:.1f} s"
        finally:
            srv.kill()

    def restore_then_bulk_delete(self, attempts=3):
        """A restore answered 200, kill -9 at once, restart: the first
        request, a bulk delete of the prefix, deletes exactly the new set
        (a fresh data directory each attempt)."""
        problems = []
        for i in range(attempts):
            data_dir = tempfile.mkdtemp(prefix="data-", dir=self.root) if not self.store_url else None
            srv = self.server(self.restore_flags, data_dir=data_dir)
            try:
                self.seed_old(srv.addr)
                st, _, body = request(srv.addr, "POST", "/snapshot?prefix=r/&replace=1", self.document(self.new_set()),
                                      {"Content-Type": "application/x-ndjson"}, timeout=900)
            finally:
                srv.kill()
            if st != 200:
                problems.append(f"#{i}: the restore answered {st} {body[:200]!r}")
                continue
            srv = self.server(self.restore_flags, data_dir=data_dir)
            try:
                st, _, body = request(srv.addr, "DELETE", "/store/r/")
            finally:
                srv.kill()
            if st != 200 or json.loads(body).get("deleted") != self.NEW_COUNT:
                problems.append(f"#{i}: DELETE /store/r/ right after the restart answered {st} {body[:300]!r}"
                                f" (want 200 {{\"deleted\": {self.NEW_COUNT}}})")
        return self.summarize(problems, attempts)

    def restore_crash(self, data_dir, moment):
        srv = self.server(self.restore_flags, data_dir=data_dir)
        try:
            self.seed_old(srv.addr)
            doc = self.document(self.new_set())
            sent, answered = threading.Event(), {}

            def restore():
                c = http.client.HTTPConnection(*srv.addr, timeout=600)
                try:
                    c.request("POST", "/snapshot?prefix=r/&replace=1", doc, {"Content-Type": "application/x-ndjson"})
                    sent.set()
                    r = c.getresponse()
                    r.read()
                    answered["status"] = r.status
                    answered["at"] = time.monotonic()
                except Exception as e:  # noqa: BLE001 - the server was killed
                    answered["error"] = repr(e)
                finally:
                    sent.set()
                    c.close()

            t = threading.Thread(target=restore, daemon=True)
            t.start()
            if not sent.wait(120):
                return False, "the snapshot body was not sent within 120 s"
            body_sent = time.monotonic()
            time.sleep(moment)
            killed_at = time.monotonic()
            srv.kill()
            t.join(30)
            if "status" in answered and answered["at"] <= killed_at:
                when = f"after the restore was answered {answered['status']} ({answered['at'] - body_sent:.2f} s)"
            else:
                when = "during the restore"
        finally:
            srv.kill()
        if "status" in answered and answered["at"] <= killed_at and answered["status"] != 200:
            return False, f"inconclusive: the restore failed before the kill, {when}"
        srv2 = self.server(self.restore_flags, data_dir=data_dir)
        try:
            ok, what = self.check_state(srv2.addr, ("old", "new") if "during" in when else ("new",))
            return ok, f"killed {when}: the prefix holds {what}"
        finally:
            srv2.kill()

    # ------------------------------------------------------------ 5. trailers, events

    def group_protocol(self):
        srv = self.server()
        try:
            self.check("protocol.malformed_trailer_400", self.bad_trailer, srv.addr)
            self.check("protocol.wellformed_trailer_accepted", self.good_trailer, srv.addr)
            self.check("protocol.events_cache_control_no_store", self.events_no_store, srv.addr)
        finally:
            srv.kill()

    @staticmethod
    def chunked_put(addr, key, trailer):
        s = raw_connect(addr)
        try:
            s.sendall((f"PUT /store/{key} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n" + trailer + "\r\n").encode())
            data = b""
            end = time.monotonic() + 15
            while time.monotonic() < end:
                rs, _ = parse_responses(data, ["PUT"], eof=False)
                if rs:
                    return rs[0], data
                s.settimeout(max(0.01, end - time.monotonic()))
                try:
                    chunk = s.recv(65536)
                except (socket.timeout, ConnectionResetError):
                    break
                if not chunk:
                    break
                data += chunk
            rs, _ = parse_responses(data, ["PUT"], eof=True)
            return (rs[0] if rs else None), data
        finally:
            s.close()

    def bad_trailer(self, a):
        request(a, "DELETE", "/store/tr/bad")
        r, raw = self.chunked_put(a, "tr/bad", "junk\r\n")
        st, _, body = request(a, "GET", "/store/tr/bad")
        problems = []
        if r is None or r.status != 400:
            problems.append(f"a trailer line without a colon was answered {r if r else raw[:100]!r}, want 400")
        elif json_error(r) is None:
            problems.append(f"the 400 body is not a JSON error: {r.body[:100]!r}")
        if st != 404:
            problems.append(f"the value was stored anyway: GET is {st} {body[:40]!r}")
        return (not problems), "; ".join(problems)

    def good_trailer(self, a):
        request(a, "DELETE", "/store/tr/good")
        r, raw = self.chunked_put(a, "tr/good", "X-Check: 1\r\n")
        st, _, body = request(a, "GET", "/store/tr/good")
        if r is None or r.status != 201:
            return False, f"answered {r if r else raw[:100]!r}, want 201"
        if st != 200 or body != b"hello world":
            return False, f"GET afterwards: {st} {body[:40]!r}"
        return True, ""

    def events_no_store(self, a):
        s = raw_connect(a)
        try:
            s.sendall(raw_request("GET", "/events", headers={"Accept": "text/event-stream"}))
            head = read_head(s, 10)
        finally:
            s.close()
        text = head.split(b"\r\n\r\n")[0].decode("latin-1")
        lines = text.split("\r\n")
        if not lines[0].startswith("HTTP/1.1 200"):
            return False, f"GET /events answered {lines[0]!r}"
        headers = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            headers.setdefault(k.strip().lower(), []).append(v.strip())
        cc = ", ".join(headers.get("cache-control", []))
        directives = [d.strip().lower() for d in cc.split(",") if d.strip()]
        if "no-store" not in directives:
            return False, f"Cache-Control is {cc!r}, want no-store"
        if not any(v.lower().startswith("text/event-stream") for v in headers.get("content-type", [])):
            return False, f"Content-Type is {headers.get('content-type')}"
        return True, f"Cache-Control: {cc}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True, help="the larder executable")
    ap.add_argument("--store", choices=["disk"], default="disk", help="disk (default): a temp --data-dir per server")
    ap.add_argument("--store-url", help="postgres://... : run on PostgreSQL (passed to larder as --store URL)")
    ap.add_argument("--only", action="append", default=[],
                    help=f"run only this group (repeatable, or comma-separated): {', '.join(GROUPS)}")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--restore-fsync", action="store_true",
                    help="run the restore checks with fsync on (slow: minutes per 30,000-line restore)")
    ap.add_argument("--restore-lines", type=int, default=30_000,
                    help="lines of the restored document (30,000; CI runs 10,000)")
    a = ap.parse_args()
    only = [g.strip() for o in a.only for g in o.split(",") if g.strip()]
    unknown = [g for g in only if g not in GROUPS]
    if unknown:
        ap.error(f"unknown group {unknown}; groups: {', '.join(GROUPS)}")
    if not os.access(a.binary, os.X_OK):
        ap.error(f"no executable at {a.binary}")
    # SIGTERM (a `timeout`, a runner) ends the run through the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    suite = Suite(a)
    suite.NEW_COUNT = max(200, min(a.restore_lines, 99_999))  # keys are r/k%05d
    print(f"# store {suite.store_name()}, seed {a.seed}, binary {suite.binary}", flush=True)
    try:
        for g in GROUPS:
            if only and g not in only:
                continue
            try:
                getattr(suite, "group_" + g)()
            except Exception as e:  # noqa: BLE001 - a group that could not run fails
                suite.result(g, False, f"{type(e).__name__}: {e} | "
                             + traceback.format_exc(limit=4).replace("\n", " | ")[-800:])
    finally:
        suite.cleanup()
    print(f"{suite.passed} passed, {suite.failed} failed", flush=True)
    sys.exit(1 if suite.failed else 0)


if __name__ == "__main__":
    main()
