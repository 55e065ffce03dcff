"""The aws CLI (v1, from PyPI's `awscli`) against Larder's S3 face.

Each command runs as a user runs it: `aws --endpoint-url <larder> s3 ...` in a
child process, with its own arguments, environment, working directory and
standard streams, running `awscli.clidriver.main`, which is what
`python3 -m awscli` and the `aws` script run. The child is forked from this
process, which imported awscli once (`warm_aws`): a fresh interpreter
spends about a second importing botocore before each command, which made
this suite the largest CPU cost of the test run. Credentials are in the
environment, with a config file of our own
(path-style addressing, SigV4 for `s3 presign`, the CLI's own multipart
threshold and part size of 8 MB). A named profile (`--profile`) takes its
keys from the config file, not the environment, so the two named profiles
carry them: `one-put` raises the threshold so a 10 MiB file goes up as one
PutObject, `ranged` lowers it so a 3 MiB download is ranged GETs.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import pytest

from conftest import ACCESS_KEY, REGION, S3_URL, SECRET, keys_under, payload, plain, stored

CONFIG = """\
[default]
region = us-east-1
s3 =
  addressing_style = path
  signature_version = s3v4

[profile ranged]
region = us-east-1
aws_access_key_id = larder
aws_secret_access_key = larder-secret
s3 =
  addressing_style = path
  multipart_threshold = 1MB
  multipart_chunksize = 1MB

[profile one-put]
region = us-east-1
aws_access_key_id = larder
aws_secret_access_key = larder-secret
s3 =
  addressing_style = path
  multipart_threshold = 64MB
  multipart_chunksize = 64MB
"""


@pytest.fixture(scope="session")
def aws_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("aws-home")
    (home / "config").write_text(CONFIG)
    return home


def warm_parent():
    """What every forked command would otherwise do again, done once here:
    import the CLI's plugins (`awscli.handlers`, a third of a command's
    CPU), and list botocore's data directories once per search path and
    type (the listing is the same for every command; each child's loader
    would walk the directories again), and parse the JSON files a command
    reads once (below). The command itself runs unchanged."""
    from botocore import loaders
    if getattr(loaders.Loader, "_larder_listing_cached", False):
        return
    import awscli.clidriver
    import awscli.handlers  # noqa: F401  (the plugins `clidriver.main` loads)
    listed = {}
    list_available_services = loaders.Loader.list_available_services

    def listing_once(self, type_name):
        key = (tuple(self.search_paths), type_name)
        if key not in listed:
            listed[key] = list_available_services(self, type_name)
        return list(listed[key])
    loaders.Loader.list_available_services = listing_once
    # The JSON files a command parses (s3's model, its endpoint rules, the
    # endpoints and partitions: two thirds of a command's CPU) are the same
    # files every time: parsed here once, through a client the CLI's way,
    # and each child gets them with the fork. The child still loads them
    # through botocore's loader, as it would from disk.
    parsed = {}
    load_file = loaders.JSONFileLoader.load_file

    def load_file_once(self, file_path):
        if file_path not in parsed:
            parsed[file_path] = load_file(self, file_path)
        return parsed[file_path]
    loaders.JSONFileLoader.load_file = load_file_once
    driver = awscli.clidriver.create_clidriver()
    driver.session.create_client("s3", region_name=REGION, endpoint_url="http://127.0.0.1:9",
                                 aws_access_key_id="warm", aws_secret_access_key="warm")
    driver.session.get_paginator_model("s3")
    driver.session.get_waiter_model("s3")
    loaders.Loader._larder_listing_cached = True


def warm_aws(args, env, cwd, stdin, timeout):
    """Runs `aws args...` in a child forked from this process, which has
    imported awscli already: the child takes `env` as its whole
    environment, `cwd` as its directory, `stdin` (bytes) as its standard
    input, and its exit status and output come back as a
    CompletedProcess (bytes). A child still running after `timeout`
    seconds is killed and fails the test."""
    import awscli
    import awscli.clidriver  # here, before the fork: the child inherits it imported
    warm_parent()
    with tempfile.TemporaryFile() as inp, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        inp.write(stdin or b"")
        inp.seek(0)
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            status = 255
            try:
                for fd, f in ((0, inp), (1, out), (2, err)):
                    os.dup2(f.fileno(), fd)
                # pytest replaced the sys streams with its capture objects.
                sys.stdin = open(0, "r", closefd=False)
                sys.stdout = open(1, "w", closefd=False)
                sys.stderr = open(2, "w", closefd=False)
                os.environ.clear()
                os.environ.update(env)
                # What importing awscli sets in a fresh interpreter (where its
                # data files are); the import here set it in the parent.
                os.environ["AWS_DATA_PATH"] = os.pathsep.join(awscli._awscli_data_path)
                os.chdir(cwd)
                sys.argv = ["aws", *args]
                try:
                    status = awscli.clidriver.main()
                except SystemExit as ended:
                    status = ended.code if isinstance(ended.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:
                        pass
                os._exit(status or 0)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"aws {' '.join(args)}: still running after {timeout} s")
            time.sleep(0.005)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(["aws", *args], os.waitstatus_to_exitcode(status), out.read(), err.read())


@pytest.fixture
def aws(aws_home, tmp_path):
    """aws(*args, ok=True, secret=SECRET, stdin=None, binary=False) runs `aws --endpoint-url S3_URL args...`
    in tmp_path; with ok=True it must exit 0. Returns the CompletedProcess (text unless binary)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    def run(*args, ok=True, secret=SECRET, stdin=None, binary=False):
        env.update(HOME=str(aws_home), AWS_CONFIG_FILE=str(aws_home / "config"),
                   AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_ACCESS_KEY_ID=ACCESS_KEY,
                   AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION=REGION, AWS_EC2_METADATA_DISABLED="true",
                   AWS_PAGER="", AWS_RETRY_MODE="standard", AWS_MAX_ATTEMPTS="1")
        done = warm_aws(["--endpoint-url", S3_URL, *map(str, args)], env, tmp_path, stdin, timeout=120)
        if ok:
            assert done.returncode == 0, f"aws {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr.decode()}"
        if binary:
            return done
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())
    return run


def api(aws, *args):
    """`aws s3api ... --output json`, parsed (None for no output)."""
    out = aws("s3api", *args, "--output", "json").stdout
    return json.loads(out) if out.strip() else None


def write_tree(root, files):
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def read_tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# MARK: - aws s3

def test_mb_ls_and_rb(aws, bucket_name):
    assert aws("s3", "mb", f"s3://{bucket_name}").stdout.strip() == f"make_bucket: {bucket_name}"
    listed = [line.split()[-1] for line in aws("s3", "ls").stdout.splitlines()]
    assert bucket_name in listed
    assert aws("s3", "rb", f"s3://{bucket_name}").stdout.strip() == f"remove_bucket: {bucket_name}"
    assert bucket_name not in aws("s3", "ls").stdout
    missing = aws("s3", "ls", f"s3://{bucket_name}", ok=False)
    assert missing.returncode != 0 and "NoSuchBucket" in missing.stderr


def test_cp_up_and_down(aws, bucket, tmp_path):
    data = payload(300_000)
    (tmp_path / "up.bin").write_bytes(data)
    out = aws("s3", "cp", "up.bin", f"s3://{bucket}/dir/up.bin", "--no-progress").stdout
    assert out.strip() == f"upload: ./up.bin to s3://{bucket}/dir/up.bin"
    assert stored(bucket, "dir/up.bin") == data
    out = aws("s3", "cp", f"s3://{bucket}/dir/up.bin", "down.bin", "--no-progress").stdout
    assert out.strip() == f"download: s3://{bucket}/dir/up.bin to ./down.bin"
    assert (tmp_path / "down.bin").read_bytes() == data
    # Into a "directory" (the key is the file's name under it), and a content type the CLI guesses.
    (tmp_path / "page.html").write_text("<p>hi</p>")
    aws("s3", "cp", "page.html", f"s3://{bucket}/site/")
    assert stored(bucket, "site/page.html") == b"<p>hi</p>"
    head = api(aws, "head-object", "--bucket", bucket, "--key", "site/page.html")
    assert head["ContentType"] == "text/html" and head["ContentLength"] == 9
    # An object that is not there: the CLI fails and says so.
    missing = aws("s3", "cp", f"s3://{bucket}/nothing", "x", ok=False)
    assert missing.returncode != 0 and "404" in missing.stderr
    assert not (tmp_path / "x").exists()


def test_cp_streams_stdin_and_stdout(aws, bucket):
    data = payload(100_000, seed=3)
    aws("s3", "cp", "-", f"s3://{bucket}/piped", stdin=data)
    assert stored(bucket, "piped") == data
    assert aws("s3", "cp", f"s3://{bucket}/piped", "-", binary=True).stdout == data


def test_cp_over_the_default_multipart_threshold_as_one_put(aws, bucket, tmp_path):
    """10 MiB is over the CLI's default 8 MB threshold: with the threshold set
    to 64 MB in the config (profile one-put) it goes up as one PutObject,
    whose ETag is the MD5 of the bytes (no part count)."""
    import hashlib
    data = payload(10 * 1024 * 1024, seed=5)
    (tmp_path / "ten.bin").write_bytes(data)
    aws("--profile", "one-put", "s3", "cp", "ten.bin", f"s3://{bucket}/ten.bin", "--no-progress")
    assert stored(bucket, "ten.bin") == data
    head = api(aws, "head-object", "--bucket", bucket, "--key", "ten.bin")
    assert head["ContentLength"] == len(data) and head["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'


def test_cp_download_in_ranged_parts(aws, bucket, tmp_path, boto3_client):
    """Over the multipart threshold a download is ranged GETs of multipart_chunksize, run in parallel."""
    data = payload(3 * 1024 * 1024 + 12345, seed=7)
    boto3_client.put_object(Bucket=bucket, Key="big.bin", Body=data)
    aws("--profile", "ranged", "s3", "cp", f"s3://{bucket}/big.bin", "big.bin", "--no-progress")
    assert (tmp_path / "big.bin").read_bytes() == data


def test_cp_multipart_upload_with_the_default_threshold(aws, bucket, tmp_path):
    """9 MiB is over the default 8 MB threshold: two parts (8 MiB and 1 MiB), uploaded in
    parallel and completed into one object, whose ETag is S3's MD5 of the parts' MD5s, "-2"."""
    import hashlib
    data = payload(9 * 1024 * 1024, seed=9)
    (tmp_path / "nine.bin").write_bytes(data)
    aws("s3", "cp", "nine.bin", f"s3://{bucket}/nine.bin", "--no-progress")
    assert stored(bucket, "nine.bin") == data
    parts = [data[:8 * 1024 * 1024], data[8 * 1024 * 1024:]]
    etag = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + "-2"
    assert api(aws, "head-object", "--bucket", bucket, "--key", "nine.bin")["ETag"] == f'"{etag}"'
    # Nothing of the upload is left behind: no upload in progress, no part under the bucket.
    assert "Uploads" not in (api(aws, "list-multipart-uploads", "--bucket", bucket) or {})
    assert keys_under(bucket) == ["nine.bin"]
    aws("s3", "cp", f"s3://{bucket}/nine.bin", "back.bin", "--no-progress")
    assert (tmp_path / "back.bin").read_bytes() == data


def test_cp_and_mv_within_s3(aws, bucket):
    """`cp`/`mv` from s3:// to s3:// is CopyObject on the server (and DeleteObject for mv), or
    UploadPartCopy past the multipart threshold; the sources here were written through the plain API."""
    plain("PUT", f"{bucket}/a", b"A")
    out = aws("s3", "cp", f"s3://{bucket}/a", f"s3://{bucket}/b", "--no-progress").stdout
    assert out.strip() == f"copy: s3://{bucket}/a to s3://{bucket}/b"
    out = aws("s3", "mv", f"s3://{bucket}/b", f"s3://{bucket}/c", "--no-progress").stdout
    assert out.strip() == f"move: s3://{bucket}/b to s3://{bucket}/c"
    assert keys_under(bucket) == ["a", "c"] and stored(bucket, "c") == b"A"
    # Recursively, into another prefix.
    plain("PUT", f"{bucket}/dir/x", b"X")
    plain("PUT", f"{bucket}/dir/sub/y", b"Y")
    aws("s3", "cp", f"s3://{bucket}/dir/", f"s3://{bucket}/copy/", "--recursive")
    assert keys_under(bucket, "copy/") == ["copy/sub/y", "copy/x"] and stored(bucket, "copy/sub/y") == b"Y"
    # Over the CLI's 8 MB threshold a copy is a multipart upload of UploadPartCopy parts (8 MiB and 1 MiB).
    big = payload(9 * 1024 * 1024, seed=10)
    assert plain("PUT", f"{bucket}/big", big)[0] == 201
    aws("s3", "cp", f"s3://{bucket}/big", f"s3://{bucket}/big-copy", "--no-progress")
    assert stored(bucket, "big-copy") == big
    assert api(aws, "head-object", "--bucket", bucket, "--key", "big-copy")["ETag"].endswith('-2"')


def test_ls(aws, bucket):
    for key, data in {"top.txt": b"12345", "dir/a.txt": b"a", "dir/sub/b.txt": b"bb", "other/c": b"ccc"}.items():
        assert plain("PUT", f"{bucket}/{key}", data)[0] == 201
    lines = aws("s3", "ls", f"s3://{bucket}/").stdout.splitlines()
    assert [l.split() for l in lines if "PRE" in l] == [["PRE", "dir/"], ["PRE", "other/"]]
    files = [l.split() for l in lines if "PRE" not in l]
    assert [(f[2], f[3]) for f in files] == [("5", "top.txt")], lines
    lines = aws("s3", "ls", f"s3://{bucket}/dir/").stdout.splitlines()
    assert [l.split()[-1] for l in lines] == ["sub/", "a.txt"]
    recursive = [l.split() for l in aws("s3", "ls", f"s3://{bucket}", "--recursive").stdout.splitlines()]
    assert [(f[2], f[3]) for f in recursive] == [("1", "dir/a.txt"), ("2", "dir/sub/b.txt"), ("3", "other/c"),
                                                  ("5", "top.txt")]
    summary = aws("s3", "ls", f"s3://{bucket}", "--recursive", "--summarize").stdout
    assert "Total Objects: 4" in summary and "Total Size: 11" in summary
    # A prefix that ends inside a name.
    assert [l.split()[-1] for l in aws("s3", "ls", f"s3://{bucket}/dir/a").stdout.splitlines()] == ["a.txt"]


def test_ls_pages_past_1000_keys(aws, bucket, boto3_client):
    import concurrent.futures
    keys = [f"many/{i:04d}" for i in range(1050)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: boto3_client.put_object(Bucket=bucket, Key=k, Body=b"x"), keys))
    listed = [l.split()[-1] for l in aws("s3", "ls", f"s3://{bucket}/many/").stdout.splitlines()]
    assert listed == [k[len("many/"):] for k in keys]


def test_sync_up_and_down(aws, bucket, tmp_path):
    local = tmp_path / "local"
    files = {"a.txt": b"alpha", "nested/b.bin": payload(50_000, seed=11), "nested/deeper/c.json": b'{"c": 3}',
             "with space/ünïcødé €.txt": "ünïcødé".encode(),
             # Characters the CLI percent-encodes in the path, and reads back from url-encoded listings.
             "odd/a+b c%41#q?.txt": b"odd", "odd/quote'(x)!*~,;=@$&.txt": b"odder"}
    write_tree(local, files)
    out = aws("s3", "sync", "local", f"s3://{bucket}/tree", "--no-progress").stdout
    assert sorted(out.splitlines()) == sorted(f"upload: local/{n} to s3://{bucket}/tree/{n}" for n in files)
    assert keys_under(bucket, "tree/") == sorted("tree/" + n for n in files)
    for name, data in files.items():
        assert stored(bucket, "tree/" + name) == data
    # Nothing changed: nothing to send.
    assert aws("s3", "sync", "local", f"s3://{bucket}/tree").stdout == ""
    # One file changed (its size), one removed locally: --delete removes it remotely.
    (local / "a.txt").write_bytes(b"alpha, longer now")
    (local / "nested/deeper/c.json").unlink()
    out = aws("s3", "sync", "local", f"s3://{bucket}/tree", "--delete", "--no-progress").stdout
    assert sorted(out.splitlines()) == [f"delete: s3://{bucket}/tree/nested/deeper/c.json",
                                        f"upload: local/a.txt to s3://{bucket}/tree/a.txt"]
    assert stored(bucket, "tree/a.txt") == b"alpha, longer now"
    assert stored(bucket, "tree/nested/deeper/c.json") is None

    # Down into an empty directory: the same tree.
    out = aws("s3", "sync", f"s3://{bucket}/tree", "copy", "--no-progress").stdout
    assert len(out.splitlines()) == len(files) - 1
    assert read_tree(tmp_path / "copy") == read_tree(local)
    assert aws("s3", "sync", f"s3://{bucket}/tree", "copy").stdout == ""
    # A key added on the plain API comes down with the next sync; --exclude holds.
    plain("PUT", f"{bucket}/tree/new/d.txt", b"from the plain API")
    plain("PUT", f"{bucket}/tree/skip.log", b"excluded")
    out = aws("s3", "sync", f"s3://{bucket}/tree", "copy", "--exclude", "*.log", "--no-progress").stdout
    assert out.strip() == f"download: s3://{bucket}/tree/new/d.txt to copy/new/d.txt"
    assert (tmp_path / "copy/new/d.txt").read_bytes() == b"from the plain API"
    assert not (tmp_path / "copy/skip.log").exists()


def test_rm_and_rm_recursive(aws, bucket):
    for key in ["logs/1", "logs/2", "logs/deep/3", "logsx", "keep/me"]:
        plain("PUT", f"{bucket}/{key}", b"v")
    assert aws("s3", "rm", f"s3://{bucket}/logsx").stdout.strip() == f"delete: s3://{bucket}/logsx"
    out = aws("s3", "rm", f"s3://{bucket}/logs/", "--recursive").stdout
    assert sorted(out.splitlines()) == [f"delete: s3://{bucket}/logs/{k}" for k in ["1", "2", "deep/3"]]
    assert keys_under(bucket) == ["keep/me"]
    aws("s3", "rm", f"s3://{bucket}", "--recursive")
    assert keys_under(bucket) == []
    # The bucket is still there (created, now empty), and rb takes it.
    emptied = api(aws, "list-objects-v2", "--bucket", bucket, "--no-paginate")
    assert emptied["KeyCount"] == 0 and "Contents" not in emptied
    aws("s3", "rb", f"s3://{bucket}")
    assert aws("s3api", "head-bucket", "--bucket", bucket, ok=False).returncode != 0


def test_rb_force_empties_then_removes(aws, bucket):
    for key in ["x/1", "x/2", "y"]:
        plain("PUT", f"{bucket}/{key}", b"v")
    refused = aws("s3", "rb", f"s3://{bucket}", ok=False)
    assert refused.returncode != 0 and "BucketNotEmpty" in refused.stderr
    aws("s3", "rb", f"s3://{bucket}", "--force")
    assert keys_under(bucket) == []
    assert bucket not in aws("s3", "ls").stdout


def test_presign(aws, bucket):
    """`s3 presign` with `signature_version = s3v4` in the config (v1 of the CLI signs with
    SigV2 otherwise): a URL anyone can GET until it expires."""
    import urllib.error
    import urllib.request
    plain("PUT", f"{bucket}/shared.txt", b"presigned")
    url = aws("s3", "presign", f"s3://{bucket}/shared.txt", "--expires-in", "60").stdout.strip()
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=60" in url
    with urllib.request.urlopen(url) as response:
        assert response.read() == b"presigned"
    # The same URL with its signature changed is refused.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url[:-1] + ("0" if url[-1] != "0" else "1"))
    assert refused.value.code == 403 and b"SignatureDoesNotMatch" in refused.value.read()


# MARK: - aws s3api

def test_put_get_head_object(aws, bucket, tmp_path):
    data = payload(20_000, seed=13)
    (tmp_path / "body.bin").write_bytes(data)
    put = api(aws, "put-object", "--bucket", bucket, "--key", "obj/one.bin", "--body", "body.bin",
              "--content-type", "application/x-one")
    etag = put["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert stored(bucket, "obj/one.bin") == data
    got = api(aws, "get-object", "--bucket", bucket, "--key", "obj/one.bin", "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == data
    assert got["ContentLength"] == len(data) and got["ETag"] == etag and got["ContentType"] == "application/x-one"
    head = api(aws, "head-object", "--bucket", bucket, "--key", "obj/one.bin")
    assert head["ContentLength"] == len(data) and head["ETag"] == etag and "LastModified" in head
    ranged = api(aws, "get-object", "--bucket", bucket, "--key", "obj/one.bin", "--range", "bytes=100-199", "part.bin")
    assert (tmp_path / "part.bin").read_bytes() == data[100:200]
    assert ranged["ContentRange"] == f"bytes 100-199/{len(data)}"
    # Conditions.
    same = aws("s3api", "get-object", "--bucket", bucket, "--key", "obj/one.bin", "--if-none-match", etag, "x.bin",
               ok=False)
    assert same.returncode != 0 and "304" in same.stderr
    refused = aws("s3api", "put-object", "--bucket", bucket, "--key", "obj/one.bin", "--body", "body.bin",
                  "--if-none-match", "*", ok=False)
    assert refused.returncode != 0 and "PreconditionFailed" in refused.stderr
    # Missing key and bucket.
    missing = aws("s3api", "head-object", "--bucket", bucket, "--key", "obj/none", ok=False)
    assert missing.returncode != 0 and "404" in missing.stderr
    missing = aws("s3api", "get-object", "--bucket", bucket, "--key", "obj/none", "y.bin", ok=False)
    assert missing.returncode != 0 and "NoSuchKey" in missing.stderr
    missing = aws("s3api", "get-object", "--bucket", bucket + "-none", "--key", "k", "y.bin", ok=False)
    assert missing.returncode != 0 and "NoSuchBucket" in missing.stderr
    assert api(aws, "delete-object", "--bucket", bucket, "--key", "obj/one.bin") is None
    assert stored(bucket, "obj/one.bin") is None


def test_put_object_metadata(aws, bucket, tmp_path):
    (tmp_path / "m").write_bytes(b"m")
    api(aws, "put-object", "--bucket", bucket, "--key", "m", "--body", "m", "--metadata", "color=red,size=2",
        "--cache-control", "max-age=60", "--content-disposition", "attachment")
    head = api(aws, "head-object", "--bucket", bucket, "--key", "m")
    assert head["Metadata"] == {"color": "red", "size": "2"}
    assert head["CacheControl"] == "max-age=60" and head["ContentDisposition"] == "attachment"
    # `s3 cp` with --metadata; a copy keeps it (COPY), or replaces it with --metadata-directive REPLACE.
    aws("s3", "cp", "m", f"s3://{bucket}/n", "--metadata", "owner=ada", "--content-language", "en")
    aws("s3", "cp", f"s3://{bucket}/n", f"s3://{bucket}/n-copy")
    head = api(aws, "head-object", "--bucket", bucket, "--key", "n-copy")
    assert head["Metadata"] == {"owner": "ada"} and head["ContentLanguage"] == "en"
    aws("s3", "cp", f"s3://{bucket}/n", f"s3://{bucket}/n-new", "--metadata-directive", "REPLACE",
        "--metadata", "owner=grace")
    assert api(aws, "head-object", "--bucket", bucket, "--key", "n-new")["Metadata"] == {"owner": "grace"}


def test_content_encoding_gzip_is_the_objects_header(aws, bucket, tmp_path):
    import gzip
    packed = gzip.compress(b"body { color: red }\n" * 20)
    (tmp_path / "site.css.gz").write_bytes(packed)
    aws("s3", "cp", "site.css.gz", f"s3://{bucket}/site.css", "--content-encoding", "gzip", "--content-type", "text/css")
    head = api(aws, "head-object", "--bucket", bucket, "--key", "site.css")
    assert head["ContentEncoding"] == "gzip" and head["ContentLength"] == len(packed)
    aws("s3api", "get-object", "--bucket", bucket, "--key", "site.css", "out.gz")
    assert (tmp_path / "out.gz").read_bytes() == packed
    # Bytes that only say they are gzip are still the object's bytes.
    (tmp_path / "not-gzip").write_bytes(b"plain text")
    aws("s3api", "put-object", "--bucket", bucket, "--key", "labelled", "--body", "not-gzip", "--content-encoding", "gzip")
    assert api(aws, "head-object", "--bucket", bucket, "--key", "labelled")["ContentLength"] == 10


def test_folder_marker_key(aws, bucket):
    """A key ending in '/' (the folder markers consoles and some tools create) is kept like any other."""
    api(aws, "put-object", "--bucket", bucket, "--key", "folder/")
    plain("PUT", f"{bucket}/folder/inside", b"x")
    assert [o["Key"] for o in api(aws, "list-objects-v2", "--bucket", bucket)["Contents"]] == ["folder/", "folder/inside"]
    assert aws("s3", "ls", f"s3://{bucket}/folder/").stdout.split()[-1] == "inside"
    aws("s3", "rm", f"s3://{bucket}/folder/", "--recursive")
    assert "Contents" not in api(aws, "list-objects-v2", "--bucket", bucket)


def test_list_objects_v2(aws, bucket):
    keys = [f"p/{i:02d}" for i in range(7)] + ["p/sub/x", "p/sub/y", "q/z", "top"]
    for key in keys:
        plain("PUT", f"{bucket}/{key}", key.encode())
    listed = api(aws, "list-objects-v2", "--bucket", bucket, "--no-paginate")
    assert [o["Key"] for o in listed["Contents"]] == sorted(keys) and listed["KeyCount"] == len(keys)
    assert listed["IsTruncated"] is False
    assert {o["Size"] for o in listed["Contents"] if o["Key"] == "top"} == {3}
    grouped = api(aws, "list-objects-v2", "--bucket", bucket, "--prefix", "p/", "--delimiter", "/")
    assert [o["Key"] for o in grouped["Contents"]] == [f"p/{i:02d}" for i in range(7)]
    assert [p["Prefix"] for p in grouped["CommonPrefixes"]] == ["p/sub/"]
    # The CLI pages by itself (--page-size), and hands out a token with --max-items.
    paged = api(aws, "list-objects-v2", "--bucket", bucket, "--prefix", "p/", "--page-size", "2")
    assert [o["Key"] for o in paged["Contents"]] == [k for k in sorted(keys) if k.startswith("p/")]
    first = api(aws, "list-objects-v2", "--bucket", bucket, "--max-items", "4", "--page-size", "3")
    assert [o["Key"] for o in first["Contents"]] == sorted(keys)[:4] and first["NextToken"]
    rest = api(aws, "list-objects-v2", "--bucket", bucket, "--starting-token", first["NextToken"])
    assert [o["Key"] for o in rest["Contents"]] == sorted(keys)[4:]
    after = api(aws, "list-objects-v2", "--bucket", bucket, "--start-after", "p/sub/y")
    assert [o["Key"] for o in after["Contents"]] == ["q/z", "top"]
    # JMESPath over the answer, as scripts use it.
    assert aws("s3api", "list-objects-v2", "--bucket", bucket, "--prefix", "q/", "--query", "Contents[].Key",
               "--output", "text").stdout.split() == ["q/z"]
    # v1.
    v1 = api(aws, "list-objects", "--bucket", bucket, "--prefix", "p/sub/")
    assert [o["Key"] for o in v1["Contents"]] == ["p/sub/x", "p/sub/y"]


def test_delete_objects(aws, bucket, tmp_path):
    for key in ["d/1", "d/2", "d/three & four", "kept"]:
        plain("PUT", f"{bucket}/{key}", b"v")
    request = {"Objects": [{"Key": k} for k in ["d/1", "d/2", "d/three & four", "d/never"]], "Quiet": False}
    (tmp_path / "delete.json").write_text(json.dumps(request))
    answer = api(aws, "delete-objects", "--bucket", bucket, "--delete", "file://delete.json")
    assert sorted(d["Key"] for d in answer["Deleted"]) == ["d/1", "d/2", "d/never", "d/three & four"]
    assert "Errors" not in answer
    assert keys_under(bucket) == ["kept"]
    quiet = api(aws, "delete-objects", "--bucket", bucket, "--delete", "Objects=[{Key=kept}],Quiet=true")
    assert not quiet or ("Deleted" not in quiet and "Errors" not in quiet)
    assert keys_under(bucket) == []


def test_bucket_calls(aws, bucket_name):
    api(aws, "create-bucket", "--bucket", bucket_name)
    aws("s3api", "head-bucket", "--bucket", bucket_name)
    names = [b["Name"] for b in api(aws, "list-buckets")["Buckets"]]
    assert bucket_name in names
    location = api(aws, "get-bucket-location", "--bucket", bucket_name)
    assert location.get("LocationConstraint") in (None, "")
    api(aws, "delete-bucket", "--bucket", bucket_name)
    gone = aws("s3api", "head-bucket", "--bucket", bucket_name, ok=False)
    assert gone.returncode != 0 and "404" in gone.stderr


def test_a_wrong_secret_is_refused(aws, bucket):
    refused = aws("s3", "ls", f"s3://{bucket}", secret="not-the-secret", ok=False)
    assert refused.returncode != 0 and "SignatureDoesNotMatch" in refused.stderr
    refused = aws("s3", "cp", "-", f"s3://{bucket}/k", secret="not-the-secret", stdin=b"x", ok=False)
    assert refused.returncode != 0
    assert stored(bucket, "k") is None
