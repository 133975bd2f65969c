"""`python -m trainer.vertex.deploy` (qt-deploy): an export of this trainer online, on a Vertex AI endpoint.

    qt-deploy --model-dir EXPORT --project P --region R --display-name NAME   deploy
    qt-deploy undeploy --endpoint ENDPOINT                                     free its machines
    qt-deploy delete --endpoint ENDPOINT --model MODEL                         remove both

Deploying: a local export is first copied to --staging-dir on gs:// (one folder per display name and
time), as qt-submit stages its package; it is uploaded as a Vertex AI Model served by the prebuilt
TensorFlow 2.15 prediction image (or by --serving-image, a TF Serving image, as a custom container);
the endpoint named --display-name is reused, or created; the model is deployed to it with all its
traffic, on --machine-type (and --accelerator-type) with --min-replicas to --max-replicas, and
followed until it serves. --explain attaches Vertex Explainable AI's metadata and parameters built
from the export's metadata.json: sampled Shapley over a table's columns, integrated gradients over
an image's pixels. --dry-run prints every request body and touches nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import sys
import time
import warnings
from dataclasses import dataclass

from dataformat import commandline, gcs, tables
from dataformat.errors import UserError
from trainer.exported_model import Export, read_export
from trainer.vertex import client, endpoints, jobs, options

log = logging.getLogger("trainer.vertex.deploy")

TENSORFLOW_VERSION = "2.15"
VERSION_FOLDER = "1"  # TF Serving serves the numbered folders under its model's base path
SERVING_PORT = 8080  # where Vertex AI sends requests to a custom container
SHAPLEY_PATHS = 10  # sampled Shapley's feature permutations per instance (Vertex AI takes 1 to 50)
GRADIENT_STEPS = 50  # integrated gradients' steps (Vertex AI suggests 50 to start)

EXAMPLES = """\
examples:
  qt-deploy --model-dir runs/census/export/best --project my-project --region us-central1 \\
      --display-name census --staging-dir gs://my-bucket/staging --explain
  qt-predict --endpoint projects/my-project/locations/us-central1/endpoints/123 --input rows.csv --explain
  qt-deploy undeploy --endpoint projects/my-project/locations/us-central1/endpoints/123
  qt-deploy delete --endpoint projects/my-project/locations/us-central1/endpoints/123 \\
      --model projects/my-project/locations/us-central1/models/456
"""


TIDY_ACTIONS = ("undeploy", "delete")


def parse_args(argv: list[str]) -> argparse.Namespace:
    if argv and argv[0] in TIDY_ACTIONS:
        return _tidy_parser(argv[0]).parse_args(argv[1:])
    parser = _deploy_parser()
    _refuse_late_action(parser, argv)
    return parser.parse_args(argv)


def _refuse_late_action(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """`qt-deploy --dry-run undeploy ...` would read as a deploy missing --model-dir: say where the word goes. A
    word that is a flag's value (`--display-name delete`) is no subcommand."""
    for before, word in zip(argv, argv[1:]):
        flag = parser._option_string_actions.get(before.replace("_", "-"))  # --display_name, as the parser reads it
        if word in TIDY_ACTIONS and (flag is None or flag.nargs == 0):
            raise UserError(f"{word} comes first: qt-deploy {word} [flags] (qt-deploy {word} --help lists them)")


def _deploy_parser() -> commandline.ArgumentParser:
    parser = commandline.ArgumentParser(
        prog="qt-deploy",
        description="(also: python -m trainer.vertex.deploy) Serve an export online on a Vertex AI endpoint: "
        "stage it, upload it as a Model, deploy it to an endpoint, and follow it until it serves. "
        "`qt-deploy undeploy` and `qt-deploy delete` tidy up (each has --help).",
        examples=EXAMPLES,
    )
    parser.set_defaults(action="deploy")
    parser.add_argument(
        "--model-dir",
        required=True,
        help="an export (holds saved_model.pb), a folder of numbered exports (the newest), or a job dir (its "
        "export/best/), local or gs://",
    )
    parser.add_argument("--project", default=None, help="Google Cloud project (default: $GOOGLE_CLOUD_PROJECT)")
    parser.add_argument(
        "--region", type=options.region, default="us-central1", help="Vertex AI region (default: us-central1)"
    )
    parser.add_argument(
        "--display-name",
        type=options.display_name,
        required=True,
        help="the Model's name, and the endpoint's unless --endpoint",
    )
    parser.add_argument("--staging-dir", help="gs:// folder a local export is copied to first (needed for one)")
    parser.add_argument(
        "--endpoint", help="deploy to this endpoint (default: the one named --display-name, or a new one)"
    )
    parser.add_argument("--machine-type", default="n1-standard-4", help="serving machines (default: n1-standard-4)")
    parser.add_argument("--accelerator-type", help="e.g. NVIDIA_TESLA_T4: a GPU on each machine, and the GPU image")
    parser.add_argument(
        "--accelerator-count",
        type=commandline.positive_int,
        help="GPUs a machine, with --accelerator-type (default: 1)",
    )
    parser.add_argument(
        "--min-replicas", type=commandline.positive_int, default=1, help="machines at least (default: 1)"
    )
    parser.add_argument(
        "--max-replicas", type=commandline.positive_int, help="machines at most (default: --min-replicas)"
    )
    parser.add_argument(
        "--serving-image",
        help="a TF Serving 2.15 image Vertex AI can pull, run as a custom container (default: Vertex AI's prebuilt "
        "TensorFlow 2.15 prediction image for the region)",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="let the endpoint answer :explain (Vertex Explainable AI, deprecated by Google on 2026-03-16 and "
        "available until 2027-03-16): sampled Shapley over a table's columns, integrated gradients over pixels",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print every request body and change nothing (the export is still read, for its signatures)",
    )
    _add_poll_secs(parser)
    return parser


def _add_poll_secs(parser: commandline.ArgumentParser) -> None:
    """How often a long request is looked at: hidden, for the tests' stand-in of Vertex AI."""
    parser.add_argument(
        "--poll-secs", type=commandline.positive_number, default=endpoints.POLL_SECS, help=argparse.SUPPRESS
    )


def _tidy_parser(action: str) -> commandline.ArgumentParser:
    what = {
        "undeploy": "Undeploy models from an endpoint, which frees (and stops paying for) their machines",
        "delete": "Undeploy everything from an endpoint and delete it, and delete the models named by --model",
    }[action]
    parser = commandline.ArgumentParser(prog=f"qt-deploy {action}", description=what, examples=EXAMPLES)
    parser.set_defaults(action=action)
    parser.add_argument("--endpoint", required=action == "undeploy", help="projects/P/locations/R/endpoints/ID")
    if action == "undeploy":
        parser.add_argument("--deployed-model-id", help="the one deployed model to undeploy (default: every one)")
    else:
        parser.add_argument(
            "--model", action="append", default=[], help="projects/P/locations/R/models/ID (repeatable)"
        )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print every request that would change something, and change nothing (the endpoint is still read, "
        "to find its deployed models, so credentials are needed)",
    )
    _add_poll_secs(parser)
    return parser


def serving_image(args) -> str:
    """--serving-image, or the prebuilt TensorFlow prediction image of the region (GPU with --accelerator-type)."""
    if args.serving_image:
        return args.serving_image
    with warnings.catch_warnings():  # the SDK warns, on import, of a storage library version it will drop
        warnings.simplefilter("ignore", FutureWarning)
        helpers = client.google_library("google.cloud.aiplatform.helpers", "deploying to Vertex AI")
    accelerator = "gpu" if args.accelerator_type else "cpu"
    try:
        return helpers.get_prebuilt_prediction_container_uri("tensorflow", TENSORFLOW_VERSION, args.region, accelerator)
    except ValueError as error:
        raise UserError(
            f"--region {args.region}: no prebuilt TensorFlow {TENSORFLOW_VERSION} prediction image ({error}); pass "
            "--serving-image with a TF Serving 2.15 image Vertex AI can pull (tensorflow/serving:2.15.1 copied to "
            "Artifact Registry)"
        ) from None


def container_spec(image: str, custom: bool) -> dict:
    """The Model's container: the prebuilt image as it is, or TF Serving's REST server on Vertex AI's port."""
    if not custom:
        return {"imageUri": image}
    return {
        "imageUri": image,
        "command": ["tensorflow_model_server"],
        "args": [f"--rest_api_port={SERVING_PORT}", "--model_name=default", "--model_base_path=$(AIP_STORAGE_URI)"],
        "ports": [{"containerPort": SERVING_PORT}],
        "predictRoute": "/v1/models/default:predict",
        "healthRoute": "/v1/models/default",
    }


def explanation_spec(export: Export) -> dict:
    """Vertex Explainable AI's metadata and parameters for the export's serving_default: a table's columns by
    sampled Shapley (from a baseline row: each numeric column at its training mean, any other missing), or an
    image's (or vector's) values by integrated gradients."""
    metadata = export.metadata
    if export.serving_input != "numbers":
        raise UserError(
            f"--explain: this export's serving_default takes {export.serving_input}; explanations need its raw "
            "values: train with --serving-input numbers (the default)"
        )
    outputs = {"probabilities": {"outputTensorName": "probabilities"}}
    if metadata.is_table:
        inputs = {
            column.name: {"inputTensorName": column.name, "inputBaselines": [_baseline(column)]}
            for column in metadata.columns
        }
        parameters = {"sampledShapleyAttribution": {"pathCount": SHAPLEY_PATHS}}
    else:
        modality = "image" if metadata.is_image else "numeric"
        inputs = {metadata.feature_key: {"inputTensorName": metadata.feature_key, "modality": modality}}
        parameters = {"integratedGradientsAttribution": {"stepCount": GRADIENT_STEPS}}
    return {"metadata": {"inputs": inputs, "outputs": outputs}, "parameters": parameters}


def _baseline(column: tables.Column):
    return column.mean if column.kind == tables.NUMERIC else ""


@dataclass(frozen=True)
class Plan:
    parent: str
    local: str | None  # a local export to copy to `artifact` first
    staged: str  # where the export's files are on gs://
    model: dict  # the Model body
    endpoint: str | None  # --endpoint, when given
    deployed: dict  # the DeployedModel body, but for its model's name


def plan(args) -> Plan:
    project = args.project or os.environ.get("GOOGLE_CLOUD_PROJECT")
    if not project:
        raise UserError("--project is required (or set GOOGLE_CLOUD_PROJECT)")
    if args.endpoint:  # the model is uploaded to --project and --region, and deploys only to an endpoint there
        endpoint = endpoints.parse_endpoint(args.endpoint)
        if endpoint["region"] != args.region:
            raise UserError(f"--endpoint {args.endpoint}: it is in {endpoint['region']}, not --region {args.region}")
        if not client.same_project(endpoint["project"], project):
            raise UserError(f"--endpoint {args.endpoint}: it is in {endpoint['project']}, not --project {project}")
    most = args.max_replicas or args.min_replicas
    if most < args.min_replicas:
        raise UserError(f"--max-replicas {most}: below --min-replicas {args.min_replicas}")
    machine_spec(args)  # checked before the export is read
    export = read_export(args.model_dir)
    custom = bool(args.serving_image)
    local = None if gcs.is_gcs(export.path) else export.path
    if custom and not local:  # TF Serving would serve the newest version beside it, not necessarily this one
        raise UserError(
            f"--serving-image: give a local export (it is staged as TF Serving's version 1), not {export.path}"
        )
    if local:
        if not args.staging_dir or not gcs.is_gcs(args.staging_dir):
            raise UserError(f"--staging-dir: a gs:// folder is needed to copy the local export {local} to")
        folder = re.sub(r"[^A-Za-z0-9._-]+", "-", args.display_name) + time.strftime("-%Y%m%d-%H%M%S", time.gmtime())
        staged = f"{args.staging_dir.rstrip('/')}/{folder}/{VERSION_FOLDER}"
    else:
        staged = export.path
    model = {
        "displayName": args.display_name,
        # TF Serving reads the numbered versions under its base path; the prebuilt image, the export itself.
        "artifactUri": staged.rsplit("/", 1)[0] if custom else staged,
        "containerSpec": container_spec(serving_image(args), custom),
    }
    if args.explain:
        model["explanationSpec"] = explanation_spec(export)
    deployed = {
        "displayName": args.display_name,
        "dedicatedResources": {
            "machineSpec": machine_spec(args),
            "minReplicaCount": args.min_replicas,
            "maxReplicaCount": most,
        },
    }
    return Plan(f"projects/{project}/locations/{args.region}", local, staged, model, args.endpoint, deployed)


def machine_spec(args) -> dict:
    """The serving machine, its GPUs checked as a training pool's are: Vertex AI would refuse them only after
    the upload."""
    jobs.check_machine_series("--machine-type", args.machine_type)
    machine = {"machineType": args.machine_type}
    if args.accelerator_count is not None and not args.accelerator_type:  # the GPUs were left out, silently
        raise UserError(f"--accelerator-count {args.accelerator_count}: give the GPUs' --accelerator-type too")
    if not args.accelerator_type:
        series = args.machine_type.rpartition("-")[0]
        if series in jobs.BUILT_IN_GPUS and jobs.gpus_for(args.machine_type):  # a known size of a GPU series
            ((kind, (count,)),) = jobs.gpus_for(args.machine_type).items()
            raise UserError(
                f"--machine-type {args.machine_type}: it comes with {count} x {kind}; add --accelerator-type {kind} "
                f"--accelerator-count {count}"
            )
        return machine
    count = args.accelerator_count or 1
    problem = jobs.accelerator_problem(args.machine_type, args.accelerator_type, count)
    if problem:
        field, why = problem
        raise UserError(f"--{field.replace('_', '-')} {getattr(args, field) or count}: {why}")
    return machine | {"acceleratorType": args.accelerator_type, "acceleratorCount": count}


def stage(local: str, uri: str) -> None:
    """Copies a local export to gs://, file by file, each appearing only once whole."""
    for root, _, names in os.walk(local):
        for name in names:
            path = os.path.join(root, name)
            target = f"{uri}/{os.path.relpath(path, local).replace(os.sep, '/')}"
            with open(path, "rb") as source, gcs.atomic_writer(target) as file:
                shutil.copyfileobj(source, file)


def _url(path: str, region: str) -> str:
    return f"{client.vertex_address(region)}/v1/{path}"


def dry_run(job: Plan, region: str) -> None:
    if job.local:
        print(f"COPY {job.local} -> {job.staged}")
    print(f"POST {_url(job.parent, region)}/models:upload")
    print(json.dumps({"model": job.model}, indent=2))
    if job.endpoint:
        print(f"(endpoint {job.endpoint})")
    else:
        print(f"GET {_url(job.parent, region)}/endpoints?filter={endpoints.name_filter(job.model['displayName'])}")
        print(f"POST {_url(job.parent, region)}/endpoints   (when none is found)")
        print(json.dumps({"displayName": job.model["displayName"]}, indent=2))
    print(f"POST {_url(job.endpoint or job.parent + '/endpoints/ENDPOINT', region)}:deployModel")
    body = {"deployedModel": {**job.deployed, "model": "MODEL"}, "trafficSplit": {"0": 100}}
    print(json.dumps(body, indent=2))


def deploy(job: Plan, poll_secs: float) -> tuple[str, str, str]:
    """(the model, the endpoint, the deployed model's ID)."""
    if job.local:
        log.info("Copying %s to %s", job.local, job.staged)
        stage(job.local, job.staged)
    model = endpoints.upload_model(job.parent, job.model, poll_secs)
    log.info("Uploaded %s", model)
    endpoint = job.endpoint or endpoints.find_endpoint(job.parent, job.model["displayName"])
    if endpoint:
        log.info("Deploying to %s", endpoint)
    else:
        endpoint = endpoints.create_endpoint(job.parent, {"displayName": job.model["displayName"]}, poll_secs)
        log.info("Created %s", endpoint)
    deployed_id = endpoints.deploy(endpoint, {**job.deployed, "model": model}, poll_secs)
    return model, endpoint, deployed_id


def undeploy(endpoint: str, only: str | None, dry: bool, poll_secs: float) -> None:
    """Undeploys `only`, or every deployed model, moving the traffic to those that stay."""
    found = endpoints.get_endpoint(endpoint)
    deployed = [model["id"] for model in found.get("deployedModels", [])]
    if only and only not in deployed:
        raise UserError(f"--deployed-model-id {only}: not on {endpoint} (it has {', '.join(deployed) or 'none'})")
    for model_id in [only] if only else deployed:
        left = [other for other in deployed if other != model_id]
        traffic = {left[0]: 100} if left else {}
        if dry:
            print(f"POST {_url(endpoint, endpoints.parse_endpoint(endpoint)['region'])}:undeployModel")
            print(json.dumps({"deployedModelId": model_id, "trafficSplit": traffic}, indent=2))
        else:
            endpoints.undeploy(endpoint, model_id, traffic, poll_secs)
            log.info("Undeployed %s from %s", model_id, endpoint)
        deployed = left


def delete(args) -> None:
    for model in args.model:
        endpoints.parse_model(model)
    if not args.endpoint and not args.model:
        raise UserError("qt-deploy delete: give --endpoint, --model, or both")
    if args.endpoint:
        undeploy(args.endpoint, None, args.dry_run, args.poll_secs)
    for name in ([args.endpoint] if args.endpoint else []) + args.model:
        if args.dry_run:
            print(f"DELETE {_url(name, name.split('/')[3])}")
            continue
        (endpoints.delete_endpoint if "/endpoints/" in name else endpoints.delete_model)(name, args.poll_secs)
        log.info("Deleted %s", name)


def main(argv: list[str] | None = None) -> int:
    return commandline.run(
        lambda: _run(sys.argv[1:] if argv is None else argv),
        "what was uploaded or deployed stays: qt-deploy delete tidies up",
    )


def _run(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.action == "undeploy":
        endpoints.parse_endpoint(args.endpoint)
        undeploy(args.endpoint, args.deployed_model_id, args.dry_run, args.poll_secs)
        return 0
    if args.action == "delete":
        delete(args)
        return 0
    job = plan(args)
    if args.dry_run:
        dry_run(job, args.region)
        return 0
    client.credentials()  # before the upload: without them it retried for two minutes, then failed
    model, endpoint, deployed_id = deploy(job, args.poll_secs)
    explain = " --explain" if args.explain else ""
    print(f"{'model:':16} {model}")
    print(f"{'endpoint:':16} {endpoint}")
    print(f"{'deployed model:':16} {deployed_id}")
    for other in endpoints.get_endpoint(endpoint).get("deployedModels", []):  # a deploy before, now with no traffic
        if other["id"] != deployed_id:
            print(f"{'also deployed:':16} {other['id']} ({other['model']}), with no traffic and its machines still on: "
                  f"qt-deploy undeploy --endpoint {endpoint} --deployed-model-id {other['id']}")  # fmt: skip
    print(f"{'next:':16} qt-predict --endpoint {endpoint} --input FILE{explain}")
    print(f"{'tidy up:':16} qt-deploy delete --endpoint {endpoint} --model {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
