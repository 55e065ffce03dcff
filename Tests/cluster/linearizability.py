#!/usr/bin/env python3
"""Linearizability checker for histories of Larder key operations.

    python3 Tests/cluster/linearizability.py history.jsonl [--timeout S]

Prints one summary line per key (and, under a key with a violation, why) and
exits 0 when every key's history is linearizable, 1 when any key's is not, and
2 when a key could not be decided in time or the history is malformed. A
violation wins over an undecided key: it is a definite answer.

History format
--------------
JSON lines, one operation per line (blank lines are skipped):

    {"client": 3, "key": "k", "op": "put", "invoke": 12.5, "return": 12.6,
     "arg": {"value": [1, 2]}, "result": {"ok": true, "etag": "\\"v7\\""}}

- `client` (int): who issued it; only for reports.
- `key` (str): keys are independent, so each key's operations are checked on
  their own (Porcupine's partitioning).
- `invoke`, `return` (seconds, float): when the request was sent and when its
  answer arrived, all read from one clock. `return` is `null` when the outcome
  is unknown (timeout, connection lost, 503 after the request was sent): such
  an operation may have taken effect at any moment after `invoke`, or never,
  and its `result` is ignored.
- `op`, `arg`, `result`: one of

  | op       | arg                                       | result (when `return` is not null)                        |
  |----------|-------------------------------------------|-----------------------------------------------------------|
  | `get`    | absent, null or `{}`                      | `{"found": false}` or `{"found": true, "value": v, "etag": e}` |
  | `put`    | `{"value": v}`                            | `{"ok": true, "etag": e}`                                 |
  | `cas`    | `{"value": v, "if_match": e0}`            | `{"ok": true, "etag": e}` or `{"ok": false}` (412)        |
  | `cas`    | `{"value": v, "if_absent": true}`         | same (`If-None-Match: *`)                                 |
  | `delete` | absent, null or `{}`                      | `{"found": true}` (204) or `{"found": false}` (404)       |
  | `append` | `{"element": x}`                          | `{"ok": true, "count": n, "etag": e}`                     |

  `arg` may hold no other fields (an unmodelled precondition would be silently
  ignored); `result` and the line may hold more (a status, a note).

Model
-----
Every key starts absent (a harness uses fresh keys). Its state is absent or
(value, ETag). Values are JSON documents compared by their canonical JSON text
(so `1` and `1.0` differ, as their bytes do). ETags are opaque strings compared
exactly, so a harness must record one form of them (the identity ETag, not the
gzip one), and are unique per write (docs/design-choices.md): two completed
writes that answered one ETag are a violation by themselves.

- `get` must see the state exactly: the value and the ETag.
- `put` makes the state (v, e) with the ETag its answer carried.
- `cas` with `if_match` succeeds iff the key is present with ETag e0;
  with `if_absent` iff the key is absent. A failed cas changes nothing.
- `delete` answers found iff the key was present, and leaves it absent.
- `append` adds x to the list, as the server's POST does: an absent key counts
  as `[]`, a value v that is not a list as `[v]`, and an x that is itself a
  list adds each of its items. `count` is the list's length after it.

An operation with an unknown outcome is linearized somewhere after its invoke
or not at all, and its answer is not checked. A write of unknown outcome gives
the key an ETag no completed write answered; the first get that returns the
key's value then learns it (it must stay the same after), and a cas expecting
an ETag that no completed write answered may succeed or fail against it. A get
of unknown outcome constrains nothing and is dropped.

Algorithm
---------
Wing & Gong's search with Lowe's just-in-time linearization and memoization,
as Porcupine does it: the completed operations' call and return events in time
order (calls first at equal times, so touching intervals count as concurrent)
in a linked list; repeatedly linearize the first call whose operation the
model accepts, unless that configuration (set of linearized operations, model
state) was entered before, in which case that branch is known to fail or is
being explored; on reaching a return event whose operation is not yet
linearized, undo the last choice. The search succeeds once every completed
operation is placed.

Operations of unknown outcome never return, so they stay candidates to the
end. Three things limit how much they multiply the search:
- they are tried only when no completed operation fits before the first
  pending return (and only those invoked by then);
- a configuration also counts as entered when it was entered with a subset of
  its unknown-outcome operations placed: those could always have been left
  out, so the larger set has no future the smaller lacked;
- unknown-outcome writes of a value no get returned are modelled as writing
  one stand-in value, since no read can tell such values apart. Then two of
  the same kind (a cas with the same precondition), or two deletes, have the
  same effect on every state, and only the earliest invoked of them still
  unplaced is tried: a linearization using a later one works with it instead.

On a violation, the report gives the longest linearizable prefix the search
found (most completed operations, then fewest unknown outcomes guessed), the
state after it, and the completed operations that could come next there, each
with whether the model refused it in that state or accepted it and nothing
after it worked out.

Limits: the search is exponential in the worst case (for example, twenty
concurrent writes followed by a read nothing explains). Measured on simulated
histories of 2,000 operations on one key from 8 clients (simulated_history.py):
accepting takes under a second, even with 3% unknown outcomes; refuting one
forged or stale read takes under half a second without unknown outcomes, 0.1
to 13 s with 1% of them, and often over 20 s with 3%. Refuting must rule out
every placement of the unknown writes that could explain something (a delete
that found the key, a failed create, an append count), and each such guess
reopens the search behind it. `--timeout` bounds the whole run; a key left
undecided is reported as unknown.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
from dataclasses import dataclass, field

KINDS = ("get", "put", "cas", "append", "delete")


class HistoryError(ValueError):
    """A line of the history that is not an operation in the format above."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class Operation:
    line: int               # 1-based line in the history: how reports name it
    client: int
    key: str
    kind: str
    invoke: float
    returned: float | None  # None: outcome unknown
    arg: dict
    result: dict | None     # None exactly when `returned` is None

    @property
    def completed(self) -> bool:
        return self.returned is not None

    def describe(self) -> str:
        arg = "" if not self.arg else " " + _compact(self.arg)
        answer = _compact(self.result) if self.completed else "outcome unknown"
        end = f"{self.returned:.6f}" if self.completed else "..."
        return f"line {self.line} client {self.client} {self.kind}{arg} -> {answer} [{self.invoke:.6f}, {end}]"


# --- Reading a history -------------------------------------------------------

def parse_history(lines) -> list[Operation]:
    """Operations from JSON lines (an iterable of str); raises HistoryError."""
    operations = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            operations.append(parse_operation(number, text))
    return operations


def read_history(path: str) -> list[Operation]:
    with open(path, encoding="utf-8") as file:
        return parse_history(file)


def parse_operation(line: int, text: str) -> Operation:
    try:
        record = json.loads(text)
    except ValueError as error:
        raise HistoryError(line, f"not JSON ({error})") from None
    if not isinstance(record, dict):
        raise HistoryError(line, "not a JSON object")
    return operation_from_record(line, record)


def operation_from_record(line: int, record: dict) -> Operation:
    def fail(message):
        raise HistoryError(line, message)

    for name in ("client", "key", "op", "invoke", "return"):
        if name not in record:
            fail(f"no {name!r}")
    client, key, kind = record["client"], record["key"], record["op"]
    invoke, returned = record["invoke"], record["return"]
    if not _is_int(client):
        fail("'client' is not an integer")
    if not isinstance(key, str):
        fail("'key' is not a string")
    if kind not in KINDS:
        fail(f"'op' is {kind!r}, not one of {', '.join(KINDS)}")
    if not _is_finite_number(invoke):
        fail("'invoke' is not a finite number")
    if returned is not None:
        if not _is_finite_number(returned):
            fail("'return' is neither a finite number nor null")
        if returned < invoke:
            fail("'return' is before 'invoke'")
    arg = record.get("arg")
    arg = {} if arg is None else arg
    if not isinstance(arg, dict):
        fail("'arg' is not an object")
    problem = _ARG_CHECKS[kind](arg)
    if problem:
        fail(f"{kind} arg: {problem}")
    result = None
    if returned is not None:
        result = record.get("result")
        if not isinstance(result, dict):
            fail("'result' is not an object (and 'return' is not null)")
        problem = _RESULT_CHECKS[kind](result)
        if problem:
            fail(f"{kind} result: {problem}")
    return Operation(line, client, key, kind, float(invoke),
                     None if returned is None else float(returned), arg, result)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_finite_number(x) -> bool:
    return (_is_int(x) or isinstance(x, float)) and math.isfinite(x)


def _only(arg: dict, allowed: set) -> str | None:
    extra = sorted(set(arg) - allowed)
    return f"unexpected field(s) {', '.join(extra)}" if extra else None


def _check_no_arg(arg):
    return _only(arg, set())


def _check_put_arg(arg):
    return _only(arg, {"value"}) or (None if "value" in arg else "no 'value'")


def _check_cas_arg(arg):
    if "value" not in arg:
        return "no 'value'"
    if "if_match" in arg:
        if not isinstance(arg["if_match"], str):
            return "'if_match' is not a string"
        return _only(arg, {"value", "if_match"})
    if arg.get("if_absent") is True:
        return _only(arg, {"value", "if_absent"})
    return "needs 'if_match': etag or 'if_absent': true"


def _check_append_arg(arg):
    return _only(arg, {"element"}) or (None if "element" in arg else "no 'element'")


def _check_etag(result):
    return None if isinstance(result.get("etag"), str) else "'etag' is not a string"


def _check_get_result(result):
    if result.get("found") is False:
        return None
    if result.get("found") is True:
        return _check_etag(result) if "value" in result else "found but no 'value'"
    return "'found' is not a boolean"


def _check_write_result(result):
    return _check_etag(result) if result.get("ok") is True else "'ok' is not true"


def _check_cas_result(result):
    if result.get("ok") is False:
        return None
    return _check_write_result(result)


def _check_delete_result(result):
    return None if isinstance(result.get("found"), bool) else "'found' is not a boolean"


def _check_append_result(result):
    count = result.get("count")
    if not _is_int(count) or count < 1:
        return "'count' is not a positive integer"
    return _check_write_result(result)


_ARG_CHECKS = {"get": _check_no_arg, "put": _check_put_arg, "cas": _check_cas_arg,
               "append": _check_append_arg, "delete": _check_no_arg}
_RESULT_CHECKS = {"get": _check_get_result, "put": _check_write_result, "cas": _check_cas_result,
                  "append": _check_append_result, "delete": _check_delete_result}


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- The model: one key's register / list ------------------------------------

# Stands for any value (or list element) that no read returned: no get can tell such
# values apart, so unknown-outcome writes of them are interchangeable (see _search).
UNREAD = "\0unread"


def _decode(text: str):
    return "<a value no read returned>" if text == UNREAD else json.loads(text)


class ValueTable:
    """Interns JSON values as small ints so model states hash cheaply.

    Lists are hash-consed (a list is its prefix's id plus a last element), so
    appending is one dict lookup and a list gets the same id however it was
    built, by one put or by many appends.
    """

    def __init__(self):
        self._scalars: dict[str, int] = {}
        self._conses: dict[tuple[int, str], int] = {}
        self._nodes: list = [None]      # id -> None (the empty list), (prefix id, element) or ("json", text)
        self._lengths: list[int] = [0]  # id -> list length, or -1 for a value that is not a list
        self.empty_list = 0
        self.unread = self._new(("json", UNREAD), -1)

    def intern(self, value) -> int:
        if isinstance(value, list):
            vid = self.empty_list
            for element in value:
                vid = self.cons(vid, _canonical(element))
            return vid
        text = _canonical(value)
        vid = self._scalars.get(text)
        if vid is None:
            vid = self._scalars[text] = self._new(("json", text), -1)
        return vid

    def cons(self, prefix: int, element: str) -> int:
        vid = self._conses.get((prefix, element))
        if vid is None:
            vid = self._conses[(prefix, element)] = self._new((prefix, element), self._lengths[prefix] + 1)
        return vid

    def append(self, vid: int | None, elements: tuple[str, ...]) -> int:
        """The value after the server's append of `elements` to `vid` (None: absent)."""
        if vid is None:
            vid = self.empty_list
        elif self._lengths[vid] < 0:
            vid = self.cons(self.empty_list, self._nodes[vid][1])
        for element in elements:
            vid = self.cons(vid, element)
        return vid

    def length(self, vid: int) -> int:
        return self._lengths[vid]

    def to_json(self, vid: int):
        node = self._nodes[vid]
        if self._lengths[vid] < 0:
            return _decode(node[1])
        items = []
        while node is not None:
            prefix, element = node
            items.append(_decode(element))
            node = self._nodes[prefix]
        return items[::-1]

    def _new(self, node, length: int) -> int:
        self._nodes.append(node)
        self._lengths.append(length)
        return len(self._nodes) - 1


def read_values(ops) -> set[str]:
    """Canonical texts of the values completed gets returned, and of their lists' elements."""
    seen = set()
    for op in ops:
        if op.kind == "get" and op.completed and op.result["found"]:
            value = op.result["value"]
            seen.add(_canonical(value))
            if isinstance(value, list):
                seen.update(_canonical(x) for x in value)
    return seen


def symmetry_class(op: Operation, index: int, read: set[str]):
    """Operations of unknown outcome with one class have the same effect on every state.

    The effect depends on the written value only through reads of it, so writes of
    values never read differ only in kind (and a cas in its expected ETag).
    """
    if op.kind == "delete":
        return ("delete",)
    written = op.arg["element"] if op.kind == "append" else op.arg["value"]
    if isinstance(written, list) or _canonical(written) in read:
        return ("only", index)
    if op.kind == "cas":
        return ("cas", op.arg.get("if_match"), bool(op.arg.get("if_absent")))
    return (op.kind,)


# A state is None (absent) or (value id, etag), etag None while unknown.
REFUSED = object()


def compile_step(op: Operation, values: ValueTable, answered: frozenset, unread: bool = False):
    """The operation as a function from a state to the next state, or REFUSED.

    `answered`: the ETags completed writes answered. ETags are unique per write,
    so the unknown ETag of an unknown-outcome write is none of them.
    `unread`: the value the op writes is one no read returned; it is modelled as
    UNREAD so that such writes lead to equal states.
    For an operation of unknown outcome, REFUSED where it could only have been
    a no-op: leaving it out of the linearization is the same thing.
    """
    arg, result = op.arg, op.result
    if op.kind == "get":
        if not result["found"]:
            return lambda s: s if s is None else REFUSED
        vid, etag = values.intern(result["value"]), result["etag"]

        def get(s):
            if s is None or s[0] != vid:
                return REFUSED
            if s[1] is None:        # learns the ETag an unknown-outcome write gave
                return REFUSED if etag in answered else (vid, etag)
            return s if s[1] == etag else REFUSED
        return get

    if op.kind in ("put", "cas"):
        # A completed failed cas has no ETag; its `after` is never used.
        after = (values.unread if unread else values.intern(arg["value"]), result.get("etag") if result else None)

    if op.kind == "put":
        return lambda s: after

    if op.kind == "cas":
        if arg.get("if_absent"):
            if result is None or result["ok"]:
                return lambda s: after if s is None else REFUSED
            return lambda s: s if s is not None else REFUSED
        expected = arg["if_match"]
        # An unknown ETag may be the expected one, unless a completed write answered that.
        unknown_may_match = expected not in answered
        if result is None or result["ok"]:
            def cas_holds(s):
                if s is not None and (s[1] == expected or s[1] is None and unknown_may_match):
                    return after
                return REFUSED
            return cas_holds
        return lambda s: s if s is None or s[1] != expected else REFUSED

    if op.kind == "delete":
        if result is None or result["found"]:
            return lambda s: None if s is not None else REFUSED
        return lambda s: s if s is None else REFUSED

    # append
    element = arg["element"]
    if unread:
        elements = (UNREAD,)
    elif isinstance(element, list):
        elements = tuple(_canonical(x) for x in element)
    else:
        elements = (_canonical(element),)
    etag = result["etag"] if result else None
    count = result["count"] if result else None

    def append(s):
        vid = values.append(None if s is None else s[0], elements)
        if count is not None and values.length(vid) != count:
            return REFUSED
        return (vid, etag)
    return append


def describe_state(state, values: ValueTable) -> str:
    if state is None:
        return "absent"
    etag = "unknown (an unknown-outcome write's)" if state[1] is None else _compact(state[1])
    return f"value {_compact(values.to_json(state[0]))} etag {etag}"


# --- The search ----------------------------------------------------------------

@dataclass
class Violation:
    reason: str
    culprits: list[tuple[Operation, str]]   # the operations that do not fit, and why
    prefix: list[Operation] = field(default_factory=list)  # the longest linearizable prefix found
    state: str = ""                         # the key's state after that prefix
    unknown_outcomes: int = 0               # unknown-outcome operations that could also come next

    def lines(self) -> list[str]:
        out = [self.reason]
        if self.prefix:
            if len(self.prefix) > 5:
                out.append(f"  ... ({len(self.prefix) - 5} earlier)")
            out += [f"  {op.describe()}" for op in self.prefix[-5:]]
        if self.state:
            out.append(f"then, with the key {self.state}:")
        out += [f"  {op.describe()}: {why}" for op, why in self.culprits]
        if self.unknown_outcomes:
            out.append(f"  (and {self.unknown_outcomes} operation(s) of unknown outcome, however placed)")
        return out


@dataclass
class KeyResult:
    key: str
    verdict: str                    # "ok", "violation" or "unknown"
    operations: int
    unknown_outcomes: int
    seconds: float
    violation: Violation | None = None
    note: str = ""

    def summary(self) -> str:
        text = (f"key {_compact(self.key)}: {self.verdict} - {self.operations} operation(s)"
                f" ({self.unknown_outcomes} outcome unknown), {self.seconds:.2f} s")
        return f"{text}; {self.note}" if self.note else text


class _TimedOut(Exception):
    pass


def check_key(key: str, operations: list[Operation], deadline: float | None = None) -> KeyResult:
    """Whether one key's operations are linearizable (by `deadline`, a time.monotonic())."""
    started = time.monotonic()
    # A get of unknown outcome constrains nothing and changes nothing.
    ops = [op for op in operations if op.completed or op.kind != "get"]
    unknown = sum(1 for op in operations if not op.completed)
    writes = [op for op in ops if op.completed and op.kind != "get" and "etag" in op.result]
    repeated = _repeated_etag(writes)
    if repeated:
        return KeyResult(key, "violation", len(operations), unknown, time.monotonic() - started, repeated)
    answered = frozenset(op.result["etag"] for op in writes)
    read = read_values(ops)
    classes = [None if op.completed else symmetry_class(op, i, read) for i, op in enumerate(ops)]
    values = ValueTable()
    steps = [compile_step(op, values, answered, unread=c is not None and c[0] not in ("only", "delete"))
             for op, c in zip(ops, classes)]
    try:
        found = _search(ops, steps, classes, deadline)
    except _TimedOut:
        return KeyResult(key, "unknown", len(operations), unknown, time.monotonic() - started,
                         note="time limit reached")
    if found is None:
        return KeyResult(key, "ok", len(operations), unknown, time.monotonic() - started)
    prefix, state = found
    violation = _explain(ops, steps, prefix, state, values)
    return KeyResult(key, "violation", len(operations), unknown, time.monotonic() - started, violation)


def _search(ops, steps, classes, deadline):
    """None if linearizable, else (longest prefix as op indices, state after it)."""
    # Keep the cyclic garbage collector off: the memo grows to many tuples, none in a cycle,
    # and full collections over them would cost more than the search.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _search_linearization(ops, steps, classes, deadline)
    finally:
        if collecting:
            gc.enable()


def _search_linearization(ops, steps, classes, deadline):
    # Completed operations: their call and return events in time order (calls first at
    # equal times) as nodes 1..2d of a doubly linked list, as in Lowe's algorithm.
    done = [i for i, op in enumerate(ops) if op.completed]
    events = sorted([(ops[i].invoke, 0, i) for i in done] + [(ops[i].returned, 1, i) for i in done])
    head, tail, nxt, prv = _linked_list(len(events))
    node_op = [-1] + [i for _, _, i in events] + [-1]
    is_call = [False] + [kind == 0 for _, kind, _ in events] + [False]
    return_node = {i: node for node, (_, kind, i) in enumerate(events, start=1) if kind == 1}
    # Operations of unknown outcome: a list of their own in invoke order. They are tried
    # only once no completed operation fits (so that _enter can prune the orders that
    # place them needlessly), and only those invoked by the first return still pending.
    pending = sorted((i for i, op in enumerate(ops) if not op.completed), key=lambda i: ops[i].invoke)
    ihead, itail, inxt, iprv = _linked_list(len(pending))
    info_op = [-1] + pending + [-1]
    info_invoke = [math.inf] + [ops[i].invoke for i in pending] + [math.inf]
    # Of interchangeable operations only the earliest invoked still pending is tried:
    # any linearization using a later one works as well with the earlier one instead.
    # So each class's linearized members are a prefix of it, `tried[c]` long.
    class_ids = {}
    info_class = [0] + [class_ids.setdefault(classes[i], len(class_ids)) for i in pending] + [0]
    members = [[] for _ in class_ids]
    for node in range(1, len(pending) + 1):
        members[info_class[node]].append(node)
    for nodes in members:
        nodes.append(-1)
    tried = [0] * len(class_ids)
    bit = {}              # op index -> its bit in `placed` (completed) or `guessed` (unknown outcome)
    for position, i in enumerate(done):
        bit[i] = 1 << position
    for position, i in enumerate(pending):
        bit[i] = 1 << position

    remaining = len(done)
    state = None
    placed = 0            # bitset of completed operations linearized
    guessed = 0           # bitset of unknown-outcome operations linearized
    # (placed, state) -> the `guessed` sets it was reached with. Having explored
    # (placed, state) with a subset of `guessed` is enough: the ops in the difference
    # could always have been left out, so the larger set has no future the smaller lacked.
    seen = {}
    stack = []            # (op index, node, state before it, horizon or None for a completed op)
    best, best_state, best_rank = [], None, (0, 0)
    iterations = 0
    entry, horizon = nxt[head], None
    while remaining:
        iterations += 1
        if deadline is not None and iterations & 1023 == 0 and time.monotonic() > deadline:
            raise _TimedOut
        if horizon is None:
            if not is_call[entry]:
                # No completed operation fits before this return: try the unknown outcomes.
                horizon, entry = ops[node_op[entry]].returned, inxt[ihead]
                continue
            i = node_op[entry]
            after = steps[i](state)
            if after is not REFUSED and _enter(seen, placed | bit[i], after, guessed):
                stack.append((i, entry, state, None))
                placed |= bit[i]
                state = after
                r = return_node[i]
                nxt[prv[entry]] = nxt[entry]
                prv[nxt[entry]] = prv[entry]
                nxt[prv[r]] = nxt[r]
                prv[nxt[r]] = prv[r]
                remaining -= 1
                entry = nxt[head]
            else:
                entry = nxt[entry]
            continue
        if info_invoke[entry] <= horizon:
            i, c = info_op[entry], info_class[entry]
            after = steps[i](state) if members[c][tried[c]] == entry else REFUSED
            if after is not REFUSED and _enter(seen, placed, after, guessed | bit[i]):
                stack.append((i, entry, state, horizon))
                guessed |= bit[i]
                tried[c] += 1
                state = after
                inxt[iprv[entry]] = inxt[entry]
                iprv[inxt[entry]] = iprv[entry]
                entry, horizon = nxt[head], None
            else:
                entry = inxt[entry]
            continue
        # Nothing fits before the pending return: undo the last choice. But first keep the
        # path if it is the best explanation yet: most completed operations placed, then
        # fewest unknown outcomes guessed.
        completed_placed = len(done) - remaining
        rank = (completed_placed, completed_placed - len(stack))
        if rank > best_rank:
            best, best_state, best_rank = [i for i, _, _, _ in stack], state, rank
        if not stack:
            return best, best_state
        i, entry, state, horizon = stack.pop()
        if horizon is None:
            placed ^= bit[i]
            remaining += 1
            r = return_node[i]
            nxt[prv[r]] = r
            prv[nxt[r]] = r
            nxt[prv[entry]] = entry
            prv[nxt[entry]] = entry
            entry = nxt[entry]
        else:
            guessed ^= bit[i]
            tried[info_class[entry]] -= 1
            inxt[iprv[entry]] = entry
            iprv[inxt[entry]] = entry
            entry = inxt[entry]
    return None


def _linked_list(count):
    """head, tail, next and previous arrays of a list of nodes 1..count."""
    tail = count + 1
    return 0, tail, list(range(1, tail + 1)) + [tail], [0] + list(range(0, tail))


def _enter(seen, placed, state, guessed) -> bool:
    """Records the configuration; False if it (or one it is dominated by) was entered before."""
    key = (placed, state)
    sets = seen.get(key)
    if sets is None:
        seen[key] = [guessed]
        return True
    for earlier in sets:
        if earlier & guessed == earlier:
            return False
    sets.append(guessed)
    return True


def _repeated_etag(writes) -> Violation | None:
    """Two completed writes that answered one ETag: the model's ETags are unique per write."""
    first = {}
    for op in writes:
        earlier = first.setdefault(op.result["etag"], op)
        if earlier is not op:
            return Violation("two writes answered the same ETag (every write gets a new one)",
                             [(earlier, "first"), (op, "again")])
    return None


def _explain(ops, steps, prefix, state, values) -> Violation:
    placed = set(prefix)
    rest = [i for i in range(len(ops)) if i not in placed]
    # The next operation must be invoked no later than the earliest return left.
    horizon = min(ops[i].returned for i in rest if ops[i].completed)
    next_ops = sorted((i for i in rest if ops[i].invoke <= horizon), key=lambda i: ops[i].invoke)
    candidates = []
    for i in next_ops:
        if ops[i].completed:
            fits = steps[i](state) is not REFUSED
            why = "possible there, but then the rest cannot be placed" if fits else "impossible in that state"
            candidates.append((ops[i], why))
    reason = (f"not linearizable: after the longest linearizable prefix found ({len(prefix)} operation(s)),"
              f" none of those that could come next fits")
    unknown = sum(1 for i in next_ops if not ops[i].completed)
    return Violation(reason, candidates, [ops[i] for i in prefix], describe_state(state, values), unknown)


def check_history(operations: list[Operation], timeout: float | None = None) -> list[KeyResult]:
    """Each key's verdict, keys in sorted order; `timeout` (seconds) bounds the whole check."""
    deadline = None if timeout is None else time.monotonic() + timeout
    by_key: dict[str, list[Operation]] = {}
    for op in operations:
        by_key.setdefault(op.key, []).append(op)
    results = []
    for key in sorted(by_key):
        results.append(check_key(key, by_key[key], deadline))
    return results


# --- Command line ------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Check that a history of Larder key operations is linearizable.")
    parser.add_argument("history", help="JSON lines, one operation per line (see the module docstring)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="give up after S seconds in all; undecided keys are reported as unknown")
    args = parser.parse_args(argv)
    try:
        operations = read_history(args.history)
    except (OSError, HistoryError) as error:
        print(f"{args.history}: {error}", file=sys.stderr)
        return 2
    results = check_history(operations, args.timeout)
    for result in results:
        print(result.summary())
        if result.violation:
            for line in result.violation.lines():
                print(f"    {line}")
    if any(r.verdict == "violation" for r in results):
        return 1
    return 2 if any(r.verdict == "unknown" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
