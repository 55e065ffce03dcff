#!/usr/bin/env python3
"""Exact counts of S3 requests as boto3 makes them, sent on one keep-alive
connection (for Benchmarks/s3-callgrind.sh: the server's instructions per
request, the client's time not counted).

    s3_requests.py setup URL              bucket `bench`, 1 KiB object `bench/k`
    s3_requests.py send URL MODE COUNT    COUNT requests, each 2xx or exit 1

MODE: `get` (GetObject of bench/k), `put` (PutObject of 1 KiB to
bench/many-0000 ... many-0999 in turn), both signed in an Authorization
header by boto3 itself (the requests are made by a boto3 client whose
sending is replaced by capturing the request, so their headers are
boto3's), or `pget` / `pput`: the same through presigned URLs, as wrk
sends them (Benchmarks/s3-wrk-vs-moto.sh). All COUNT requests are made and
signed before the first is sent; then the command in $BEFORE_SEND, if
set, runs (callgrind_control zeroing the counters).
"""
import os
import socket
import subprocess
import sys
import urllib.parse

from bench import read_response  # this folder is on sys.path (the script's own)
import boto3
from botocore.awsrequest import AWSResponse
from botocore.client import Config

BODY = b"x" * 1024


def client(url):
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="larder",
                        aws_secret_access_key="larder-secret",
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                      request_checksum_calculation="when_required",
                                      response_checksum_validation="when_required"))


class _Raw:
    def stream(self, **_):
        return iter([b""])

    def read(self, *_):
        return b""


def captured(url, mode, count):
    """COUNT raw HTTP requests, as boto3 would send them."""
    s3 = client(url)
    netloc = urllib.parse.urlsplit(url).netloc
    out = []

    def take(request, **_):
        u = urllib.parse.urlsplit(request.url)
        target = u.path + ("?" + u.query if u.query else "")
        headers = {"Host": netloc}
        headers.update({k: (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()})
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        elif hasattr(body, "read"):
            body = body.read()
        if body and "Content-Length" not in headers:
            headers["Content-Length"] = str(len(body))
        head = f"{request.method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        out.append(head.encode() + body)
        return AWSResponse(request.url, 200, {"ETag": '"0"', "Content-Length": "0"}, _Raw())

    s3.meta.events.register_first("before-send.s3", take)
    for i in range(count):
        if mode == "get":
            s3.get_object(Bucket="bench", Key="k")
        else:
            s3.put_object(Bucket="bench", Key=f"many-{i % 1000:04d}", Body=BODY)
    return out


def presigned(url, mode, count):
    s3 = client(url)
    netloc = urllib.parse.urlsplit(url).netloc
    if mode == "pget":
        u = urllib.parse.urlsplit(s3.generate_presigned_url("get_object", Params={"Bucket": "bench", "Key": "k"}, ExpiresIn=3600))
        one = f"GET {u.path}?{u.query} HTTP/1.1\r\nHost: {netloc}\r\n\r\n".encode()
        return [one] * count
    puts = []
    for i in range(min(count, 1000)):
        u = urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={"Bucket": "bench", "Key": f"many-{i:04d}"},
                                                            ExpiresIn=3600))
        puts.append(f"PUT {u.path}?{u.query} HTTP/1.1\r\nHost: {netloc}\r\nContent-Length: 1024\r\n\r\n".encode() + BODY)
    return [puts[i % len(puts)] for i in range(count)]


def send(url, requests):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    for i, request in enumerate(requests):
        s.sendall(request)
        status, body, buf = read_response(s, buf)
        if status >= 300:
            raise SystemExit(f"request {i}: HTTP {status}: {body.decode(errors='replace')}")
    s.close()


def main():
    a = sys.argv[1:]
    if a[:1] == ["setup"]:
        s3 = client(a[1])
        s3.create_bucket(Bucket="bench")
        s3.put_object(Bucket="bench", Key="k", Body=BODY)
    elif a[:1] == ["send"]:
        url, mode, count = a[1], a[2], int(a[3])
        make = captured if mode in ("get", "put") else presigned
        requests = make(url, mode, count)
        if os.environ.get("BEFORE_SEND"):
            subprocess.run(os.environ["BEFORE_SEND"], shell=True, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        send(url, requests)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
