"""`python -m trainer.vertex.batch` (qt-batch-predict): a Vertex AI BatchPredictionJob over files in
Cloud Storage, with a model uploaded to Vertex AI from one of this trainer's exports.

Vertex AI sends every instance to the export's serving_default, built from the input format:
a JSON line as it is, a CSV row as a list of its values, a TFRecord record as {"b64": ...}, and
for a file list each listed file's bytes as {"b64": ...}. So the export must have been trained
with the --serving-input that fits (INPUTS below). --dry-run prints the request; otherwise the
job is created and, with --wait, followed like a training job.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import sys
import time

from dataformat import commandline, gcs, json_text, storage, tables
from dataformat.errors import UserError
from trainer.vertex import client, endpoints, follow, jobs, options

log = logging.getLogger("trainer.vertex.batch")

COLLECTION = "batchPredictionJobs"
# BatchPredictionJob.InputConfig.instancesFormat -> the --serving-input of an export that takes its instances.
INPUTS = {
    "jsonl": "numbers",
    "csv": "numbers",
    "tf-record": "examples",
    "tf-record-gzip": "examples",
    "file-list": "image_bytes",
}
OPTIONS = ("service_account", "labels", "kms_key")  # the job options a BatchPredictionJob has
LINES_CHECKED = 100  # a JSON lines input's first lines, checked against the model's inputs before the job
MODEL_NAME = re.compile(r"projects/(?P<project>[^/\s]+)/locations/(?P<region>[^/\s]+)/models/[^/\s]+")

EXAMPLES = """\
examples:
  # PNG/JPEG files listed one gs:// path a line, on a model exported with --serving-input image_bytes
  qt-batch-predict --project my-project --model projects/my-project/locations/us-central1/models/123 \\
      --input-format file-list --input gs://my-bucket/batch/images.txt --output gs://my-bucket/batch/out

  # shards written with --examples-per-record 1, on a model exported with --serving-input examples
  qt-batch-predict --model MODEL --input-format tf-record --input 'gs://my-bucket/data/mnist/eval-*' \\
      --output gs://my-bucket/batch/out --dry-run
"""


def parse_args(argv: list[str] | None):
    parser = commandline.ArgumentParser(
        prog="qt-batch-predict",
        description="(also: python -m trainer.vertex.batch) Run a Vertex AI batch prediction job on files in "
        "Cloud Storage with a model uploaded from this trainer's export; predictions are written as JSON lines.",
        examples=EXAMPLES,
    )
    parser.add_argument(
        "--project", default=None, help="Google Cloud project (default: --model's; a batch job runs in its model's)"
    )
    parser.add_argument(
        "--region",
        type=options.region,
        default=None,
        help="Vertex AI region (default: --model's; a batch job runs in its model's region)",
    )
    parser.add_argument("--model", required=True, help="the uploaded model: projects/P/locations/REGION/models/ID")
    parser.add_argument(
        "--input-format",
        required=True,
        choices=list(INPUTS),
        help="how the input is stored; the model's serving_default must take what Vertex AI makes of it: "
        + ", ".join(f"{kind} needs --serving-input {takes}" for kind, takes in INPUTS.items()),
    )
    parser.add_argument("--input", nargs="+", required=True, metavar="GS_URI", help="gs:// files (* allowed)")
    parser.add_argument("--output", required=True, help="gs:// folder under which Vertex AI writes the predictions")
    parser.add_argument("--machine-type", default="n1-standard-4", help="prediction machines (default: n1-standard-4)")
    parser.add_argument(
        "--replica-count", type=commandline.positive_int, default=1, help="machines at the start (default: 1)"
    )
    parser.add_argument(
        "--max-replica-count", type=commandline.positive_int, help="machines at most (default: --replica-count)"
    )
    parser.add_argument(
        "--display-name",
        type=options.display_name,
        help="the job's name in Vertex AI (default: queue-trainer-batch-TIMESTAMP)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the request body; touch nothing")
    follow.add_flags(parser, wait=True, trials=False)
    options.add_flags(parser, OPTIONS)
    return parser.parse_args(argv)


def plan(args) -> tuple[str, dict]:
    """(the parent to create the job under, the BatchPredictionJob body), from checked flags."""
    model = MODEL_NAME.fullmatch(args.model)
    if not model:
        raise UserError(f"--model {args.model}: expected projects/PROJECT/locations/REGION/models/ID")
    project, region = args.project or model["project"], args.region or model["region"]
    for flag, value, models in (("--project", project, model["project"]), ("--region", region, model["region"])):
        if value != models and (flag == "--region" or not client.same_project(value, models)):
            raise UserError(f"{flag} {value}: --model is in {models}, where a batch prediction job must run")
    for flag, paths in (("--input", args.input), ("--output", [args.output])):
        for path in paths:
            if not gcs.is_gcs(path) or not path[len("gs://") :].split("/")[0]:
                raise UserError(f"{flag} {path}: must be a gs:// path, bucket and all, that Vertex AI can reach")
    for i, path in enumerate(args.input):
        if path in args.input[:i]:
            raise UserError(f"--input {path}: given twice, so each of its instances would be predicted twice")
        if path.endswith("/"):
            raise UserError(f"--input {path}: a folder; name its files, or a pattern such as {path}*")
    jobs.check_machine_series("--machine-type", args.machine_type)
    most = args.max_replica_count or args.replica_count
    if most < args.replica_count:
        raise UserError(f"--max-replica-count {most}: below --replica-count {args.replica_count}")
    given = options.from_flags(args, OPTIONS)
    options.check_region(given, region)
    job_fields, spec_fields = options.request_fields(given)
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.batchPredictionJobs
    body = {
        "displayName": args.display_name or f"queue-trainer-batch-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}",
        "model": args.model,
        "inputConfig": {"instancesFormat": args.input_format, "gcsSource": {"uris": args.input}},
        "outputConfig": {"predictionsFormat": "jsonl", "gcsDestination": {"outputUriPrefix": args.output}},
        "dedicatedResources": {
            "machineSpec": {"machineType": args.machine_type},
            "startingReplicaCount": args.replica_count,
            "maxReplicaCount": most,
        },
        **job_fields,
        **spec_fields,  # the service account, which a BatchPredictionJob holds itself
    }
    return f"projects/{project}/locations/{region}", body


def check_json_lines(model_name: str, pattern: str) -> None:
    """Vertex AI sends each JSON line to a table model as it is, and TF Serving refuses an instance that lacks an
    input, holds another or null, or a value of the wrong type: the first file's first LINES_CHECKED lines are
    checked so before a job whose every such instance would fail, an hour and its machines later."""
    from trainer.exported_model import read_export
    from trainer.instances import named, served_problem

    try:
        model = endpoints.get_model(model_name)
        export = read_export(model["artifactUri"]) if model.get("artifactUri") else None
    except UserError as error:  # a check before the job, not the job: Vertex AI answers for the model itself
        log.info("The input's lines are not checked: the model's export cannot be read (%s)", error)
        return
    if not export or not export.metadata.is_table or export.serving_input != "numbers":
        return
    inputs = tables.request_inputs(export.metadata.columns, export.metadata.key_column)
    files = storage.matching(pattern) if "*" not in pattern.rsplit("/", 1)[0] else []
    for path in files[:1]:
        with storage.open_read(path) as file:
            for number, line in enumerate(itertools.islice(file, LINES_CHECKED), start=1):
                try:
                    problem = served_problem(named(json_text.loads(line), inputs), inputs) if line.strip() else None
                except ValueError:
                    problem = "not JSON"
                if problem:
                    raise UserError(f"--input {path}: line {number}: {problem}; every such instance would fail")


def main(argv: list[str] | None = None) -> int:
    return commandline.run(lambda: _run(argv), "if the job was created, it goes on (qt-job status JOB)")


def _run(argv: list[str] | None) -> int:
    args = parse_args(argv)
    parent, body = plan(args)
    if args.dry_run:
        print(f"POST {client.vertex_address(parent.rsplit('/', 1)[-1])}/v1/{parent}/{COLLECTION}")
        print(json.dumps(body, indent=2))
        return 0
    if args.input_format == "jsonl":
        check_json_lines(args.model, args.input[0])
    name = client.create(parent, COLLECTION, body)["name"]
    log.info("Created %s", name)
    return follow.follow_if_asked(name, args)


if __name__ == "__main__":
    sys.exit(main())
