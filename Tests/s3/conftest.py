"""Shared by the S3 client suites (test_awscli.py, test_s3fs.py, test_minio.py, test_s3cmd.py, test_rclone.py).

They run against a real `larder --ephemeral --s3-port 0` started by
Tests/LarderS3Tests/S3ClientsTests.swift, which passes its addresses in
LARDER_TEST_S3_URL (the S3 listener) and LARDER_TEST_URL (the plain API),
and runs pytest with a scratch HOME and no AWS configuration of the machine.
The credentials are the server's defaults (docs/s3.md): larder/larder-secret.

What a client wrote is checked through the plain API (`/store/<bucket>/<key>`)
wherever that says more than the client reading it back: it shows the bytes
really are the object's, at the key S3 names.
"""
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

S3_URL = os.environ["LARDER_TEST_S3_URL"]
PLAIN_URL = os.environ["LARDER_TEST_URL"]
ACCESS_KEY = "larder"
SECRET = "larder-secret"
REGION = "us-east-1"


def plain(method, key, body=None, headers=None):
    """A request to the plain Larder API at /store/<key>: (status, body bytes)."""
    request = urllib.request.Request(PLAIN_URL + "/store/" + urllib.parse.quote(key), data=body, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def stored(bucket, key):
    """The bytes the store holds for object `key` of `bucket`, or None when it holds none."""
    status, body = plain("GET", f"{bucket}/{key}")
    assert status in (200, 404), f"plain GET {bucket}/{key}: {status} {body!r}"
    return body if status == 200 else None


def keys_under(bucket, prefix=""):
    """Every key the store holds under `bucket/prefix` (prefix empty or ending in "/"), without the
    bucket, in byte order: the plain API's listing, `GET /store/<bucket>/<prefix>`."""
    assert prefix == "" or prefix.endswith("/"), prefix
    keys, after = [], None
    while True:
        url = PLAIN_URL + "/store/" + urllib.parse.quote(f"{bucket}/{prefix}") + "?limit=1000"
        if after:
            url += "&after=" + urllib.parse.quote(after)
        with urllib.request.urlopen(url, timeout=30) as response:
            page = json.load(response)
        keys += [k["key"] for k in page["keys"]]
        after = page["next"]
        if not after:
            return [k[len(bucket) + 1:] for k in keys]


def command(program, *leading, env=None):
    """A command-line client: `run(*arguments, check=True)` runs `program *leading *arguments` and
    answers its CompletedProcess (text), asserting it exited 0 unless `check` is false."""
    import subprocess

    def run(*arguments, check=True):
        result = subprocess.run([program, *leading, *arguments], capture_output=True, text=True, env=env, timeout=120)
        if check:
            assert result.returncode == 0, f"{program} {' '.join(arguments)}: {result.returncode}\n{result.stdout}{result.stderr}"
        return result
    return run


def payload(size, seed=0):
    """`size` bytes that differ from one offset to the next (a shifted range would show)."""
    return bytes((i * 31 + seed * 7 + (i >> 8)) % 251 for i in range(size))


@pytest.fixture
def bucket_name():
    """A bucket name no other test uses (the bucket is not created)."""
    return "t-" + uuid.uuid4().hex[:16]


@pytest.fixture
def boto3_client():
    """A boto3 client on the same server, for setting up what a test reads through another client."""
    import boto3
    from botocore.client import Config
    return boto3.client("s3", endpoint_url=S3_URL, region_name=REGION, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


@pytest.fixture
def bucket(bucket_name, boto3_client):
    """A new, empty bucket for this test."""
    boto3_client.create_bucket(Bucket=bucket_name)
    return bucket_name
