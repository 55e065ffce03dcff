"""The linearizability checker: histories it must accept, doctored ones it must
catch, randomized histories against a brute-force search, and its speed."""
import json
import os
import random
import subprocess
import sys
import time

import pytest

import linearizability as lin
from simulated_history import simulate

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linearizability.py")


# --- Writing histories --------------------------------------------------------

def record(client, op, invoke, returned, arg=None, result=None, key="k"):
    return {"client": client, "key": key, "op": op, "invoke": invoke, "return": returned,
            "arg": arg or {}, "result": result}


def put(client, invoke, returned, value, etag=None, key="k"):
    return record(client, "put", invoke, returned, {"value": value},
                  None if returned is None else {"ok": True, "etag": etag}, key)


def get(client, invoke, returned, value=None, etag=None, found=True, key="k"):
    result = {"found": True, "value": value, "etag": etag} if found else {"found": False}
    return record(client, "get", invoke, returned, None, None if returned is None else result, key)


def get_absent(client, invoke, returned, key="k"):
    return get(client, invoke, returned, found=False, key=key)


def cas(client, invoke, returned, value, if_match, etag=None, ok=True):
    result = None if returned is None else {"ok": True, "etag": etag} if ok else {"ok": False}
    return record(client, "cas", invoke, returned, {"value": value, "if_match": if_match}, result)


def create(client, invoke, returned, value, etag=None, ok=True):
    """A cas with If-None-Match: *."""
    result = None if returned is None else {"ok": True, "etag": etag} if ok else {"ok": False}
    return record(client, "cas", invoke, returned, {"value": value, "if_absent": True}, result)


def delete(client, invoke, returned, found=True):
    return record(client, "delete", invoke, returned, None, None if returned is None else {"found": found})


def append(client, invoke, returned, element, count=None, etag=None):
    result = None if returned is None else {"ok": True, "count": count, "etag": etag}
    return record(client, "append", invoke, returned, {"element": element}, result)


def check(records, timeout=None):
    return lin.check_history(lin.parse_history(json.dumps(r) for r in records), timeout)


def verdict(records):
    (result,) = check(records)
    return result.verdict


# --- Linearizable histories -----------------------------------------------------

def test_concurrent_puts_may_take_effect_in_either_order():
    history = [put(1, 0, 2, "a", "e1"), put(2, 1, 3, "b", "e2"),
               get(3, 1.5, 1.8, "a", "e1"), get(3, 4, 5, "b", "e2")]
    assert verdict(history) == "ok"
    history = [put(1, 0, 2, "a", "e1"), put(2, 1, 3, "b", "e2"), get(3, 4, 5, "a", "e1")]
    assert verdict(history) == "ok"


def test_reads_during_a_write_may_see_the_old_then_the_new_value():
    history = [put(1, 0, 1, "old", "e1"), put(1, 2, 6, "new", "e2"),
               get(2, 3, 4, "old", "e1"), get(2, 4.5, 5, "new", "e2"), get(3, 2.5, 5.5, "old", "e1")]
    assert verdict(history) == "ok"


def test_touching_intervals_count_as_concurrent():
    history = [put(1, 0, 1, "a", "e1"), put(1, 1, 2, "b", "e2"), get(2, 2, 3, "a", "e1")]
    assert verdict(history) == "ok"


def test_a_cas_race_with_exactly_one_winner():
    history = [put(1, 0, 1, "v0", "e0"),
               cas(2, 2, 4, "a", "e0", "e1"), cas(3, 2.5, 3.5, "b", "e0", ok=False),
               cas(4, 2.2, 4.5, "c", "e0", ok=False), get(1, 5, 6, "a", "e1")]
    assert verdict(history) == "ok"


def test_a_create_race_with_exactly_one_winner():
    history = [create(1, 0, 2, "a", "e1"), create(2, 0.5, 1.5, "b", ok=False), get(3, 3, 4, "a", "e1")]
    assert verdict(history) == "ok"


def test_concurrent_appends_count_in_their_linearization_order():
    history = [append(1, 0, 3, "x", 3, "e3"), append(2, 0.5, 2, "y", 1, "e1"), append(3, 1, 2.5, "z", 2, "e2"),
               get(1, 4, 5, ["y", "z", "x"], "e3")]
    assert verdict(history) == "ok"


def test_append_follows_the_servers_post():
    # A value that is not a list becomes its first element; a list element is spliced in.
    history = [put(1, 0, 1, "v", "e1"), append(1, 2, 3, "x", 2, "e2"), append(1, 4, 5, ["y", "z"], 4, "e3"),
               get(1, 6, 7, ["v", "x", "y", "z"], "e3"), delete(1, 8, 9), append(1, 10, 11, "w", 1, "e4")]
    assert verdict(history) == "ok"


def test_delete_then_absent():
    history = [put(1, 0, 1, "a", "e1"), delete(2, 2, 3, found=True), delete(1, 2.5, 3.5, found=False),
               get_absent(3, 4, 5), create(3, 6, 7, "b", "e2")]
    assert verdict(history) == "ok"


def test_unknown_write_that_took_effect_later():
    # The timed-out put is read after its client gave up; its ETag is learned from the read.
    history = [put(1, 0, 1, "v0", "e0"), put(2, 2, None, "v1"), get(3, 3, 4, "v0", "e0"),
               get(3, 5, 6, "v1", "eX"), cas(1, 7, 8, "v2", "eX", "e2"), get(2, 9, 10, "v2", "e2")]
    assert verdict(history) == "ok"


def test_unknown_write_that_never_took_effect():
    history = [put(1, 0, 1, "v0", "e0"), put(2, 2, None, "v1"), delete(2, 2.5, None),
               get(3, 3, 4, "v0", "e0"), get(3, 50, 60, "v0", "e0")]
    assert verdict(history) == "ok"


def test_unknown_appends_counted_or_not():
    took_effect = [append(1, 0, None, "x"), append(2, 1, 2, "y", 2, "e2")]
    never = [append(1, 0, None, "x"), append(2, 1, 2, "y", 1, "e1"), get(2, 3, 4, ["y"], "e1")]
    assert verdict(took_effect) == "ok"
    assert verdict(never) == "ok"


def test_interchangeable_unknown_writes_can_each_take_effect():
    # Unknown deletes, and unknown puts of values nobody read, are tried earliest first;
    # the later ones must still be available once the earlier ones are used.
    deletes = [put(1, 0, 1, "a", "e1"), delete(2, 0, None), get_absent(1, 2, 3),
               put(1, 4, 5, "b", "e2"), delete(2, 4, None), get_absent(1, 6, 7)]
    puts = [put(2, 0, None, "p"), delete(1, 1, 2, found=True), put(2, 3, None, "q"), delete(1, 4, 5, found=True),
            delete(1, 6, 7, found=False)]
    assert verdict(deletes) == "ok"
    assert verdict(puts) == "ok"


def test_an_unknown_write_sent_as_a_read_returned_may_be_what_it_read():
    assert verdict([put(1, 0, 1, "a", "e1"), get(2, 1, 2, "b", "eB"), put(3, 2, None, "b")]) == "ok"
    assert verdict([put(1, 0, 1, "a", "e1"), get(2, 1, 2, "b", "eB"), put(3, 2.01, None, "b")]) == "violation"


def test_an_unknown_get_is_ignored():
    history = [put(1, 0, 1, "a", "e1"), get(2, 0.5, None), get(2, 2, 3, "a", "e1")]
    (result,) = check(history)
    assert result.verdict == "ok" and result.operations == 3 and result.unknown_outcomes == 1


def test_keys_are_checked_separately():
    history = [put(1, 0, 1, "a", "e1", key="x"), put(1, 2, 3, "b", "e2", key="y"),
               get(2, 4, 5, "a", "e1", key="x"), get_absent(2, 0, 0.5, key="y")]
    results = check(history)
    assert [(r.key, r.verdict) for r in results] == [("x", "ok"), ("y", "ok")]


# --- Doctored histories: each must be caught -------------------------------------

def caught(records) -> lin.Violation:
    (result,) = check(records)
    assert result.verdict == "violation", result.summary()
    return result.violation


def test_catches_a_stale_read_after_a_completed_write():
    violation = caught([put(1, 0, 1, "old", "e1"), put(1, 2, 3, "new", "e2"), get(2, 4, 5, "old", "e1")])
    assert [op.line for op, _ in violation.culprits] == [3]


def test_catches_a_read_going_back_in_time():
    caught([put(1, 0, 1, "old", "e1"), put(1, 2, 6, "new", "e2"),
            get(2, 3, 4, "new", "e2"), get(3, 4.5, 5, "old", "e1")])


def test_catches_a_read_of_the_right_value_with_an_old_etag():
    caught([put(1, 0, 1, "same", "e1"), put(1, 2, 3, "same", "e2"), get(2, 4, 5, "same", "e1")])


def test_catches_two_cas_successes_from_the_same_etag():
    caught([put(1, 0, 1, "v0", "e0"), cas(2, 2, 4, "a", "e0", "e1"), cas(3, 2.5, 3.5, "b", "e0", "e2")])


def test_catches_two_creates_both_succeeding():
    caught([create(1, 0, 2, "a", "e1"), create(2, 0.5, 1.5, "b", "e2")])


def test_catches_a_lost_acknowledged_write():
    caught([append(1, 0, 1, "x", 1, "e1"), append(2, 0.5, 2, "y", 2, "e2"), get(3, 3, 4, ["y"], "e2")])
    caught([put(1, 0, 1, "a", "e1"), get_absent(2, 2, 3)])


def test_catches_an_append_count_that_skips():
    caught([append(1, 0, 1, "x", 1, "e1"), append(2, 2, 3, "y", 2, "e2"), append(3, 4, 5, "z", 4, "e3")])


def test_catches_a_write_that_took_effect_twice():
    caught([append(1, 0, 1, "x", 2, "e1")])
    caught([append(1, 0, 1, "x", 1, "e1"), get(2, 2, 3, ["x", "x"], "e1")])


def test_catches_a_read_of_a_value_never_written():
    violation = caught([put(1, 0, 1, "a", "e1"), put(2, 0.5, 2, "b", "e2"), get(3, 1.5, 3, "zzz", "e3")])
    (get_op, why), = [(op, why) for op, why in violation.culprits if op.kind == "get"]
    assert get_op.line == 3 and why == "impossible in that state"


def test_catches_an_unknown_write_seen_then_unseen():
    caught([put(1, 0, 1, "v0", "e0"), put(2, 2, None, "v1"), get(3, 3, 4, "v1", "eX"), get(3, 5, 6, "v0", "e0")])


def test_catches_an_unknown_write_seen_before_it_was_sent():
    caught([put(1, 0, 1, "v0", "e0"), get(3, 2, 3, "v1", "eX"), put(2, 4, None, "v1")])


def test_catches_an_unknown_write_read_with_two_etags():
    caught([put(2, 0, None, "v1"), get(3, 1, 2, "v1", "eX"), get(3, 3, 4, "v1", "eY")])


def test_catches_a_read_that_claims_a_completed_writes_etag_for_an_unknown_write():
    caught([put(1, 0, 1, "v0", "e0"), put(2, 2, None, "v1"), get(3, 3, 4, "v1", "e0")])


def test_catches_two_writes_answering_one_etag():
    violation = caught([put(1, 0, 1, "a", "e1"), put(2, 2, 3, "b", "e1"), get(3, 4, 5, "b", "e1")])
    assert [op.line for op, _ in violation.culprits] == [1, 2]


def test_violation_report_names_the_prefix_and_the_state():
    (result,) = check([put(1, 0, 1, "a", "e1"), put(1, 2, 3, "b", "e2"), get(2, 4, 5, "a", "e1")])
    assert [op.line for op in result.violation.prefix] == [1, 2]
    assert result.violation.state == 'value "b" etag "e2"'
    text = "\n".join(result.violation.lines())
    assert "line 3 client 2 get" in text and "impossible in that state" in text


# --- Reading histories -------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ('{"client": 1, "key": "k", "op": "get", "invoke": 1}', "no 'return'"),
    ('{"client": 1, "key": "k", "op": "incr", "invoke": 1, "return": 2}', "'op' is 'incr'"),
    ('{"client": 1, "key": "k", "op": "get", "invoke": 2, "return": 1, "result": {"found": false}}', "before"),
    ('{"client": 1, "key": "k", "op": "put", "invoke": 1, "return": 2, "arg": {"value": 1}, "result": {"ok": true}}',
     "'etag'"),
    ('{"client": 1, "key": "k", "op": "cas", "invoke": 1, "return": 2, "arg": {"value": 1}, "result": {"ok": false}}',
     "if_match"),
    ('{"client": 1, "key": "k", "op": "put", "invoke": 1, "return": null, "arg": {"value": 1, "if_match": "e"}}',
     "unexpected field(s) if_match"),
    ('{"client": 1, "key": "k", "op": "append", "invoke": 1, "return": 2, "arg": {"element": 1},'
     ' "result": {"ok": true, "count": 0, "etag": "e"}}', "'count'"),
    ('[1, 2]', "not a JSON object"),
    ('{"client": 1,', "not JSON"),
])
def test_malformed_lines_are_refused_with_their_line_number(line, message):
    good = json.dumps(get_absent(1, 0, 1))
    with pytest.raises(lin.HistoryError) as error:
        lin.parse_history([good, "", line])
    assert error.value.line == 3 and message in str(error.value)


def test_an_unknown_outcome_needs_no_result():
    (op,) = lin.parse_history(['{"client": 1, "key": "k", "op": "put", "invoke": 1, "return": null,'
                               ' "arg": {"value": 1}, "result": {"garbage": true}}'])
    assert not op.completed and op.result is None


# --- The command line ------------------------------------------------------------------

def run_cli(tmp_path, records, *options, text=None):
    path = tmp_path / "history.jsonl"
    path.write_text(text if text is not None else "".join(json.dumps(r) + "\n" for r in records))
    return subprocess.run([sys.executable, CHECKER, str(path), *options], capture_output=True, text=True, timeout=60)


def test_cli_exits_0_when_every_key_is_linearizable(tmp_path):
    run = run_cli(tmp_path, [put(1, 0, 1, "a", "e1", key="x"), get(2, 2, 3, "a", "e1", key="x"),
                             get_absent(1, 0, 1, key="y")])
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith('key "x": ok - 2 operation(s)') and lines[1].startswith('key "y": ok')


def test_cli_exits_1_on_a_violation_and_explains_it(tmp_path):
    run = run_cli(tmp_path, [put(1, 0, 1, "a", "e1", key="x"), get_absent(2, 2, 3, key="x"),
                             get_absent(1, 0, 1, key="y")])
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith('key "x": violation')
    assert "line 2 client 2 get" in run.stdout and '\nkey "y": ok' in run.stdout


def test_cli_exits_2_on_bad_input(tmp_path):
    run = run_cli(tmp_path, None, text='{"client": 1}\n')
    assert run.returncode == 2 and "line 1: no 'key'" in run.stderr


def hard_history(writers=20):
    """Many concurrent writes and then an impossible read: the search must try every subset."""
    history = [put(c, 0, 1, f"v{c}", f"e{c}") for c in range(writers)]
    return history + [get(0, 2, 3, "never", "e-never")]


def test_cli_exits_2_when_out_of_time(tmp_path):
    started = time.monotonic()
    run = run_cli(tmp_path, hard_history(), "--timeout", "0.3")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "unknown" in run.stdout and "time limit reached" in run.stdout
    assert time.monotonic() - started < 5


# --- Randomized: simulated linearizable executions, then one result made impossible ---

@pytest.mark.parametrize("seed", range(12))
def test_simulated_executions_are_linearizable_and_a_forged_read_is_caught(seed):
    history = simulate(seed, clients=8, operations=300, keys=("k",), unknown_rate=0.03)
    assert verdict(history) == "ok"
    rng = random.Random(seed)
    reads = [r for r in history if r["op"] == "get" and r["return"] is not None and r["result"]["found"]]
    forged = rng.choice(reads)
    saved = dict(forged["result"])
    forged["result"]["value"] = "never written"
    assert verdict(history) == "violation"
    # A read of a value a completed put or cas wrote, with an ETag no write got.
    forged["result"] = saved
    written = {r["arg"]["value"] for r in history
               if r["op"] in ("put", "cas") and r["return"] is not None and r["result"]["ok"]}
    forged = rng.choice([r for r in reads if isinstance(r["result"]["value"], str) and r["result"]["value"] in written])
    forged["result"]["etag"] = '"never issued"'
    assert verdict(history) == "violation"


def test_simulated_executions_over_several_keys():
    results = check(simulate(99, clients=8, operations=600, keys=("a", "b", "c"), unknown_rate=0.03))
    assert [(r.key, r.verdict) for r in results] == [("a", "ok"), ("b", "ok"), ("c", "ok")]


# --- Randomized: small histories against a brute-force search ---------------------------

def brute_force_linearizable(records) -> bool:
    """Every order of the operations that respects real time, tried one by one,
    on a direct rendering of the model in the checker's docstring."""
    ops = [r for r in records if r["return"] is not None or r["op"] != "get"]
    writes = [r for r in ops if r["return"] is not None and r["op"] != "get" and "etag" in r["result"]]
    answered = {r["result"]["etag"] for r in writes}
    if len(answered) < len(writes):
        return False
    unknown, refused = "unknown etag", object()

    def as_value(v):
        return ("list", tuple(json.dumps(x, sort_keys=True) for x in v)) if isinstance(v, list) else json.dumps(v)

    def step(state, r):
        result = r["result"] if r["return"] is not None else None
        arg, kind = r["arg"], r["op"]
        new_etag = result["etag"] if result and "etag" in result else unknown
        if kind == "get":
            if not result["found"]:
                return state if state is None else refused
            if state is None or state[0] != as_value(result["value"]):
                return refused
            if state[1] == unknown:
                return refused if result["etag"] in answered else (state[0], result["etag"])
            return state if state[1] == result["etag"] else refused
        if kind == "put":
            return (as_value(arg["value"]), new_etag)
        if kind == "delete":
            if result is not None and state is None and result["found"]:
                return refused
            if result is not None and state is not None and not result["found"]:
                return refused
            return None
        if kind == "cas":
            if arg.get("if_absent"):
                holds_possible, fails_possible = state is None, state is not None
            else:
                holds_possible = state is not None and (state[1] == arg["if_match"] or
                                                        state[1] == unknown and arg["if_match"] not in answered)
                fails_possible = state is None or state[1] != arg["if_match"]
            if result is None:
                return (as_value(arg["value"]), unknown) if holds_possible else state
            if result["ok"]:
                return (as_value(arg["value"]), new_etag) if holds_possible else refused
            return state if fails_possible else refused
        # append
        items = () if state is None else state[0][1] if isinstance(state[0], tuple) else (state[0],)
        element = arg["element"]
        items += tuple(json.dumps(x, sort_keys=True) for x in element) if isinstance(element, list) \
            else (json.dumps(element, sort_keys=True),)
        if result is not None and len(items) != result["count"]:
            return refused
        return (("list", items), new_etag)

    def search(remaining, state):
        completed = [r for r in remaining if r["return"] is not None]
        if not completed:
            return True
        horizon = min(r["return"] for r in completed)
        for r in remaining:
            if r["invoke"] <= horizon:
                after = step(state, r)
                if after is not refused and search([x for x in remaining if x is not r], after):
                    return True
        return False

    return search(ops, None)


def doctor(history, rng):
    """One result changed to another plausible one (which may or may not break linearizability)."""
    done = [r for r in history if r["return"] is not None]
    if not done:
        return
    etags = sorted({r["result"]["etag"] for r in done if "etag" in r["result"]}) + ['"v99"']
    values = sorted({r["arg"]["value"] for r in history if "value" in r["arg"]}) + ["never"]
    r = rng.choice(done)
    result = r["result"]
    if r["op"] == "get":
        if rng.random() < 0.3:
            r["result"] = {"found": not result["found"], "value": rng.choice(values), "etag": rng.choice(etags)}
        elif result["found"]:
            result[rng.choice(["value", "etag"])] = rng.choice(values if rng.random() < 0.5 else etags)
    elif r["op"] == "delete":
        result["found"] = not result["found"]
    elif r["op"] == "append":
        result["count"] = max(1, result["count"] + rng.choice([-1, 1]))
    elif r["op"] == "cas" and not result["ok"]:
        r["result"] = {"ok": True, "etag": rng.choice(etags)}
    elif r["op"] == "cas" and rng.random() < 0.5:
        r["result"] = {"ok": False}
    else:
        result["etag"] = rng.choice(etags)


def test_agrees_with_brute_force_on_small_histories():
    rng = random.Random(7)
    outcomes = {True: 0, False: 0}
    for seed in range(400):
        history = simulate(seed, clients=3, operations=rng.randint(3, 7), keys=("k",), unknown_rate=0.3)
        if seed % 3:
            doctor(history, rng)
        expected = brute_force_linearizable(history)
        outcomes[expected] += 1
        assert verdict(history) == ("ok" if expected else "violation"), json.dumps(history, indent=1)
    assert min(outcomes.values()) > 50  # both verdicts well exercised


# --- Speed -----------------------------------------------------------------------------------

def test_two_thousand_operations_on_one_key_from_eight_clients_in_seconds():
    history = simulate(2000, clients=8, operations=2000, keys=("k",), unknown_rate=0.01)
    # The checker's own CPU time, not the wall clock: in CI it runs beside the fuzzer
    # and took 5.2 s of wall time for about 3 s of work. A search gone exponential
    # would take minutes, far past either bound.
    started = time.process_time()
    assert verdict(history) == "ok"
    reads = [r for r in history if r["op"] == "get" and r["return"] is not None and r["result"]["found"]]
    reads[len(reads) * 3 // 4]["result"]["value"] = "never written"
    assert verdict(history) == "violation"
    assert time.process_time() - started < 10
