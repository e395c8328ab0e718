"""Bucket CORS: configurations with boto3 (AWS's error codes), preflight `OPTIONS` answers
and `Access-Control-*` headers checked with urllib3, and a real browser: headless Chromium
on a page of another origin uploads with a presigned PUT and reads the object back with
`fetch`, which works only because the bucket's rules allow it (and fails once they are
gone)."""

import http.server
import json
import shutil
import subprocess
import threading
import uuid
from functools import partial

import pytest
import urllib3
from botocore.exceptions import ClientError

from conftest import free_port
from s3util import client, error_code, new_bucket, status


@pytest.fixture
def s3(eddy):
    return client(eddy)


def rules(*rs):
    return {"CORSRules": list(rs)}


def test_configuration_round_trip_and_aws_errors(s3):
    b = new_bucket(s3, "cors")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=b)
    assert (error_code(e), status(e)) == ("NoSuchCORSConfiguration", 404)
    config = rules(
        {"ID": "web", "AllowedOrigins": ["https://app.example"], "AllowedMethods": ["GET", "PUT"],
         "AllowedHeaders": ["content-type", "x-amz-*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600},
        {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]},
    )
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=config)
    got = s3.get_bucket_cors(Bucket=b)["CORSRules"]
    assert got == config["CORSRules"]

    def refused(cfg, code):
        with pytest.raises(ClientError) as e:
            s3.put_bucket_cors(Bucket=b, CORSConfiguration=cfg)
        assert error_code(e) == code, cfg

    refused(rules({"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}), "InvalidRequest")
    refused(rules({"AllowedOrigins": ["https://*.*.example"], "AllowedMethods": ["GET"]}), "InvalidRequest")
    refused(rules({"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "AllowedHeaders": ["a*b*"]}),
            "InvalidRequest")
    assert s3.get_bucket_cors(Bucket=b)["CORSRules"] == config["CORSRules"]
    assert s3.delete_bucket_cors(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=b)
    assert error_code(e) == "NoSuchCORSConfiguration"


def error_doc(r):
    body = r.data.decode()
    return body[body.index("<Code>") + 6:body.index("</Code>")], r.status


def test_preflight_and_response_headers(eddy, s3):
    b = new_bucket(s3, "corsh")
    s3.put_object(Bucket=b, Key="k", Body=b"hello")
    http = urllib3.PoolManager()
    url = f"{eddy.s3_url}/{b}/k"

    def options(origin, method, headers=None):
        h = {"Origin": origin, "Access-Control-Request-Method": method}
        if headers:
            h["Access-Control-Request-Headers"] = headers
        return http.request("OPTIONS", url, headers=h)

    # No configuration: browsers are refused.
    assert error_doc(options("https://app.example", "GET")) == ("AccessForbidden", 403)
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=rules(
        {"AllowedOrigins": ["https://*.example"], "AllowedMethods": ["GET", "PUT"],
         "AllowedHeaders": ["content-type", "x-amz-*"], "ExposeHeaders": ["ETag", "x-amz-request-id"],
         "MaxAgeSeconds": 600},
        {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]},
    ))
    r = options("https://app.example", "PUT", "Content-Type, X-Amz-Date")
    assert r.status == 200
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert r.headers["Access-Control-Allow-Methods"] == "GET, PUT"
    assert r.headers["Access-Control-Allow-Headers"] == "content-type, x-amz-date"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-request-id"
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    assert "Origin" in r.headers["Vary"]
    # The wildcard rule answers with `*`.
    r = options("https://elsewhere.test", "HEAD")
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in r.headers
    # A method, origin or header no rule allows.
    assert error_doc(options("https://app.example", "DELETE")) == ("AccessForbidden", 403)
    assert error_doc(options("https://app.other", "GET")) == ("AccessForbidden", 403)
    assert error_doc(options("https://app.example", "PUT", "authorization")) == ("AccessForbidden", 403)
    # Not a preflight at all.
    r = http.request("OPTIONS", url)
    assert error_doc(r) == ("BadRequest", 400)
    assert error_doc(http.request("OPTIONS", f"{eddy.s3_url}/missing-{uuid.uuid4().hex[:8]}/k",
                                  headers={"Origin": "https://a.example",
                                           "Access-Control-Request-Method": "GET"})) == ("NoSuchBucket", 404)

    # An actual (signed) request with an Origin gets the headers; another origin does not.
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "k"})
    r = http.request("GET", get_url, headers={"Origin": "https://app.example"})
    assert r.status == 200 and r.data == b"hello"
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-request-id"
    r = http.request("GET", get_url, headers={"Origin": "https://evil.test"})
    assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers
    # An error answer carries them too, so the page can read it.
    r = http.request("GET", f"{eddy.s3_url}/{b}/missing", headers={"Origin": "https://app.example"})
    assert r.status == 403 and r.headers["Access-Control-Allow-Origin"] == "https://app.example"


PAGE = """<!doctype html><html><body><pre id="out">running</pre><script>
(async () => {
  const out = document.getElementById("out");
  try {
    const put = await fetch(%(put)s, {method: "PUT", body: "from the browser",
                                      headers: {"Content-Type": "text/plain"}});
    const etag = put.headers.get("ETag");
    const get = await fetch(%(get)s);
    out.textContent = JSON.stringify({put: put.status, etag: etag, get: get.status,
                                      body: await get.text()});
  } catch (e) {
    out.textContent = JSON.stringify({error: String(e)});
  }
})();
</script></body></html>"""


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "chromium is not installed (scripts/test installs it)"
    return path


def browser_run(tmp_path, put_url, get_url):
    """Serves the page from another origin and loads it in headless Chromium; returns
    what the page's script wrote."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "page.html").write_text(PAGE % {"put": json.dumps(put_url), "get": json.dumps(get_url)})
    port = free_port()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # Chromium waits for the page's network activity within the virtual time budget
        # before dumping the DOM, so the script's result is there when it prints.
        r = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
                            "--virtual-time-budget=15000", "--dump-dom",
                            f"http://127.0.0.1:{port}/page.html"],
                           capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    dom = r.stdout
    assert '<pre id="out">' in dom, (r.returncode, r.stderr[-2000:])
    text = dom.split('<pre id="out">', 1)[1].split("</pre>", 1)[0]
    return json.loads(text.replace("&quot;", '"').replace("&amp;", "&"))


def test_a_browser_uploads_and_reads_back_across_origins(eddy, s3, tmp_path):
    b = new_bucket(s3, "corsb")
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "browser.txt",
                                                              "ContentType": "text/plain"})
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "browser.txt"})
    # Without rules the browser refuses to let the page send the PUT at all.
    refused = browser_run(tmp_path / "refused", put_url, get_url)
    assert "error" in refused, refused
    with pytest.raises(ClientError):
        s3.head_object(Bucket=b, Key="browser.txt")

    s3.put_bucket_cors(Bucket=b, CORSConfiguration=rules(
        {"AllowedOrigins": ["http://127.0.0.1:*"], "AllowedMethods": ["GET", "PUT"],
         "AllowedHeaders": ["content-type"], "ExposeHeaders": ["ETag"]}))
    got = browser_run(tmp_path / "allowed", put_url, get_url)
    assert got["put"] == 200 and got["get"] == 200, got
    assert got["body"] == "from the browser"
    head = s3.head_object(Bucket=b, Key="browser.txt")
    assert got["etag"] == head["ETag"]
    assert head["ContentType"] == "text/plain"
