"""Browser uploads (S3's POST policy) as boto3 makes them: `generate_presigned_post`'s URL and
fields, sent as a browser's form is (multipart/form-data, the file last) with urllib3, which
botocore brings. A scenario of boto3_face.py (`post_object`)."""
import hashlib
import xml.etree.ElementTree as ET

import urllib3

from scenario_support import check, plain_http

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def post_form(post, file_name, data, extra=None):
    """POSTs `post`'s fields (changed by `extra`) and the file, as a browser's form does."""
    fields = dict(post["fields"], **(extra or {}))
    body, content_type = urllib3.encode_multipart_formdata(list(fields.items()) + [("file", (file_name, data, "text/plain"))])
    response = urllib3.PoolManager().request("POST", post["url"], body=body, headers={"Content-Type": content_type},
                                             redirect=False, retries=False)
    return response.status, response.headers, response.data


def post_object(s3_factory, plain):
    """A presigned POST (Signature Version 4, and 2 as boto3 signs by default) stores the file with
    the fields' headers, answers as `success_action_status` asks, and is refused (nothing stored)
    for a file outside the size range, a field the policy does not allow, another secret, an expired
    policy, a missing bucket."""
    s3 = s3_factory(signature_version="s3v4")
    s3.create_bucket(Bucket="forms")
    conditions = [{"Content-Type": "text/plain"}, {"success_action_status": "201"}, {"x-amz-meta-who": "browser"},
                  ["content-length-range", 1, 4 << 20]]
    fields = {"Content-Type": "text/plain", "success_action_status": "201", "x-amz-meta-who": "browser"}
    post = s3.generate_presigned_post("forms", "uploads/${filename}", Fields=fields, Conditions=conditions, ExpiresIn=300)
    check("x-amz-signature" in post["fields"] and "policy" in post["fields"], f"a SigV4 POST policy {post['fields']}")
    status, headers, body = post_form(post, "hello.txt", b"hello form")
    check(status == 201, f"the upload: {status} {body[:300]!r}")
    answer = ET.fromstring(body)
    check(answer.findtext("Key") == "uploads/hello.txt" and answer.findtext("Bucket") == "forms", f"PostResponse {body!r}")
    etag = '"' + hashlib.md5(b"hello form").hexdigest() + '"'
    check(answer.findtext("ETag") == etag and headers["ETag"] == etag, f"the ETag {body!r} {headers}")
    got = s3.get_object(Bucket="forms", Key="uploads/hello.txt")
    check(got["Body"].read() == b"hello form" and got["ContentType"] == "text/plain" and got["Metadata"] == {"who": "browser"},
          f"the stored object {got}")
    check(plain("GET", "forms/uploads/hello.txt")[1] == b"hello form", "the plain API sees it")

    # Larger than one read: streamed, its MD5 the ETag.
    big = bytes(range(256)) * (3 << 12)
    status, headers, body = post_form(post, "big.bin", big)
    check(status == 201 and headers["ETag"] == '"' + hashlib.md5(big).hexdigest() + '"', f"a 3 MiB upload: {status} {body[:200]!r}")
    check(s3.get_object(Bucket="forms", Key="uploads/big.bin")["Body"].read() == big, "the 3 MiB object read back")

    def refused(why, expected_status, expected_code, file_name="no.txt", data=b"x", post=post, extra=None):
        status, _, body = post_form(post, file_name, data, extra)
        check(status == expected_status and f"<Code>{expected_code}</Code>".encode() in body, f"{why}: {status} {body[:300]!r}")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="forms").get("Contents", [])]
        check(keys == ["uploads/big.bin", "uploads/hello.txt"], f"{why}: nothing stored ({keys})")

    refused("a file over the range", 400, "EntityTooLarge", data=b"y" * ((4 << 20) + 1))
    refused("an empty file under the range", 400, "EntityTooSmall", data=b"")
    refused("a field the policy does not name", 403, "AccessDenied", extra={"x-amz-meta-extra": "1"})
    refused("a field changed", 403, "AccessDenied", extra={"Content-Type": "text/html"})
    other = s3_factory(secret="not-the-secret", signature_version="s3v4").generate_presigned_post("forms", "uploads/${filename}", Fields=fields,
                                                                        Conditions=conditions)
    refused("another secret", 403, "SignatureDoesNotMatch", post=other)
    expired = s3.generate_presigned_post("forms", "uploads/${filename}", Fields=fields, Conditions=conditions, ExpiresIn=-60)
    refused("an expired policy", 403, "AccessDenied", post=expired)
    missing = s3.generate_presigned_post("no-such-forms", "k", ExpiresIn=300)
    status, _, body = post_form(missing, "k.txt", b"x")
    check(status == 404 and b"NoSuchBucket" in body, f"a missing bucket: {status} {body[:200]!r}")
    # Signed by Version 2 (boto3's default for a POST here), without success_action_status: 204, as S3.
    plain_post = s3_factory().generate_presigned_post("forms", "plain.txt", ExpiresIn=300)
    check("signature" in plain_post["fields"] and "AWSAccessKeyId" in plain_post["fields"], f"a V2 policy {plain_post}")
    status, headers, body = post_form(plain_post, "ignored.txt", b"plain")
    check(status == 204 and body == b"" and headers["Location"].endswith("/forms/plain.txt"), f"a 204 upload {status} {headers}")
