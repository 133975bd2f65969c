"""`python -m trainer.vertex.submit`: run `python -m trainer.task` on Vertex AI as a CustomJob or a
HyperparameterTuningJob.

The job's shape (machines, GPUs, pools, tuning) comes from a YAML file in configs/jobs/; the
code runs either as a container image built from ./Dockerfile (--image) or as this package's
sdist, uploaded to --staging-dir, on an executor image (--executor-image). Everything after
`--` goes to the trainer. Job options (service account, labels, timeout, spot machines, network,
CMEK key, TensorBoard) come from the shape's options: section and from flags. --dry-run prints
the request and the gcloud equivalent and touches nothing remote; otherwise the job is created
and, with --wait, followed to its end (follow.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import yaml

from dataformat import commandline, gcs
from dataformat.errors import UserError
from trainer.vertex import client, follow, jobs, options, tuning

log = logging.getLogger("trainer.vertex.submit")

ROOT = Path(__file__).resolve().parents[2]  # the source checkout holding setup.py
TRAINER_MODULE = "trainer.task"


class Kind(NamedTuple):
    collection: str  # in the REST path
    gcloud_group: str  # gcloud ai GROUP create
    gcloud_config: Callable[[dict], dict]  # the part of the body that gcloud's --config file holds


KINDS = {
    "custom": Kind("customJobs", "custom-jobs", lambda body: body["jobSpec"]),
    "tuning": Kind("hyperparameterTuningJobs", "hp-tuning-jobs", lambda body: body),
}

EXAMPLES = """\
examples:
  # the image built from ./Dockerfile, on one CPU machine
  qt-submit --project my-project --job-config configs/jobs/cpu.yaml \\
      --image us-central1-docker.pkg.dev/my-project/trainers/queue-trainer:v1 \\
      --job-dir gs://my-bucket/runs/mnist -- --data-dir gs://my-bucket/data/mnist --train-steps 5000

  # this package's sdist on an executor image, with one GPU
  qt-submit --project my-project --job-config configs/jobs/gpu.yaml --executor-image IMAGE_URI \\
      --staging-dir gs://my-bucket/staging --job-dir gs://my-bucket/runs/mnist-gpu -- --data-dir gs://my-bucket/data/mnist

  # print the request body and the gcloud command instead, touching nothing
  qt-submit --dry-run --project my-project --job-config configs/jobs/hptuning.yaml --image IMAGE_URI \\
      --job-dir gs://my-bucket/runs/tuning -- --data-dir gs://my-bucket/data/mnist

  # on spot machines, at most 12 hours, labelled, without waiting for the end
  qt-submit --project my-project --job-config configs/jobs/gpu.yaml --image IMAGE_URI --scheduling spot \\
      --timeout 12h --label team=vision --no-wait --job-dir gs://my-bucket/runs/mnist -- --data-dir gs://my-bucket/data/mnist
"""


@dataclass(frozen=True)
class Submission:
    """Everything a job needs, checked: the flags, the job shape, the trainer's arguments."""

    project: str
    region: str
    display_name: str
    job_dir: str
    staging_dir: Optional[str]
    image: Optional[str]
    executor_image: Optional[str]
    shape: jobs.JobShape
    trainer_args: tuple[str, ...]

    @property
    def kind(self) -> Kind:
        return KINDS["custom" if self.shape.tuning is None else "tuning"]


def split_trainer_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """(submit's own arguments, the trainer's: everything after the first `--`)."""
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = commandline.ArgumentParser(
        prog="qt-submit",
        usage="qt-submit --job-config YAML --job-dir GS_FOLDER (--image URI | --executor-image URI) [--project P] "
        "[options] -- [trainer.task flags]",
        description="(also: python -m trainer.vertex.submit) "
        "Submit python -m trainer.task to Vertex AI: a CustomJob, or a HyperparameterTuningJob "
        "when the job config has a tuning section. Everything after -- goes to the trainer.",
        examples=EXAMPLES,
    )
    parser.add_argument(
        "--project",
        default=os.environ.get("GOOGLE_CLOUD_PROJECT"),
        help="Google Cloud project (default: $GOOGLE_CLOUD_PROJECT)",
    )
    parser.add_argument(
        "--region", type=options.region, default="us-central1", help="Vertex AI region (default: us-central1)"
    )
    parser.add_argument(
        "--job-config",
        required=True,
        type=commandline.path,
        help="job shape: configs/jobs/{cpu,gpu,gpu-4,distributed,hptuning}.yaml (in the checkout) or your own",
    )
    parser.add_argument(
        "--job-dir", required=True, help="gs:// folder for checkpoints, exports and metrics (baseOutputDirectory)"
    )
    parser.add_argument("--staging-dir", help="gs:// folder to upload the package to (needed with --executor-image)")
    parser.add_argument(
        "--display-name",
        type=options.display_name,
        help="the job's name in Vertex AI (default: queue-trainer-SHAPE-TIMESTAMP)",
    )
    code = parser.add_mutually_exclusive_group(required=True)
    code.add_argument("--image", help="container image whose entrypoint is python -m trainer.task (see ./Dockerfile)")
    code.add_argument("--executor-image", help="image to run this package's sdist on (a Vertex AI prebuilt image)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the request body and the gcloud command, and write the gcloud --config file; "
        "no upload, no network, no credentials",
    )
    follow.add_flags(parser, wait=True)
    options.add_flags(parser)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the trainer's flags, most likely, given before the -- that passes them on
        raise UserError(f"unrecognized arguments: {' '.join(unknown)} (the trainer's flags, such as --data-dir, go "
                        "after --: qt-submit [options] -- [trainer flags])")  # fmt: skip
    return args


def plan(args: argparse.Namespace, trainer_args: list[str]) -> Submission:
    """Checks the flags and the job shape, before anything is built, uploaded or sent."""
    if not args.project:
        raise UserError("--project is required (or set GOOGLE_CLOUD_PROJECT)")
    if args.executor_image and not args.staging_dir:
        raise UserError("--staging-dir is required with --executor-image: the package is uploaded there")
    for flag, path in (("--job-dir", args.job_dir), ("--staging-dir", args.staging_dir)):
        if path is not None and not gcs.is_gcs(path):
            raise UserError(f"{flag} {path}: must be a gs:// path that Vertex AI can reach")
    if _gives(trainer_args, "--job-dir"):
        raise UserError("--job-dir goes before --: submit passes it to the trainer and to Vertex AI")
    shape = jobs.load(args.job_config)
    if shape.tuning is not None and _gives(trainer_args, "--tuning-metric"):
        raise UserError(
            f"--tuning-metric: set by tuning.metric in {args.job_config}, which submit passes to every trial"
        )
    check_trainer_flags(trainer_args, in_image=bool(args.image))
    if shape.tuning is not None:
        check_tuned_flags(shape, trainer_args, bool(args.image), args.job_config)
    commandline.set_verbosity(args.verbosity)  # reading the trainer's flags set the trainer's
    jobs.check_towers(shape, args.job_config, trainer_args)
    shape = dataclasses.replace(shape, options=options.merged(shape.options, options.from_flags(args)))
    options.check_region(shape.options, args.region)
    display_name = args.display_name or f"queue-trainer-{shape.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    return Submission(
        project=args.project,
        region=args.region,
        display_name=display_name,
        job_dir=args.job_dir,
        staging_dir=args.staging_dir,
        image=args.image,
        executor_image=args.executor_image,
        shape=shape,
        trainer_args=tuple(trainer_args),
    )


def check_trainer_flags(trainer_args: list[str], in_image: bool) -> None:
    """Reads the flags after -- as the trainer will, so that a misspelt flag, a bad value, or data the job cannot
    reach stops here and not after the job's minutes of start-up. The trainer itself only warns of a flag it does
    not know, as cloud services add their own; a flag given here is the user's, so an unknown one is refused."""
    parsed, config = read_trainer_flags(trainer_args)
    _check_config_reachable(parsed.config, in_image)
    config_in_image = parsed.config and not _local_yaml(parsed.config)  # its data dir is only known in the job
    if not (config.data_dir or config.train_files) and not config_in_image:
        raise UserError("--data-dir or --train-files (after --) is required: the gs:// dataset the job trains on")
    for flag, paths in (("--data-dir", [config.data_dir]), ("--train-files", [config.train_files]),
                        ("--eval-files", [config.eval_files])):  # fmt: skip
        for path in filter(None, paths):
            if not gcs.is_gcs(path):
                raise UserError(f"{flag} {path} (after --): must be a gs:// path that Vertex AI can reach")
    if config.model != "auto":  # the data decides which network reads it, in the job; the name is known here
        from trainer.networks import NETWORKS  # TensorFlow's import, only where a network is named

        if config.model not in NETWORKS:
            raise UserError(f"--model {config.model} (after --): not a network; choose auto or one of "
                            f"{', '.join(NETWORKS)}")  # fmt: skip


def read_trainer_flags(trainer_args: list[str]):
    """(the parsed flags, the Config) of the trainer's arguments, each value checked as the trainer will; an unknown
    flag is refused (the trainer only warns of one, as cloud services add their own)."""
    from trainer import config as config_module
    from trainer import task

    parsed, unknown = task.parse_args(trainer_args)
    config_module.check_no_switch_values(trainer_args, unknown)
    if unknown:
        raise UserError(f"{unknown[0]} (after --): not a flag of the trainer's; qt-train --help lists them")
    flags = {key: value for key, value in vars(parsed).items() if key not in ("config", "verbosity")}
    return parsed, config_module.from_sources(_local_yaml(parsed.config), flags)


def _local_yaml(config: str | None) -> str | None:
    """The trainer's --config where it is a file here (else it is one in the image, or none)."""
    return config if config and os.path.isfile(config) else None


def check_tuned_flags(shape: jobs.JobShape, trainer_args: list[str], in_image: bool, path: str) -> None:
    """Each value the study may give a trial, read as the trainer will read it after the flags after --: a value
    the trainer refuses (a dropout of 1.5, a batch size of 73.4, --xla=true) failed every trial it reached, after
    its machine's minutes of start-up. A tuned flag given after -- too is refused (Vertex AI adds the trial's value
    after it, which wins), and so is --export-dir (every trial would export into the one folder)."""
    from trainer import config as config_module

    if _gives(trainer_args, "--export-dir"):
        raise UserError("--export-dir (after --): a tuning job's trials would all export there; each exports under "
                        "its own folder without it")  # fmt: skip
    for where, name, parameter in tuning.every_parameter(shape.tuning["parameters"]):
        if f"--{name}" in config_module.switches():
            raise UserError(f"--job-config {path}: {where}: --{name} is an on/off switch, which takes no value; "
                            "a trial cannot set it")  # fmt: skip
        if _gives(trainer_args, f"--{name}"):
            raise UserError(f"--{name} (after --): {path} tunes it ({where}), and each trial's value would win")
        for value in tuning.trial_values(parameter):
            given = [*trainer_args, f"--{name}={value}"]
            try:
                check_trainer_flags(given, in_image)
                jobs.check_towers(shape, path, given)
            except UserError as error:
                raise UserError(f"--job-config {path}: {where}: a trial given {value} would fail: {error}") from None


def _check_config_reachable(path: str | None, in_image: bool) -> None:
    """The trainer in the cloud reads --config there: from gs://, or from the image, which holds configs/."""
    if not path or gcs.is_gcs(path):
        return
    if in_image and posixpath.normpath(path).startswith("configs/"):
        return
    where = "the image holds only configs/" if in_image else "the package holds no configs"
    raise UserError(f"--config {path} (after --): the job cannot read a local file ({where}); copy it to gs://")


def _gives(trainer_args: list[str], flag: str) -> bool:
    """Whether the trainer's arguments give `flag` (also as --flag=VALUE, or spelt with underscores)."""
    return any(arg.partition("=")[0].replace("_", "-") == flag for arg in trainer_args)


def package_file() -> str:
    """The sdist's file name, without building it."""
    return _setup_py("--fullname").strip() + ".tar.gz"


def build_sdist(dist_dir: str) -> str:
    """Builds this package's sdist with `setup.py sdist` into an empty `dist_dir`; returns the tarball's path."""
    _setup_py("-q", "sdist", "--dist-dir", dist_dir)
    (tarball,) = Path(dist_dir).glob("*.tar.gz")
    return str(tarball)


def _setup_py(*arguments: str) -> str:
    setup_py = ROOT / "setup.py"
    if not setup_py.exists():
        raise UserError(f"{setup_py}: not found; run trainer.vertex.submit from a source checkout")
    result = subprocess.run([sys.executable, "setup.py", *arguments], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"{setup_py} {' '.join(arguments)}: failed ({last})")
    return result.stdout


def staged_package_uri(job: Submission, file_name: str) -> str:
    """Where the package goes: one folder per job under --staging-dir."""
    folder = re.sub(r"[^A-Za-z0-9._-]+", "-", job.display_name)
    return f"{job.staging_dir.rstrip('/')}/{folder}/{file_name}"


def upload(local_path: str, uri: str) -> None:
    """Copies a local file to gs://, as one resumable upload that appears only when complete."""
    with open(local_path, "rb") as source, gcs.atomic_writer(uri) as target:
        shutil.copyfileobj(source, target)


def task_spec(job: Submission, trainer_args: list[str], package_uri: Optional[str]) -> dict:
    """What each pool runs: the container image, or this package on the executor image."""
    if job.image:
        return {"containerSpec": {"imageUri": job.image, "args": trainer_args}}
    return {
        "pythonPackageSpec": {
            "executorImageUri": job.executor_image,
            "packageUris": [package_uri],
            "pythonModule": TRAINER_MODULE,
            "args": trainer_args,
        }
    }


def request_body(job: Submission, package_uri: Optional[str]) -> dict:
    """The CustomJob or HyperparameterTuningJob body; Vertex AI sets AIP_MODEL_DIR and friends under --job-dir."""
    trainer_args = list(job.trainer_args)
    # A tuning trial gets no --job-dir: one folder for all trials would let each resume from the
    # one before. Vertex AI gives each trial its own folder under --job-dir, as AIP_MODEL_DIR.
    # Instead, each trial is told which metric the study optimizes, to report it.
    if job.shape.tuning is None:
        trainer_args = ["--job-dir", job.job_dir, *trainer_args]
    else:
        trainer_args = ["--tuning-metric", job.shape.tuning["metric"], *trainer_args]
    job_spec = {
        "workerPoolSpecs": jobs.worker_pool_specs(job.shape, task_spec(job, trainer_args, package_uri)),
        "baseOutputDirectory": {"outputUriPrefix": job.job_dir},
    }
    return jobs.request_body(job.shape, job.display_name, job_spec)


def parent(job: Submission) -> str:
    return f"projects/{job.project}/locations/{job.region}"


def endpoint(job: Submission) -> str:
    return f"{client.vertex_address(job.region)}/v1/{parent(job)}/{job.kind.collection}"


def gcloud_command(job: Submission, config_path: str) -> str:
    return shlex.join(
        [
            "gcloud",
            "ai",
            job.kind.gcloud_group,
            "create",
            f"--project={job.project}",
            f"--region={job.region}",
            f"--display-name={job.display_name}",
            f"--config={config_path}",
        ]
    )


def dry_run(job: Submission) -> None:
    """Prints the request and the equivalent gcloud command; writes only gcloud's --config file, locally."""
    package_uri = staged_package_uri(job, package_file()) if job.executor_image else None
    body = request_body(job, package_uri)
    with tempfile.NamedTemporaryFile("w", prefix=f"{job.shape.name}-", suffix=".yaml", delete=False) as file:
        yaml.safe_dump(job.kind.gcloud_config(body), file, sort_keys=False)
    print(f"POST {endpoint(job)}")
    print(json.dumps(body, indent=2))
    print()
    print(gcloud_command(job, file.name))
    if package_uri:
        log.info("A dry run builds and uploads no package: the gcloud command expects %s, which qt-submit without "
                 "--dry-run uploads before it creates the job", package_uri)  # fmt: skip


def submit(job: Submission) -> str:
    """Builds and uploads the package when needed, then creates the job; returns its resource name."""
    package_uri = None
    if job.executor_image:
        with tempfile.TemporaryDirectory() as dist_dir:
            log.info("Building the package (setup.py sdist)")
            tarball = build_sdist(dist_dir)
            package_uri = staged_package_uri(job, os.path.basename(tarball))
            log.info("Uploading it to %s", package_uri)
            upload(tarball, package_uri)
    created = client.create(parent(job), job.kind.collection, request_body(job, package_uri))
    log.info("Created %s", created["name"])
    return created["name"]


def main(argv: list[str] | None = None) -> int:
    return commandline.run(lambda: _submit(sys.argv[1:] if argv is None else argv), "no job was created")


def _submit(argv: list[str]) -> int:
    own_args, trainer_args = split_trainer_args(argv)
    args = parse_args(own_args)
    job = plan(args, trainer_args)
    if args.dry_run:
        dry_run(job)
        return 0
    client.credentials()  # before staging the package: without them it retried for two minutes, then failed
    name = submit(job)
    return follow.follow_if_asked(name, args)


if __name__ == "__main__":
    sys.exit(main())
