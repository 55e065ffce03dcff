"""s3fs (fsspec's S3 filesystem, on aiobotocore) against Larder's S3 face.

The filesystem is made as a user makes it for a local endpoint: path-style
addressing, the region, and the block size set explicitly. A file written
through `open(..., "wb")` goes up as one PutObject when it is closed if it
never filled a block; past a block s3fs uploads it in parts (a multipart
upload, each block a part), as test_write_past_the_block_size does.
"""
import fsspec
import pytest
import s3fs

from conftest import ACCESS_KEY, REGION, S3_URL, SECRET, keys_under, payload, plain, stored

BLOCK = 16 * 1024 * 1024


@pytest.fixture
def fs():
    return s3fs.S3FileSystem(key=ACCESS_KEY, secret=SECRET, endpoint_url=S3_URL, client_kwargs={"region_name": REGION},
                             config_kwargs={"s3": {"addressing_style": "path"}, "retries": {"max_attempts": 1}},
                             default_block_size=BLOCK, use_listings_cache=False, skip_instance_cache=True)


def test_open_write_and_read(fs, bucket):
    with fs.open(f"{bucket}/docs/hello.txt", "w") as f:
        f.write("hello from s3fs\n")
        f.write("second line\n")
    assert stored(bucket, "docs/hello.txt") == b"hello from s3fs\nsecond line\n"
    with fs.open(f"{bucket}/docs/hello.txt") as f:
        assert f.read() == b"hello from s3fs\nsecond line\n"
    with fs.open(f"{bucket}/docs/hello.txt", "r") as f:
        assert f.readlines() == ["hello from s3fs\n", "second line\n"]
    # Many small writes, several MiB: one object, the bytes in order.
    data = payload(5 * 1024 * 1024 + 7, seed=1)
    with fs.open(f"{bucket}/big.bin", "wb") as f:
        for start in range(0, len(data), 100_000):
            f.write(data[start:start + 100_000])
    assert stored(bucket, "big.bin") == data
    assert fs.cat(f"{bucket}/big.bin") == data
    assert fs.size(f"{bucket}/big.bin") == len(data)
    # What the plain API wrote, s3fs reads.
    plain("PUT", f"{bucket}/docs/plain.json", b'{"from": "plain"}', {"Content-Type": "application/json"})
    assert fs.cat_file(f"{bucket}/docs/plain.json") == b'{"from": "plain"}'


def test_seek_and_ranged_reads(fs, bucket):
    """s3fs reads a file in blocks (ranged GETs): with a 64 KiB block, seeks across a 1 MiB object."""
    data = payload(1024 * 1024 + 3, seed=2)
    fs.pipe(f"{bucket}/ranged.bin", data)
    with fs.open(f"{bucket}/ranged.bin", "rb", block_size=64 * 1024, cache_type="bytes") as f:
        for offset, length in [(0, 10), (500_000, 70_000), (65_530, 20), (len(data) - 5, 100), (3, 200_000)]:
            f.seek(offset)
            assert f.read(length) == data[offset:offset + length], (offset, length)
        f.seek(-4, 2)
        assert f.read() == data[-4:]
        assert f.tell() == len(data)
    assert fs.cat_file(f"{bucket}/ranged.bin", start=100, end=300) == data[100:300]
    assert fs.read_block(f"{bucket}/ranged.bin", 1000, 50) == data[1000:1050]
    assert fs.head(f"{bucket}/ranged.bin", 16) == data[:16] and fs.tail(f"{bucket}/ranged.bin", 16) == data[-16:]


def test_ls_info_exists(fs, bucket):
    files = {"a.txt": b"a", "dir/b.txt": b"bb", "dir/sub/c.txt": b"ccc", "dir2/d.bin": b"dddd"}
    fs.pipe({f"{bucket}/{k}": v for k, v in files.items()})
    assert bucket in fs.ls("")
    top = fs.ls(bucket, detail=True)
    assert sorted((e["name"], e["type"]) for e in top) == [
        (f"{bucket}/a.txt", "file"), (f"{bucket}/dir", "directory"), (f"{bucket}/dir2", "directory")]
    assert sorted(fs.ls(f"{bucket}/dir", detail=False)) == [f"{bucket}/dir/b.txt", f"{bucket}/dir/sub"]
    info = fs.info(f"{bucket}/dir/sub/c.txt")
    assert info["type"] == "file" and info["size"] == 3 and info["ETag"].startswith('"')
    assert fs.info(f"{bucket}/dir")["type"] == "directory"
    assert fs.exists(f"{bucket}/dir/b.txt") and not fs.exists(f"{bucket}/dir/none.txt")
    assert fs.isdir(f"{bucket}/dir/sub") and fs.isfile(f"{bucket}/a.txt") and not fs.isdir(f"{bucket}/a.txt")
    assert fs.exists(bucket) and not fs.exists(bucket + "-none")
    with pytest.raises(FileNotFoundError):
        fs.info(f"{bucket}/nothing")
    with pytest.raises(FileNotFoundError):
        fs.cat(f"{bucket}/nothing")
    assert fs.find(bucket) == sorted(f"{bucket}/{k}" for k in files)
    assert fs.du(bucket) == 10 and fs.du(f"{bucket}/dir") == 5
    walked = {root: (sorted(dirs), sorted(names)) for root, dirs, names in fs.walk(bucket)}
    assert walked[f"{bucket}/dir"] == (["sub"], ["b.txt"]) and walked[bucket] == (["dir", "dir2"], ["a.txt"])


def test_glob(fs, bucket):
    for name in ["data/2026-01-01.json", "data/2026-01-02.json", "data/2026-02-01.json", "data/notes.txt",
                 "data/raw/2026-01-01.csv", "other/x.json"]:
        fs.pipe(f"{bucket}/{name}", b"{}")
    assert fs.glob(f"{bucket}/data/2026-01-*.json") == [f"{bucket}/data/2026-01-01.json", f"{bucket}/data/2026-01-02.json"]
    assert fs.glob(f"{bucket}/*/*.json") == [f"{bucket}/data/2026-01-01.json", f"{bucket}/data/2026-01-02.json",
                                            f"{bucket}/data/2026-02-01.json", f"{bucket}/other/x.json"]
    assert fs.glob(f"{bucket}/**/*.csv") == [f"{bucket}/data/raw/2026-01-01.csv"]
    assert fs.glob(f"{bucket}/data/2026-0?-01.*") == [f"{bucket}/data/2026-01-01.json", f"{bucket}/data/2026-02-01.json"]
    assert fs.glob(f"{bucket}/data/*.parquet") == []


def test_rm(fs, bucket):
    for name in ["keep.txt", "tmp/1", "tmp/2", "tmp/deep/3", "tmpx", "logs/a.log", "logs/b.log"]:
        fs.pipe(f"{bucket}/{name}", b"x")
    fs.rm(f"{bucket}/tmpx")
    assert stored(bucket, "tmpx") is None
    fs.rm(f"{bucket}/tmp", recursive=True)
    assert keys_under(bucket) == ["keep.txt", "logs/a.log", "logs/b.log"]
    fs.rm(fs.glob(f"{bucket}/logs/*.log"))  # several paths: one DeleteObjects
    assert keys_under(bucket) == ["keep.txt"]
    fs.rm_file(f"{bucket}/keep.txt")
    assert keys_under(bucket) == []
    fs.rm_file(f"{bucket}/gone")  # S3 answers 204 for a key that is not there; s3fs passes it on


def test_put_and_get_trees(fs, bucket, tmp_path):
    local = tmp_path / "local"
    files = {"one.txt": b"1", "sub/two.bin": payload(200_000, seed=4), "sub/deeper/three": b"333"}
    for name, data in files.items():
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    fs.put(str(local) + "/", f"{bucket}/up/", recursive=True)
    assert keys_under(bucket, "up/") == sorted("up/" + n for n in files)
    for name, data in files.items():
        assert stored(bucket, "up/" + name) == data
    fs.get(f"{bucket}/up/", str(tmp_path / "down") + "/", recursive=True)
    for name, data in files.items():
        assert (tmp_path / "down" / name).read_bytes() == data
    fs.put_file(str(local / "one.txt"), f"{bucket}/single")
    fs.get_file(f"{bucket}/single", str(tmp_path / "single"))
    assert (tmp_path / "single").read_bytes() == b"1"


def test_buckets(fs, bucket_name):
    fs.mkdir(bucket_name)
    assert bucket_name in fs.ls("", refresh=True)
    fs.touch(f"{bucket_name}/empty")
    assert stored(bucket_name, "empty") == b""
    fs.rm_file(f"{bucket_name}/empty")
    fs.rmdir(bucket_name)
    assert bucket_name not in fs.ls("", refresh=True)


def test_fsspec_urls(bucket):
    """fsspec.open with an s3:// URL and storage options, as pandas and friends call it."""
    options = {"key": ACCESS_KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": S3_URL, "region_name": REGION},
               "skip_instance_cache": True}
    with fsspec.open(f"s3://{bucket}/table.csv", "wt", **options) as f:
        f.write("a,b\n1,2\n")
    assert stored(bucket, "table.csv") == b"a,b\n1,2\n"
    with fsspec.open(f"s3://{bucket}/table.csv", "rt", **options) as f:
        assert f.read() == "a,b\n1,2\n"
    opened = fsspec.open_files(f"s3://{bucket}/*.csv", "rb", **options)
    assert [o.path for o in opened] == [f"{bucket}/table.csv"]
    # Compression by file name, through the same write path.
    with fsspec.open(f"s3://{bucket}/table.csv.gz", "wt", compression="infer", **options) as f:
        f.write("zipped\n")
    with fsspec.open(f"s3://{bucket}/table.csv.gz", "rt", compression="infer", **options) as f:
        assert f.read() == "zipped\n"
    import gzip
    assert gzip.decompress(stored(bucket, "table.csv.gz")) == b"zipped\n"


def test_a_wrong_secret_is_refused(bucket):
    wrong = s3fs.S3FileSystem(key=ACCESS_KEY, secret="not-the-secret", endpoint_url=S3_URL,
                              client_kwargs={"region_name": REGION}, config_kwargs={"retries": {"max_attempts": 1}},
                              skip_instance_cache=True)
    with pytest.raises(PermissionError):
        wrong.pipe(f"{bucket}/k", b"x")
    assert stored(bucket, "k") is None


def test_rm_a_whole_bucket(fs, bucket):
    """s3fs asks GetBucketVersioning first (an empty configuration: never versioned), deletes
    the objects, then the bucket."""
    fs.pipe({f"{bucket}/a": b"1", f"{bucket}/b/c": b"2"})
    fs.rm(bucket, recursive=True)
    assert bucket not in fs.ls("", refresh=True)
    assert keys_under(bucket) == []


def test_copy_and_move(fs, bucket):
    """copy is CopyObject on the server; mv is a copy and a delete."""
    fs.pipe(f"{bucket}/src", b"data")
    fs.copy(f"{bucket}/src", f"{bucket}/copied")
    fs.mv(f"{bucket}/copied", f"{bucket}/moved")
    assert keys_under(bucket) == ["moved", "src"] and stored(bucket, "moved") == b"data"
    assert fs.info(f"{bucket}/moved")["ETag"] == fs.info(f"{bucket}/src")["ETag"]
    # A tree, recursively.
    fs.pipe({f"{bucket}/tree/a": b"1", f"{bucket}/tree/sub/b": b"22"})
    fs.copy(f"{bucket}/tree", f"{bucket}/tree2", recursive=True)
    assert keys_under(bucket, "tree2/") == ["tree2/a", "tree2/sub/b"] and stored(bucket, "tree2/sub/b") == b"22"


def test_write_past_the_block_size(fs, bucket):
    """Past its block size s3fs starts a multipart upload: the object's ETag is a multipart one
    ("<md5 of part md5s>-<parts>"), and no upload is left in progress."""
    import re
    data = payload(6 * 1024 * 1024, seed=6)
    with fs.open(f"{bucket}/parts.bin", "wb", block_size=5 * 1024 * 1024) as f:
        f.write(data)  # one write past the block: s3fs sends the 6 MiB as one part
    assert stored(bucket, "parts.bin") == data
    assert re.fullmatch(r'"[0-9a-f]{32}-1"', fs.info(f"{bucket}/parts.bin")["ETag"])
    assert fs.cat(f"{bucket}/parts.bin") == data
    # Written a MiB at a time, 12 MiB: parts of (at least) the block size, then the rest.
    data = payload(12 * 1024 * 1024, seed=8)
    with fs.open(f"{bucket}/pieces.bin", "wb", block_size=5 * 1024 * 1024) as f:
        for start in range(0, len(data), 1024 * 1024):
            f.write(data[start:start + 1024 * 1024])
    assert stored(bucket, "pieces.bin") == data
    assert re.fullmatch(r'"[0-9a-f]{32}-[23]"', fs.info(f"{bucket}/pieces.bin")["ETag"])
    assert keys_under(bucket) == ["parts.bin", "pieces.bin"]
    assert fs.call_s3("list_multipart_uploads", Bucket=bucket).get("Uploads", []) == []


def test_user_metadata(fs, bucket):
    """open's extra arguments are PutObject's (`Metadata=`, boto3's name); setxattr copies the
    object onto itself with MetadataDirective REPLACE and the metadata merged."""
    with fs.open(f"{bucket}/m", "wb", Metadata={"owner": "ada"}) as f:
        f.write(b"m")
    assert fs.metadata(f"{bucket}/m") == {"owner": "ada"}
    fs.setxattr(f"{bucket}/m", color="red")
    assert fs.metadata(f"{bucket}/m") == {"owner": "ada", "color": "red"}
    assert fs.getxattr(f"{bucket}/m", "color") == "red" and fs.cat(f"{bucket}/m") == b"m"
