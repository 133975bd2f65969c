"""Vertex AI and Cloud Logging, through Google's client libraries (the `vertex` extra): create a
job, read it, cancel it, and read its log lines. Jobs go in and come out as plain dicts with the
REST reference's field names, so the rest of the package never handles library types; every
failure is one UserError line."""

from __future__ import annotations

import contextlib
import datetime
import importlib
import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from typing import NamedTuple

from dataformat import gcs
from dataformat.errors import UserError

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# Where the clients connect. gcloud's own overrides move them (a Private Service Connect address,
# or a local stand-in), read when a client is made.
VERTEX_ENDPOINT = "https://{region}-aiplatform.googleapis.com"
LOGGING_ENDPOINT = "https://logging.googleapis.com"
VERTEX_OVERRIDE = "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM"
LOGGING_OVERRIDE = "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING"

INSTALL = "pip install 'queue-trainer[vertex]' (google-cloud-aiplatform and google-cloud-logging)"

# A job's collection in its resource name -> the library's message and the method suffix for it.
KINDS = {
    "customJobs": ("CustomJob", "custom_job"),
    "hyperparameterTuningJobs": ("HyperparameterTuningJob", "hyperparameter_tuning_job"),
    "batchPredictionJobs": ("BatchPredictionJob", "batch_prediction_job"),
}
# A job's name as Vertex AI makes it: a region such as us-central1, a numeric ID.
JOB_NAME = re.compile(
    r"projects/(?P<project>[^/\s]+)/locations/(?P<region>[a-z]+(?:-[a-z]+)+\d+)/(?P<collection>\w+)/(?P<id>\d+)"
)


class LogLine(NamedTuple):
    time: datetime.datetime
    task: str  # the replica that wrote it, e.g. workerpool0-0
    text: str
    key: str  # the entry's insertId: one line is shown once


def parse_name(name: str, flag: str = "JOB") -> re.Match:
    """A job's resource name, split; UserError naming `flag` when it is not one."""
    match = JOB_NAME.fullmatch(name)
    if not match or match["collection"] not in KINDS:
        raise UserError(
            f"{flag} {name}: expected a job's resource name, projects/PROJECT/locations/REGION/"
            f"{{{','.join(KINDS)}}}/ID (as qt-submit prints it)"
        )
    return match


def same_project(one: str, other: str) -> bool:
    """Whether two projects of resource names may be one: a project's number and its ID both name it."""
    return one == other or one.isdigit() or other.isdigit()


class Unreachable(UserError):
    """A request that did not reach Google Cloud (no network, a dropped connection): worth another try."""


@contextlib.contextmanager
def errors(what: str):
    """Library and network failures as one line saying what was being done."""
    import google.api_core.exceptions
    import google.auth.exceptions
    import requests

    try:
        yield
    except google.auth.exceptions.DefaultCredentialsError:
        raise gcs.no_credentials() from None
    except google.api_core.exceptions.GoogleAPICallError as error:
        # Over REST the library puts the request before the API's message: "POST https://...: message".
        message = re.sub(r"^[A-Z]+ \S+: ", "", (error.message or "no message").splitlines()[0])
        raise UserError(f"{what}: Vertex AI refused ({error.code}): {message}") from None
    except (requests.exceptions.RequestException, google.auth.exceptions.TransportError) as error:
        raise Unreachable(f"{what}: cannot reach Google Cloud ({type(error).__name__})") from None
    except google.auth.exceptions.GoogleAuthError as error:
        raise UserError(f"cannot authenticate ({type(error).__name__}): {gcs.CREDENTIALS_HELP}") from None


def google_library(module: str, needed_for: str):
    """One of Google's client libraries (the vertex extra), imported; without it, a UserError that says what to
    install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{needed_for} needs Google's client library: {INSTALL}") from None


def credentials():
    import google.auth

    with errors("credentials"):
        found, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    return found


def service(name: str, region: str):
    """(the library's aiplatform_v1, its client NAME, e.g. JobServiceClient) for `region`, over REST."""
    from google.api_core.client_options import ClientOptions  # google-cloud-storage's: always installed

    aiplatform_v1 = google_library("google.cloud.aiplatform_v1", "talking to Vertex AI")
    endpoint = ClientOptions(api_endpoint=vertex_address(region))
    return aiplatform_v1, getattr(aiplatform_v1, name)(
        credentials=credentials(), transport="rest", client_options=endpoint
    )


def vertex_address(region: str) -> str:
    """Where Vertex AI's REST API is for `region`: gcloud's override where it is set (as gcloud does, a
    host that starts with `aiplatform` gets the region in front), else the region's own endpoint."""
    override = os.environ.get(VERTEX_OVERRIDE)
    if not override:
        return VERTEX_ENDPOINT.format(region=region)
    parts = urllib.parse.urlsplit(override)
    if parts.netloc.startswith("aiplatform"):
        parts = parts._replace(netloc=f"{region}-{parts.netloc}")
    return urllib.parse.urlunsplit(parts).rstrip("/")


def _job_service(region: str):
    return service("JobServiceClient", region)


def create(parent: str, collection: str, body: dict) -> dict:
    """Creates a job from its REST body under `parent` (projects/P/locations/R); returns the job."""
    region = parent.rsplit("/", 1)[-1]
    library, service = _job_service(region)
    message, method = KINDS[collection]
    job = getattr(library, message).from_json(json.dumps(body))  # refuses a field the API does not have
    with errors(f"{parent}/{collection}"):
        return as_dict(getattr(service, f"create_{method}")(parent=parent, **{method: job}))


def get(name: str) -> dict:
    """The job as Vertex AI describes it now."""
    match = parse_name(name)
    _, service = _job_service(match["region"])
    with errors(name):
        return as_dict(getattr(service, f"get_{KINDS[match['collection']][1]}")(name=name))


def cancel(name: str) -> None:
    """Asks Vertex AI to cancel the job; it ends in JOB_STATE_CANCELLED soon after."""
    match = parse_name(name)
    _, service = _job_service(match["region"])
    with errors(name):
        getattr(service, f"cancel_{KINDS[match['collection']][1]}")(name=name)


def as_dict(job) -> dict:
    """A library message as its REST JSON: camelCase names, enum names, RFC 3339 times."""
    from google.protobuf import json_format

    return json_format.MessageToDict(type(job).pb(job))


def log_lines(name: str, since: datetime.datetime | None) -> Iterator[LogLine]:
    """The job's log lines from `since` on (all of them with None), oldest first, page by page."""
    cloud_logging = google_library("google.cloud.logging", "reading a job's logs")
    match = parse_name(name)
    logs = cloud_logging.Client(
        project=match["project"],
        credentials=credentials(),
        _use_grpc=False,  # the REST transport, like the Vertex AI client
        client_options={"api_endpoint": (os.environ.get(LOGGING_OVERRIDE) or LOGGING_ENDPOINT).rstrip("/")},
    )
    # The filter `gcloud ai custom-jobs stream-logs` uses: every replica of the job.
    # Always a time: without one, the library reads only the last 24 hours.
    since = since or datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    query = (
        f'resource.type="ml_job" AND resource.labels.job_id="{match["id"]}"'
        f' AND timestamp>="{since.astimezone(datetime.timezone.utc):%Y-%m-%dT%H:%M:%S.%fZ}"'
    )
    with errors(f"{name} logs"):
        for entry in logs.list_entries(
            resource_names=[f"projects/{match['project']}"], filter_=query, order_by=cloud_logging.ASCENDING
        ):
            yield LogLine(entry.timestamp, _task(entry), _text(entry.payload), entry.insert_id or "")


def _task(entry) -> str:
    labels = (entry.resource.labels if entry.resource else None) or {}
    return labels.get("task_name", "")


def _text(payload) -> str:
    """A log entry's message: text as it is, a structured payload's `message` field, else its JSON."""
    if isinstance(payload, dict):
        return str(payload.get("message", json.dumps(payload, sort_keys=True)))
    return str(payload if payload is not None else "").rstrip("\n")
