"""What the scenario scripts (boto3_face.py, boto3_server.py) share: an
S3 error's code, a check that names what failed, a request to the plain
Larder API, and a request signed by botocore for any Host."""
import http.client
import urllib.error
import urllib.parse
import urllib.request

import botocore.auth
import botocore.awsrequest
import botocore.credentials
from botocore.exceptions import ClientError


def error_code(call, *args, **kwargs):
    """The S3 error code `call(...)` fails with (an assertion if it succeeds)."""
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError(f"{call.__name__} succeeded; an error was expected")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def plain_http(url, method, body=None, headers=None):
    """A plain HTTP request: (status, body), an error status included."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def signed_request(s3_url, access_key, secret, method, host, path_and_query, body=b""):
    """A request to Host `host`, sent to the listener at `s3_url`, signed by botocore."""
    request = botocore.awsrequest.AWSRequest(method=method, url=f"http://{host}{path_and_query}", data=body)
    botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(access_key, secret), "s3", "us-east-1").add_auth(request)
    parsed = urllib.parse.urlparse(s3_url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    headers = dict(request.headers.items())
    headers["Host"] = host
    connection.request(method, path_and_query, body=body or None, headers=headers)
    response = connection.getresponse()
    result = (response.status, response.read())
    connection.close()
    return result
