"""Histories recorded from a real Larder server (record_history.py) through the
linearizability checker: a recorded history must be linearizable, and one
doctored to contain an answer the server cannot have given must be refuted,
which shows the recorder writes what the checker reads.

Needs the server binary: $LARDER_BIN, else .build/debug/larder; skipped without it.
A few seconds in all."""
import copy
import json
import os
import subprocess
import sys

import pytest

import linearizability as lin
import record_history as rec

BINARY = rec.larder_bin()
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(
    not (os.path.isfile(BINARY) and os.access(BINARY, os.X_OK)),
    reason=f"no larder server binary at {BINARY} (set LARDER_BIN or run `swift build --product larder`)")

OPS = 1500
CLIENTS = 8
KEYS = 3


@pytest.fixture(scope="module")
def server():
    with rec.running_server(BINARY) as url:
        yield url


@pytest.fixture(scope="module")
def history(server):
    """One recorded history (fresh keys), shared by the tests that only read it."""
    return rec.record_history(server, clients=CLIENTS, keys=KEYS, seconds=20.0, max_ops=OPS, seed=1)


def check(records, tmp_path, name="history.jsonl"):
    """The checker's verdicts on `records`, read back from a JSON-lines file as the CLI would."""
    path = tmp_path / name
    rec.write_history(records, str(path))
    return lin.check_history(lin.read_history(str(path)), timeout=30)


def verdicts(results):
    return {r.key: r.verdict for r in results}


def explain(results):
    out = []
    for r in results:
        out.append(r.summary())
        if r.violation:
            out += ["    " + line for line in r.violation.lines()]
    return "\n".join(out)


def test_recorded_history_is_linearizable(history, tmp_path):
    summary = rec.summarize(history)
    print(rec.format_summary(summary))
    assert summary["operations"] == OPS
    assert set(summary["kinds"]) == {"get", "put", "cas", "append", "delete"}
    assert {"if_match", "if_absent"} <= set(summary["cas"]), summary["cas"]
    assert 0 < summary["cas_failed"] < summary["kinds"]["cas"], "cas should both succeed and fail"
    assert summary["gets_found"] > 0
    unexpected = [r for r in history if r["return"] is None and r.get("note", "").startswith("unexpected")]
    assert not unexpected, f"answers the model has no place for: {unexpected[:3]}"
    assert len({r["key"] for r in history}) == KEYS
    results = check(history, tmp_path)
    assert len(results) == KEYS
    assert all(r.verdict == "ok" for r in results), explain(results)


def _writers(records):
    """ETag -> the completed operation that answered it (put, cas, append)."""
    return {r["result"]["etag"]: r for r in records
            if r["return"] is not None and r["op"] != "get" and r["result"].get("etag")}


def _effective_writes(records, key):
    """Completed operations on `key` that certainly changed its state."""
    return [r for r in records if r["key"] == key and r["return"] is not None and (
        (r["op"] in ("put", "cas", "append") and r["result"]["ok"])
        or (r["op"] == "delete" and r["result"]["found"]))]


def _superseded(records, earlier, later):
    """A write on the key that took effect strictly after `earlier` returned and
    before `later` was invoked: the state `earlier` made was gone by then."""
    return any(earlier["return"] < w["invoke"] and w["return"] < later["invoke"]
               for w in _effective_writes(records, earlier["key"]))


def test_forged_cas_success_is_caught(history, tmp_path):
    """A cas that got 412 for an ETag overwritten before it was sent, turned into a
    success: no linearization can have that ETag current during the cas."""
    assert verdicts(check(history, tmp_path, "clean.jsonl")) == {k: "ok" for k in {r["key"] for r in history}}
    writers = _writers(history)
    candidates = [i for i, r in enumerate(history)
                  if r["op"] == "cas" and r["return"] is not None and not r["result"]["ok"]
                  and "if_match" in r["arg"] and r["arg"]["if_match"] in writers
                  and _superseded(history, writers[r["arg"]["if_match"]], r)]
    assert candidates, "no failed cas on a certainly stale ETag in the history"
    doctored = copy.deepcopy(history)
    victim = doctored[candidates[len(candidates) // 2]]
    victim["result"] = {"ok": True, "etag": '"forged-by-the-test"', "status": 204}
    results = check(doctored, tmp_path, "doctored.jsonl")
    assert verdicts(results)[victim["key"]] == "violation", explain(results)
    assert all(r.verdict == "ok" for r in results if r.key != victim["key"]), explain(results)


def test_stale_read_is_caught(history, tmp_path):
    """A get made to return an earlier write's value and ETag although another write
    certainly took effect in between."""
    writers = _writers(history)
    value_writes = [w for w in writers.values() if w["op"] in ("put", "cas")]
    doctored = copy.deepcopy(history)
    for i, g in enumerate(history):
        if g["op"] != "get" or g["return"] is None:
            continue
        stale = [w for w in value_writes if w["key"] == g["key"] and _superseded(history, w, g)]
        if stale:
            w = stale[-1]
            doctored[i]["result"] = {"found": True, "value": w["arg"]["value"], "etag": w["result"]["etag"],
                                     "status": 200}
            key = g["key"]
            break
    else:
        pytest.fail("no get in the history comes after a superseded put")
    results = check(doctored, tmp_path, "doctored.jsonl")
    assert verdicts(results)[key] == "violation", explain(results)


def test_cli_records_and_checks(server, tmp_path):
    """record_history.py --url ... --check: writes the history, exits with the checker's code."""
    out = tmp_path / "cli.jsonl"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "record_history.py"), "--url", server,
                           "--ops", "300", "--clients", "4", "--keys", "2", "--out", str(out), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert len(lines) == 300
    assert len({r["key"] for r in lines}) == 2
    assert proc.stdout.count(": ok - ") == 2, proc.stdout
    assert "300 operations" in proc.stderr
