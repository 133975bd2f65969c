"""A stand-in for the Vertex AI and Cloud Logging REST APIs on 127.0.0.1, for the tests: Google's
client libraries talk to it over real HTTP, as they would to Google. A job's states come from a
script (one per poll, the last one staying); cancel moves it to CANCELLED; log entries come back
in pages of two, with page tokens."""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JOB_PATH = re.compile(r"/v1/(projects/[^/]+/locations/[^/]+/(\w+)/[^/:?]+)")
CREATE_PATH = re.compile(r"/v1/(projects/[^/]+/locations/[^/]+)/(\w+)\?")
PAGE = 2  # log entries per page: paging is always exercised


class FakeVertex:
    def __init__(self):
        self.created: list[tuple[str, dict]] = []  # (collection, body as sent)
        self.script: list[dict] = [{"state": "JOB_STATE_SUCCEEDED"}]  # what each GET of a job shows, in turn
        self.gets = 0
        self.cancelled: list[str] = []
        self.refuse: tuple[int, str] | None = None  # (status, message) to answer every create with
        self.logs: list[dict] = []  # LogEntry resources
        self.log_queries: list[dict] = []
        self.url = ""

    def job(self, name: str) -> dict:
        step = self.script[min(self.gets, len(self.script) - 1)]
        self.gets += 1
        if self.cancelled:
            step = {**step, "state": "JOB_STATE_CANCELLED"}
        return {"name": name, **step}


def _handler(fake: FakeVertex):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def do_GET(self):
            match = JOB_PATH.match(self.path)
            self._reply(200, fake.job(match[1]))

        def do_POST(self):
            body = self._body()
            if self.path.startswith("/v2/entries:list"):
                fake.log_queries.append(body)
                since = re.search(r'timestamp>="([^"]+)"', body.get("filter", ""))
                entries = [e for e in fake.logs if not since or _time(e["timestamp"]) >= _time(since[1])]
                start = int(body.get("pageToken") or 0)
                page = {"entries": entries[start : start + PAGE]}
                if start + PAGE < len(entries):
                    page["nextPageToken"] = str(start + PAGE)
                self._reply(200, page)
            elif ":cancel" in self.path:
                fake.cancelled.append(JOB_PATH.match(self.path)[1])
                self._reply(200, {})
            else:
                parent, collection = CREATE_PATH.match(self.path).groups()
                if fake.refuse:
                    status, message = fake.refuse
                    self._reply(status, {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}})
                    return
                fake.created.append((collection, body))
                self._reply(200, {**body, "name": f"{parent}/{collection}/1", "state": "JOB_STATE_QUEUED"})

    return Handler


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@contextlib.contextmanager
def serving():
    fake = FakeVertex()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def log_entry(time: str, text, task: str = "workerpool0-0", key: str = "") -> dict:
    """A LogEntry resource as Cloud Logging returns it for a Vertex AI job's replica."""
    entry = {
        "logName": "projects/p/logs/workerpool0-0",
        "resource": {"type": "ml_job", "labels": {"job_id": "1", "task_name": task, "project_id": "p"}},
        "timestamp": time,
        "insertId": key or time,
    }
    entry["jsonPayload" if isinstance(text, dict) else "textPayload"] = text
    return entry
