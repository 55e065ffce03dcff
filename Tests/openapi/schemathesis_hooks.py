"""schemathesis hooks for OpenAPITests (SCHEMATHESIS_HOOKS=this file).

`?wait=S` holds a GET for up to S seconds (300 at most) by design: a run
that generated large waits would spend minutes parked. Every generated case
keeps its `wait` (so the parameter is still exercised, negative values and
junk included) but integers are clamped to 0-1 s.
"""
import schemathesis


@schemathesis.hook
def map_case(context, case):
    query = case.query
    if query and "wait" in query:
        value = query["wait"]
        if isinstance(value, bool):
            pass
        elif isinstance(value, int) and value > 1:
            query["wait"] = 1
        elif isinstance(value, float) and value > 1:
            query["wait"] = 1
        elif isinstance(value, str) and value.strip().lstrip("+").isdigit() and int(value) > 1:
            query["wait"] = "1"
    return case


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    """A snapshot document: generated text as it is, else one JSON line per
    generated object."""
    import json
    if isinstance(value, str):
        return value.encode()
    items = value if isinstance(value, list) else [value]
    return b"".join(json.dumps(item).encode() + b"\n" for item in items)
