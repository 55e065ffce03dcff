"""rclone (Debian's `rclone`) against Larder's S3 face, as its docs configure an S3-compatible
provider: `type = s3`, `provider = Other`, the endpoint, path-style addressing. The remote is given
by environment variables (RCLONE_CONFIG_LARDER_*), so no config file of the machine is read.
"""
import os

import pytest

from conftest import ACCESS_KEY, S3_URL, SECRET, command, keys_under, payload, stored


@pytest.fixture
def rclone(tmp_path):
    # AWS_CA_BUNDLE (set on some machines for the SDKs) makes rclone's AWS SDK refuse its own HTTP transport.
    environment = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    environment.update(RCLONE_CONFIG=str(tmp_path / "none.conf"), RCLONE_CONFIG_LARDER_TYPE="s3",
                       RCLONE_CONFIG_LARDER_PROVIDER="Other", RCLONE_CONFIG_LARDER_ACCESS_KEY_ID=ACCESS_KEY,
                       RCLONE_CONFIG_LARDER_SECRET_ACCESS_KEY=SECRET, RCLONE_CONFIG_LARDER_ENDPOINT=S3_URL,
                       RCLONE_CONFIG_LARDER_REGION="us-east-1", RCLONE_CONFIG_LARDER_FORCE_PATH_STYLE="true")
    return command("rclone", env=environment)


def test_copy_a_tree_list_cat_and_check(rclone, bucket_name, tmp_path):
    rclone("mkdir", f"larder:{bucket_name}")
    tree = tmp_path / "tree"
    (tree / "logs").mkdir(parents=True)
    (tree / "readme.txt").write_text("rclone was here\n")
    (tree / "logs" / "run.log").write_bytes(payload(70_000, seed=2))
    rclone("copy", str(tree), f"larder:{bucket_name}/tree")
    assert keys_under(bucket_name, "tree/") == ["tree/logs/run.log", "tree/readme.txt"]
    assert stored(bucket_name, "tree/logs/run.log") == payload(70_000, seed=2)
    listed = rclone("ls", f"larder:{bucket_name}").stdout
    assert "tree/readme.txt" in listed and "70000 tree/logs/run.log" in listed
    assert rclone("cat", f"larder:{bucket_name}/tree/readme.txt").stdout == "rclone was here\n"
    # check compares sizes and MD5s (the ETags) of both sides.
    rclone("check", str(tree), f"larder:{bucket_name}/tree")


def test_multipart_server_side_copy_and_purge(rclone, bucket, tmp_path):
    big = payload(11 * 1024 * 1024 + 5, seed=3)
    (tmp_path / "big.bin").write_bytes(big)
    # Past --s3-upload-cutoff rclone uploads --s3-chunk-size parts.
    rclone("copyto", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", str(tmp_path / "big.bin"), f"larder:{bucket}/big.bin")
    assert stored(bucket, "big.bin") == big
    # Within one remote, a copy is server-side (CopyObject).
    rclone("copyto", f"larder:{bucket}/big.bin", f"larder:{bucket}/copies/big.bin")
    assert stored(bucket, "copies/big.bin") == big
    rclone("moveto", f"larder:{bucket}/copies/big.bin", f"larder:{bucket}/moved.bin")
    assert keys_under(bucket) == ["big.bin", "moved.bin"]
    rclone("purge", f"larder:{bucket}")
    assert rclone("lsd", "larder:").stdout.count(f" {bucket}") == 0
