#!/usr/bin/env python3
"""Signature V4 beyond the Authorization header, against Larder's S3 face:
presigned URLs made by boto3 and used by `requests`, and signed aws-chunked
bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]) framed and signed here
by an implementation of AWS's spec independent of the server's (botocore
has no chunk signer). One scenario per run:

    sigv4_face.py SCENARIO S3_URL ACCESS_KEY SECRET

Run by Tests/LarderS3Tests/SigV4FaceTests.swift against a server it starts.
Prints "ok" and exits 0 when every check of the scenario holds; an
assertion names the first one that does not.
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import sys
import urllib.parse
import zlib

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import requests
from botocore.client import Config
from botocore.exceptions import ClientError

SCENARIO, S3_URL, ACCESS_KEY, SECRET = sys.argv[1:5]
REGION = "us-east-1"


def client(secret=SECRET):
    return boto3.client(
        "s3", endpoint_url=S3_URL, region_name=REGION,
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=secret,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def error_code(response):
    """The <Code> of an S3 error body."""
    text = response.text
    start = text.find("<Code>")
    return text[start + 6:text.find("</Code>")] if start >= 0 else None


def shifted_clock(minutes):
    """botocore signs as if its clock were `minutes` off (for the next signature)."""
    real = botocore.auth.get_current_datetime

    class Shift:
        def __enter__(self):
            botocore.auth.get_current_datetime = lambda: real() + datetime.timedelta(minutes=minutes)

        def __exit__(self, *args):
            botocore.auth.get_current_datetime = real

    return Shift()


# MARK: - Presigned URLs

def presigned():
    s3 = client()
    s3.create_bucket(Bucket="links")
    data = bytes(range(256)) * 300
    for key in ["up/file.bin", "dir/with space+plus&amp;~.txt", "ünïcødé/ключ"]:
        url = s3.generate_presigned_url("put_object", Params={"Bucket": "links", "Key": key}, ExpiresIn=300)
        check("X-Amz-Signature=" in url and "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url, f"a SigV4 presigned URL: {url}")
        r = requests.put(url, data=data, timeout=30)
        check(r.status_code == 200, f"presigned PUT of {key!r}: {r.status_code} {r.text}")
        check(s3.get_object(Bucket="links", Key=key)["Body"].read() == data, f"what the presigned PUT of {key!r} stored")
        url = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": key}, ExpiresIn=300)
        r = requests.get(url, timeout=30)
        check(r.status_code == 200 and r.content == data, f"presigned GET of {key!r}: {r.status_code}")

    url = s3.generate_presigned_url("head_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=60)
    r = requests.head(url, timeout=30)
    check(r.status_code == 200 and r.headers["Content-Length"] == str(len(data)), f"presigned HEAD: {r.status_code}")
    ranged = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=60)
    r = requests.get(ranged, headers={"Range": "bytes=0-9"}, timeout=30)
    check(r.status_code == 206 and r.content == data[:10], f"presigned GET with an unsigned Range: {r.status_code}")
    listing = s3.generate_presigned_url("list_objects_v2", Params={"Bucket": "links", "Prefix": "up/"}, ExpiresIn=60)
    r = requests.get(listing, timeout=30)
    check(r.status_code == 200 and "<Key>up/file.bin</Key>" in r.text, f"presigned listing: {r.status_code} {r.text}")

    # A URL names one request: another key, method or secret does not match.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=60)
    r = requests.get(url.replace("up/file.bin", "up/other.bin"), timeout=30)
    check(r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", f"another key: {r.status_code} {r.text}")
    r = requests.delete(url, timeout=30)
    check(r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", f"another method: {r.status_code} {r.text}")
    bad = client(secret="not-the-secret").generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"})
    r = requests.get(bad, timeout=30)
    check(r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", f"a wrong secret: {r.status_code} {r.text}")
    r = requests.get(url + "&extra=1", timeout=30)
    check(r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", f"an added parameter: {r.status_code} {r.text}")

    # Its time window: expired, signed in the future, longer than a week.
    with shifted_clock(-10):
        old = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=60)
    r = requests.get(old, timeout=30)
    check(r.status_code == 403 and error_code(r) == "AccessDenied" and "Request has expired" in r.text,
          f"an expired URL: {r.status_code} {r.text}")
    with shifted_clock(-10):
        still = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=3600)
    check(requests.get(still, timeout=30).status_code == 200, "a URL signed 10 minutes ago for an hour")
    with shifted_clock(20):
        future = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=3600)
    r = requests.get(future, timeout=30)
    check(r.status_code == 403 and error_code(r) == "RequestTimeTooSkewed", f"signed 20 minutes ahead: {r.status_code} {r.text}")
    too_long = s3.generate_presigned_url("get_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=604801)
    r = requests.get(too_long, timeout=30)
    check(r.status_code == 403 and error_code(r) == "AuthorizationQueryParametersError", f"over a week: {r.status_code} {r.text}")
    r = requests.get(url.replace("X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Algorithm=AWS4-HMAC-SHA1"), timeout=30)
    check(r.status_code == 400 and error_code(r) == "AuthorizationQueryParametersError", f"another algorithm: {r.status_code}")

    # A refused presigned PUT stores nothing.
    with shifted_clock(-10):
        late_put = s3.generate_presigned_url("put_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=60)
    r = requests.put(late_put, data=b"too late", timeout=30)
    check(r.status_code == 403 and error_code(r) == "AccessDenied", f"an expired presigned PUT: {r.status_code} {r.text}")
    check(s3.get_object(Bucket="links", Key="up/file.bin")["Body"].read() == data, "nothing stored by an expired PUT")

    # DELETE through a presigned URL.
    gone = s3.generate_presigned_url("delete_object", Params={"Bucket": "links", "Key": "up/file.bin"}, ExpiresIn=60)
    r = requests.delete(gone, timeout=30)
    check(r.status_code == 204, f"presigned DELETE: {r.status_code} {r.text}")
    try:
        s3.head_object(Bucket="links", Key="up/file.bin")
        raise AssertionError("the object is still there after a presigned DELETE")
    except ClientError as e:
        check(e.response["Error"]["Code"] == "404", f"after a presigned DELETE: {e}")


# MARK: - Signed aws-chunked bodies

def sha(data):
    return hashlib.sha256(data).hexdigest()


def hmac_sha256(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signing_key(date):
    key = hmac_sha256(("AWS4" + SECRET).encode(), date)
    for part in [REGION, "s3", "aws4_request"]:
        key = hmac_sha256(key, part)
    return key


def signed_chunked_put(bucket, key, payload, trailer=False, bad=None, chunk_size=64 * 1024, query=""):
    """PUTs `payload` as a signed aws-chunked body: the headers signed by
    botocore with the STREAMING- payload hash, each chunk and the trailer
    signed here from the spec. `bad` spoils one part; `query` (an
    UploadPart's) goes on the URL. (status, body)."""
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
    declared = len(payload) + (1 if bad == "short" else 0)
    headers = {"Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": str(declared)}
    if trailer:
        headers["X-Amz-Trailer"] = "x-amz-checksum-crc32"

    class Signer(botocore.auth.S3SigV4Auth):
        def payload(self, request):
            return mode

    url = f"{S3_URL}/{bucket}/{urllib.parse.quote(key)}" + ("?" + query if query else "")
    request = botocore.awsrequest.AWSRequest(method="PUT", url=url, data=b"", headers=headers)
    Signer(botocore.credentials.Credentials(ACCESS_KEY, SECRET), "s3", REGION).add_auth(request)
    check(request.headers["X-Amz-Content-SHA256"] == mode, "botocore signed the streaming payload hash")
    seed = request.headers["Authorization"].split("Signature=")[1]
    timestamp = request.headers["X-Amz-Date"]
    scope = f"{timestamp[:8]}/{REGION}/s3/aws4_request"
    key_bytes = signing_key(timestamp[:8])

    chunks = [payload[i:i + chunk_size] for i in range(0, len(payload), chunk_size)] + [b""]
    previous = seed
    wire = bytearray()
    for index, chunk in enumerate(chunks):
        string = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", timestamp, scope, previous, sha(b""), sha(chunk)])
        previous = hmac.new(key_bytes, string.encode(), hashlib.sha256).hexdigest()
        signature = previous
        if bad == "signature" and index == 1:
            signature = "0" * 64
        if bad == "data" and index == 0:
            chunk = b"X" + chunk[1:]
        if bad == "order" and index == 0 and len(chunks) > 2:
            continue  # the first chunk left out: the second's signature no longer chains
        wire += f"{len(chunk):x};chunk-signature={signature}\r\n".encode()
        if chunk:
            wire += chunk + b"\r\n"  # the last, empty chunk has no data line: trailers (or the end) follow
    if trailer:
        checksum = base64.b64encode((zlib.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "big")).decode()
        if bad == "checksum":
            checksum = base64.b64encode((zlib.crc32(b"other") & 0xFFFFFFFF).to_bytes(4, "big")).decode()
        signed_lines = f"x-amz-checksum-crc32:{checksum}\n"
        string = "\n".join(["AWS4-HMAC-SHA256-TRAILER", timestamp, scope, previous, sha(signed_lines.encode())])
        trailer_signature = hmac.new(key_bytes, string.encode(), hashlib.sha256).hexdigest()
        if bad == "trailer-signature":
            trailer_signature = "f" * 64
        wire += signed_lines.replace("\n", "\r\n").encode()
        wire += f"x-amz-trailer-signature:{trailer_signature}\r\n".encode()
    wire += b"\r\n"

    parsed = urllib.parse.urlparse(S3_URL)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    sent = dict(request.headers.items())
    sent["Content-Length"] = str(len(wire))
    connection.request("PUT", urllib.parse.urlparse(url).path + ("?" + query if query else ""), body=bytes(wire), headers=sent)
    response = connection.getresponse()
    result = (response.status, response.read())
    connection.close()
    return result


def signed_chunks():
    s3 = client()
    s3.create_bucket(Bucket="streams")
    payload = bytes((i * 31) % 256 for i in range(200_000))  # three full chunks and a short one
    for trailer in [False, True]:
        name = "trailer" if trailer else "plain"
        status, body = signed_chunked_put("streams", name, payload, trailer=trailer)
        check(status == 200, f"signed aws-chunked ({name}): {status} {body!r}")
        check(s3.get_object(Bucket="streams", Key=name)["Body"].read() == payload, f"signed aws-chunked ({name}): the object")
        small = b"a few bytes"
        status, body = signed_chunked_put("streams", name + "-small", small, trailer=trailer)
        check(status == 200 and s3.get_object(Bucket="streams", Key=name + "-small")["Body"].read() == small,
              f"one short chunk ({name}): {status} {body!r}")
        status, body = signed_chunked_put("streams", name + "-empty", b"", trailer=trailer)
        check(status == 200 and s3.get_object(Bucket="streams", Key=name + "-empty")["Body"].read() == b"",
              f"an empty object ({name}): {status} {body!r}")

    # Each spoiled body is refused and leaves the object as it was.
    s3.put_object(Bucket="streams", Key="kept", Body=b"the old value")
    cases = [
        (False, "signature", 403, b"SignatureDoesNotMatch"),
        (False, "data", 403, b"SignatureDoesNotMatch"),
        (False, "order", 403, b"SignatureDoesNotMatch"),
        (False, "short", 400, b"IncompleteBody"),
        (True, "signature", 403, b"SignatureDoesNotMatch"),
        (True, "trailer-signature", 403, b"SignatureDoesNotMatch"),
        (True, "checksum", 400, b"BadDigest"),
    ]
    for trailer, bad, want_status, want_code in cases:
        status, body = signed_chunked_put("streams", "kept", payload, trailer=trailer, bad=bad)
        check(status == want_status and want_code in body, f"{bad} (trailer={trailer}): {status} {body!r}")
        check(s3.get_object(Bucket="streams", Key="kept")["Body"].read() == b"the old value",
              f"{bad} (trailer={trailer}) stored something")

    # A part with its CRC32 in the trailer (as SDKs send parts over HTTPS)
    # into an upload created with CRC32: its checksum is the upload's, so
    # the object gets the composite CRC32; a part with no checksum is refused.
    upload = s3.create_multipart_upload(Bucket="streams", Key="parts", ChecksumAlgorithm="CRC32")["UploadId"]
    part_query = f"partNumber=1&uploadId={upload}"
    status, body = signed_chunked_put("streams", "parts", payload, query=part_query)
    check(status == 400 and b"InvalidRequest" in body, f"a part without the upload's checksum: {status} {body!r}")
    status, body = signed_chunked_put("streams", "parts", payload, trailer=True, query=part_query)
    check(status == 200, f"a part with a CRC32 trailer: {status} {body!r}")
    part_crc = (zlib.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "big")
    listed = s3.list_parts(Bucket="streams", Key="parts", UploadId=upload)["Parts"]
    check([p.get("ChecksumCRC32") for p in listed] == [base64.b64encode(part_crc).decode()], f"the trailer's CRC32 kept {listed}")
    done = s3.complete_multipart_upload(Bucket="streams", Key="parts", UploadId=upload, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": listed[0]["ETag"], "ChecksumCRC32": listed[0]["ChecksumCRC32"]}]})
    composite = base64.b64encode(zlib.crc32(part_crc).to_bytes(4, "big")).decode() + "-1"
    head = s3.head_object(Bucket="streams", Key="parts", ChecksumMode="ENABLED")
    check(done.get("ChecksumCRC32") == composite and (head.get("ChecksumCRC32"), head.get("ChecksumType")) == (composite, "COMPOSITE"),
          f"one part's composite CRC32: {done.get('ChecksumCRC32')} {head.get('ChecksumCRC32')} vs {composite}")


SCENARIOS = {f.__name__: f for f in [presigned, signed_chunks]}

if __name__ == "__main__":
    SCENARIOS[SCENARIO]()
    print("ok")
