"""A small Larder client on the standard library, bound to one namespace."""

import datetime
import json
import urllib.error
import urllib.parse
import urllib.request


class LarderError(Exception):
    """An answer the helper did not expect: the status, and Larder's JSON error if any."""

    def __init__(self, method, url, status, body):
        self.status = status
        self.body = body
        try:
            detail = json.loads(body)
        except ValueError:
            detail = body.decode("utf-8", "replace")[:200]
        super().__init__(f"{method} {url}: {status} {detail}")


class Larder:
    """One namespace of a Larder server.

    ``url`` is the namespace's base URL (``http://127.0.0.1:PORT/ns/NAME``):
    give it to the code under test as its Larder base URL, and every path of
    the API works under it unchanged.
    """

    def __init__(self, url, timeout=30, token=None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        #: Sent as ``Authorization: Bearer`` to a server started with ``--token``.
        self.token = token

    # -- HTTP -------------------------------------------------------------

    def request(self, method, path, body=None, headers=None):
        """``(status, headers, body bytes)`` of one request to ``url + path``; never raises for a status."""
        if isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        if self.token:
            headers.setdefault("Authorization", f"Bearer {self.token}")
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def _expect(self, method, path, ok, body=None, headers=None):
        status, hdrs, data = self.request(method, path, body, headers)
        if status not in ok:
            raise LarderError(method, self.url + path, status, data)
        return status, hdrs, data

    @staticmethod
    def _key(key):
        return urllib.parse.quote(key, safe="/")

    # -- Values -------------------------------------------------------------

    def get(self, key):
        """The value's bytes, or None when the key is absent."""
        status, _, data = self._expect("GET", "/store/" + self._key(key), (200, 404))
        return data if status == 200 else None

    def put(self, key, value, content_type="application/octet-stream"):
        """Stores bytes (or text); returns the new ETag."""
        _, hdrs, _ = self._expect("PUT", "/store/" + self._key(key), (201, 204), value,
                                  {"Content-Type": content_type})
        return hdrs.get("ETag")

    def get_json(self, key, default=None):
        """The JSON value under ``key``, or ``default`` when absent."""
        data = self.get(key)
        return default if data is None else json.loads(data)

    def put_json(self, key, value):
        """Stores ``value`` as JSON; returns the new ETag."""
        return self.put(key, json.dumps(value), "application/json")

    def delete(self, key):
        """Deletes ``key``; returns whether it existed."""
        status, _, _ = self._expect("DELETE", "/store/" + self._key(key), (204, 404))
        return status == 204

    def keys(self, prefix=""):
        """Every key under ``prefix``, in byte order (follows the listing's pages)."""
        keys, after = [], None
        while True:
            query = {"limit": "10000"}
            if after:
                query["after"] = after
            _, _, data = self._expect("GET", "/store/" + self._key(prefix) + "?" + urllib.parse.urlencode(query), (200,))
            page = json.loads(data)
            keys += [k["key"] for k in page["keys"]]
            after = page.get("next")
            if not after:
                return keys

    # -- Test suite helpers --------------------------------------------------

    def reset(self):
        """Back to exactly the fixtures (constant time); returns how many stored values went."""
        _, _, data = self._expect("DELETE", "/store/", (200,))
        return json.loads(data).get("deleted", 0)

    def snapshot(self, prefix=""):
        """The namespace's values under ``prefix`` as a snapshot document (NDJSON text)."""
        _, _, data = self._expect("GET", "/snapshot?" + urllib.parse.urlencode({"prefix": prefix}), (200,))
        return data.decode()

    def restore(self, document, replace=False, prefix=""):
        """Puts a snapshot document back (all or nothing); ``replace`` clears the prefix first."""
        query = {"prefix": prefix}
        if replace:
            query["replace"] = "1"
        _, _, data = self._expect("POST", "/snapshot?" + urllib.parse.urlencode(query), (200,), document,
                                  {"Content-Type": "application/x-ndjson"})
        return json.loads(data)

    def fault(self, prefix="", **rule):
        """Adds a fault rule (``delayMs``, ``status``, ``probability``, ``count``, ``drop``, ...)
        for requests under ``prefix`` in this namespace. Needs a server started with
        ``--allow-faults`` (the plugin's own server is)."""
        rule["prefix"] = prefix
        _, _, data = self._expect("POST", "/faults", (200,), json.dumps(rule), {"Content-Type": "application/json"})
        return json.loads(data)

    def clear_faults(self):
        """Removes this namespace's fault rules."""
        self._expect("DELETE", "/faults", (200,))

    def requests(self, method=None, prefix=None, status=None, since=None, limit=None):
        """The requests the server answered in this namespace, oldest first, as the
        journal's dicts (``seq``, ``time``, ``method``, ``path``, ``query``,
        ``status``, ``ms``, ``bytesIn``, ``bytesOut``, ``etag``, ``fault``).

        ``path`` is inside the namespace (``/store/users/7``). Filters: ``method``
        (``"GET"``), ``prefix`` (a key prefix: ``"users/7"``), ``status`` (``404``
        or ``"4xx"``), ``since`` (a ``seq``: only later ones), ``limit``. The
        plugin resets the namespace before each test, which empties the journal,
        so it holds only this test's requests (the helpers' own calls included).
        """
        query = {name: str(value) for name, value in
                 (("method", method), ("prefix", prefix), ("status", status), ("since", since), ("limit", limit))
                 if value is not None}
        path = "/journal" + ("?" + urllib.parse.urlencode(query) if query else "")
        _, _, data = self._expect("GET", path, (200,))
        return json.loads(data)["requests"]

    def clear_requests(self):
        """Empties this namespace's journal, so ``requests()`` sees only what follows."""
        self._expect("DELETE", "/journal", (204,))

    @property
    def clock(self):
        """This namespace's clock (``/clock``): move time instead of sleeping.
        The ``larder`` fixture puts it back on the system clock when the test ends."""
        return Clock(self)

    def drop(self):
        """Drops the namespace (its values, feed and faults); True when it existed."""
        base, _, name = self.url.rpartition("/ns/")
        status, _, data = Larder(base, self.timeout, self.token).request("DELETE", "/ns/" + name)
        if status not in (204, 404):
            raise LarderError("DELETE", self.url, status, data)
        return status == 204

    def __repr__(self):
        return f"Larder({self.url!r})"


class Clock:
    """A namespace's clock. Expiry (``ttl``), ``Last-Modified`` and the journal's
    times read it; real waits (``wait=``, delay faults) stay real.

    Durations are ``"500ms"``, ``"90s"``, ``"15m"``, ``"2h"``, ``"3d"`` (or
    combined: ``"1h30m"``), a number of milliseconds, or a ``datetime.timedelta``.
    Every call answers the clock's state: ``{"now": ..., "offsetMs": ..., "frozen": ...}``.
    """

    def __init__(self, larder):
        self._larder = larder

    def _move(self, move):
        _, _, data = self._larder._expect("POST", "/clock", (200,), json.dumps(move), {"Content-Type": "application/json"})
        return json.loads(data)

    def state(self):
        _, _, data = self._larder._expect("GET", "/clock", (200,))
        return json.loads(data)

    def now(self):
        """The clock's time, as an aware ``datetime`` in UTC."""
        return _parse_time(self.state()["now"])

    def advance(self, duration):
        """Moves time forward; keys whose ``ttl`` it passes are gone, with their
        ``expire`` events, when this returns."""
        if isinstance(duration, datetime.timedelta):
            duration = int(duration.total_seconds() * 1000)
        return self._move({"advance": duration})

    def set(self, when):
        """Moves time forward to ``when`` (a ``datetime``, naive ones taken as UTC,
        or an RFC 3339 string); never backwards."""
        if isinstance(when, datetime.datetime):
            if when.tzinfo is None:
                when = when.replace(tzinfo=datetime.timezone.utc)
            when = when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return self._move({"set": when})

    def freeze(self):
        """Stops time where it is (until ``advance``, ``set``, ``unfreeze`` or ``reset``)."""
        return self._move({"freeze": True})

    def unfreeze(self):
        """Lets time run on from where it stands."""
        return self._move({"freeze": False})

    def reset(self):
        """Back on the system clock (what expired while it was ahead stays gone)."""
        _, _, data = self._larder._expect("DELETE", "/clock", (200,))
        return json.loads(data)


def _parse_time(text):
    return datetime.datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
