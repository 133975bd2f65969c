"""Vertex AI models and endpoints, through Google's client library: upload a model, find or create an
endpoint, deploy to it, undeploy, delete, and send it predict and explain requests. Bodies go in and
come out as dicts with the REST reference's field names (each is first made into the library's message,
which refuses a field the API does not have); long-running operations are followed to their end with a
line every POLL_SECS; every failure is one UserError line."""

from __future__ import annotations

import json
import logging
import re
import time

from dataformat.errors import UserError
from trainer.vertex import client

log = logging.getLogger("trainer.vertex.endpoints")

POLL_SECS = 15.0
ENDPOINT_NAME = re.compile(r"projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/endpoints/(?P<id>[^/]+)")
MODEL_NAME = re.compile(r"projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/models/(?P<id>[^/]+)")


def parse_endpoint(name: str, flag: str = "--endpoint") -> re.Match:
    match = ENDPOINT_NAME.fullmatch(name)
    if not match:
        raise UserError(
            f"{flag} {name}: expected projects/PROJECT/locations/REGION/endpoints/ID (as qt-deploy prints it)"
        )
    return match


def parse_model(name: str, flag: str = "--model") -> re.Match:
    match = MODEL_NAME.fullmatch(name)
    if not match:
        raise UserError(f"{flag} {name}: expected projects/PROJECT/locations/REGION/models/ID")
    return match


def _region(name: str) -> str:
    return name.split("/")[3]


def _message(library, kind: str, body: dict):
    return getattr(library, kind).from_json(json.dumps(body))


def wait(operation, what: str, poll_secs: float = POLL_SECS):
    """The result of a long-running operation, with a line every `poll_secs` while it runs."""
    started = time.monotonic()
    with client.errors(what):
        while not operation.done():
            log.info("%s: still running after %.0f s", what, time.monotonic() - started)
            time.sleep(poll_secs)
        return operation.result()


def upload_model(parent: str, body: dict, poll_secs: float = POLL_SECS) -> str:
    """Uploads a Model (its REST body) under projects/P/locations/R; returns its resource name."""
    library, models = client.service("ModelServiceClient", _region(parent))
    model = _message(library, "Model", body)
    with client.errors(f"{parent}/models:upload"):
        operation = models.upload_model(parent=parent, model=model)
    return wait(operation, "uploading the model", poll_secs).model


def name_filter(display_name: str) -> str:
    """The list filter (AIP-160) for this display name: a string literal, its quotes and backslashes escaped."""
    escaped = display_name.replace("\\", "\\\\").replace('"', '\\"')
    return f'display_name="{escaped}"'


def find_endpoint(parent: str, display_name: str) -> str | None:
    """The newest endpoint with this display name, None if there is none."""
    _, service = client.service("EndpointServiceClient", _region(parent))
    with client.errors(f"{parent}/endpoints"):
        found = list(service.list_endpoints(request={"parent": parent, "filter": name_filter(display_name)}))
    found.sort(key=lambda endpoint: endpoint.create_time, reverse=True)
    return found[0].name if found else None


def create_endpoint(parent: str, body: dict, poll_secs: float = POLL_SECS) -> str:
    library, service = client.service("EndpointServiceClient", _region(parent))
    with client.errors(f"{parent}/endpoints"):
        operation = service.create_endpoint(parent=parent, endpoint=_message(library, "Endpoint", body))
    return wait(operation, "creating the endpoint", poll_secs).name


def get_endpoint(name: str) -> dict:
    _, service = client.service("EndpointServiceClient", _region(name))
    with client.errors(name):
        return client.as_dict(service.get_endpoint(name=name))


def get_model(name: str) -> dict:
    _, service = client.service("ModelServiceClient", _region(name))
    with client.errors(name):
        return client.as_dict(service.get_model(name=name))


def deploy(endpoint: str, body: dict, poll_secs: float = POLL_SECS) -> str:
    """Deploys a DeployedModel (its REST body) to the endpoint with all the traffic; follows it until the model
    serves; returns its deployed model ID."""
    library, service = client.service("EndpointServiceClient", _region(endpoint))
    deployed = _message(library, "DeployedModel", body)
    with client.errors(f"{endpoint}:deployModel"):
        operation = service.deploy_model(endpoint=endpoint, deployed_model=deployed, traffic_split={"0": 100})
    return wait(
        operation, "deploying (Vertex AI starts the machines: often 5 to 15 minutes)", poll_secs
    ).deployed_model.id


def undeploy(endpoint: str, deployed_model_id: str, traffic: dict[str, int], poll_secs: float = POLL_SECS) -> None:
    """Undeploys one deployed model; `traffic` is the endpoint's split afterwards (empty when none is left)."""
    _, service = client.service("EndpointServiceClient", _region(endpoint))
    with client.errors(f"{endpoint}:undeployModel"):
        operation = service.undeploy_model(
            endpoint=endpoint, deployed_model_id=deployed_model_id, traffic_split=traffic
        )
    wait(operation, f"undeploying {deployed_model_id}", poll_secs)


def delete_endpoint(name: str, poll_secs: float = POLL_SECS) -> None:
    _, service = client.service("EndpointServiceClient", _region(name))
    with client.errors(name):
        operation = service.delete_endpoint(name=name)
    wait(operation, f"deleting {name}", poll_secs)


def delete_model(name: str, poll_secs: float = POLL_SECS) -> None:
    _, service = client.service("ModelServiceClient", _region(name))
    with client.errors(name):
        operation = service.delete_model(name=name)
    wait(operation, f"deleting {name}", poll_secs)


def predict(endpoint: str, instances: list, explain: bool = False) -> dict:
    """The endpoint's answer to a predict (or explain) request: {"predictions": [...]} (and "explanations")."""
    from google.protobuf import json_format, struct_pb2

    _, service = client.service("PredictionServiceClient", _region(endpoint))
    values = [json_format.ParseDict(instance, struct_pb2.Value()) for instance in instances]
    method = service.explain if explain else service.predict
    with client.errors(f"{endpoint}:{'explain' if explain else 'predict'}"):
        return client.as_dict(method(endpoint=endpoint, instances=values))
