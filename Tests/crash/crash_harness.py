#!/usr/bin/env python3
"""Crash consistency: SIGKILL the real larder server at random moments during
mixed concurrent load, restart it on the same data, and check that every
acknowledged operation is reflected exactly.

    python3 Tests/crash/crash_harness.py --binary .build/debug/larder --kills 50
    python3 Tests/crash/crash_harness.py --binary ... --kills 5 --no-fsync
    python3 Tests/crash/crash_harness.py --binary ... --restore --kills 20 --max-run 0

Each worker thread owns its keys (so the expected state is exact): values it
PUTs and DELETEs, a JSON list it appends to, and keys it creates with POST.
An operation whose answer arrived is acknowledged; the one in flight when the
server died may or may not have happened. After each restart:
- every key holds its last acknowledged state, or the in-flight operation's;
- the list is exactly its acknowledged appends (plus the in-flight one, or not);
- every acknowledged generated key exists with its value;
- every value file is whole gzip whose content is one of the values sent;
- no temp file is left or listed; the listing and /metrics' key count agree
  with what GETs find.
Prints one JSON line per kill point and a summary; exit 1 on any violation.
"""
import argparse, gzip, http.client, json, os, random, re, shutil, signal, subprocess, sys, tempfile, threading, time, urllib.parse

def start(binary, data, fsync):
    args = [binary, "serve", "--port", "0", "--data-dir", data, "--log-level", "warning"] + ([] if fsync else ["--no-fsync"])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("http://"):
        raise SystemExit(f"larder did not start: {line!r} {proc.stderr.read().decode()[-2000:]}")
    # Drain what the server writes later (a full pipe would block it) and
    # keep the tail, so a server that dies on its own can say why.
    proc.output_tail = []
    def drain(stream):
        for out in iter(stream.readline, b""):
            proc.output_tail = (proc.output_tail + [out.decode(errors="replace")])[-400:]
    proc.drains = [threading.Thread(target=drain, args=(stream,), daemon=True) for stream in (proc.stdout, proc.stderr)]
    for t in proc.drains:
        t.start()
    u = urllib.parse.urlparse(line)
    return proc, (u.hostname, u.port)

def server_state(proc):
    """What to report when a request the harness did not cut failed: how
    the server exited (a crash's backtrace is written, symbolicated, before
    the exit), and its last output."""
    try:
        proc.wait(60)
        state = f"the server exited with {proc.returncode}"
        for t in proc.drains:  # they end at the pipes' end: the last lines are in
            t.join(5)
    except subprocess.TimeoutExpired:
        state = "the server is still running"
    return f"{state}; its last output:\n" + "".join(proc.output_tail)[-12000:]

def request(addr, method, path, body=None, headers=None, timeout=30):
    c = http.client.HTTPConnection(*addr, timeout=timeout)
    try:
        c.request(method, path, body, headers or {})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()

class Worker:
    """One client's model and load. Owns w<id>/k0..k9, w<id>/list and
    w<id>/gen/*. `state` is key -> bytes (present) or None (absent) after the
    acknowledged history. `run` drives load until the server dies; a new
    thread runs it again after each restart."""
    KEYS = 10

    def __init__(self, wid, rng_seed):
        self.wid, self.rng = wid, random.Random(rng_seed)
        self.state = {f"w{wid}/k{j}": None for j in range(self.KEYS)}
        self.list_len = 0            # acknowledged appends (elements 0..list_len-1)
        self.generated = {}          # acknowledged created key -> value
        self.pending = None          # (kind, key, value) in flight when the server died
        self.sent_values = set()     # every value ever sent, to tell torn from whole
        self.seq = 0
        self.acked = 0

    def value(self, key):
        self.seq += 1
        size = self.rng.choice([16, 200, 4000, 70_000, 300_000, 1_300_000])
        head = f"{key}#{self.seq}|".encode()
        body = head + bytes(self.rng.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)
        body = body[:max(size, len(head))]
        self.sent_values.add(body)
        return body

    def run(self, addr):
        self.addr = addr
        while True:
            op = self.rng.random()
            try:
                if op < 0.5:
                    key = f"w{self.wid}/k{self.rng.randrange(self.KEYS)}"
                    v = self.value(key)
                    self.pending = ("put", key, v)
                    s, _, b = request(self.addr, "PUT", "/store/" + key, v, {"Content-Type": "application/octet-stream"})
                    assert s in (201, 204), (s, b)
                    self.state[key] = v
                elif op < 0.65:
                    key = f"w{self.wid}/k{self.rng.randrange(self.KEYS)}"
                    self.pending = ("delete", key, None)
                    s, _, b = request(self.addr, "DELETE", "/store/" + key)
                    assert s in (204, 404), (s, b)
                    self.state[key] = None
                elif op < 0.9:
                    self.pending = ("append", f"w{self.wid}/list", self.list_len)
                    s, _, b = request(self.addr, "POST", f"/store/w{self.wid}/list?append",
                                      json.dumps(self.list_len).encode(), {"Content-Type": "application/json"})
                    assert s in (200, 201, 204), (s, b)
                    self.list_len += 1
                else:
                    v = self.value(f"w{self.wid}/gen")
                    self.pending = ("create", None, v)
                    s, h, b = request(self.addr, "POST", f"/store/w{self.wid}/gen/", v, {"Content-Type": "application/octet-stream"})
                    assert s == 201, (s, b)
                    self.generated[json.loads(b)["key"]] = v
                self.pending = None
                self.acked += 1
            except (OSError, http.client.HTTPException):
                return  # the server died: `pending` may or may not have happened

def check(addr, data, workers):
    """Checks the restarted server against the workers' models; returns
    (violations, facts) and settles each model on what was found."""
    bad, found_keys = [], set()
    for w in workers:
        p = w.pending
        for key, want in w.state.items():
            s, _, got = request(addr, "GET", "/store/" + key)
            now = got if s == 200 else None
            allowed = [want]
            if p and p[1] == key:
                allowed.append(p[2] if p[0] == "put" else None)
            if now not in allowed:
                bad.append(f"{key}: {'absent' if now is None else len(now)} bytes, expected one of "
                           f"{['absent' if a is None else len(a) for a in allowed]}")
            w.state[key] = now
            if now is not None:
                found_keys.add(key)
        s, _, got = request(addr, "GET", f"/store/w{w.wid}/list")
        items = json.loads(got) if s == 200 else []
        lengths = [w.list_len] + ([w.list_len + 1] if p and p[0] == "append" else [])
        if items != list(range(len(items))) or len(items) not in lengths:
            bad.append(f"w{w.wid}/list: {len(items)} elements (in order: {items == list(range(len(items)))}), expected {lengths}")
        w.list_len = len(items)
        if items:
            found_keys.add(f"w{w.wid}/list")
        for key, v in w.generated.items():
            s, _, got = request(addr, "GET", "/store/" + urllib.parse.quote(key))
            if s != 200 or got != v:
                bad.append(f"{key}: acknowledged create lost ({s})")
        # Generated keys whose answer never came may exist: only whole.
        s, _, got = request(addr, "GET", f"/store/w{w.wid}/gen/?limit=1000")
        for entry in json.loads(got)["keys"]:
            key = entry["key"]
            if key not in w.generated:
                s2, _, v = request(addr, "GET", "/store/" + urllib.parse.quote(key))
                if not (p and p[0] == "create" and v == p[2]):
                    bad.append(f"{key}: an unacknowledged create holds something else")
                w.generated[key] = v
        found_keys.update(w.generated)
        w.pending = None
    # The listing, /metrics and the files agree with what GETs found.
    listed, after = set(), None
    while True:
        q = "/store/?limit=1000" + (f"&after={urllib.parse.quote(after)}" if after else "")
        page = json.loads(request(addr, "GET", q)[2])
        listed.update(e["key"] for e in page["keys"])
        after = page.get("next")
        if not after:
            break
    if listed != found_keys:
        bad.append(f"listing differs from GETs: listed-only {sorted(listed - found_keys)[:5]}, missing {sorted(found_keys - listed)[:5]}")
    metrics = request(addr, "GET", "/metrics")[2].decode()
    m = re.search(r"^larder_keys (\d+)", metrics, re.M)
    if not m or int(m.group(1)) != len(listed):
        bad.append(f"/metrics larder_keys {m and m.group(1)} != {len(listed)} listed")
    sent = set().union(*(w.sent_values for w in workers))
    files = 0
    for root, _, names in os.walk(os.path.join(data, "values") + "/"):
        for name in names:
            path = os.path.join(root, name)
            if name.startswith("\\t"):
                bad.append(f"temp file left after restart: {path}")
                continue
            if name == "\\name":
                continue
            files += 1
            try:
                content = gzip.decompress(open(path, "rb").read())
            except Exception as e:
                bad.append(f"torn value file {path}: {e}")
                continue
            if not (content in sent or content.startswith(b"[")):
                bad.append(f"{path}: a value no client sent ({len(content)} bytes)")
    if files != len(listed):
        bad.append(f"{files} value files for {len(listed)} listed keys")
    return bad, {"keys": len(listed), "files": files}

def snapshot_of(addr, prefix):
    """key -> value bytes under `prefix`, read in one GET /snapshot."""
    s, _, body = request(addr, "GET", "/snapshot?prefix=" + urllib.parse.quote(prefix), timeout=120)
    assert s == 200, (s, body[:200])
    out = {}
    for line in body.splitlines():
        if line.strip():
            o = json.loads(line)
            out[o["key"]] = o["text"].encode() if "text" in o else json.dumps(o["json"]).encode() if "json" in o else None
    return out

def restore_rounds(a, rng, data):
    """--restore: a replace restore of `--lines` keys under r/ is killed at a
    random moment (SIGKILL); after the restart r/ must hold exactly the set
    before the restore or exactly the restored one, values included, and the
    restored one whenever the restore was answered. Returns violations."""
    total_bad = 0
    proc, addr = start(a.binary, data, not a.no_fsync)
    try:
        current = {f"r/old{i:03d}": f"seed {i}".encode() for i in range(200)}
        for key, value in current.items():
            assert request(addr, "PUT", "/store/" + key, value, {"Content-Type": "text/plain"})[0] == 201
        def document(round_):
            values = {f"r/k{round_}-{i:05d}": f"round {round_} value {i}".encode() for i in range(a.lines)}
            return values, "".join(json.dumps({"key": k, "contentType": "text/plain", "text": v.decode()}) + "\n"
                                   for k, v in values.items())
        # Two restores uncut, the second timed (it replaces a set as large
        # as itself, as every round does): the kill moments spread over its
        # length and past it (after a kill the restart's own scan slows the
        # next one down).
        for round_ in (-1, 0):
            new, doc = document(round_)
            started = time.monotonic()
            try:
                status, _, body = request(addr, "POST", "/snapshot?prefix=r/&replace=1", doc.encode(), timeout=600)
            except Exception as e:
                raise SystemExit(f"an uncut restore failed: {e!r}; {server_state(proc)}")
            assert status == 200, (status, body[:300])
        span = min(a.max_run, (time.monotonic() - started) * 2.5) if a.max_run else (time.monotonic() - started) * 2.5
        current = new
        print(json.dumps({"uncut_restore_seconds": round(time.monotonic() - started, 2), "kill_moments_up_to": round(span, 2)}),
              flush=True)
        outcomes = {"before": 0, "restored": 0, "mixed": 0}
        for kill in range(1, a.kills + 1):
            new, doc = document(kill)
            answered = {}
            def post():
                try:
                    answered["status"] = request(addr, "POST", "/snapshot?prefix=r/&replace=1", doc.encode(),
                                                 {"Content-Type": "application/x-ndjson"}, timeout=300)[0]
                except Exception as e:  # the kill cut it
                    answered["error"] = repr(e)
            t = threading.Thread(target=post, daemon=True)
            t.start()
            time.sleep(rng.uniform(0.05, span))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            t.join(60)
            proc, addr = start(a.binary, data, not a.no_fsync)
            found = snapshot_of(addr, "r/")
            bad = []
            if answered.get("status") == 200 and found != new:
                bad.append(f"the restore was answered 200 but r/ holds {len(found)} keys, not the {len(new)} restored")
            elif found not in (current, new):
                kinds = sorted({k.split("-")[0] for k in found})
                bad.append(f"r/ holds a mix: {len(found)} keys ({kinds[:4]}), neither the {len(current)} before nor the {len(new)} restored")
            outcome = "restored" if found == new else "before" if found == current else "mixed"
            outcomes[outcome] += 1
            total_bad += len(bad)
            print(json.dumps({"kill": kill, "answered": answered.get("status"), "outcome": outcome, "keys": len(found),
                              "violations": bad}), flush=True)
            current = found if not bad else current
        print(json.dumps({"outcomes": outcomes}), flush=True)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return total_bad

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--no-fsync", action="store_true")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--min-run", type=float, default=0.3, help="least seconds of load before a kill")
    ap.add_argument("--max-run", type=float, default=2.0)
    ap.add_argument("--min-acks", type=int, default=40,
                    help="least acknowledged operations before a kill (a loaded machine can be slow to get going)")
    ap.add_argument("--sabotage", action="store_true",
                    help="remove one acknowledged value's file before each check: the check must report it")
    ap.add_argument("--restore", action="store_true",
                    help="kill the server during snapshot restores instead (see restore_rounds): at a random moment "
                         "over the length of one uncut restore, at most --max-run seconds (0: no bound)")
    ap.add_argument("--lines", type=int, default=30_000, help="with --restore: lines of each restored document")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    data = tempfile.mkdtemp(prefix="larder-crash-")
    if a.restore:
        try:
            bad = restore_rounds(a, rng, data)
        finally:
            shutil.rmtree(data, ignore_errors=True)
        print(json.dumps({"summary": True, "restore": True, "kills": a.kills, "violations": bad, "fsync": not a.no_fsync,
                          "seed": a.seed}), flush=True)
        sys.exit(1 if bad else 0)
    workers = [Worker(i, rng.random()) for i in range(a.workers)]
    total_bad, total_acked = 0, 0
    try:
        proc, addr = start(a.binary, data, not a.no_fsync)
        for kill in range(1, a.kills + 1):
            before = sum(w.acked for w in workers)
            threads = [threading.Thread(target=w.run, args=(addr,), daemon=True) for w in workers]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(a.min_run, a.max_run))
            # The random moment counts from when the load got going, so a slow
            # start on a busy machine still puts a kill mid-load, not before it.
            deadline = time.monotonic() + 60
            while sum(w.acked for w in workers) - before < a.min_acks and time.monotonic() < deadline:
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            for t in threads:
                t.join(60)
            if a.sabotage:
                key = next(k for w in workers for k, v in w.state.items()
                           if v is not None and not (w.pending and w.pending[1] == k))
                os.unlink(os.path.join(data, "values", key.replace("/", "\\/")))
            proc, addr = start(a.binary, data, not a.no_fsync)
            bad, facts = check(addr, data, workers)
            acked = sum(w.acked for w in workers) - before
            total_bad += len(bad)
            total_acked += acked
            print(json.dumps({"kill": kill, "acknowledged": acked, "violations": bad[:10], **facts}), flush=True)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps({"summary": True, "kills": a.kills, "acknowledged": total_acked, "violations": total_bad,
                      "fsync": not a.no_fsync, "seed": a.seed}), flush=True)
    sys.exit(1 if total_bad else 0)

if __name__ == "__main__":
    main()
