#!/usr/bin/env python3
"""A browser's upload into Larder's S3 face, as a web app's page does it: headless Chromium loads
a page from its own origin, which `fetch`es a presigned POST (boto3's `generate_presigned_post`,
Signature Version 4) to the S3 listener with a FormData body, and reads the answer, which CORS
lets it read only where the bucket's rules name the page's origin. Run by S3BrowserUploadTests.swift.

    python3 s3_post_upload.py S3_URL ACCESS_KEY SECRET

Prints one JSON line per scenario ({"scenario", "ok", "error"}); exits 1 when one failed.
"""
import http.server
import json
import sys
import threading
import traceback

import boto3
from botocore.client import Config

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from viewer_scenarios import check, start_browser, wait_until  # noqa: E402

S3_URL, ACCESS_KEY, SECRET = sys.argv[1:4]

PAGE = b"""<!doctype html><html><head><title>upload</title></head><body>
<script>
// post(url, fields, name, text): the form posted as a browser posts it; resolves to what the page could read.
async function post(url, fields, name, text) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append("file", new Blob([text], {type: "text/plain"}), name);
  try {
    const r = await fetch(url, {method: "POST", body: form});
    return {status: r.status, etag: r.headers.get("ETag"), body: await r.text()};
  } catch (e) {
    return {error: String(e)};
  }
}
</script></body></html>"""


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


def serve_page():
    """The page on an origin of its own (another port: another origin than the S3 listener's)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def posted(driver, post, name, text):
    """What the page read of its fetch of `post` (url, fields)."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1]; post(arguments[0], arguments[1], arguments[2], arguments[3]).then(done);",
        post["url"], post["fields"], name, text)


def a_page_uploads_into_a_bucket_whose_cors_names_its_origin(driver, s3, origin):
    s3.create_bucket(Bucket="from-browser")
    s3.put_bucket_cors(Bucket="from-browser", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": [origin], "AllowedMethods": ["POST", "GET"], "ExposeHeaders": ["ETag"]}]})
    post = s3.generate_presigned_post("from-browser", "uploads/${filename}", Fields={"success_action_status": "201"},
                                      Conditions=[{"success_action_status": "201"}, ["content-length-range", 1, 1 << 20]],
                                      ExpiresIn=300)
    driver.get(origin + "/")
    wait_until("the page", lambda: driver.execute_script("return typeof post === 'function'"))
    answer = posted(driver, post, "note.txt", "written by a browser")
    check(answer.get("status") == 201 and "<Key>uploads/note.txt</Key>" in answer.get("body", ""), f"the upload: {answer}")
    got = s3.get_object(Bucket="from-browser", Key="uploads/note.txt")
    check(got["Body"].read() == b"written by a browser" and got["ContentType"] == "text/plain", f"the object {got}")
    check(answer.get("etag") == got["ETag"], f"the page read the ETag the rule exposes: {answer} {got['ETag']}")
    # The same policy with a file over its range: refused, and the page reads why.
    refused = posted(driver, post, "big.txt", "x" * ((1 << 20) + 1))
    check(refused.get("status") == 400 and "EntityTooLarge" in refused.get("body", ""), f"a file too large: {refused}")


def a_page_from_an_origin_no_rule_names_cannot_read_the_answer(driver, s3, origin):
    s3.create_bucket(Bucket="other-origin")
    s3.put_bucket_cors(Bucket="other-origin", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://app.example.com"], "AllowedMethods": ["POST"]}]})
    post = s3.generate_presigned_post("other-origin", "k.txt", ExpiresIn=300)
    driver.get(origin + "/")
    wait_until("the page", lambda: driver.execute_script("return typeof post === 'function'"))
    answer = posted(driver, post, "k.txt", "blocked")
    check("error" in answer and "status" not in answer, f"the browser let the page read an answer CORS does not allow: {answer}")


def main():
    s3 = boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                      aws_secret_access_key=SECRET,
                      config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    server, origin = serve_page()
    failed = 0
    driver = None
    try:
        driver = start_browser()
        driver.set_script_timeout(60)
        for scenario in (a_page_uploads_into_a_bucket_whose_cors_names_its_origin,
                         a_page_from_an_origin_no_rule_names_cannot_read_the_answer):
            error = None
            try:
                scenario(driver, s3, origin)
            except Exception as exception:
                error = f"{type(exception).__name__}: {exception}\n" + traceback.format_exc(limit=4)
            failed += error is not None
            print(json.dumps({"scenario": scenario.__name__, "ok": error is None, "error": error}), flush=True)
    finally:
        if driver is not None:
            driver.quit()
        server.shutdown()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
