"""mitmproxy addon: sends TensorFlow's hard-coded Cloud Storage hosts to the local fake-gcs-server.

TensorFlow's gs:// filesystem always calls https://www.googleapis.com and
https://storage.googleapis.com. Through this proxy (https_proxy, with mitmproxy's CA in
CURL_CA_BUNDLE) those requests reach the emulator instead. Requests for the bucket named
DENIED_BUCKET are answered 403, to test permission errors.
"""

from mitmproxy import ctx, http

GCS_HOSTS = {"www.googleapis.com", "storage.googleapis.com"}
DENIED_BUCKET = "denied-bucket"


def load(loader):
    loader.add_option("fake_gcs", str, "", "host:port of the plain-http fake-gcs-server")


def request(flow: http.HTTPFlow) -> None:
    if DENIED_BUCKET in flow.request.path:
        flow.response = http.Response.make(
            403,
            b'{"error": {"code": 403, "message": "caller does not have storage.objects.get access"}}',
            {"Content-Type": "application/json"},
        )
        return
    if flow.request.pretty_host not in GCS_HOSTS:
        return
    host, port = ctx.options.fake_gcs.rsplit(":", 1)
    flow.request.scheme = "http"
    flow.request.host = host
    flow.request.port = int(port)
    # TensorFlow's curl sends both Transfer-Encoding: chunked and Content-Length, which the
    # emulator rejects; mitmproxy has already de-chunked the body, so send one exact length.
    flow.request.headers.pop("Transfer-Encoding", None)
    if flow.request.raw_content or flow.request.method in ("POST", "PUT", "PATCH"):
        flow.request.headers["Content-Length"] = str(len(flow.request.raw_content or b""))
