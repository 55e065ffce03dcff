#!/usr/bin/env python3
"""boto3 against Larder's S3 face as part of the whole server: namespaces
per access key, the request journal, fault rules and /metrics. One
scenario per run.

    boto3_server.py SCENARIO S3_URL PLAIN_URL

The server is started by Tests/LarderS3Tests/S3ServerTests.swift with the
keys below (`KEYS`) and --allow-faults. Prints "ok" and exits 0 when every
check of the scenario holds; an assertion names the first one that does not.
"""
import json
import sys
import time
import urllib.parse
import urllib.request

import boto3
import urllib3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
from botocore.client import Config
from botocore.exceptions import ClientError

import scenario_support
from scenario_support import check, error_code, plain_http

SCENARIO, S3_URL, PLAIN_URL = sys.argv[1:4]

# access key: (secret, namespace or None); the Swift test writes the same.
KEYS = {
    "default-key": ("default-secret", None),
    "w1-key": ("w1-secret", "w1"),
    "w2-key": ("w2-secret", "w2"),
}


def client(key="default-key", attempts=1, secret=None, **config):
    return boto3.client(
        "s3", endpoint_url=S3_URL, region_name="us-east-1",
        aws_access_key_id=key, aws_secret_access_key=secret or KEYS[key][0],
        config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": attempts, "mode": "standard"},
                      **config),
    )



def plain(method, path, body=None, headers=None):
    """The plain Larder API: `path` as is (`/ns/w1/store/b/k`)."""
    return plain_http(PLAIN_URL + path, method, body, headers)


def plain_json(method, path, rules=None):
    status, body = plain(method, path, json.dumps(rules).encode() if rules is not None else None,
                         {"Content-Type": "application/json"} if rules is not None else None)
    check(200 <= status < 300, f"{method} {path}: {status} {body!r}")
    return json.loads(body) if body else None


def journal(base="", query=""):
    return plain_json("GET", f"{base}/journal{query}")["requests"]



# MARK: - Scenarios

def namespaces():
    w1, w2, default = client("w1-key"), client("w2-key"), client()
    for s3, body in [(w1, b"one"), (w2, b"two")]:
        s3.create_bucket(Bucket="shared")
        s3.put_object(Bucket="shared", Key="k", Body=body)
    check(w1.get_object(Bucket="shared", Key="k")["Body"].read() == b"one", "w1 reads its own object")
    check(w2.get_object(Bucket="shared", Key="k")["Body"].read() == b"two", "w2 reads its own object")
    check(error_code(default.head_bucket, Bucket="shared") == "404", "the default namespace has no bucket 'shared'")
    check([b["Name"] for b in w1.list_buckets()["Buckets"]] == ["shared"], "w1's buckets")
    # The same store as /ns/<name>/store/, both ways.
    check(plain("GET", "/ns/w1/store/shared/k") == (200, b"one"), "w1's object on the plain API")
    check(plain("GET", "/ns/w2/store/shared/k") == (200, b"two"), "w2's object on the plain API")
    check(plain("GET", "/store/shared/k")[0] == 404, "nothing in the default namespace")
    check(plain("PUT", "/ns/w1/store/shared/plain", b"from plain")[0] == 201, "plain PUT in w1")
    check(w1.get_object(Bucket="shared", Key="plain")["Body"].read() == b"from plain", "w1 reads the plain API's write")
    check(error_code(w2.get_object, Bucket="shared", Key="plain") == "NoSuchKey", "w2 does not")
    names = [n["name"] for n in plain_json("GET", "/ns/")["namespaces"]]
    check(names == ["w1", "w2"], f"the namespaces the keys made: {names}")
    # A reset of w1 is seen by S3; w2 is untouched.
    check(plain("DELETE", "/ns/w1/store/")[0] in (200, 204), "reset w1")
    check(error_code(w1.get_object, Bucket="shared", Key="k") == "NoSuchBucket", "w1 after its reset")
    check(w1.list_buckets()["Buckets"] == [], "w1 has no bucket after its reset")
    check(w2.get_object(Bucket="shared", Key="k")["Body"].read() == b"two", "w2 after w1's reset")
    # A drop of w2 too; its key makes it afresh.
    check(plain("DELETE", "/ns/w2")[0] == 204, "drop w2")
    check(error_code(w2.get_object, Bucket="shared", Key="k") == "NoSuchBucket", "w2 after its drop")
    w2.create_bucket(Bucket="again")
    w2.put_object(Bucket="again", Key="k", Body=b"new")
    check(plain("GET", "/ns/w2/store/again/k") == (200, b"new"), "w2 made again by its key")


def journal_ops():
    s3 = client()
    plain("DELETE", "/store/")  # a reset empties the journal
    s3.create_bucket(Bucket="jrn")
    put = s3.put_object(Bucket="jrn", Key="dir/k", Body=b"12345")
    s3.get_object(Bucket="jrn", Key="dir/k")["Body"].read()
    s3.list_objects_v2(Bucket="jrn", Prefix="dir/")
    check(error_code(s3.head_object, Bucket="jrn", Key="missing") == "404", "head of a missing object")
    s3.delete_object(Bucket="jrn", Key="dir/k")
    plain("GET", "/store/jrn/native")
    entries = journal()
    ops = [e.get("op") for e in entries]
    check(ops == ["CreateBucket", "PutObject", "GetObject", "ListObjectsV2", "HeadObject", "DeleteObject", None],
          f"the operations in the journal: {ops}")
    check("op" not in entries[-1], f"a plain API request has no op: {entries[-1]}")
    by_op = {e.get("op"): e for e in entries}
    p = by_op["PutObject"]
    check(p["method"] == "PUT" and p["path"] == "/jrn/dir/k" and p["status"] == 200, f"PutObject entry: {p}")
    check(p["bytesIn"] >= 5 and p["etag"] == put["ETag"], f"PutObject bytes and ETag: {p}")
    g = by_op["GetObject"]
    check(g["status"] == 200 and g["bytesOut"] == 5 and g["etag"] == put["ETag"], f"GetObject entry: {g}")
    check(by_op["ListObjectsV2"]["path"] == "/jrn" and "list-type=2" in by_op["ListObjectsV2"]["query"],
          f"ListObjectsV2 entry: {by_op['ListObjectsV2']}")
    check(by_op["HeadObject"]["status"] == 404, "HeadObject of a missing object is a 404 entry")
    check(by_op["DeleteObject"]["status"] == 204, "DeleteObject entry")
    # Filters see S3's keys as the plain API's: bucket/key.
    keyed = [e.get("op") for e in journal(query="?prefix=jrn/dir/")]
    check(keyed == ["PutObject", "GetObject", "DeleteObject"], f"?prefix=jrn/dir/: {keyed}")
    bucket = [e.get("op") for e in journal(query="?prefix=jrn/")]
    check(bucket == ["CreateBucket", "PutObject", "GetObject", "ListObjectsV2", "HeadObject", "DeleteObject", None],
          f"?prefix=jrn/: {bucket}")
    failed = [e.get("op") for e in journal(query="?status=4xx")]
    check(failed == ["HeadObject", None], f"?status=4xx: {failed}")
    # A key bound to w1: its namespace's journal, not the default one's.
    seen = journal()[-1]["seq"]
    w1 = client("w1-key")
    w1.create_bucket(Bucket="jrn")
    w1.put_object(Bucket="jrn", Key="k", Body=b"x")
    mine = journal("/ns/w1")
    check([e["op"] for e in mine] == ["CreateBucket", "PutObject"], f"w1's journal: {mine}")
    check(mine[1]["path"] == "/jrn/k", f"w1's entry path: {mine[1]}")
    check(journal(query=f"?since={seen}") == [], "nothing of w1 in the default journal")
    # As a HAR: an S3 request's URL is the one it was sent to, its
    # operation is `_op`, and the signature's Authorization is redacted.
    har = plain_json("GET", "/ns/w1/journal?format=har")["log"]["entries"]
    check([e["_op"] for e in har] == ["CreateBucket", "PutObject"], f"w1's HAR ops: {[e.get('_op') for e in har]}")
    put_entry = har[1]["request"]
    check(put_entry["url"] == S3_URL + "/jrn/k", f"the PutObject's URL: {put_entry['url']}")
    auth = [h["value"] for h in put_entry["headers"] if h["name"].lower() == "authorization"]
    check(auth == ["REDACTED"], f"the PutObject's Authorization in the HAR: {auth}")
    check(KEYS["w1-key"][0] not in json.dumps(har), "w1's secret is not in the HAR")
    # A refused request of w1's key (a wrong secret) is in w1's journal too.
    check(error_code(client("w1-key", secret="wrong").get_object, Bucket="jrn", Key="k") == "SignatureDoesNotMatch",
          "a wrong secret")
    last = journal("/ns/w1")[-1]
    check(last["op"] == "GetObject" and last["status"] == 403, f"the refused request: {last}")
    # Virtual-host style is journaled in path style.
    port = urllib.parse.urlparse(S3_URL).port
    status, _ = signed_request("GET", f"jrn.localhost:{port}", "/k", key="w1-key")
    check(status == 200, f"virtual-host GET: {status}")
    last = journal("/ns/w1")[-1]
    check(last["op"] == "GetObject" and last["path"] == "/jrn/k", f"a virtual-host entry: {last}")


def faults():
    plain_json("DELETE", "/faults")
    s3 = client()
    s3.create_bucket(Bucket="flt")
    s3.create_bucket(Bucket="other")
    s3.put_object(Bucket="flt", Key="k", Body=b"value")
    # A 503 is S3's SlowDown, which an SDK retries.
    plain_json("PUT", "/faults", [{"id": "slow", "prefix": "flt/", "status": 503, "count": 2}])
    since = journal()[-1]["seq"]
    retrying = client(attempts=5)
    retrying.put_object(Bucket="flt", Key="retried", Body=b"in the end")
    tries = [(e["op"], e["status"], e["fault"]) for e in journal(query=f"?since={since}")]
    check(tries == [("PutObject", 503, "slow"), ("PutObject", 503, "slow"), ("PutObject", 200, None)],
          f"boto3 retried SlowDown: {tries}")
    check(s3.get_object(Bucket="flt", Key="retried")["Body"].read() == b"in the end", "the retried write")
    plain_json("PUT", "/faults", [{"id": "slow", "prefix": "flt/", "status": 503, "count": 1}])
    try:
        s3.get_object(Bucket="flt", Key="k")
        raise AssertionError("a 503 fault let GetObject through")
    except ClientError as e:
        check(e.response["Error"]["Code"] == "SlowDown", f"503 code: {e.response['Error']}")
        check(e.response["ResponseMetadata"]["HTTPHeaders"].get("larder-fault") == "slow", "Larder-Fault header")
    # Only the bucket's keys: another bucket, and a key prefix that is not the bucket's.
    plain_json("PUT", "/faults", [{"prefix": "flt/", "status": 500}])
    check(error_code(s3.get_object, Bucket="other", Key="nothing") == "NoSuchKey", "bucket 'other' untouched")
    check(error_code(s3.list_objects_v2, Bucket="flt") == "InternalError", "a listing of the bucket is faulted")
    # A 404 is NoSuchKey for an object; methods narrow a rule.
    plain_json("PUT", "/faults", [{"prefix": "flt/k", "status": 404, "methods": ["GET"]}])
    check(error_code(s3.get_object, Bucket="flt", Key="k") == "NoSuchKey", "404 is NoSuchKey")
    check(s3.head_object(Bucket="flt", Key="k")["ContentLength"] == 5, "HEAD is not faulted")
    # A delay holds the answer.
    plain_json("PUT", "/faults", [{"prefix": "flt/", "delayMs": 400}])
    start = time.monotonic()
    check(s3.get_object(Bucket="flt", Key="k")["Body"].read() == b"value", "delayed GET")
    check(time.monotonic() - start >= 0.39, "the delay held the answer")
    # Network faults: a reset before the request is handled, which an SDK retries.
    plain_json("PUT", "/faults", [{"id": "cut", "prefix": "flt/dropped", "drop": "before", "count": 1}])
    since = journal()[-1]["seq"]
    retrying.put_object(Bucket="flt", Key="dropped", Body=b"after a reset")
    tries = [(e["status"], e["fault"]) for e in journal(query=f"?since={since}")]
    check(tries == [(None, "cut"), (200, None)], f"a reset, then the retry: {tries}")
    plain_json("PUT", "/faults", [{"prefix": "flt/dropped", "drop": "before"}])
    try:
        s3.get_object(Bucket="flt", Key="dropped")
        raise AssertionError("a dropped GetObject was answered")
    except (botocore.exceptions.ConnectionClosedError, botocore.exceptions.EndpointConnectionError,
            botocore.exceptions.ConnectionError):
        pass
    # A reset after the write: stored, but the client never hears so.
    plain_json("PUT", "/faults", [{"id": "lost", "prefix": "flt/after", "drop": "after", "count": 1}])
    try:
        s3.put_object(Bucket="flt", Key="after", Body=b"stored anyway")
        raise AssertionError("a drop: after PutObject was answered")
    except (botocore.exceptions.ConnectionClosedError, botocore.exceptions.EndpointConnectionError,
            botocore.exceptions.ConnectionError):
        pass
    check(plain("GET", "/store/flt/after") == (200, b"stored anyway"), "the write a drop: after hid")
    last = journal()[-2]
    check(last["op"] == "PutObject" and last["status"] == 200 and last["fault"] == "lost", f"drop: after entry: {last}")
    # Truncated and paced bodies.
    big = bytes(range(256)) * 80  # 20 KiB
    plain_json("DELETE", "/faults")
    s3.put_object(Bucket="flt", Key="big", Body=big)
    plain_json("PUT", "/faults", [{"prefix": "flt/big", "truncate": 100, "methods": ["GET"]}])
    try:
        body = s3.get_object(Bucket="flt", Key="big")["Body"].read()
        raise AssertionError(f"a truncated body was read whole ({len(body)} bytes)")
    except (botocore.exceptions.IncompleteReadError, botocore.exceptions.ResponseStreamingError,
            urllib3.exceptions.ProtocolError):
        pass
    plain_json("PUT", "/faults", [{"prefix": "flt/big", "bytesPerSecond": 40000, "methods": ["GET"]}])
    start = time.monotonic()
    check(s3.get_object(Bucket="flt", Key="big")["Body"].read() == big, "a paced body is whole")
    check(time.monotonic() - start >= 0.3, f"a paced body takes its time ({time.monotonic() - start:.2f} s)")
    plain_json("DELETE", "/faults")
    # A path rule: `/` is every request, ListBuckets too.
    plain_json("PUT", "/faults", [{"prefix": "/", "status": 503, "count": 1}])
    check(error_code(s3.list_buckets) == "SlowDown", "a path rule on /")
    # A namespace's rules act on its keys' requests only.
    w1 = client("w1-key")
    w1.create_bucket(Bucket="flt")
    plain_json("PUT", "/ns/w1/faults", [{"prefix": "flt/", "status": 503}])
    check(error_code(w1.get_object, Bucket="flt", Key="k") == "SlowDown", "w1's rule on w1's key")
    check(s3.get_object(Bucket="flt", Key="k")["Body"].read() == b"value", "not on the default namespace's")
    plain_json("DELETE", "/ns/w1/faults")


def metrics():
    from prometheus_client.parser import text_string_to_metric_families
    s3 = client()
    s3.create_bucket(Bucket="met")
    for i in range(3):
        s3.put_object(Bucket="met", Key=f"k{i}", Body=b"x")
    s3.get_object(Bucket="met", Key="k0")["Body"].read()
    check(error_code(s3.get_object, Bucket="met", Key="missing") == "NoSuchKey", "a missing key")
    s3.list_objects_v2(Bucket="met")
    client("w1-key").list_buckets()
    check(error_code(client(secret="wrong").list_buckets) == "SignatureDoesNotMatch", "a wrong secret")
    status, body = plain("GET", "/metrics")
    check(status == 200, f"/metrics: {status}")
    samples = {}
    types = {}
    for family in text_string_to_metric_families(body.decode()):
        types[family.name] = family.type
        for s in family.samples:
            if s.name == "larder_s3_requests_total":
                samples[(s.labels["op"], s.labels["status"])] = s.value
    check(types.get("larder_s3_requests") == "counter", f"the family's type: {types.get('larder_s3_requests')}")
    want = {("CreateBucket", "200"): 1, ("PutObject", "200"): 3, ("GetObject", "200"): 1, ("GetObject", "404"): 1,
            ("ListObjectsV2", "200"): 1, ("ListBuckets", "200"): 1, ("ListBuckets", "403"): 1}
    check(samples == want, f"larder_s3_requests_total: {samples}")


def signed_request(method, host, path_and_query, key="default-key", body=b""):
    """A request to Host `host` (sent to the listener's address), signed by botocore."""
    return scenario_support.signed_request(S3_URL, key, KEYS[key][0], method, host, path_and_query, body)


SCENARIOS = {"namespaces": namespaces, "journal": journal_ops, "faults": faults, "metrics": metrics}

if __name__ == "__main__":
    SCENARIOS[SCENARIO]()
    print("ok")
