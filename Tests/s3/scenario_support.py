"""What the scenario scripts (boto3_face.py, boto3_server.py) share: an
S3 error's code, a check that names what failed, and a request to the
plain Larder API."""
import urllib.error
import urllib.request

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
