"""A stand-in for the Vertex AI and Cloud Logging REST APIs on 127.0.0.1, for the tests: Google's
client libraries talk to it over real HTTP, as they would to Google. A job's states come from a
script (one per poll, the last one staying); cancel moves it to CANCELLED; log entries come back
in pages of two, with page tokens. Models and endpoints are kept as their bodies; each change is a
long-running operation that is done at its second poll; an endpoint answers :predict with what
`serve(model, instances)` returns (the test's own, e.g. running the export), and :explain, for a
model uploaded with an explanationSpec, with those predictions and an attribution of 0.0 a feature."""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JOB_PATH = re.compile(r"/v1/(projects/[^/]+/locations/[^/]+/(\w+)/[^/:?]+)")
RESOURCE = re.compile(r"/(?:v1|ui)/(?P<parent>projects/[^/]+/locations/[^/]+)/(?P<kind>models|endpoints|operations)"
                      r"(/(?P<id>[^/:?]+))?(:(?P<verb>\w+))?")  # fmt: skip
TYPES = "type.googleapis.com/google.cloud.aiplatform.v1."
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
        self.models: dict[str, dict] = {}  # name -> Model body as uploaded
        self.endpoints: dict[str, dict] = {}  # name -> Endpoint as it is now
        self.operations: dict[str, dict] = {}  # name -> {"polls": left until done, "response": ...}
        self.requests: list[tuple[str, str, dict]] = []  # models' and endpoints': (method, path, body)
        self.serve = None  # (model body, instances) -> predictions; None: :predict is refused
        self.first_id = {"models": 1, "endpoints": 101}  # the IDs the first created model and endpoint get
        self.polls = 1  # the polls an operation answers "not done" before it is
        self.drops = 0  # the next looks at a job answered by closing the connection: dropped ones
        self.cancels_at_once = True  # False: a cancelled job stays JOB_STATE_CANCELLING

    def resource(self, method: str, path: str, body: dict) -> tuple[int, dict]:
        return _resource(self, method, path, body)

    def job(self, name: str) -> dict:
        step = self.script[min(self.gets, len(self.script) - 1)]
        self.gets += 1
        if self.cancelled:
            step = {**step, "state": "JOB_STATE_CANCELLED" if self.cancels_at_once else "JOB_STATE_CANCELLING"}
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
            if RESOURCE.match(self.path):
                self._reply(*fake.resource("GET", self.path, {}))
                return
            match = JOB_PATH.match(self.path)
            if fake.drops:
                fake.drops -= 1
                self.close_connection = True  # no answer at all
                return
            self._reply(200, fake.job(match[1]))

        def do_DELETE(self):
            self._reply(*fake.resource("DELETE", self.path, {}))

        def do_POST(self):
            if self.path == "/token":  # OAuth's token endpoint, for a credentials file whose token_uri is here
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._reply(200, {"access_token": "fake-token", "token_type": "Bearer", "expires_in": 3600})
                return
            body = self._body()
            if RESOURCE.match(self.path):
                self._reply(*fake.resource("POST", self.path, body))
            elif self.path.startswith("/v2/entries:list"):
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


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.reply = (status, {"error": {"code": status, "message": message, "status": "FAILED_PRECONDITION"}})


def _resource(fake: FakeVertex, method: str, path: str, body: dict) -> tuple[int, dict]:
    """Models, endpoints and their operations: (status, reply)."""
    match = RESOURCE.match(path)
    parent, kind, verb = match["parent"], match["kind"], match["verb"]
    name = f"{parent}/{kind}/{match['id']}" if match["id"] else None
    fake.requests.append((method, path.split("?")[0], body))
    try:
        if kind == "operations":
            return 200, _poll(fake, name)
        if method == "GET" and name:
            found = (fake.models if kind == "models" else fake.endpoints).get(name)
            return (200, found) if found else (404, {"error": {"code": 404, "message": f"{name} not found"}})
        if method == "GET":
            wanted = re.search(r'display_name%3D%22([^%]+)%22|display_name="([^"]+)"', path)
            shown = [e for e in fake.endpoints.values() if wanted and e["displayName"] in wanted.groups()]
            return 200, {"endpoints": shown}
        if method == "DELETE":
            (fake.models if kind == "models" else fake.endpoints).pop(name)
            return 200, _operation(fake, parent, {"@type": "type.googleapis.com/google.protobuf.Empty"})
        if kind == "models" and verb == "upload":
            model = f"{parent}/models/{len(fake.models) + fake.first_id['models']}"
            fake.models[model] = {**body["model"], "name": model}
            return 200, _operation(fake, parent, {"@type": TYPES + "UploadModelResponse", "model": model})
        if kind == "endpoints" and not verb:
            endpoint = f"{parent}/endpoints/{len(fake.endpoints) + fake.first_id['endpoints']}"
            created = {**body, "name": endpoint, "createTime": "2026-11-26T00:00:00Z"}
            fake.endpoints[endpoint] = created
            return 200, _operation(fake, parent, {"@type": TYPES + "Endpoint", **created})
        return 200, _endpoint_verb(fake, parent, name, verb, body)
    except Refused as refused:
        return refused.reply


def _endpoint_verb(fake: FakeVertex, parent: str, name: str, verb: str, body: dict) -> dict:
    endpoint = fake.endpoints[name]
    deployed = endpoint.setdefault("deployedModels", [])
    if verb == "deployModel":
        model_id = str(len(fake.requests))
        deployed.append({**body["deployedModel"], "id": model_id})
        endpoint["trafficSplit"] = {model_id: 100}
        return _operation(fake, parent, {"@type": TYPES + "DeployModelResponse", "deployedModel": {"id": model_id}})
    if verb == "undeployModel":
        endpoint["deployedModels"] = [m for m in deployed if m["id"] != body["deployedModelId"]]
        endpoint["trafficSplit"] = body.get("trafficSplit", {})
        return _operation(fake, parent, {"@type": TYPES + "UndeployModelResponse"})
    if not deployed or fake.serve is None:
        raise Refused(400, f"{name} has no deployed model")
    model = fake.models[deployed[0]["model"]]
    predictions = fake.serve(model, body["instances"])
    answer = {"predictions": predictions, "deployedModelId": deployed[0]["id"]}
    if verb == "explain":
        if "explanationSpec" not in model:
            raise Refused(400, "The model was not deployed with an explanation spec.")
        features = model["explanationSpec"]["metadata"]["inputs"]
        attributions = {"featureAttributions": {feature: 0.0 for feature in features}, "outputIndex": [0]}
        answer["explanations"] = [{"attributions": [attributions]} for _ in predictions]
    return answer


def _operation(fake: FakeVertex, parent: str, response: dict) -> dict:
    name = f"{parent}/operations/{len(fake.operations) + 1}"
    fake.operations[name] = {"polls": fake.polls, "response": response}
    return {"name": name, "done": False}


def _poll(fake: FakeVertex, name: str) -> dict:
    operation = fake.operations[name]
    if operation["polls"]:
        operation["polls"] -= 1
        return {"name": name, "done": False}
    return {"name": name, "done": True, "response": operation["response"]}


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


def serving_staged_exports(storage, folder):
    """The stand-in's `serve`: runs each deployed model's staged export, downloaded once from the
    storage emulator (`storage`: its google-cloud-storage client) into `folder`."""
    from trainer.exported_model import Model

    loaded = {}

    def serve(model: dict, instances: list) -> list:
        uri = model["artifactUri"]
        if uri not in loaded:
            bucket, prefix = uri[len("gs://") :].split("/", 1)
            local = folder / f"served-{len(loaded)}"
            for blob in storage.list_blobs(bucket, prefix=prefix + "/"):
                target = local / blob.name[len(prefix) + 1 :]
                target.parent.mkdir(parents=True, exist_ok=True)
                blob.download_to_filename(str(target))
            loaded[uri] = Model(str(local))
        names = [f"instance {i}" for i in range(len(instances))]
        return loaded[uri].predict("serving_default", instances, names)

    return serve


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
