#!/usr/bin/env python3
"""boto3 against Larder's S3 face: scenarios, each on a server of its own.

    boto3_face.py ACCESS_KEY SECRET SCENARIO S3_URL PLAIN_URL [SCENARIO S3_URL PLAIN_URL ...]

Run by Tests/LarderS3Tests/Boto3Tests.swift, which starts a fresh server
for each scenario it names (a scenario may count every bucket there is).
One process runs them all: importing boto3 again for each was most of the
suite's CPU. Prints one JSON line per scenario: {"scenario", "ok",
"error"} (the error names the first check that did not hold); the exit
status is 0 when every one passed.
"""
import concurrent.futures
import datetime
import http.client
import io
import json
import sys
import traceback
import urllib.parse
import urllib.request
import zlib
import base64
import gzip
import hashlib

import boto3
import botocore
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.httpchecksum
from botocore.client import Config

import bucket_settings as bucket_settings_scenario
import post_uploads
import scenario_support
from scenario_support import check, error_code, plain_http

ACCESS_KEY, SECRET = sys.argv[1:3]
# The server of the scenario that runs now (`run_all` sets them).
S3_URL = PLAIN_URL = None


def client(secret=SECRET, access_key=ACCESS_KEY, **config):
    return boto3.client(
        "s3", endpoint_url=S3_URL, region_name="us-east-1",
        aws_access_key_id=access_key, aws_secret_access_key=secret,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **config),
    )



def plain(method, key, body=None, headers=None):
    """The plain Larder API: /store/<key>."""
    return plain_http(PLAIN_URL + "/store/" + urllib.parse.quote(key), method, body, headers)


def plain_request(method, target, body=None):
    """Any request to the plain API (a snapshot, a restore)."""
    return plain_http(PLAIN_URL + target, method, body)



# MARK: - Scenarios

def buckets():
    s3 = client()
    s3.create_bucket(Bucket="alpha")
    s3.create_bucket(Bucket="alpha")  # us-east-1: creating your own bucket again is fine
    s3.create_bucket(Bucket="beta")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(names == ["alpha", "beta"], f"list_buckets: {names}")
    s3.head_bucket(Bucket="alpha")
    check(error_code(s3.head_bucket, Bucket="missing") == "404", "head_bucket of a missing bucket")
    check(error_code(s3.create_bucket, Bucket="Bad_Name") == "InvalidBucketName", "an invalid bucket name")
    check(s3.get_bucket_location(Bucket="alpha").get("LocationConstraint") in (None, ""), "get_bucket_location")
    s3.put_object(Bucket="alpha", Key="one", Body=b"1")
    check(error_code(s3.delete_bucket, Bucket="alpha") == "BucketNotEmpty", "delete_bucket of a non-empty bucket")
    s3.delete_object(Bucket="alpha", Key="one")
    s3.delete_bucket(Bucket="alpha")
    check(error_code(s3.head_bucket, Bucket="alpha") == "404", "head_bucket after delete_bucket")
    check(error_code(s3.delete_bucket, Bucket="alpha") == "NoSuchBucket", "delete_bucket of a missing bucket")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(names == ["beta"], f"list_buckets after delete: {names}")
    # A bucket made on the plain API (a key under its prefix) is a bucket here.
    status, _ = plain("PUT", "gamma/k", b"x")
    check(status == 201, f"plain PUT: {status}")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(names == ["beta", "gamma"], f"list_buckets with a plain-API bucket: {names}")
    s3.head_bucket(Bucket="gamma")
    # A page at a time, by prefix; a bucket made in another region says so, and keeps its date when made again.
    s3.create_bucket(Bucket="delta", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    check(s3.get_bucket_location(Bucket="delta")["LocationConstraint"] == "eu-west-1", "a bucket's region given back")
    first = s3.list_buckets(MaxBuckets=2)
    check([b["Name"] for b in first["Buckets"]] == ["beta", "delta"] and first.get("ContinuationToken"), f"a page {first}")
    rest = s3.list_buckets(MaxBuckets=2, ContinuationToken=first["ContinuationToken"])
    check([b["Name"] for b in rest["Buckets"]] == ["gamma"] and "ContinuationToken" not in rest, f"the last page {rest}")
    check([b["Name"] for b in s3.list_buckets(Prefix="de")["Buckets"]] == ["delta"], "buckets by prefix")
    made = {b["Name"]: b["CreationDate"] for b in s3.list_buckets()["Buckets"]}["delta"]
    s3.create_bucket(Bucket="delta", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    check({b["Name"]: b["CreationDate"] for b in s3.list_buckets()["Buckets"]}["delta"] == made, "made again: the same date")


def objects():
    s3 = client()
    s3.create_bucket(Bucket="things")
    data = bytes(range(256)) * 40
    put = s3.put_object(Bucket="things", Key="dir/file.bin", Body=data, ContentType="application/x-test")
    got = s3.get_object(Bucket="things", Key="dir/file.bin")
    check(got["Body"].read() == data, "get_object bytes")
    check(got["ContentType"] == "application/x-test", f"content type {got['ContentType']}")
    check(got["ETag"] == put["ETag"], f"ETag of get {got['ETag']} vs put {put['ETag']}")
    head = s3.head_object(Bucket="things", Key="dir/file.bin")
    check(head["ContentLength"] == len(data), f"head_object length {head['ContentLength']}")
    check(head["ETag"] == put["ETag"], "head_object ETag")
    ranged = s3.get_object(Bucket="things", Key="dir/file.bin", Range="bytes=10-19")
    check(ranged["ResponseMetadata"]["HTTPStatusCode"] == 206, "range status")
    check(ranged["Body"].read() == data[10:20], "range bytes")
    check(ranged["ContentRange"] == f"bytes 10-19/{len(data)}", f"Content-Range {ranged['ContentRange']}")
    suffix = s3.get_object(Bucket="things", Key="dir/file.bin", Range="bytes=-5")
    check(suffix["Body"].read() == data[-5:], "suffix range bytes")
    check(error_code(s3.get_object, Bucket="things", Key="dir/file.bin", Range=f"bytes={len(data)}-") == "InvalidRange",
          "unsatisfiable range")
    # A large object streams (not answered from memory).
    big = bytes((i * 7) % 251 for i in range(3 * 1024 * 1024))
    s3.put_object(Bucket="things", Key="big", Body=big)
    check(s3.get_object(Bucket="things", Key="big")["Body"].read() == big, "3 MiB object")
    check(s3.get_object(Bucket="things", Key="big", Range="bytes=2000000-2000099")["Body"].read() == big[2000000:2000100],
          "range of a large object")
    # Keys with spaces, unicode and characters SigV4 encodes.
    for key in ["with space.txt", "ünïcødé/ключ", "a+b=c&d", "tilde~star*", "semi;colon,comma"]:
        s3.put_object(Bucket="things", Key=key, Body=key.encode())
        check(s3.get_object(Bucket="things", Key=key)["Body"].read() == key.encode(), f"key {key!r}")
    # Conditional requests.
    etag = put["ETag"]
    check(error_code(s3.get_object, Bucket="things", Key="dir/file.bin", IfNoneMatch=etag) == "304", "If-None-Match")
    check(error_code(s3.get_object, Bucket="things", Key="dir/file.bin", IfMatch='"other"') == "PreconditionFailed", "If-Match")
    check(s3.get_object(Bucket="things", Key="dir/file.bin", IfMatch=etag)["Body"].read() == data, "If-Match that holds")
    check(error_code(s3.put_object, Bucket="things", Key="dir/file.bin", Body=b"no", IfNoneMatch="*") == "PreconditionFailed",
          "put If-None-Match: * over an object")
    s3.put_object(Bucket="things", Key="new-only", Body=b"first", IfNoneMatch="*")
    check(error_code(s3.put_object, Bucket="things", Key="new-only", Body=b"x", IfMatch='"other"') == "PreconditionFailed",
          "put If-Match with another ETag")
    check(error_code(s3.put_object, Bucket="things", Key="never-written", Body=b"x", IfMatch='"other"') == "NoSuchKey",
          "put If-Match on a missing key")
    check(s3.get_object(Bucket="things", Key="new-only")["Body"].read() == b"first", "nothing written by refused puts")
    s3.put_object(Bucket="things", Key="empty", Body=b"")
    check(s3.get_object(Bucket="things", Key="empty")["Body"].read() == b"", "empty object")
    s3.delete_object(Bucket="things", Key="dir/file.bin")
    check(error_code(s3.get_object, Bucket="things", Key="dir/file.bin") == "NoSuchKey", "get after delete")
    check(error_code(s3.head_object, Bucket="things", Key="dir/file.bin") == "404", "head after delete")
    s3.delete_object(Bucket="things", Key="never-was")  # S3 answers 204 for a missing key
    check(error_code(s3.get_object, Bucket="nobucket", Key="k") == "NoSuchBucket", "get in a missing bucket")
    check(error_code(s3.put_object, Bucket="nobucket", Key="k", Body=b"x") == "NoSuchBucket", "put in a missing bucket")
    check(error_code(s3.delete_object, Bucket="nobucket", Key="k") == "NoSuchBucket", "delete in a missing bucket")
    # DeleteObjects, as test cleanups call it (a missing key is reported deleted, as on S3).
    for k in ["batch/1", "batch/2", "batch/a&b <3>"]:
        s3.put_object(Bucket="things", Key=k, Body=b"x")
    deleted = s3.delete_objects(Bucket="things", Delete={"Objects": [{"Key": k} for k in
                                                                     ["batch/1", "batch/2", "batch/a&b <3>", "batch/none"]]})
    check(sorted(d["Key"] for d in deleted["Deleted"]) == ["batch/1", "batch/2", "batch/a&b <3>", "batch/none"],
          f"delete_objects: {deleted}")
    check("Contents" not in s3.list_objects_v2(Bucket="things", Prefix="batch/"), "delete_objects left keys")
    s3.put_object(Bucket="things", Key="batch/q", Body=b"x")
    quiet = s3.delete_objects(Bucket="things", Delete={"Objects": [{"Key": "batch/q"}], "Quiet": True})
    check("Deleted" not in quiet and "Errors" not in quiet, f"quiet delete_objects: {quiet}")
    check(error_code(s3.head_object, Bucket="things", Key="batch/q") == "404", "quiet delete_objects deleted")
    check(error_code(s3.delete_objects, Bucket="nobucket", Delete={"Objects": [{"Key": "k"}]}) == "NoSuchBucket",
          "delete_objects in a missing bucket")
    check(error_code(s3.put_bucket_versioning, Bucket="things",
                     VersioningConfiguration={"Status": "Enabled"}) == "NotImplemented", "an unsupported subresource")


def listing():
    s3 = client()
    s3.create_bucket(Bucket="many")
    keys = [f"k/{i:05d}" for i in range(1100)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket="many", Key=k, Body=k.encode()), keys))
    for k in ["photos/2023/a.jpg", "photos/2023/b.jpg", "photos/2024/c.jpg", "photos/top.jpg", "photos-old/x", "docs/readme"]:
        s3.put_object(Bucket="many", Key=k, Body=b"p")

    # Pagination over more than 1000 keys, with continuation tokens.
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="many", Prefix="k/"))
    listed = [o["Key"] for p in pages for o in p.get("Contents", [])]
    check(listed == keys, f"paginated listing: {len(listed)} keys, {len(pages)} pages")
    check(len(pages) == 2 and pages[0]["IsTruncated"] and pages[0]["KeyCount"] == 1000, "first page of 1000, truncated")
    small = list(s3.get_paginator("list_objects_v2").paginate(Bucket="many", Prefix="k/000", PaginationConfig={"PageSize": 30}))
    check([o["Key"] for p in small for o in p["Contents"]] == keys[:100], "pages of 30")
    first = s3.list_objects_v2(Bucket="many", MaxKeys=3)
    check([o["Key"] for o in first["Contents"]] == ["docs/readme", "k/00000", "k/00001"], f"max-keys 3: {first.get('Contents')}")
    after = s3.list_objects_v2(Bucket="many", StartAfter="k/01097")
    check([o["Key"] for o in after["Contents"]][:3] == ["k/01098", "k/01099", "photos-old/x"], "start-after")

    # Prefix and delimiter.
    top = s3.list_objects_v2(Bucket="many", Delimiter="/")
    check([p["Prefix"] for p in top["CommonPrefixes"]] == ["docs/", "k/", "photos-old/", "photos/"],
          f"top-level prefixes {top.get('CommonPrefixes')}")
    check("Contents" not in top, "no top-level objects")
    photos = s3.list_objects_v2(Bucket="many", Prefix="photos/", Delimiter="/")
    check([p["Prefix"] for p in photos["CommonPrefixes"]] == ["photos/2023/", "photos/2024/"], "photos/ prefixes")
    check([o["Key"] for o in photos["Contents"]] == ["photos/top.jpg"], "photos/ objects")
    partial = s3.list_objects_v2(Bucket="many", Prefix="photos/20", Delimiter="/")
    check([p["Prefix"] for p in partial["CommonPrefixes"]] == ["photos/2023/", "photos/2024/"], "a prefix inside a segment")
    check(s3.list_objects_v2(Bucket="many", Prefix="photo")["KeyCount"] == 5, "a prefix across top-level names")
    grouped = list(s3.get_paginator("list_objects_v2").paginate(Bucket="many", Delimiter="/", PaginationConfig={"PageSize": 1}))
    check([p["Prefix"] for g in grouped for p in g.get("CommonPrefixes", [])] == ["docs/", "k/", "photos-old/", "photos/"],
          "common prefixes one a page")
    dashed = s3.list_objects_v2(Bucket="many", Prefix="photos", Delimiter="-")
    check([p["Prefix"] for p in dashed["CommonPrefixes"]] == ["photos-"], f"delimiter '-': {dashed.get('CommonPrefixes')}")
    check(len(dashed["Contents"]) == 4, "delimiter '-' objects")

    # ListObjects (v1) with markers.
    v1 = list(s3.get_paginator("list_objects").paginate(Bucket="many", Prefix="k/"))
    check([o["Key"] for p in v1 for o in p["Contents"]] == keys, "list_objects v1 pagination")

    check(error_code(s3.list_objects_v2, Bucket="nobucket") == "NoSuchBucket", "listing a missing bucket")
    s3.create_bucket(Bucket="empty-one")
    check(s3.list_objects_v2(Bucket="empty-one")["KeyCount"] == 0, "listing an empty bucket")


def folder_keys():
    """Keys Larder's own rules refuse (an empty segment, `.`, `..`) are S3 keys like any other: a
    folder marker `photos/` is kept as the Larder key `photos/ ` (S3KeyEscaping)."""
    s3 = client()
    s3.create_bucket(Bucket="folders")
    keys = ["photos/", "photos/a.jpg", "photos/2024/", "photos/2024/b.jpg", "a//b", "/lead", "./dot", "x/../y", " space"]
    for k in keys:
        s3.put_object(Bucket="folders", Key=k, Body=k.encode())
    for k in keys:
        check(s3.get_object(Bucket="folders", Key=k)["Body"].read() == k.encode(), f"GET {k!r}")
        check(s3.head_object(Bucket="folders", Key=k)["ContentLength"] == len(k), f"HEAD {k!r}")
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket="folders")["Contents"]]
    check(sorted(listed, key=lambda k: k.encode()) == sorted(keys, key=lambda k: k.encode()), f"every key listed: {listed}")
    # A folder marker lists where S3 lists it: before what is under it.
    photos = s3.list_objects_v2(Bucket="folders", Prefix="photos/", Delimiter="/")
    check([o["Key"] for o in photos["Contents"]] == ["photos/", "photos/a.jpg"], f"photos/ objects: {photos.get('Contents')}")
    check([p["Prefix"] for p in photos["CommonPrefixes"]] == ["photos/2024/"], "photos/ prefixes")
    check([o["Key"] for o in s3.list_objects_v2(Bucket="folders", Prefix="photos/2024/")["Contents"]]
          == ["photos/2024/", "photos/2024/b.jpg"], "a marker under a marker")
    top = s3.list_objects_v2(Bucket="folders", Delimiter="/")
    check([p["Prefix"] for p in top["CommonPrefixes"]] == ["./", "/", "a/", "photos/", "x/"], f"top prefixes {top.get('CommonPrefixes')}")
    check([o["Key"] for o in top["Contents"]] == [" space"], f"top objects {top.get('Contents')}")
    check([p["Prefix"] for p in s3.list_objects_v2(Bucket="folders", Prefix="a/", Delimiter="/")["CommonPrefixes"]] == ["a//"],
          "an empty segment groups as S3 groups it")
    check([o["Key"] for o in s3.list_objects_v2(Bucket="folders", Prefix="x/.")["Contents"]] == ["x/../y"], "a prefix ending in '.'")
    check([o["Key"] for o in s3.list_objects_v2(Bucket="folders", Prefix="photos/", StartAfter="photos/")["Contents"]][:1]
          == ["photos/2024/"], "start-after a marker")
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="folders", PaginationConfig={"PageSize": 2}))
    check(sorted(o["Key"] for p in pages for o in p["Contents"]) == sorted(keys), "paginated, every key once")
    check([p["Prefix"] for p in s3.list_objects_v2(Bucket="folders", Prefix="x/.", Delimiter="/")["CommonPrefixes"]]
          == ["x/../"], "a prefix ending in '.', grouped")
    # A key with a segment that starts with a space, written before such keys were escaped, is its own.
    status, _ = plain("PUT", "folders/docs/ report.pdf", b"old")
    check(status == 201, f"plain PUT of a leading-space segment: {status}")
    check(s3.get_object(Bucket="folders", Key="docs/ report.pdf")["Body"].read() == b"old", "a leading-space key reads as it was")
    # The plain API reads the marker at its Larder key; copies and deletes take such keys too.
    status, body = plain("GET", "folders/photos/ ")
    check(status == 200 and body == b"photos/", f"plain GET of the marker: {status} {body!r}")
    s3.copy_object(Bucket="folders", Key="copies/", CopySource={"Bucket": "folders", "Key": "a//b"})
    check(s3.get_object(Bucket="folders", Key="copies/")["Body"].read() == b"a//b", "copy between such keys")
    gone = s3.delete_objects(Bucket="folders", Delete={"Objects": [{"Key": "./dot"}, {"Key": "copies/"}]})
    check(sorted(d["Key"] for d in gone["Deleted"]) == ["./dot", "copies/"], "delete_objects echoes the keys")
    s3.delete_object(Bucket="folders", Key="photos/")
    check(error_code(s3.head_object, Bucket="folders", Key="photos/") == "404", "the marker is gone")
    check(s3.get_object(Bucket="folders", Key="photos/a.jpg")["Body"].read() == b"photos/a.jpg", "what was under it stays")
    # Multipart under a folder-marker-like key.
    upload = s3.create_multipart_upload(Bucket="folders", Key="big/")["UploadId"]
    etag = s3.upload_part(Bucket="folders", Key="big/", UploadId=upload, PartNumber=1, Body=b"part")["ETag"]
    s3.complete_multipart_upload(Bucket="folders", Key="big/", UploadId=upload,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    check(s3.get_object(Bucket="folders", Key="big/")["Body"].read() == b"part", "multipart to a key ending in '/'")


def interop():
    s3 = client()
    s3.create_bucket(Bucket="shared")
    s3.put_object(Bucket="shared", Key="from/s3.txt", Body=b"written with boto3")
    status, body = plain("GET", "shared/from/s3.txt")
    check(status == 200 and body == b"written with boto3", f"plain GET of an S3 object: {status} {body!r}")
    status, _ = plain("PUT", "shared/from/plain.json", b'{"a":1}', {"Content-Type": "application/json"})
    check(status == 201, f"plain PUT: {status}")
    got = s3.get_object(Bucket="shared", Key="from/plain.json")
    check(got["Body"].read() == b'{"a":1}' and got["ContentType"] == "application/json", "S3 GET of a plain-API value")
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket="shared")["Contents"]]
    check(listed == ["from/plain.json", "from/s3.txt"], f"listing of both: {listed}")
    status, _ = plain("DELETE", "shared/from/s3.txt")
    check(status == 204, f"plain DELETE: {status}")
    check(error_code(s3.get_object, Bucket="shared", Key="from/s3.txt") == "NoSuchKey", "S3 GET after a plain DELETE")


def auth():
    check(error_code(client(secret="wrong-secret").list_buckets) == "SignatureDoesNotMatch", "a wrong secret")
    check(error_code(client(access_key="NOSUCHKEY").list_buckets) == "InvalidAccessKeyId", "an unknown access key")
    # Unsigned: no Authorization header.
    try:
        urllib.request.urlopen(S3_URL + "/")
        raise AssertionError("an unsigned request succeeded")
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        check(e.code == 403 and "<Code>AccessDenied</Code>" in body and "<RequestId>" in body, f"unsigned: {e.code} {body}")
    # Unsigned, naming a bucket there is not: told so, as S3 tells anonymous callers; one there is: refused.
    status, body = plain_http(S3_URL + "/no-such-bucket/k", "GET")
    check(status == 404 and b"<Code>NoSuchBucket</Code>" in body, f"unsigned, a missing bucket: {status} {body!r}")
    client().create_bucket(Bucket="there")
    status, body = plain_http(S3_URL + "/there/k", "GET")
    check(status == 403 and b"<Code>AccessDenied</Code>" in body, f"unsigned, a bucket there: {status} {body!r}")
    # A clock 20 minutes off.
    real = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda: real() - datetime.timedelta(minutes=20)
    try:
        check(error_code(client().list_buckets) == "RequestTimeTooSkewed", "a skewed clock")
    finally:
        botocore.auth.get_current_datetime = real
    # A body that is not the one signed.
    s3 = client()
    s3.create_bucket(Bucket="signed")
    status, body = raw_put("signed", "tampered", b"the real body", payload_hash="0" * 64)
    check(status == 400 and b"XAmzContentSHA256Mismatch" in body, f"a wrong payload hash: {status} {body!r}")
    check(error_code(s3.head_object, Bucket="signed", Key="tampered") == "404", "nothing stored after a hash mismatch")
    # A request with a Date of its own: botocore signs its time from Date (RFC 2822's `-0000`
    # zone), without X-Amz-Date.
    dated = client()
    dated.meta.events.register("before-call.s3.PutObject", lambda **kw: kw["params"]["headers"].update(
        {"Date": "Sun, 06 Nov 1994 08:49:37 GMT"}))
    dated.put_object(Bucket="signed", Key="dated", Body=b"signed by Date")
    check(s3.get_object(Bucket="signed", Key="dated")["Body"].read() == b"signed by Date", "a PUT signed by its Date header")


def checksums():
    s3 = client()  # boto3's defaults: a CRC32 checksum with every upload
    s3.create_bucket(Bucket="sums")
    s3.put_object(Bucket="sums", Key="default", Body=b"checked by crc32")
    check(s3.get_object(Bucket="sums", Key="default")["Body"].read() == b"checked by crc32", "boto3 default checksum")
    for algorithm in ["CRC32", "SHA1", "SHA256"]:
        s3.put_object(Bucket="sums", Key=algorithm, Body=b"with " + algorithm.encode(), ChecksumAlgorithm=algorithm)
        check(s3.get_object(Bucket="sums", Key=algorithm)["Body"].read() == b"with " + algorithm.encode(), algorithm)
    for algorithm, width, polynomial in [("CRC32C", 32, 0x82F63B78), ("CRC64NVME", 64, 0x9A6C9329AC4BC9B5)]:
        body = b"with " + algorithm.encode()
        value = base64.b64encode(crc_reflected(body, width, polynomial)).decode()
        put = s3.put_object(Bucket="sums", Key=algorithm, Body=body, **{"Checksum" + algorithm: value})
        check(put.get("Checksum" + algorithm) == value, f"{algorithm} answered: {put}")
        got = s3.get_object(Bucket="sums", Key=algorithm, ChecksumMode="ENABLED")
        check(got["Body"].read() == body and got.get("Checksum" + algorithm) == value, f"{algorithm} kept")
        bad = base64.b64encode(crc_reflected(b"else", width, polynomial)).decode()
        check(error_code(s3.put_object, Bucket="sums", Key=algorithm + "-bad", Body=body, **{"Checksum" + algorithm: bad})
              == "BadDigest", f"a wrong {algorithm}")
    when_required = client(request_checksum_calculation="when_required")
    when_required.put_object(Bucket="sums", Key="plain", Body=b"no checksum")
    check(s3.get_object(Bucket="sums", Key="plain")["Body"].read() == b"no checksum", "when_required")
    wrong = base64.b64encode((zlib.crc32(b"something else")).to_bytes(4, "big")).decode()
    check(error_code(s3.put_object, Bucket="sums", Key="bad", Body=b"payload", ChecksumCRC32=wrong) == "BadDigest",
          "a wrong CRC32")
    check(error_code(s3.head_object, Bucket="sums", Key="bad") == "404", "nothing stored after BadDigest")

    # STREAMING-UNSIGNED-PAYLOAD-TRAILER, as boto3 sends it over https by
    # default: framed by botocore's own AwsChunkedWrapper.
    data = bytes(range(256)) * 1000
    status, body = raw_put("sums", "chunked", data, chunked=True)
    check(status == 200, f"aws-chunked upload: {status} {body!r}")
    check(s3.get_object(Bucket="sums", Key="chunked")["Body"].read() == data, "aws-chunked: the object, not its framing")
    status, body = raw_put("sums", "chunked-bad", data, chunked=True, corrupt_trailer=True)
    check(status == 400 and b"BadDigest" in body, f"aws-chunked with a wrong trailer: {status} {body!r}")
    check(error_code(s3.head_object, Bucket="sums", Key="chunked-bad") == "404", "nothing stored after a wrong trailer")
    status, body = raw_put("sums", "chunked-garbled", b"small", chunked=True, garble_framing=True)
    check(status == 400 and b"IncompleteBody" in body, f"aws-chunked with bad framing: {status} {body!r}")
    check(error_code(s3.head_object, Bucket="sums", Key="chunked-garbled") == "404", "nothing stored after bad framing")


def crc_reflected(data, width, polynomial):
    """A reflected CRC with all-ones initial value and final XOR, bit by bit:
    independent of the server's table-driven one."""
    mask = (1 << width) - 1
    crc = mask
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ polynomial if crc & 1 else crc >> 1
    return (crc ^ mask).to_bytes(width // 8, "big")


def crc_by_table(data, width, polynomial):
    """`crc_reflected` a byte at a time through a table: fast enough for MiBs."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ polynomial if c & 1 else c >> 1
        table.append(c)
    mask = (1 << width) - 1
    crc = mask
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return (crc ^ mask).to_bytes(width // 8, "big")


def metadata():
    s3 = client()
    s3.create_bucket(Bucket="meta")
    data = b"hello metadata"
    md5_etag = '"' + hashlib.md5(data).hexdigest() + '"'
    put = s3.put_object(Bucket="meta", Key="m", Body=data, ContentType="text/plain",
                        Metadata={"Owner": "ann", "purpose": "test run"},
                        ContentDisposition='attachment; filename="m.txt"', ContentLanguage="en", CacheControl="max-age=60")
    check(put["ETag"] == md5_etag, f"PutObject ETag {put['ETag']} is the MD5 {md5_etag}")
    check("ChecksumCRC32" in put, f"PutObject answers the CRC32 boto3 sent: {put.keys()}")
    head = s3.head_object(Bucket="meta", Key="m")
    check(head["ETag"] == md5_etag, f"HeadObject ETag {head['ETag']}")
    check(head["Metadata"] == {"owner": "ann", "purpose": "test run"}, f"user metadata {head['Metadata']}")
    check(head["ContentDisposition"] == 'attachment; filename="m.txt"', f"Content-Disposition {head.get('ContentDisposition')}")
    check(head["ContentLanguage"] == "en" and head["CacheControl"] == "max-age=60", "Content-Language, Cache-Control")
    check(head["ContentType"] == "text/plain", "Content-Type")
    check("ChecksumCRC32" not in head, "no checksum unless asked")
    asked = s3.head_object(Bucket="meta", Key="m", ChecksumMode="ENABLED")
    expected_crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    check(asked.get("ChecksumCRC32") == expected_crc, f"ChecksumMode=ENABLED: {asked.get('ChecksumCRC32')} vs {expected_crc}")
    got = s3.get_object(Bucket="meta", Key="m", ChecksumMode="ENABLED")
    check(got["Body"].read() == data and got["ChecksumCRC32"] == expected_crc, "GetObject with its checksum")
    listed = s3.list_objects_v2(Bucket="meta")["Contents"]
    check([o["ETag"] for o in listed] == [md5_etag], f"listing ETag {listed}")
    check(s3.list_objects(Bucket="meta")["Contents"][0]["ETag"] == md5_etag, "v1 listing ETag")
    # Conditions name the MD5 ETag.
    check(s3.get_object(Bucket="meta", Key="m", IfMatch=md5_etag)["Body"].read() == data, "If-Match with the MD5 ETag")
    check(error_code(s3.get_object, Bucket="meta", Key="m", IfNoneMatch=md5_etag) == "304", "If-None-Match with it")
    check(error_code(s3.put_object, Bucket="meta", Key="m", Body=b"x", IfMatch='"0123"') == "PreconditionFailed",
          "put If-Match another ETag")
    s3.put_object(Bucket="meta", Key="m", Body=data + b"!", IfMatch=md5_etag)
    check(s3.get_object(Bucket="meta", Key="m")["Body"].read() == data + b"!", "put If-Match the MD5 ETag")
    # response-* overrides.
    over = s3.get_object(Bucket="meta", Key="m", ResponseContentType="application/json", ResponseContentDisposition="inline",
                         ResponseCacheControl="no-store", ResponseContentLanguage="fr", ResponseExpires=datetime.datetime(2030, 1, 1))
    check(over["ContentType"] == "application/json" and over["ContentDisposition"] == "inline", f"overrides {over['ContentType']}")
    check(over["CacheControl"] == "no-store" and over["ContentLanguage"] == "fr", "overrides of kept headers")
    # A gzip object is kept as sent, and its Content-Encoding given back.
    packed = gzip.compress(b"squeezed " * 100)
    s3.put_object(Bucket="meta", Key="z.gz", Body=packed, ContentEncoding="gzip")
    z = s3.get_object(Bucket="meta", Key="z.gz")
    check(z["ContentEncoding"] == "gzip" and z["Body"].read() == packed, "a gzip object reads back as its gzip bytes")
    check(z["ContentLength"] == len(packed), "its length is the gzip bytes'")
    # Content-MD5.
    s3.put_object(Bucket="meta", Key="md5", Body=data, ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode())
    wrong_md5 = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    check(error_code(s3.put_object, Bucket="meta", Key="md5-bad", Body=data, ContentMD5=wrong_md5) == "BadDigest",
          "a wrong Content-MD5")
    check(error_code(s3.put_object, Bucket="meta", Key="md5-bad", Body=data, ContentMD5="bm90LW1kNQ==") == "InvalidDigest",
          "a Content-MD5 that is not an MD5")
    check(error_code(s3.head_object, Bucket="meta", Key="md5-bad") == "404", "nothing stored after BadDigest")
    # Metadata past S3's 2 KiB.
    check(error_code(s3.put_object, Bucket="meta", Key="big-meta", Body=b"x", Metadata={"a": "x" * 2100}) == "MetadataTooLarge",
          "metadata too large")
    # A write through the plain API replaces the object and its attributes.
    status, _ = plain("PUT", "meta/m", b"plain bytes", {"Content-Type": "text/plain"})
    check(status in (200, 201, 204), f"plain PUT {status}")
    after = s3.head_object(Bucket="meta", Key="m")
    check(after["Metadata"] == {} and after["ETag"] != md5_etag and "ContentDisposition" not in after,
          f"a plain write drops the S3 attributes: {after}")
    check(s3.get_object(Bucket="meta", Key="m", IfMatch=after["ETag"])["Body"].read() == b"plain bytes",
          "If-Match with the plain value's ETag")
    # A snapshot carries the S3 attributes: a restore gives back the MD5 ETag and metadata.
    s3.put_object(Bucket="meta", Key="kept", Body=data, Metadata={"keep": "me"}, ContentLanguage="de")
    before = s3.head_object(Bucket="meta", Key="kept")
    status, snapshot = plain_request("GET", "/snapshot?prefix=meta/")
    check(status == 200 and b'"attributes":' in snapshot, f"snapshot {status} {snapshot[:300]!r}")
    s3.delete_object(Bucket="meta", Key="kept")
    status, body = plain_request("POST", "/snapshot", snapshot)
    check(status == 200, f"restore {status} {body!r}")
    restored = s3.head_object(Bucket="meta", Key="kept")
    check(restored["ETag"] == before["ETag"] == md5_etag and restored["Metadata"] == {"keep": "me"}
          and restored["ContentLanguage"] == "de", f"restored attributes {restored}")
    # Reading what Larder does not vary: one owner with FULL_CONTROL, versioning never enabled.
    for acl in [s3.get_bucket_acl(Bucket="meta"), s3.get_object_acl(Bucket="meta", Key="m")]:
        check([g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"] and acl["Owner"]["ID"] == "larder", f"ACL {acl}")
    check(error_code(s3.get_object_acl, Bucket="meta", Key="none") == "NoSuchKey", "ACL of a missing object")
    check(error_code(s3.get_bucket_acl, Bucket="nobucket") == "NoSuchBucket", "ACL of a missing bucket")
    check("Status" not in s3.get_bucket_versioning(Bucket="meta"), "versioning never enabled")
    # A canned ACL or an ACL document is accepted and changes nothing.
    s3.put_bucket_acl(Bucket="meta", ACL="public-read")
    s3.put_object_acl(Bucket="meta", Key="m", ACL="private")
    policy = s3.get_bucket_acl(Bucket="meta")
    s3.put_bucket_acl(Bucket="meta", AccessControlPolicy={"Grants": policy["Grants"], "Owner": policy["Owner"]})
    check([g["Permission"] for g in s3.get_bucket_acl(Bucket="meta")["Grants"]] == ["FULL_CONTROL"], "ACL unchanged")
    check(error_code(s3.put_object_acl, Bucket="meta", Key="none", ACL="private") == "NoSuchKey", "ACL put on a missing object")
    check(error_code(s3.put_bucket_acl, Bucket="nobucket", ACL="private") == "NoSuchBucket", "ACL put on a missing bucket")
    check(error_code(s3.put_bucket_acl, Bucket="meta", ACL="everyone-writes") == "InvalidArgument", "an unknown canned ACL")
    check(error_code(s3.put_object, Bucket="meta", Key="x", Body=b"x", ACL="everyone-writes") == "InvalidArgument",
          "an unknown canned ACL on PutObject")
    s3.put_object(Bucket="meta", Key="public", Body=b"x", ACL="public-read")
    # `aws-chunked` named on a body not framed so is taken off the kept encoding, as S3 does.
    for sent, kept in [("gzip, aws-chunked", "gzip"), ("aws-chunked, gzip", "gzip"), ("aws-chunked", None)]:
        s3.put_object(Bucket="meta", Key="enc", ContentEncoding=sent)
        check(s3.head_object(Bucket="meta", Key="enc").get("ContentEncoding") == kept, f"Content-Encoding {sent!r} kept as {kept!r}")


def generic_cleanup():
    """What generic S3 code (Ceph's s3-tests' set-up and clean-up among it)
    calls on a bucket: versions listed as S3 lists a bucket never versioned,
    deleted by version `null`, one by one and in batches."""
    s3 = client()
    s3.create_bucket(Bucket="gen")
    keys = ["a", "b/1", "b/2", "c", "d"]
    for key in keys:
        s3.put_object(Bucket="gen", Key=key, Body=key.encode())
    listing = s3.list_object_versions(Bucket="gen")
    check([v["Key"] for v in listing["Versions"]] == keys and not listing["IsTruncated"], f"versions {listing}")
    check(all(v["VersionId"] == "null" and v["IsLatest"] and v["Size"] == len(v["Key"]) for v in listing["Versions"]),
          f"each current object is version null: {listing['Versions']}")
    check("DeleteMarkers" not in listing, "no delete markers")
    # Paged as s3-tests pages it: the next markers fed back.
    seen, kwargs = [], {"Bucket": "gen", "MaxKeys": 2}
    while True:
        page = s3.list_object_versions(**kwargs)
        seen += [v["Key"] for v in page.get("Versions", [])]
        if not page["IsTruncated"]:
            break
        check(page["NextVersionIdMarker"] == "null", f"next version marker {page}")
        kwargs.update(KeyMarker=page["NextKeyMarker"], VersionIdMarker=page["NextVersionIdMarker"])
    check(seen == keys, f"paged versions {seen}")
    grouped = s3.list_object_versions(Bucket="gen", Delimiter="/", Prefix="")
    check([v["Key"] for v in grouped["Versions"]] == ["a", "c", "d"]
          and [p["Prefix"] for p in grouped["CommonPrefixes"]] == ["b/"], f"grouped versions {grouped}")
    check(error_code(s3.list_object_versions, Bucket="gen", VersionIdMarker="null") == "InvalidArgument",
          "a version marker without a key marker")
    check(error_code(s3.list_object_versions, Bucket="nobucket") == "NoSuchBucket", "versions of a missing bucket")
    # Version null is the object; any other version names nothing.
    check(s3.get_object(Bucket="gen", Key="a", VersionId="null")["Body"].read() == b"a", "get version null")
    check(error_code(s3.get_object, Bucket="gen", Key="a", VersionId="3HL4kqtJlcpXroDTDmjVBH40Nrjfkd") == "InvalidArgument",
          "get an unknown version")
    s3.delete_object(Bucket="gen", Key="a", VersionId="null")
    check(error_code(s3.head_object, Bucket="gen", Key="a") == "404", "deleted by version null")
    batch = s3.delete_objects(Bucket="gen", Delete={"Objects": [{"Key": "b/1", "VersionId": "null"}, {"Key": "c", "VersionId": "v7"},
                                                                  {"Key": "d"}]})
    check([(d["Key"], d.get("VersionId")) for d in batch["Deleted"]] == [("b/1", "null"), ("d", None)]
          and [(e["Key"], e["Code"]) for e in batch["Errors"]] == [("c", "InvalidArgument")], f"delete_objects by version {batch}")
    check([v["Key"] for v in s3.list_object_versions(Bucket="gen")["Versions"]] == ["b/2", "c"], "what is left")
    # ListObjectsV2 as generic code calls it: an empty continuation token is
    # none, and the owner comes when asked for.
    plain = s3.list_objects_v2(Bucket="gen", ContinuationToken="", FetchOwner=True)
    check([o["Key"] for o in plain["Contents"]] == ["b/2", "c"] and all(o["Owner"]["ID"] == "larder" for o in plain["Contents"])
          and plain["ContinuationToken"] == "",
          f"list_objects_v2 with an empty token and the owner {plain}")
    check(all("Owner" not in o for o in s3.list_objects_v2(Bucket="gen")["Contents"]), "no owner unless asked for")
    # An Expect S3 does not know is ignored, as S3 ignores it (the plain API answers 417).
    def expect_200(request, **kwargs):
        request.headers["Expect"] = "200"
    s3.meta.events.register("before-sign.s3.PutObject", expect_200)
    s3.put_object(Bucket="gen", Key="expected", Body=b"x")
    s3.meta.events.unregister("before-sign.s3.PutObject", expect_200)
    s3.delete_object(Bucket="gen", Key="expected")
    # GetObjectAttributes: what the metadata says, unquoted ETag.
    etag = s3.head_object(Bucket="gen", Key="c")["ETag"]
    attributes = s3.get_object_attributes(Bucket="gen", Key="c", ObjectAttributes=["ETag", "ObjectSize", "StorageClass", "ObjectParts"])
    check(attributes["ObjectSize"] == 1 and attributes["StorageClass"] == "STANDARD" and attributes["ETag"] == etag.strip('"')
          and "ObjectParts" not in attributes, f"get_object_attributes {attributes}")
    check(error_code(s3.get_object_attributes, Bucket="gen", Key="none", ObjectAttributes=["ETag"]) == "NoSuchKey",
          "attributes of a missing object")


def encryption():
    """Server-side encryption asked for as S3 clients ask: accepted, checked
    as S3 checks it and echoed; an SSE-C object is read only with its key."""
    import base64
    import hashlib
    s3 = client()
    s3.create_bucket(Bucket="enc")
    put = s3.put_object(Bucket="enc", Key="s3", Body=b"one", ServerSideEncryption="AES256")
    check(put["ServerSideEncryption"] == "AES256", f"SSE-S3 echoed on put {put}")
    check(s3.head_object(Bucket="enc", Key="s3")["ServerSideEncryption"] == "AES256", "SSE-S3 echoed on head")
    kms = s3.put_object(Bucket="enc", Key="kms", Body=b"two", ServerSideEncryption="aws:kms", SSEKMSKeyId="key-1")
    check(kms["ServerSideEncryption"] == "aws:kms" and kms["SSEKMSKeyId"] == "key-1", f"SSE-KMS echoed {kms}")
    got = s3.get_object(Bucket="enc", Key="kms")
    check(got["Body"].read() == b"two" and got["SSEKMSKeyId"] == "key-1", "SSE-KMS object read back")
    check(error_code(s3.put_object, Bucket="enc", Key="bad", Body=b"x", ServerSideEncryption="aes:kms") == "InvalidArgument",
          "an unknown algorithm")
    check(error_code(s3.put_object, Bucket="enc", Key="bad", Body=b"x", SSEKMSKeyId="key-1") == "InvalidArgument",
          "a KMS key without aws:kms")
    key = bytes(range(32))
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64encode(key).decode(),
             "SSECustomerKeyMD5": base64.b64encode(hashlib.md5(key).digest()).decode()}
    put = s3.put_object(Bucket="enc", Key="c", Body=b"secret", **sse_c)
    check(put["SSECustomerAlgorithm"] == "AES256" and put["SSECustomerKeyMD5"] == sse_c["SSECustomerKeyMD5"], f"SSE-C echoed {put}")
    check(s3.get_object(Bucket="enc", Key="c", **sse_c)["Body"].read() == b"secret", "SSE-C read with its key")
    check(error_code(s3.get_object, Bucket="enc", Key="c") == "InvalidRequest", "SSE-C read without its key")
    check(error_code(s3.head_object, Bucket="enc", Key="c") == "400", "SSE-C head without its key")
    other = bytes(reversed(range(32)))
    other_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64encode(other).decode(),
               "SSECustomerKeyMD5": base64.b64encode(hashlib.md5(other).digest()).decode()}
    check(error_code(s3.get_object, Bucket="enc", Key="c", **other_c) == "InvalidRequest", "SSE-C read with another key")
    check(error_code(s3.get_object, Bucket="enc", Key="s3", **sse_c) == "InvalidRequest", "an SSE-C key for another object")
    check(error_code(s3.put_object, Bucket="enc", Key="bad", Body=b"x", ServerSideEncryption="AES256", **sse_c)
          == "InvalidArgument", "SSE-C with SSE-S3")
    # A copy reads an SSE-C source with its key and is encrypted as it asks.
    copy = s3.copy_object(Bucket="enc", Key="copied", CopySource={"Bucket": "enc", "Key": "c"},
                          CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=sse_c["SSECustomerKey"],
                          CopySourceSSECustomerKeyMD5=sse_c["SSECustomerKeyMD5"], ServerSideEncryption="AES256")
    check(copy["ServerSideEncryption"] == "AES256", f"a copy's encryption echoed {copy}")
    check(s3.get_object(Bucket="enc", Key="copied")["Body"].read() == b"secret", "the copy read without a key")
    check(error_code(s3.copy_object, Bucket="enc", Key="copied2", CopySource={"Bucket": "enc", "Key": "c"}) == "InvalidRequest",
          "an SSE-C source copied without its key")
    # A multipart upload keeps the encryption it was created with.
    upload = s3.create_multipart_upload(Bucket="enc", Key="multi", ServerSideEncryption="aws:kms", SSEKMSKeyId="key-2")
    check(upload["ServerSideEncryption"] == "aws:kms", f"create_multipart_upload echoes {upload}")
    part = s3.upload_part(Bucket="enc", Key="multi", UploadId=upload["UploadId"], PartNumber=1, Body=b"p" * 10)
    done = s3.complete_multipart_upload(Bucket="enc", Key="multi", UploadId=upload["UploadId"],
                                        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
    check(done["ServerSideEncryption"] == "aws:kms" and done["Location"].startswith("http://"), f"complete {done}")
    check(s3.head_object(Bucket="enc", Key="multi")["SSEKMSKeyId"] == "key-2", "the multipart object's encryption")


def tagging():
    """Object tags: set with the object, changed, read back and counted;
    a change keeps the object's bytes and ETag."""
    s3 = client()
    s3.create_bucket(Bucket="tags")
    put = s3.put_object(Bucket="tags", Key="t", Body=b"tagged", Tagging="team=core&stage=dev%20box")
    got = s3.get_object(Bucket="tags", Key="t")
    check(got["TagCount"] == 2 and got["Body"].read() == b"tagged", f"the tag count on get {got}")
    tags = s3.get_object_tagging(Bucket="tags", Key="t")["TagSet"]
    check(tags == [{"Key": "stage", "Value": "dev box"}, {"Key": "team", "Value": "core"}], f"tags, by key {tags}")
    s3.put_object_tagging(Bucket="tags", Key="t", Tagging={"TagSet": [{"Key": "k" * 128, "Value": "v" * 256}]})
    check(s3.get_object_tagging(Bucket="tags", Key="t")["TagSet"] == [{"Key": "k" * 128, "Value": "v" * 256}], "tags replaced")
    head = s3.head_object(Bucket="tags", Key="t")
    check(head["ETag"] == put["ETag"] and s3.get_object(Bucket="tags", Key="t")["TagCount"] == 1, f"bytes and ETag kept {head}")
    too_many = {"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]}
    check(error_code(s3.put_object_tagging, Bucket="tags", Key="t", Tagging=too_many) == "InvalidTag", "eleven tags")
    check(error_code(s3.put_object_tagging, Bucket="tags", Key="t", Tagging={"TagSet": [{"Key": "k" * 129, "Value": "v"}]})
          == "InvalidTag", "a key too long")
    check(error_code(s3.put_object, Bucket="tags", Key="u", Body=b"x", Tagging="a=1&a=2") == "InvalidTag", "a key twice")
    s3.delete_object_tagging(Bucket="tags", Key="t")
    check(s3.get_object_tagging(Bucket="tags", Key="t")["TagSet"] == [] and "TagCount" not in s3.get_object(Bucket="tags", Key="t"),
          "tags deleted")
    check(error_code(s3.get_object_tagging, Bucket="tags", Key="none") == "NoSuchKey", "tags of a missing object")
    # A copy keeps its source's tags unless it names its own.
    s3.put_object_tagging(Bucket="tags", Key="t", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    s3.copy_object(Bucket="tags", Key="same", CopySource={"Bucket": "tags", "Key": "t"})
    check(s3.get_object_tagging(Bucket="tags", Key="same")["TagSet"] == [{"Key": "a", "Value": "1"}], "a copy's tags")
    s3.copy_object(Bucket="tags", Key="other", CopySource={"Bucket": "tags", "Key": "t"}, TaggingDirective="REPLACE", Tagging="b=2")
    check(s3.get_object_tagging(Bucket="tags", Key="other")["TagSet"] == [{"Key": "b", "Value": "2"}], "a copy's own tags")


def signature_v2():
    """Signature Version 2, as boto3 signs with `signature_version="s3"`:
    headers (a key with spaces and `+`, subresources in the signed
    resource) and presigned URLs; a wrong secret or an expired URL is refused."""
    s3 = client(signature_version="s3")
    s3.create_bucket(Bucket="sigv2")
    key = "dir/a b+c"
    s3.put_object(Bucket="sigv2", Key=key, Body=b"signed twice", ContentType="text/plain", Metadata={"who": "v2"})
    got = s3.get_object(Bucket="sigv2", Key=key)
    check(got["Body"].read() == b"signed twice" and got["Metadata"] == {"who": "v2"}, f"a V2-signed round trip {got}")
    check([o["Key"] for o in s3.list_objects(Bucket="sigv2", Prefix="dir/")["Contents"]] == [key], "a V2-signed listing")
    check(s3.get_object_acl(Bucket="sigv2", Key=key)["Grants"][0]["Permission"] == "FULL_CONTROL", "a signed subresource")
    s3.put_object_tagging(Bucket="sigv2", Key=key, Tagging={"TagSet": [{"Key": "t", "Value": "1"}]})
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": key}, ExpiresIn=60)
    check("AWSAccessKeyId=" in url and "Signature=" in url, f"a V2 presigned URL {url}")
    status, body = plain_http(url, "GET")
    check(status == 200 and body == b"signed twice", f"a V2 presigned GET: {status} {body[:300]!r}")
    expired = s3.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": key}, ExpiresIn=-60)
    status, body = plain_http(expired, "GET")
    check(status == 403 and b"AccessDenied" in body, f"an expired V2 URL: {status} {body[:200]!r}")
    check(error_code(client(secret="not-the-secret", signature_version="s3").list_buckets) == "SignatureDoesNotMatch",
          "a V2 signature with another secret")


def post_object():
    """Browser uploads by a presigned POST (Tests/s3/post_uploads.py)."""
    post_uploads.post_object(client, plain)


def bucket_settings():
    """CORS, default encryption, tags, SSE-C parts (Tests/s3/bucket_settings.py)."""
    bucket_settings_scenario.bucket_settings(client(), S3_URL)


def copy():
    s3 = client()
    s3.create_bucket(Bucket="src")
    s3.create_bucket(Bucket="dst")
    data = b"copy me " * 1000
    md5_etag = '"' + hashlib.md5(data).hexdigest() + '"'
    s3.put_object(Bucket="src", Key="a b/ünï", Body=data, ContentType="text/x-copy", Metadata={"color": "blue"},
                  CacheControl="max-age=5")
    copied = s3.copy_object(Bucket="dst", Key="copy", CopySource={"Bucket": "src", "Key": "a b/ünï"})
    check(copied["CopyObjectResult"]["ETag"] == md5_etag, f"copy ETag {copied['CopyObjectResult']}")
    got = s3.get_object(Bucket="dst", Key="copy")
    check(got["Body"].read() == data, "copied bytes")
    check(got["ContentType"] == "text/x-copy" and got["Metadata"] == {"color": "blue"} and got["CacheControl"] == "max-age=5",
          f"COPY keeps the source's type and metadata: {got['ContentType']} {got['Metadata']}")
    s3.copy_object(Bucket="dst", Key="replaced", CopySource="src/a b/ünï", MetadataDirective="REPLACE",
                   ContentType="application/x-new", Metadata={"shape": "round"})
    head = s3.head_object(Bucket="dst", Key="replaced")
    check(head["ContentType"] == "application/x-new" and head["Metadata"] == {"shape": "round"} and "CacheControl" not in head,
          f"REPLACE takes the request's: {head['ContentType']} {head['Metadata']}")
    check(head["ETag"] == md5_etag, "the copy's ETag is its bytes' MD5")
    check(error_code(s3.copy_object, Bucket="src", Key="a b/ünï", CopySource={"Bucket": "src", "Key": "a b/ünï"})
          == "InvalidRequest", "a copy onto itself without REPLACE")
    s3.copy_object(Bucket="src", Key="a b/ünï", CopySource={"Bucket": "src", "Key": "a b/ünï"}, MetadataDirective="REPLACE",
                   Metadata={"color": "red"})
    check(s3.head_object(Bucket="src", Key="a b/ünï")["Metadata"] == {"color": "red"}, "a copy onto itself with REPLACE")
    check(error_code(s3.copy_object, Bucket="dst", Key="x", CopySource={"Bucket": "src", "Key": "missing"}) == "NoSuchKey",
          "a missing source key")
    check(error_code(s3.copy_object, Bucket="dst", Key="x", CopySource={"Bucket": "nobucket", "Key": "k"}) == "NoSuchBucket",
          "a missing source bucket")
    check(error_code(s3.copy_object, Bucket="nobucket", Key="x", CopySource={"Bucket": "src", "Key": "a b/ünï"})
          == "NoSuchBucket", "a missing destination bucket")
    source = {"Bucket": "src", "Key": "a b/ünï"}
    check(error_code(s3.copy_object, Bucket="dst", Key="c1", CopySource=source, CopySourceIfMatch='"nope"') == "PreconditionFailed",
          "x-amz-copy-source-if-match")
    check(error_code(s3.copy_object, Bucket="dst", Key="c1", CopySource=source, CopySourceIfNoneMatch=md5_etag)
          == "PreconditionFailed", "x-amz-copy-source-if-none-match")
    s3.copy_object(Bucket="dst", Key="c1", CopySource=source, CopySourceIfMatch=md5_etag)
    check(s3.get_object(Bucket="dst", Key="c1")["Body"].read() == data, "a copy whose condition holds")
    check(error_code(s3.copy_object, Bucket="dst", Key="c1", CopySource=source, IfNoneMatch="*") == "PreconditionFailed",
          "If-None-Match: * on the destination")
    big = bytes((i * 13) % 251 for i in range(3 * 1024 * 1024 + 17))
    s3.put_object(Bucket="src", Key="big", Body=big)
    s3.copy_object(Bucket="dst", Key="big", CopySource={"Bucket": "src", "Key": "big"})
    check(s3.get_object(Bucket="dst", Key="big")["Body"].read() == big, "a 3 MiB copy")
    # A value written through the plain API copies too, and gets an MD5 ETag.
    plain("PUT", "src/plain", b"plain value", {"Content-Type": "text/plain"})
    made = s3.copy_object(Bucket="dst", Key="from-plain", CopySource={"Bucket": "src", "Key": "plain"})
    check(made["CopyObjectResult"]["ETag"] == '"' + hashlib.md5(b"plain value").hexdigest() + '"', "plain source's copy ETag")
    check(s3.get_object(Bucket="dst", Key="from-plain")["ContentType"] == "text/plain", "plain source's type")


def multipart():
    import os
    import tempfile
    from boto3.s3.transfer import TransferConfig
    s3 = client()
    s3.create_bucket(Bucket="parts")
    # boto3's managed transfer: 64 MiB in 8 MiB parts on 4 threads, both ways.
    size = 64 * 1024 * 1024
    data = os.urandom(size)
    config = TransferConfig(multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024, max_concurrency=4)
    with tempfile.TemporaryDirectory() as directory:
        source, copy_path = os.path.join(directory, "up.bin"), os.path.join(directory, "down.bin")
        with open(source, "wb") as f:
            f.write(data)
        s3.upload_file(source, "parts", "big/upload.bin", Config=config, ExtraArgs={"Metadata": {"kind": "multi"}})
        s3.download_file("parts", "big/upload.bin", copy_path, Config=config)
        with open(copy_path, "rb") as f:
            check(hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest(), "64 MiB up and down by parts")
    head = s3.head_object(Bucket="parts", Key="big/upload.bin")
    part_md5s = b"".join(hashlib.md5(data[i:i + 8 * 1024 * 1024]).digest() for i in range(0, size, 8 * 1024 * 1024))
    check(head["ETag"] == '"' + hashlib.md5(part_md5s).hexdigest() + '-8"', f"multipart ETag {head['ETag']}")
    check(head["ContentLength"] == size and head["Metadata"] == {"kind": "multi"}, f"size and metadata {head}")
    # boto3's default: CRC32 named on Create and sent with each part, so
    # the object's checksum is S3's composite one, the CRC32 of the parts' CRC32s.
    part_crcs = b"".join(zlib.crc32(data[i:i + 8 * 1024 * 1024]).to_bytes(4, "big") for i in range(0, size, 8 * 1024 * 1024))
    composite = base64.b64encode(zlib.crc32(part_crcs).to_bytes(4, "big")).decode() + "-8"
    asked = s3.head_object(Bucket="parts", Key="big/upload.bin", ChecksumMode="ENABLED")
    check((asked.get("ChecksumCRC32"), asked.get("ChecksumType")) == (composite, "COMPOSITE"),
          f"upload_file's composite CRC32: {asked.get('ChecksumCRC32')} {asked.get('ChecksumType')} vs {composite}")
    ranged = s3.get_object(Bucket="parts", Key="big/upload.bin", Range="bytes=0-9", ChecksumMode="ENABLED")
    check(ranged["Body"].read() == data[:10] and "ChecksumCRC32" not in ranged, "no checksum for a range")
    check(plain("GET", "parts/big/upload.bin")[1] == data, "the plain API reads the assembled object")

    # By hand: parts listed, the upload listed, then completed.
    first, last = os.urandom(5 * 1024 * 1024), b"the end"
    upload = s3.create_multipart_upload(Bucket="parts", Key="hand/made", ContentType="text/x-parts")["UploadId"]
    e1 = s3.upload_part(Bucket="parts", Key="hand/made", UploadId=upload, PartNumber=1, Body=first)["ETag"]
    e2 = s3.upload_part(Bucket="parts", Key="hand/made", UploadId=upload, PartNumber=2, Body=last)["ETag"]
    check(e1 == '"' + hashlib.md5(first).hexdigest() + '"', "a part's ETag is its MD5")
    listed = s3.list_parts(Bucket="parts", Key="hand/made", UploadId=upload)["Parts"]
    check([(p["PartNumber"], p["ETag"], p["Size"]) for p in listed] == [(1, e1, len(first)), (2, e2, len(last))], f"list_parts {listed}")
    uploads = s3.list_multipart_uploads(Bucket="parts")["Uploads"]
    check([(u["Key"], u["UploadId"]) for u in uploads] == [("hand/made", upload)], f"list_multipart_uploads {uploads}")
    check("Contents" not in s3.list_objects_v2(Bucket="parts", Prefix="hand/"), "no object before Complete")
    parts = [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="hand/made", UploadId=upload,
                     MultipartUpload={"Parts": [parts[1], parts[0]]}) == "InvalidPartOrder", "parts out of order")
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="hand/made", UploadId=upload,
                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e2}, parts[1]]}) == "InvalidPart", "a wrong part ETag")
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="hand/made", UploadId=upload,
                     MultipartUpload={"Parts": [parts[1], {"PartNumber": 3, "ETag": e2}]}) == "InvalidPart", "a part never uploaded")
    done = s3.complete_multipart_upload(Bucket="parts", Key="hand/made", UploadId=upload, MultipartUpload={"Parts": parts})
    check(done["ETag"].endswith('-2"'), f"complete's ETag {done['ETag']}")
    got = s3.get_object(Bucket="parts", Key="hand/made")
    check(got["Body"].read() == first + last and got["ContentType"] == "text/x-parts", "the assembled object and its type")
    attributes = s3.get_object_attributes(Bucket="parts", Key="hand/made", ObjectAttributes=["ObjectParts", "ObjectSize"])
    check(attributes["ObjectParts"]["TotalPartsCount"] == 2 and attributes["ObjectSize"] == len(first + last),
          f"a multipart object's attributes {attributes}")
    again = s3.complete_multipart_upload(Bucket="parts", Key="hand/made", UploadId=upload, MultipartUpload={"Parts": parts})
    check(again["ETag"] == done["ETag"], f"a retried Complete answers as the first: {again}")
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="hand/made", UploadId=upload,
                     MultipartUpload={"Parts": [parts[0]]}) == "NoSuchUpload", "a Complete of other parts once it is gone")
    check("Uploads" not in s3.list_multipart_uploads(Bucket="parts"), "the upload is gone once completed")
    check(error_code(s3.list_parts, Bucket="parts", Key="hand/made", UploadId=upload) == "NoSuchUpload", "its parts are gone")
    status, body = plain("GET", ".larder-s3/parts/")
    check(b"hand" not in body, f"no part values left: {body[:200]!r}")

    # A part smaller than 5 MiB may only be the last.
    small = s3.create_multipart_upload(Bucket="parts", Key="small")["UploadId"]
    s1 = s3.upload_part(Bucket="parts", Key="small", UploadId=small, PartNumber=1, Body=b"tiny")["ETag"]
    s2 = s3.upload_part(Bucket="parts", Key="small", UploadId=small, PartNumber=2, Body=b"tiny too")["ETag"]
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="small", UploadId=small,
                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": s1}, {"PartNumber": 2, "ETag": s2}]}) == "EntityTooSmall",
          "a small part before the last")
    # Abort removes the upload and its parts.
    s3.abort_multipart_upload(Bucket="parts", Key="small", UploadId=small)
    check(error_code(s3.upload_part, Bucket="parts", Key="small", UploadId=small, PartNumber=3, Body=b"x") == "NoSuchUpload",
          "a part for an aborted upload")
    check(error_code(s3.abort_multipart_upload, Bucket="parts", Key="small", UploadId=small) == "NoSuchUpload", "abort twice")
    check(error_code(s3.upload_part, Bucket="parts", Key="k", UploadId="0" * 32, PartNumber=1, Body=b"x") == "NoSuchUpload",
          "an upload id never made")
    check(error_code(s3.upload_part, Bucket="parts", Key="k", UploadId="not-an-id", PartNumber=1, Body=b"x") == "NoSuchUpload",
          "an upload id Larder cannot have made")
    check(error_code(s3.create_multipart_upload, Bucket="nobucket", Key="k") == "NoSuchBucket", "an upload in a missing bucket")
    # UploadPartCopy: a part copied from an object, whole or a range of it.
    source = os.urandom(6 * 1024 * 1024)
    s3.put_object(Bucket="parts", Key="source", Body=source)
    made = s3.create_multipart_upload(Bucket="parts", Key="copied")["UploadId"]
    c1 = s3.upload_part_copy(Bucket="parts", Key="copied", UploadId=made, PartNumber=1,
                             CopySource={"Bucket": "parts", "Key": "source"})["CopyPartResult"]["ETag"]
    c2 = s3.upload_part_copy(Bucket="parts", Key="copied", UploadId=made, PartNumber=2, CopySourceRange="bytes=10-19",
                             CopySource={"Bucket": "parts", "Key": "source"})["CopyPartResult"]["ETag"]
    check(c1 == '"' + hashlib.md5(source).hexdigest() + '"' and c2 == '"' + hashlib.md5(source[10:20]).hexdigest() + '"',
          f"copied parts' ETags {c1} {c2}")
    check(error_code(s3.upload_part_copy, Bucket="parts", Key="copied", UploadId=made, PartNumber=3,
                     CopySourceRange=f"bytes=0-{len(source)}", CopySource={"Bucket": "parts", "Key": "source"}) == "InvalidRange",
          "a range past the source")
    s3.complete_multipart_upload(Bucket="parts", Key="copied", UploadId=made,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": c1}, {"PartNumber": 2, "ETag": c2}]})
    check(s3.get_object(Bucket="parts", Key="copied")["Body"].read() == source + source[10:20], "an object of copied parts")
    odd = s3.create_multipart_upload(Bucket="parts", Key="odd")["UploadId"]
    check(error_code(s3.upload_part, Bucket="parts", Key="odd", UploadId=odd, PartNumber=10001, Body=b"x") == "InvalidArgument",
          "part number 10001")
    multipart_checksums(s3)


def multipart_checksums(s3):
    """A multipart object's checksum, as S3 keeps it: composite (the digest
    of the parts' digests, `-N`) or full-object (the CRC of all its bytes)."""
    import os
    first, last = os.urandom(5 * 1024 * 1024), b"the last part"
    whole = first + last
    b64 = lambda raw: base64.b64encode(raw).decode()
    crc32 = lambda data: b64(zlib.crc32(data).to_bytes(4, "big"))
    # Create's rules: S3's default type per algorithm, and the pairs it refuses.
    made = s3.create_multipart_upload(Bucket="parts", Key="sums/crc64", ChecksumAlgorithm="CRC64NVME")
    check((made.get("ChecksumAlgorithm"), made.get("ChecksumType")) == ("CRC64NVME", "FULL_OBJECT"), f"CRC64NVME's type {made}")
    s3.abort_multipart_upload(Bucket="parts", Key="sums/crc64", UploadId=made["UploadId"])
    for algorithm, kind in [("SHA256", "FULL_OBJECT"), ("SHA1", "FULL_OBJECT"), ("CRC64NVME", "COMPOSITE")]:
        check(error_code(s3.create_multipart_upload, Bucket="parts", Key="sums/bad", ChecksumAlgorithm=algorithm,
                         ChecksumType=kind) == "InvalidRequest", f"{algorithm} with {kind}")
    check(error_code(s3.create_multipart_upload, Bucket="parts", Key="sums/bad", ChecksumType="FULL_OBJECT")
          == "InvalidRequest", "a type without an algorithm")
    check(error_code(s3.create_multipart_upload, Bucket="parts", Key="sums/bad", ChecksumAlgorithm="CRC32",
                     ChecksumType="WHOLE") == "InvalidRequest", "a type S3 does not know")
    check("Uploads" not in s3.list_multipart_uploads(Bucket="parts", Prefix="sums/"), "no upload made by a refused Create")

    # SHA256, composite (its only type): each part must carry its SHA256.
    made = s3.create_multipart_upload(Bucket="parts", Key="sums/sha", ChecksumAlgorithm="SHA256")
    check(made.get("ChecksumType") == "COMPOSITE", f"SHA256's type {made}")
    upload = made["UploadId"]
    bare = client(request_checksum_calculation="when_required")
    check(error_code(bare.upload_part, Bucket="parts", Key="sums/sha", UploadId=upload, PartNumber=1, Body=first)
          == "InvalidRequest", "a part without the upload's checksum")
    check(error_code(s3.upload_part, Bucket="parts", Key="sums/sha", UploadId=upload, PartNumber=1, Body=first,
                     ChecksumAlgorithm="CRC32") == "InvalidRequest", "a part with another algorithm")
    p1 = s3.upload_part(Bucket="parts", Key="sums/sha", UploadId=upload, PartNumber=1, Body=first, ChecksumAlgorithm="SHA256")
    p2 = s3.upload_part(Bucket="parts", Key="sums/sha", UploadId=upload, PartNumber=2, Body=last, ChecksumAlgorithm="SHA256")
    sha1, sha2 = hashlib.sha256(first).digest(), hashlib.sha256(last).digest()
    check((p1.get("ChecksumSHA256"), p2.get("ChecksumSHA256")) == (b64(sha1), b64(sha2)), "the parts' SHA256s answered")
    listed = s3.list_parts(Bucket="parts", Key="sums/sha", UploadId=upload)
    check([p.get("ChecksumSHA256") for p in listed["Parts"]] == [b64(sha1), b64(sha2)], f"list_parts' checksums {listed['Parts']}")
    check((listed.get("ChecksumAlgorithm"), listed.get("ChecksumType")) == ("SHA256", "COMPOSITE"), f"list_parts' algorithm {listed}")
    parts = [{"PartNumber": 1, "ETag": p1["ETag"], "ChecksumSHA256": p1["ChecksumSHA256"]},
             {"PartNumber": 2, "ETag": p2["ETag"], "ChecksumSHA256": p2["ChecksumSHA256"]}]
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="sums/sha", UploadId=upload,
                     MultipartUpload={"Parts": [parts[0], dict(parts[1], ChecksumSHA256=b64(sha1))]}) == "InvalidPart",
          "a part's wrong checksum in Complete")
    # Parts named without their checksums are taken with the ones they were uploaded with (as Ceph
    # does; AWS asks for each).
    done = s3.complete_multipart_upload(Bucket="parts", Key="sums/sha", UploadId=upload,
                                        MultipartUpload={"Parts": [{k: v for k, v in p.items() if k != "ChecksumSHA256"} for p in parts]})
    composite = b64(hashlib.sha256(sha1 + sha2).digest()) + "-2"
    check((done.get("ChecksumSHA256"), done.get("ChecksumType")) == (composite, "COMPOSITE"), f"Complete's checksum {done}")
    got = s3.get_object(Bucket="parts", Key="sums/sha", ChecksumMode="ENABLED")
    check(got["Body"].read() == whole and (got.get("ChecksumSHA256"), got.get("ChecksumType")) == (composite, "COMPOSITE"),
          f"GetObject's composite SHA256 {got.get('ChecksumSHA256')}")
    # Each part by its number: its bytes, the part count, its own checksum; and listed with its size.
    second = s3.get_object(Bucket="parts", Key="sums/sha", PartNumber=2, ChecksumMode="ENABLED")
    check(second["Body"].read() == last and second["PartsCount"] == 2 and second["ContentRange"] ==
          f"bytes {len(first)}-{len(whole) - 1}/{len(whole)}" and second.get("ChecksumSHA256") == b64(sha2), f"part 2 {second}")
    check(s3.head_object(Bucket="parts", Key="sums/sha", PartNumber=1)["ContentLength"] == len(first), "part 1's length")
    check(error_code(s3.get_object, Bucket="parts", Key="sums/sha", PartNumber=3) == "InvalidPart", "a part past the last")
    listed = s3.get_object_attributes(Bucket="parts", Key="sums/sha", ObjectAttributes=["ObjectParts"], MaxParts=1)["ObjectParts"]
    check(listed["TotalPartsCount"] == 2 and listed["IsTruncated"] and listed["NextPartNumberMarker"] == 1
          and listed["Parts"] == [{"PartNumber": 1, "Size": len(first), "ChecksumSHA256": b64(sha1)}], f"the parts listed {listed}")
    # A copy's checksum is the whole object's, as on S3: the composite one becomes full-object.
    copied = s3.copy_object(Bucket="parts", Key="sums/sha-copy", CopySource={"Bucket": "parts", "Key": "sums/sha"})
    check(copied["CopyObjectResult"].get("ChecksumSHA256") == b64(hashlib.sha256(whole).digest()), f"the copy's SHA256 {copied}")
    head = s3.head_object(Bucket="parts", Key="sums/sha-copy", ChecksumMode="ENABLED")
    check((head.get("ChecksumSHA256"), head.get("ChecksumType")) == (b64(hashlib.sha256(whole).digest()), "FULL_OBJECT"),
          f"the copy's checksum type {head.get('ChecksumType')}")
    copied = s3.copy_object(Bucket="parts", Key="sums/sha-crc", CopySource={"Bucket": "parts", "Key": "sums/sha"},
                            ChecksumAlgorithm="CRC32")
    check(copied["CopyObjectResult"].get("ChecksumCRC32") == crc32(whole), f"a copy in another algorithm {copied}")

    # UploadPartCopy: the part gets the upload's checksum, computed over the copied bytes.
    made = s3.create_multipart_upload(Bucket="parts", Key="sums/copied", ChecksumAlgorithm="CRC32")
    uploads = s3.list_multipart_uploads(Bucket="parts", Prefix="sums/copied")["Uploads"]
    check([(u.get("ChecksumAlgorithm"), u.get("ChecksumType")) for u in uploads] == [("CRC32", "COMPOSITE")],
          f"list_multipart_uploads' checksum {uploads}")
    part = s3.upload_part_copy(Bucket="parts", Key="sums/copied", UploadId=made["UploadId"], PartNumber=1,
                               CopySource={"Bucket": "parts", "Key": "sums/sha"})["CopyPartResult"]
    check(part.get("ChecksumCRC32") == crc32(whole), f"a copied part's CRC32 {part}")
    done = s3.complete_multipart_upload(Bucket="parts", Key="sums/copied", UploadId=made["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": part["ETag"], "ChecksumCRC32": part["ChecksumCRC32"]}]})
    check(done.get("ChecksumCRC32") == crc32(zlib.crc32(whole).to_bytes(4, "big")) + "-1", f"one copied part's composite {done}")

    # CRC32, full-object: the CRC32 of all the bytes, checked against the one Complete sends.
    upload = s3.create_multipart_upload(Bucket="parts", Key="sums/crc32", ChecksumAlgorithm="CRC32",
                                        ChecksumType="FULL_OBJECT")["UploadId"]
    p1 = s3.upload_part(Bucket="parts", Key="sums/crc32", UploadId=upload, PartNumber=1, Body=first, ChecksumAlgorithm="CRC32")
    p2 = s3.upload_part(Bucket="parts", Key="sums/crc32", UploadId=upload, PartNumber=2, Body=last, ChecksumAlgorithm="CRC32")
    parts = [{"PartNumber": n, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]} for n, p in [(1, p1), (2, p2)]]
    check(error_code(s3.complete_multipart_upload, Bucket="parts", Key="sums/crc32", UploadId=upload,
                     MultipartUpload={"Parts": parts}, ChecksumCRC32=crc32(b"other bytes"), ChecksumType="FULL_OBJECT")
          == "BadDigest", "a wrong full-object CRC32 on Complete")
    check(error_code(s3.head_object, Bucket="parts", Key="sums/crc32") == "404", "nothing stored after BadDigest")
    done = s3.complete_multipart_upload(Bucket="parts", Key="sums/crc32", UploadId=upload, MultipartUpload={"Parts": parts},
                                        ChecksumCRC32=crc32(whole), ChecksumType="FULL_OBJECT")
    check((done.get("ChecksumCRC32"), done.get("ChecksumType")) == (crc32(whole), "FULL_OBJECT"), f"full-object CRC32 {done}")
    got = s3.get_object(Bucket="parts", Key="sums/crc32", ChecksumMode="ENABLED")  # botocore checks a full-object CRC32
    check(got["Body"].read() == whole and (got.get("ChecksumCRC32"), got.get("ChecksumType")) == (crc32(whole), "FULL_OBJECT"),
          "GetObject's full-object CRC32")

    # CRC64NVME (full-object only), computed here: a part may come without
    # it (botocore computes CRC64NVME only with awscrt), the object has it.
    crc64 = lambda data: b64(crc_by_table(data, 64, 0x9A6C9329AC4BC9B5))
    upload = s3.create_multipart_upload(Bucket="parts", Key="sums/crc64", ChecksumAlgorithm="CRC64NVME")["UploadId"]
    p1 = bare.upload_part(Bucket="parts", Key="sums/crc64", UploadId=upload, PartNumber=1, Body=first)
    p2 = bare.upload_part(Bucket="parts", Key="sums/crc64", UploadId=upload, PartNumber=2, Body=last, ChecksumCRC64NVME=crc64(last))
    listed = s3.list_parts(Bucket="parts", Key="sums/crc64", UploadId=upload)["Parts"]
    check([p.get("ChecksumCRC64NVME") for p in listed] == [None, crc64(last)], f"the CRC64NVME parts {listed}")
    done = s3.complete_multipart_upload(Bucket="parts", Key="sums/crc64", UploadId=upload, ChecksumCRC64NVME=crc64(whole),
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]},
                                                                   {"PartNumber": 2, "ETag": p2["ETag"]}]})
    check((done.get("ChecksumCRC64NVME"), done.get("ChecksumType")) == (crc64(whole), "FULL_OBJECT"), f"CRC64NVME {done}")
    head = s3.head_object(Bucket="parts", Key="sums/crc64", ChecksumMode="ENABLED")
    check((head.get("ChecksumCRC64NVME"), head.get("ChecksumType")) == (crc64(whole), "FULL_OBJECT"), f"HeadObject's CRC64NVME {head}")


def virtual_host():
    s3 = client()
    s3.create_bucket(Bucket="vhost")
    port = urllib.parse.urlparse(S3_URL).port
    host = f"vhost.localhost:{port}"
    status, body = signed_request("PUT", host, "/dir/key.txt", b"by virtual host")
    check(status == 200, f"virtual-host PUT: {status} {body!r}")
    check(s3.get_object(Bucket="vhost", Key="dir/key.txt")["Body"].read() == b"by virtual host", "path-style GET of it")
    status, body = signed_request("GET", host, "/dir/key.txt")
    check(status == 200 and body == b"by virtual host", f"virtual-host GET: {status} {body!r}")
    status, body = signed_request("GET", host, "/?list-type=2&prefix=dir%2F")
    check(status == 200 and b"<Key>dir/key.txt</Key>" in body, f"virtual-host listing: {status} {body!r}")
    status, body = signed_request("GET", f"nosuch.localhost:{port}", "/k")
    check(status == 404 and b"NoSuchBucket" in body, f"virtual-host missing bucket: {status} {body!r}")


def signed_request(method, host, path_and_query, body=b""):
    """A request to Host `host` (sent to the listener's address), signed by botocore."""
    return scenario_support.signed_request(S3_URL, ACCESS_KEY, SECRET, method, host, path_and_query, body)


def raw_put(bucket, key, data, payload_hash=None, chunked=False, corrupt_trailer=False, garble_framing=False):
    """A PUT signed by botocore's signer, its body and hash chosen here."""
    url = f"{S3_URL}/{bucket}/{urllib.parse.quote(key)}"
    headers = {}
    body = data
    if chunked:
        wrapper = botocore.httpchecksum.AwsChunkedWrapper(
            io.BytesIO(data), checksum_cls=botocore.httpchecksum.Crc32Checksum,
            checksum_name="x-amz-checksum-crc32", chunk_size=64 * 1024)
        body = wrapper.read()
        if corrupt_trailer:
            body = body.replace(b"x-amz-checksum-crc32:", b"x-amz-checksum-crc32:AAAA")
        if garble_framing:
            body = b"zz" + body[body.index(b"\r\n"):]
        headers = {"Content-Encoding": "aws-chunked", "X-Amz-Trailer": "x-amz-checksum-crc32",
                   "X-Amz-Decoded-Content-Length": str(len(data))}
        payload_hash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

    class Signer(botocore.auth.S3SigV4Auth):
        def payload(self, request):
            return payload_hash or super().payload(request)

    request = botocore.awsrequest.AWSRequest(method="PUT", url=url, data=body, headers=headers)
    Signer(botocore.credentials.Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(request)
    parsed = urllib.parse.urlparse(S3_URL)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    connection.request("PUT", urllib.parse.urlparse(url).path, body=body, headers=dict(request.headers.items()))
    response = connection.getresponse()
    result = (response.status, response.read())
    connection.close()
    return result


SCENARIOS = {f.__name__: f for f in [buckets, objects, listing, folder_keys, interop, auth, checksums, metadata, copy, multipart,
                                     virtual_host, generic_cleanup, encryption, tagging, signature_v2, post_object,
                                     bucket_settings]}



def run_all(runs):
    """Runs each (scenario, S3 URL, plain URL) and prints its JSON line; the number that failed."""
    global S3_URL, PLAIN_URL
    failed = 0
    for name, S3_URL, PLAIN_URL in runs:
        error = None
        try:
            SCENARIOS[name]()
        except Exception as exception:  # the exception's own line first: a log excerpt may keep only that
            error = f"{type(exception).__name__}: {exception}\n" + traceback.format_exc(limit=4)
        failed += error is not None
        print(json.dumps({"scenario": name, "ok": error is None, "error": error}), flush=True)
    return failed


if __name__ == "__main__":
    arguments = sys.argv[3:]
    sys.exit(1 if run_all([tuple(arguments[i:i + 3]) for i in range(0, len(arguments), 3)]) else 0)
