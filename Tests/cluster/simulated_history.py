"""Linearizable histories by construction, for testing the checker.

Clients issue operations one after another with random durations; each
operation takes effect on an in-memory store with Larder's semantics at a
random instant inside its interval, so the order of those instants is a
linearization and the history is linearizable. Some operations "time out":
the client records an unknown outcome at the end of the interval, and the
operation takes effect later (even after the client moved on) or never.
"""
from __future__ import annotations

import heapq
import random


class ReferenceStore:
    """One key space with Larder's answers to get, put, cas, delete and append."""

    def __init__(self):
        self.entries: dict[str, tuple[object, str]] = {}
        self.issued = 0

    def _etag(self) -> str:
        self.issued += 1
        return f'"v{self.issued}"'

    def apply(self, key: str, kind: str, arg: dict) -> dict:
        entry = self.entries.get(key)
        if kind == "get":
            return {"found": False} if entry is None else {"found": True, "value": entry[0], "etag": entry[1]}
        if kind == "delete":
            self.entries.pop(key, None)
            return {"found": entry is not None}
        if kind == "cas":
            holds = entry is None if arg.get("if_absent") else entry is not None and entry[1] == arg["if_match"]
            if not holds:
                return {"ok": False}
        if kind in ("put", "cas"):
            self.entries[key] = (arg["value"], self._etag())
            return {"ok": True, "etag": self.entries[key][1]}
        # append, as the server's POST: absent is [], a non-list v is [v]
        items = [] if entry is None else list(entry[0]) if isinstance(entry[0], list) else [entry[0]]
        items.append(arg["element"])
        self.entries[key] = (items, self._etag())
        return {"ok": True, "count": len(items), "etag": self.entries[key][1]}


# How often each kind of operation is chosen.
MIX = (("get", 35), ("put", 25), ("cas", 20), ("cas_absent", 4), ("delete", 4), ("append", 12))


def simulate(seed: int, clients: int = 8, operations: int = 200, keys=("k",),
             unknown_rate: float = 0.02) -> list[dict]:
    """History records (dicts in the checker's line format) in invoke order."""
    rng = random.Random(seed)
    store = ReferenceStore()
    kinds = [kind for kind, weight in MIX for _ in range(weight)]
    last_etag = {}               # (client, key) -> the ETag that client last saw there
    records = []
    events = []                  # (time, sequence, action, payload)
    sequence = 0

    def schedule(at, action, payload):
        nonlocal sequence
        sequence += 1
        heapq.heappush(events, (at, sequence, action, payload))

    def invoke(client, at):
        key = rng.choice(keys)
        kind = rng.choice(kinds)
        serial = len(records)
        if kind == "get" or kind == "delete":
            arg = {}
        elif kind == "put":
            arg = {"value": f"c{client}-{serial}"}
        elif kind == "cas_absent":
            kind, arg = "cas", {"value": f"c{client}-{serial}", "if_absent": True}
        elif kind == "cas":
            arg = {"value": f"c{client}-{serial}", "if_match": last_etag.get((client, key), '"v0"')}
        else:
            arg = {"element": f"c{client}-{serial}"}
        duration = rng.expovariate(1 / 0.010)
        record = {"client": client, "key": key, "op": kind, "invoke": at, "return": at + duration,
                  "arg": arg, "result": None}
        records.append(record)
        if rng.random() < unknown_rate:
            record["return"] = None
            # Takes effect somewhere up to three durations later, or never.
            if rng.random() < 0.5:
                schedule(at + rng.uniform(0, 3 * duration), "effect", record)
        else:
            schedule(at + rng.uniform(0, duration), "effect", record)
        schedule(at + duration, "answer", (client, record))

    for client in range(clients):
        schedule(rng.uniform(0, 0.010), "start", client)
    started = 0
    while events:
        at, _, action, payload = heapq.heappop(events)
        if action == "start":
            if started < operations:
                started += 1
                invoke(payload, at)
        elif action == "effect":
            result = store.apply(payload["key"], payload["op"], payload["arg"])
            if payload["return"] is not None:
                payload["result"] = result
        else:
            client, record = payload
            result = record["result"]
            if result is not None and "etag" in result:
                last_etag[(client, record["key"])] = result["etag"]
            schedule(at + rng.expovariate(1 / 0.002), "start", client)
    return records
