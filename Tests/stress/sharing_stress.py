#!/usr/bin/env python3
"""Races across processes: 8 processes share one larder server, each doing
compare-and-swap increments of one counter (GET, then PUT with If-Match,
again on 412) and appends of its own numbered elements to one list
(POST ?append), interleaved. At the end the totals must be exact:

- the counter is processes x increments (no increment lost or doubled);
- the list holds every element exactly once, and each process's elements
  in the order it appended them.

    python3 Tests/stress/sharing_stress.py URL [--processes 8] [--increments 100] [--appends 100]

Prints one JSON line with the figures; exit 1 when a total is off.
"""
import argparse, http.client, json, multiprocessing, sys, time, urllib.parse


def connect(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def call(conn, method, path, body=None, headers=None):
    conn.request(method, path, body, headers or {})
    r = conn.getresponse()
    return r.status, r.getheader("ETag"), r.read()


def worker(url, index, increments, appends, results):
    conn = connect(url)
    retries = 0
    done_inc = done_app = 0
    while done_inc < increments or done_app < appends:
        # Alternate, so increments and appends race with each other too.
        if done_inc < increments and (done_inc <= done_app or done_app == appends):
            while True:
                status, tag, body = call(conn, "GET", "/store/stress/counter")
                if status == 404:
                    status, _, _ = call(conn, "PUT", "/store/stress/counter", b"1",
                                        {"If-None-Match": "*", "Content-Type": "application/json"})
                else:
                    value = json.loads(body) + 1
                    status, _, _ = call(conn, "PUT", "/store/stress/counter", json.dumps(value).encode(),
                                        {"If-Match": tag, "Content-Type": "application/json"})
                if status in (201, 204):
                    break
                if status != 412:
                    results.put(("error", f"process {index}: PUT answered {status}"))
                    return
                retries += 1
            done_inc += 1
        else:
            element = json.dumps({"p": index, "n": done_app}).encode()
            status, _, body = call(conn, "POST", "/store/stress/list?append", element, {"Content-Type": "application/json"})
            if status not in (200, 201, 204):
                results.put(("error", f"process {index}: append answered {status} {body!r}"))
                return
            done_app += 1
    results.put(("done", index, retries))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--increments", type=int, default=100)
    ap.add_argument("--appends", type=int, default=100)
    a = ap.parse_args()
    results = multiprocessing.Queue()
    started = time.monotonic()
    procs = [multiprocessing.Process(target=worker, args=(a.url, i, a.increments, a.appends, results))
             for i in range(a.processes)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    errors = [o[1] for o in outcomes if o[0] == "error"]
    conn = connect(a.url)
    counter = json.loads(call(conn, "GET", "/store/stress/counter")[2])
    items = json.loads(call(conn, "GET", "/store/stress/list")[2])
    per_process = {i: [it["n"] for it in items if it["p"] == i] for i in range(a.processes)}
    ordered = all(per_process[i] == list(range(a.appends)) for i in range(a.processes))
    ok = (not errors and counter == a.processes * a.increments
          and len(items) == a.processes * a.appends and ordered)
    print(json.dumps({"ok": ok, "counter": counter, "expected_counter": a.processes * a.increments,
                      "list": len(items), "expected_list": a.processes * a.appends, "each_in_order": ordered,
                      "cas_retries": sum(o[2] for o in outcomes if o[0] == "done"), "errors": errors,
                      "seconds": round(time.monotonic() - started, 2)}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
