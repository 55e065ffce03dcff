"""The MinIO Python SDK (`minio`) against Larder's S3 face.

MinIO's SDK signs differently from botocore: over plain HTTP it signs the
SHA-256 of every body (no UNSIGNED-PAYLOAD), and it checks bucket names
itself. `put_object` sends one PutObject while the length is known and no
more than the part size (at least 5 MiB), and uploads in parts past it.
"""
import concurrent.futures
import io
import urllib.parse
import urllib.request

import minio
import pytest
from minio.deleteobjects import DeleteObject
from minio.error import S3Error

from conftest import ACCESS_KEY, REGION, S3_URL, SECRET, keys_under, payload, plain, stored


def make_client(secret=SECRET):
    return minio.Minio(urllib.parse.urlparse(S3_URL).netloc, access_key=ACCESS_KEY, secret_key=secret, secure=False,
                       region=REGION)


@pytest.fixture
def mc():
    return make_client()


def error_code(call, *args, **kwargs):
    with pytest.raises(S3Error) as raised:
        call(*args, **kwargs)
    return raised.value.code


def test_bucket_operations(mc, bucket_name):
    assert not mc.bucket_exists(bucket_name)
    mc.make_bucket(bucket_name)
    assert mc.bucket_exists(bucket_name)
    listed = {b.name: b for b in mc.list_buckets()}
    assert bucket_name in listed and listed[bucket_name].creation_date is not None
    mc.put_object(bucket_name, "k", io.BytesIO(b"v"), 1)
    assert error_code(mc.remove_bucket, bucket_name) == "BucketNotEmpty"
    mc.remove_object(bucket_name, "k")
    mc.remove_bucket(bucket_name)
    assert not mc.bucket_exists(bucket_name)
    assert bucket_name not in [b.name for b in mc.list_buckets()]
    assert error_code(mc.remove_bucket, bucket_name) == "NoSuchBucket"
    # A bucket made on the plain API (a key under its prefix) is one here too.
    plain("PUT", f"{bucket_name}/from-plain", b"p")
    assert mc.bucket_exists(bucket_name)


def test_put_get_stat(mc, bucket, tmp_path):
    data = payload(1_500_000, seed=21)
    put = mc.put_object(bucket, "dir/obj.bin", io.BytesIO(data), len(data), content_type="application/x-minio")
    assert stored(bucket, "dir/obj.bin") == data
    response = mc.get_object(bucket, "dir/obj.bin")
    try:
        assert response.read() == data
        assert response.headers["Content-Type"] == "application/x-minio"
    finally:
        response.close()
        response.release_conn()
    stat = mc.stat_object(bucket, "dir/obj.bin")
    assert stat.size == len(data) and stat.etag == put.etag and stat.content_type == "application/x-minio"
    assert stat.last_modified is not None
    # A range: offset and length.
    response = mc.get_object(bucket, "dir/obj.bin", offset=1_000_000, length=1234)
    try:
        assert response.read() == data[1_000_000:1_001_234]
    finally:
        response.close()
        response.release_conn()
    # Files.
    (tmp_path / "up.bin").write_bytes(data[:4096])
    mc.fput_object(bucket, "file.bin", str(tmp_path / "up.bin"))
    mc.fget_object(bucket, "file.bin", str(tmp_path / "down.bin"))
    assert (tmp_path / "down.bin").read_bytes() == data[:4096]
    # A stream of unknown length, sent as one part while it fits one.
    mc.put_object(bucket, "stream", io.BytesIO(b"streamed body"), -1, part_size=5 * 1024 * 1024)
    assert stored(bucket, "stream") == b"streamed body"
    # An empty object.
    mc.put_object(bucket, "empty", io.BytesIO(b""), 0)
    assert stored(bucket, "empty") == b"" and mc.stat_object(bucket, "empty").size == 0
    # Keys with characters the signature encodes.
    for key in ["with space", "ünïcødé/ключ", "a+b=c&d", "semi;colon,comma", "(parens)!'*"]:
        mc.put_object(bucket, key, io.BytesIO(key.encode()), len(key.encode()))
        assert stored(bucket, key) == key.encode()
        response = mc.get_object(bucket, key)
        assert response.read() == key.encode()
        response.close()
        response.release_conn()


def test_missing_objects_and_buckets(mc, bucket):
    assert error_code(mc.stat_object, bucket, "none") == "NoSuchKey"
    assert error_code(mc.get_object, bucket, "none") == "NoSuchKey"
    assert error_code(mc.get_object, bucket + "-none", "k") == "NoSuchBucket"
    assert error_code(mc.put_object, bucket + "-none", "k", io.BytesIO(b"x"), 1) == "NoSuchBucket"
    assert error_code(mc.get_object, bucket, "none", offset=0, length=1) == "NoSuchKey"
    mc.put_object(bucket, "short", io.BytesIO(b"abc"), 3)
    assert error_code(mc.get_object, bucket, "short", offset=10, length=1) == "InvalidRange"


def test_list_objects(mc, bucket):
    keys = ["a/1", "a/2", "a/b/3", "a/b/4", "c", "d/5"]
    for key in keys:
        plain("PUT", f"{bucket}/{key}", b"x" * len(key))
    # The SDK yields a page's objects, then its common prefixes.
    top = list(mc.list_objects(bucket))
    assert [(o.object_name, o.is_dir) for o in top] == [("c", False), ("a/", True), ("d/", True)]
    assert [o.object_name for o in mc.list_objects(bucket, recursive=True)] == keys
    assert [(o.object_name, o.is_dir) for o in mc.list_objects(bucket, prefix="a/")] == [
        ("a/1", False), ("a/2", False), ("a/b/", True)]
    assert [(o.object_name, o.is_dir) for o in mc.list_objects(bucket, prefix="a/b/")] == [
        ("a/b/3", False), ("a/b/4", False)]
    assert [o.object_name for o in mc.list_objects(bucket, prefix="a/", recursive=True, start_after="a/2")] == [
        "a/b/3", "a/b/4"]
    assert [o.object_name for o in mc.list_objects(bucket, recursive=True, use_api_v1=True)] == keys
    sized = {o.object_name: (o.size, o.etag) for o in mc.list_objects(bucket, recursive=True)}
    assert sized["a/b/3"][0] == 5 and sized["a/b/3"][1] == mc.stat_object(bucket, "a/b/3").etag
    assert list(mc.list_objects(bucket, prefix="zzz/")) == []


def test_list_objects_pages(mc, bucket):
    """More than one page (1000 keys): the SDK follows continuation tokens (v2) and markers (v1)."""
    keys = [f"p/{i:04d}" for i in range(1030)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: mc.put_object(bucket, k, io.BytesIO(b"x"), 1), keys))
    assert [o.object_name for o in mc.list_objects(bucket, prefix="p/", recursive=True)] == keys
    assert [o.object_name for o in mc.list_objects(bucket, prefix="p/", recursive=True, use_api_v1=True)] == keys
    errors = list(mc.remove_objects(bucket, (DeleteObject(k) for k in keys)))
    assert errors == []
    assert keys_under(bucket) == []


def test_remove_object_and_objects(mc, bucket):
    for key in ["r/1", "r/2", "r/3 & more", "kept"]:
        plain("PUT", f"{bucket}/{key}", b"v")
    mc.remove_object(bucket, "r/1")
    assert stored(bucket, "r/1") is None
    mc.remove_object(bucket, "r/never-was")  # 204, as S3
    errors = list(mc.remove_objects(bucket, [DeleteObject("r/2"), DeleteObject("r/3 & more"), DeleteObject("r/none")]))
    assert errors == []
    assert keys_under(bucket) == ["kept"]


def test_a_wrong_secret_is_refused(bucket):
    wrong = make_client(secret="not-the-secret")
    assert error_code(wrong.put_object, bucket, "k", io.BytesIO(b"x"), 1) == "SignatureDoesNotMatch"
    assert error_code(wrong.list_buckets) == "SignatureDoesNotMatch"
    assert stored(bucket, "k") is None


def test_user_metadata(mc, bucket):
    mc.put_object(bucket, "m", io.BytesIO(b"m"), 1, metadata={"color": "red"})
    assert mc.stat_object(bucket, "m").metadata["x-amz-meta-color"] == "red"


def test_presigned_urls(mc, bucket):
    plain("PUT", f"{bucket}/shared", b"presigned")
    with urllib.request.urlopen(mc.presigned_get_object(bucket, "shared")) as response:
        assert response.read() == b"presigned"
    request = urllib.request.Request(mc.presigned_put_object(bucket, "uploaded"), data=b"up", method="PUT")
    urllib.request.urlopen(request).close()
    assert stored(bucket, "uploaded") == b"up"


def test_copy_object(mc, bucket):
    from minio.commonconfig import REPLACE, CopySource
    plain("PUT", f"{bucket}/src", b"data")
    mc.copy_object(bucket, "dst", CopySource(bucket, "src"))
    assert stored(bucket, "dst") == b"data"
    # Metadata comes along (COPY), or is replaced (REPLACE).
    mc.put_object(bucket, "tagged", io.BytesIO(b"t"), 1, metadata={"color": "red"})
    mc.copy_object(bucket, "tagged-copy", CopySource(bucket, "tagged"))
    assert mc.stat_object(bucket, "tagged-copy").metadata["x-amz-meta-color"] == "red"
    mc.copy_object(bucket, "tagged-new", CopySource(bucket, "tagged"), metadata={"color": "blue"},
                   metadata_directive=REPLACE)
    assert mc.stat_object(bucket, "tagged-new").metadata["x-amz-meta-color"] == "blue"


def test_put_object_in_parts(mc, bucket):
    """Past the part size: a multipart upload (5 MiB and 1 MiB), one object, ETag "-2"."""
    data = payload(6 * 1024 * 1024, seed=22)
    put = mc.put_object(bucket, "parts", io.BytesIO(data), len(data), part_size=5 * 1024 * 1024)
    assert stored(bucket, "parts") == data
    assert put.etag.endswith("-2") and mc.stat_object(bucket, "parts").etag == put.etag
    # A stream of unknown length, cut into parts by the SDK.
    mc.put_object(bucket, "stream-parts", io.BytesIO(data), -1, part_size=5 * 1024 * 1024)
    assert stored(bucket, "stream-parts") == data
    assert keys_under(bucket) == ["parts", "stream-parts"]
