"""Job options: who the job runs as, its labels, its time limit and scheduling, its network, its
encryption key and its TensorBoard. They come from a job shape's `options:` section and from
flags (a flag wins; labels add up), are checked here, and go to their places in the request."""

from __future__ import annotations

import argparse
import re
from typing import Any

from dataformat.errors import UserError
from trainer.vertex.fields import Invalid, check_fields

# Option -> (YAML type, where it goes: a REST path in the job ("labels") or in its CustomJobSpec ("spec.network")).
# The fields, as on the v1 REST reference's pages (labels and encryptionSpec alike on every kind of job):
#   CustomJob: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs
#   EncryptionSpec: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/EncryptionSpec
#   CustomJobSpec: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec
#   Scheduling: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#Scheduling
OPTIONS = {
    "service_account": (str, "spec.serviceAccount"),
    "labels": (dict, "labels"),
    "timeout": (str, "spec.scheduling.timeout"),
    "restart_job_on_worker_restart": (bool, "spec.scheduling.restartJobOnWorkerRestart"),
    "scheduling": (str, "spec.scheduling.strategy"),
    "network": (str, "spec.network"),
    "kms_key": (str, "encryptionSpec.kmsKeyName"),
    "tensorboard": (str, "spec.tensorboard"),
}
# Scheduling.strategy in the REST reference, by the name a shape uses.
STRATEGIES = {"standard": "STANDARD", "spot": "SPOT"}

# Option -> (the pattern a value matches, what it looks like).
FORMATS = {
    "service_account": (r"[^@\s/]+@[^@\s/]+", "an e-mail address such as trainer@PROJECT.iam.gserviceaccount.com"),
    "timeout": (r"[1-9][0-9]*[smhd]", "a duration such as 90m, 12h, 2d or 3600s"),
    "network": (r"projects/[^/\s]+/global/networks/[^/\s]+", "projects/PROJECT_NUMBER/global/networks/NETWORK"),
    "kms_key": (
        r"projects/[^/\s]+/locations/[^/\s]+/keyRings/[^/\s]+/cryptoKeys/[^/\s]+",
        "projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
    ),
    "tensorboard": (
        r"projects/[^/\s]+/locations/[^/\s]+/tensorboards/[^/\s]+",
        "projects/PROJECT/locations/REGION/tensorboards/ID",
    ),
}
# Labels as Google Cloud takes them: lowercase keys that start with a letter, both at most 63 characters.
LABEL_KEY, LABEL_VALUE = r"[a-z][a-z0-9_-]{0,62}", r"[a-z0-9_-]{0,63}"
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def check(section: Any, where: str = "options") -> dict:
    """A shape's options section, checked; Invalid names the field otherwise."""
    check_fields(
        section, where, {name: kind for name, (kind, _) in OPTIONS.items()}, choices={"scheduling": tuple(STRATEGIES)}
    )
    for name, value in section.items():
        why = problem(name, value)
        if why:
            raise Invalid(f"{where}.{name}", why)
    return section


def problem(name: str, value: Any) -> str | None:
    """What is wrong with one option's value, or None."""
    if name == "labels":
        for key, text in value.items():
            if not (isinstance(key, str) and re.fullmatch(LABEL_KEY, key)):
                return f"label key {key!r}: lowercase letters, digits, _ and -, starting with a letter, at most 63"
            if not (isinstance(text, str) and re.fullmatch(LABEL_VALUE, text)):
                return f"label {key}: value {text!r} must be lowercase letters, digits, _ and -, at most 63"
        return None
    if name in FORMATS and not re.fullmatch(FORMATS[name][0], value):
        return f"{value!r} is not {FORMATS[name][1]}"
    return None


def check_region(given: dict, region: str) -> None:
    """UserError where the KMS key is not in the job's region, as Vertex AI needs it: `--region` was checked
    on its own, and the key on its own form."""
    key = given.get("kms_key")
    location = key.split("/")[3] if key else region
    if location != region:
        raise UserError(f"kms_key {key}: in {location}, where the job runs in {region}: Vertex AI "
                        "takes a key of the job's region")  # fmt: skip


def add_flags(parser: argparse.ArgumentParser, names: tuple[str, ...] = tuple(OPTIONS)) -> None:
    """A flag for each option in `names`; one left out stays None, so the job shape's value holds. All of them
    for qt-submit, whose job config's options: section they override."""
    every = set(names) == set(OPTIONS)
    group = parser.add_argument_group(
        "job options (over the job config's options: section)" if every else "job options"
    )
    helps = {
        "service_account": "run the job as this service account"
        + (" (needed with --tensorboard)" if "tensorboard" in names else ""),
        "labels": "KEY=VALUE: a label on the job; repeat for more",
        "timeout": "stop the job after this long: 90m, 12h, 2d (Vertex AI's default: 7 days)",
        "restart_job_on_worker_restart": "restart the whole job when one of its machines restarts",
        "scheduling": "standard, or spot (cheaper machines that Google may take back)",
        "network": "peer the job with this VPC network: projects/PROJECT_NUMBER/global/networks/NETWORK",
        "kms_key": "encrypt the job with this Cloud KMS key (CMEK), in the job's region",
        "tensorboard": "upload the trainer's summaries to this TensorBoard: projects/P/locations/R/tensorboards/ID",
    }
    for name in names:
        flag = "--label" if name == "labels" else "--" + name.replace("_", "-")
        if name == "labels":
            group.add_argument(flag, dest=name, action="append", metavar="KEY=VALUE", help=helps[name])
        elif OPTIONS[name][0] is bool:
            group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, help=helps[name])
        else:
            group.add_argument(
                flag, dest=name, choices=list(STRATEGIES) if name == "scheduling" else None, help=helps[name]
            )


def from_flags(args: argparse.Namespace, names: tuple[str, ...] = tuple(OPTIONS)) -> dict:
    """The options given as flags, checked; UserError naming the flag otherwise."""
    given = {}
    for name in names:
        value = getattr(args, name)
        if value is None:
            continue
        if name == "labels":
            pairs = [_label(text) for text in value]
            keys = [key for key, _ in pairs]
            twice = [key for i, key in enumerate(keys) if key in keys[:i]]
            if twice:  # the last one won, silently
                raise UserError(f"--label {twice[0]}=...: the key is given twice")
            value = dict(pairs)
        why = problem(name, value)
        if why:
            shown = "--label" if name == "labels" else f"--{name.replace('_', '-')} {value}"
            raise UserError(f"{shown}: {why}")
        given[name] = value
    return given


def _label(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals:
        raise UserError(f"--label {text}: expected KEY=VALUE")
    return key, value


def merged(shape_options: dict, flag_options: dict) -> dict:
    """The shape's options with the flags' on top (labels from both), checked together."""
    options = {**shape_options, **flag_options}
    if "labels" in shape_options and "labels" in flag_options:
        options["labels"] = {**shape_options["labels"], **flag_options["labels"]}
    if "tensorboard" in options and "service_account" not in options:
        # Vertex AI uploads the summaries as the job's service account, and refuses a job without one.
        raise UserError("--tensorboard needs --service-account (or options.service_account in the job config)")
    return options


def request_fields(options: dict) -> tuple[dict, dict]:
    """(fields of the job, fields of its CustomJobSpec), at their REST names."""
    job: dict = {}
    spec: dict = {}
    for name, value in options.items():
        path = OPTIONS[name][1]
        target = spec if path.startswith("spec.") else job
        _put(target, path.removeprefix("spec."), _rest_value(name, value))
    return job, spec


def _rest_value(name: str, value: Any) -> Any:
    if name == "timeout":  # a protobuf Duration is written as seconds with an "s"
        return f"{int(value[:-1]) * SECONDS[value[-1]]}s"
    if name == "scheduling":
        return STRATEGIES[value]
    return value


def _put(target: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for parent in parents:
        target = target.setdefault(parent, {})
    target[last] = value


REGION = re.compile(r"[a-z]+(-[a-z]+)+\d+")  # us-central1, europe-west4, northamerica-northeast1
MOST_NAME_CHARACTERS = 128  # in a display name, which Vertex AI takes as UTF-8 of up to 128 characters


def region(text: str) -> str:
    """--region, an argparse type: a Google Cloud region's form, checked before any request is planned."""
    if not REGION.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Google Cloud region, such as us-central1 or europe-west4")
    return text


def display_name(text: str) -> str:
    """--display-name, an argparse type: 1 to 128 characters, as Vertex AI takes them."""
    if not 1 <= len(text) <= MOST_NAME_CHARACTERS:
        raise argparse.ArgumentTypeError(f"{len(text)} characters; Vertex AI takes 1 to {MOST_NAME_CHARACTERS}")
    return text
