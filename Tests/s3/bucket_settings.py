"""A bucket's settings through boto3: CORS rules (and the answers a browser gets by them), default
encryption, tags; and an SSE-C multipart upload's parts held to the upload's key. A scenario of
boto3_face.py (`bucket_settings`)."""
import os

import urllib3

from scenario_support import check, error_code

SSE_C = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": "6b+WOZ1T3cqZMxgThRcXAQBrS5mXKdDUphvpxptl9/4=",
         "SSECustomerKeyMD5": "arxBvwY2V4SiOne6yppVPQ=="}
OTHER_SSE_C = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": "pO3upElrwuEXSoFwCfnZPdSsmt/xWeFa0N9KgDijwVs=",
               "SSECustomerKeyMD5": "DWygnHRtgiJ77HCm+1rvHw=="}


def bucket_settings(s3, s3_url):
    """CORS: kept, read back, deleted; a preflight allowed or refused by the first matching rule,
    unsigned; a signed GET naming an Origin answered with the rule's headers, errors too. Default
    encryption: kept and applied to new objects and uploads (not on PostgreSQL's store, whose bucket
    answer comes after the body starts: docs/s3.md). Tags. SSE-C parts."""
    s3.create_bucket(Bucket="settings")
    created = [b["CreationDate"] for b in s3.list_buckets()["Buckets"] if b["Name"] == "settings"]
    check(error_code(s3.get_bucket_cors, Bucket="settings") == "NoSuchCORSConfiguration", "no CORS yet")
    rules = [{"AllowedMethods": ["GET", "HEAD"], "AllowedOrigins": ["https://*.example.com"], "AllowedHeaders": ["x-amz-*"],
              "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600},
             {"AllowedMethods": ["PUT"], "AllowedOrigins": ["*"]}]
    s3.put_bucket_cors(Bucket="settings", CORSConfiguration={"CORSRules": rules})
    check(s3.get_bucket_cors(Bucket="settings")["CORSRules"] == rules, "the rules read back")

    http = urllib3.PoolManager()

    def preflight(origin, method, headers=None):
        sent = {"Origin": origin, "Access-Control-Request-Method": method}
        if headers:
            sent["Access-Control-Request-Headers"] = headers
        return http.request("OPTIONS", s3_url + "/settings/k", headers=sent, retries=False)

    allowed = preflight("https://app.example.com", "GET", "X-Amz-Meta-A, x-amz-date")
    check(allowed.status == 200 and allowed.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
          and allowed.headers["Access-Control-Allow-Methods"] == "GET, HEAD"
          and allowed.headers["Access-Control-Allow-Headers"] == "x-amz-meta-a, x-amz-date"
          and allowed.headers["Access-Control-Max-Age"] == "600", f"an allowed preflight {allowed.status} {dict(allowed.headers)}")
    anyone = preflight("http://elsewhere", "PUT")
    check(anyone.status == 200 and anyone.headers["Access-Control-Allow-Origin"] == "*", f"the wildcard rule {dict(anyone.headers)}")
    for origin, method, headers, why in [("https://app.example.com", "DELETE", None, "a method no rule allows"),
                                         ("http://elsewhere", "GET", None, "an origin the GET rule does not match"),
                                         ("https://app.example.com", "GET", "content-md5", "a header the rule does not allow")]:
        refused = preflight(origin, method, headers)
        check(refused.status == 403 and b"AccessForbidden" in refused.data, f"{why}: {refused.status} {refused.data[:200]!r}")
    no_origin = http.request("OPTIONS", s3_url + "/settings/k", retries=False)
    check(no_origin.status == 400, f"a preflight without Origin: {no_origin.status}")

    s3.put_object(Bucket="settings", Key="k", Body=b"v")
    seen = {}
    s3.meta.events.register("before-call.s3.GetObject", lambda **kw: kw["params"]["headers"].update({"Origin": "https://a.example.com"}))
    s3.meta.events.register("after-call.s3.GetObject", lambda http_response, **kw: seen.update(http_response.headers))
    s3.get_object(Bucket="settings", Key="k")
    check(seen.get("Access-Control-Allow-Origin") == "https://a.example.com" and seen.get("Access-Control-Expose-Headers") == "ETag",
          f"a GET with an Origin {seen}")
    seen.clear()
    check(error_code(s3.get_object, Bucket="settings", Key="missing") == "NoSuchKey"
          and seen.get("Access-Control-Allow-Origin") == "https://a.example.com", f"an error's CORS headers {seen}")
    s3.delete_bucket_cors(Bucket="settings")
    check(error_code(s3.get_bucket_cors, Bucket="settings") == "NoSuchCORSConfiguration", "CORS deleted")
    check(preflight("https://app.example.com", "GET").status == 403, "no preflight without CORS")

    # Default encryption.
    check(error_code(s3.get_bucket_encryption, Bucket="settings") == "ServerSideEncryptionConfigurationNotFoundError", "none yet")
    kms = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "key-1"},
                      "BucketKeyEnabled": False}]}
    s3.put_bucket_encryption(Bucket="settings", ServerSideEncryptionConfiguration=kms)
    check(s3.get_bucket_encryption(Bucket="settings")["ServerSideEncryptionConfiguration"] == kms, "the configuration read back")
    upload = s3.create_multipart_upload(Bucket="settings", Key="mp")
    check(upload.get("ServerSideEncryption") == "aws:kms" and upload.get("SSEKMSKeyId") == "key-1", f"an upload's default {upload}")
    s3.abort_multipart_upload(Bucket="settings", Key="mp", UploadId=upload["UploadId"])
    if os.environ.get("LARDER_TEST_STORE") != "postgres":
        put = s3.put_object(Bucket="settings", Key="enc", Body=b"e")
        check(put.get("ServerSideEncryption") == "aws:kms", f"a new object's default {put}")
        check(s3.head_object(Bucket="settings", Key="enc").get("SSEKMSKeyId") == "key-1", "kept with the object")
        own = s3.put_object(Bucket="settings", Key="own", Body=b"o", ServerSideEncryption="AES256")
        check(own.get("ServerSideEncryption") == "AES256" and "SSEKMSKeyId" not in own, f"an object's own encryption wins {own}")
    bad = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256", "KMSMasterKeyID": "k"}}]}
    check(error_code(s3.put_bucket_encryption, Bucket="settings", ServerSideEncryptionConfiguration=bad) == "InvalidArgument",
          "a KMS key without aws:kms")
    s3.delete_bucket_encryption(Bucket="settings")
    check(error_code(s3.get_bucket_encryption, Bucket="settings") == "ServerSideEncryptionConfigurationNotFoundError", "deleted")

    # Tags; and none of the rewrites of the marker moved the bucket's creation date.
    check(error_code(s3.get_bucket_tagging, Bucket="settings") == "NoSuchTagSet", "no tags yet")
    s3.put_bucket_tagging(Bucket="settings", Tagging={"TagSet": [{"Key": "team", "Value": "core"}]})
    check(s3.get_bucket_tagging(Bucket="settings")["TagSet"] == [{"Key": "team", "Value": "core"}], "tags read back")
    s3.delete_bucket_tagging(Bucket="settings")
    check(error_code(s3.get_bucket_tagging, Bucket="settings") == "NoSuchTagSet", "tags deleted")
    check([b["CreationDate"] for b in s3.list_buckets()["Buckets"] if b["Name"] == "settings"] == created, "the creation date kept")
    check(error_code(s3.put_bucket_cors, Bucket="no-such-settings", CORSConfiguration={"CORSRules": rules}) == "NoSuchBucket",
          "a missing bucket's CORS")

    # An SSE-C upload's parts and completion carry its key.
    upload = s3.create_multipart_upload(Bucket="settings", Key="ssec", **SSE_C)["UploadId"]
    for args, why in [({}, "no key"), (OTHER_SSE_C, "another key")]:
        check(error_code(s3.upload_part, Bucket="settings", Key="ssec", UploadId=upload, PartNumber=1, Body=b"p", **args)
              == "InvalidRequest", f"a part with {why}")
    part = s3.upload_part(Bucket="settings", Key="ssec", UploadId=upload, PartNumber=1, Body=b"p", **SSE_C)
    check(part.get("SSECustomerKeyMD5") == SSE_C["SSECustomerKeyMD5"], f"a part answered with the upload's key {part}")
    parts = {"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]}
    check(error_code(s3.complete_multipart_upload, Bucket="settings", Key="ssec", UploadId=upload, MultipartUpload=parts)
          == "InvalidRequest", "completed without the key")
    s3.complete_multipart_upload(Bucket="settings", Key="ssec", UploadId=upload, MultipartUpload=parts, **SSE_C)
    check(s3.get_object(Bucket="settings", Key="ssec", **SSE_C)["Body"].read() == b"p", "the SSE-C object read with its key")
