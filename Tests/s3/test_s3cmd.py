"""s3cmd (the `s3cmd` command, from PyPI) against Larder's S3 face, configured as its docs say for
an S3-compatible endpoint: `host_base`/`host_bucket` the listener, no HTTPS, Signature Version 4.

Each test runs the command as a user types it, with a config file of its own (`-c`), and checks
what landed through the plain API or boto3 as well as through s3cmd.
"""
import hashlib
import os
import pytest

from conftest import ACCESS_KEY, S3_URL, SECRET, command, keys_under, payload, stored

HOST = S3_URL.split("://", 1)[1]


@pytest.fixture
def s3cmd(tmp_path):
    config = tmp_path / "s3cfg"
    config.write_text(f"""[default]
access_key = {ACCESS_KEY}
secret_key = {SECRET}
host_base = {HOST}
host_bucket = {HOST}
use_https = False
signature_v2 = False
bucket_location = us-east-1
""")

    return command("s3cmd", "-c", str(config), "--no-progress")


def test_make_put_list_get_delete(s3cmd, bucket_name, tmp_path):
    s3cmd("mb", f"s3://{bucket_name}")
    source = tmp_path / "notes.txt"
    source.write_bytes(b"written by s3cmd\n")
    s3cmd("put", str(source), f"s3://{bucket_name}/docs/notes.txt", "--mime-type=text/plain")
    assert stored(bucket_name, "docs/notes.txt") == b"written by s3cmd\n"
    listed = s3cmd("ls", "--recursive", f"s3://{bucket_name}").stdout
    assert f"s3://{bucket_name}/docs/notes.txt" in listed
    info = s3cmd("info", f"s3://{bucket_name}/docs/notes.txt").stdout
    assert "text/plain" in info and hashlib.md5(b"written by s3cmd\n").hexdigest() in info
    target = tmp_path / "back.txt"
    s3cmd("get", f"s3://{bucket_name}/docs/notes.txt", str(target))
    assert target.read_bytes() == b"written by s3cmd\n"
    s3cmd("del", f"s3://{bucket_name}/docs/notes.txt")
    assert stored(bucket_name, "docs/notes.txt") is None
    s3cmd("rb", f"s3://{bucket_name}")
    assert f"s3://{bucket_name}" not in s3cmd("ls").stdout


def test_multipart_put_and_sync(s3cmd, bucket, tmp_path):
    # Past --multipart-chunk-size-mb: s3cmd uploads 5 MiB parts.
    big = payload(12 * 1024 * 1024 + 3, seed=5)
    (tmp_path / "big.bin").write_bytes(big)
    s3cmd("put", "--multipart-chunk-size-mb=5", str(tmp_path / "big.bin"), f"s3://{bucket}/big.bin")
    assert stored(bucket, "big.bin") == big
    site = tmp_path / "site"
    (site / "css").mkdir(parents=True)
    (site / "index.html").write_text("<h1>hi</h1>")
    (site / "css" / "main.css").write_text("h1 { color: teal }")
    s3cmd("sync", str(site) + "/", f"s3://{bucket}/site/")
    assert keys_under(bucket, "site/") == ["site/css/main.css", "site/index.html"]
    # A second sync with one file changed and one gone (--delete-removed) sends only the change.
    (site / "index.html").write_text("<h1>hello</h1>")
    os.remove(site / "css" / "main.css")
    s3cmd("sync", "--delete-removed", str(site) + "/", f"s3://{bucket}/site/")
    assert keys_under(bucket, "site/") == ["site/index.html"]
    assert stored(bucket, "site/index.html") == b"<h1>hello</h1>"


def test_copy_move_and_a_missing_bucket(s3cmd, bucket, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"copy me")
    s3cmd("put", str(tmp_path / "a.txt"), f"s3://{bucket}/a.txt")
    s3cmd("cp", f"s3://{bucket}/a.txt", f"s3://{bucket}/b.txt")
    s3cmd("mv", f"s3://{bucket}/a.txt", f"s3://{bucket}/moved/a.txt")
    assert keys_under(bucket) == ["b.txt", "moved/a.txt"]
    assert stored(bucket, "moved/a.txt") == b"copy me"
    missing = s3cmd("ls", f"s3://no-such-{bucket}", check=False)
    assert missing.returncode != 0 and "NoSuchBucket" in missing.stderr + missing.stdout
