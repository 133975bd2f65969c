"""Job shapes for Vertex AI: the YAML files in configs/jobs/, checked, then turned into request parts.

A shape names up to four pools, which Vertex AI runs in a fixed order (chief, workers,
parameter servers, evaluator) and describes in TF_CONFIG, and, for a tuning job, the metric
and the trainer flags to tune. Every mistake is found here, before anything is built or
uploaded, and reported in one line naming the file and the field.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from dataformat.errors import UserError
from trainer.config import Config
from trainer.head import METRIC

# Vertex AI's worker pools by position: 0 chief, 1 workers, 2 parameter servers, 3 evaluator.
POOLS = ("chief", "workers", "parameter_servers", "evaluator")

# The replica counts each pool allows (least, most), and why.
REPLICAS = {
    "chief": (1, 1, "Vertex AI runs exactly one primary replica"),
    "workers": (1, None, "give at least 1, or leave the pool out"),
    "parameter_servers": (1, None, "give at least 1, or leave the pool out"),
    "evaluator": (1, 1, "TensorFlow runs at most one evaluator"),
}

# Pool fields: YAML name -> (type, the WorkerPoolSpec message it goes to ("" for the spec itself), REST name).
POOL_FIELDS = {
    "machine_type": (str, "machineSpec", "machineType"),
    "replica_count": (int, "", "replicaCount"),
    "accelerator_type": (str, "machineSpec", "acceleratorType"),
    "accelerator_count": (int, "machineSpec", "acceleratorCount"),
    "boot_disk_type": (str, "diskSpec", "bootDiskType"),
    "boot_disk_size_gb": (int, "diskSpec", "bootDiskSizeGb"),
}
POOL_REQUIRED = ("machine_type", "replica_count")

TUNING_FIELDS = {
    "metric": str,
    "goal": str,
    "max_trial_count": int,
    "parallel_trial_count": int,
    "max_failed_trial_count": int,
    "algorithm": str,
    "parameters": dict,
}
TUNING_REQUIRED = ("metric", "goal", "max_trial_count", "parallel_trial_count", "parameters")

PARAMETER_FIELDS = {"type": str, "min": float, "max": float, "values": list, "scale": str}

# Parameter type -> its value spec in StudySpec.ParameterSpec and the YAML fields that fill it.
PARAMETER_TYPES = {
    "DOUBLE": ("doubleValueSpec", ("min", "max")),
    "INTEGER": ("integerValueSpec", ("min", "max")),
    "DISCRETE": ("discreteValueSpec", ("values",)),
}
VALUE_NAMES = {"min": "minValue", "max": "maxValue", "values": "values"}

# The enumerations of the REST reference that a shape may use.
CHOICES = {
    "boot_disk_type": ("pd-ssd", "pd-standard", "hyperdisk-balanced"),
    "goal": ("MAXIMIZE", "MINIMIZE"),
    "algorithm": ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"),
    "type": tuple(PARAMETER_TYPES),
    "scale": ("UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"),
}

TYPE_NAMES = {int: "whole number", float: "number", str: "string", dict: "mapping", list: "list"}

CATALOG_FILE = Path(__file__).with_name("catalog.yaml")


def _catalog() -> dict:
    """The machine and accelerator catalog: data, kept in catalog.yaml beside this file."""
    with open(CATALOG_FILE, encoding="utf-8") as file:
        return yaml.safe_load(file)


CATALOG = _catalog()
MACHINE_TYPES: dict[str, list[str]] = CATALOG["machine_types"]
ACCELERATOR_TYPES: list[str] = CATALOG["accelerator_types"]
N1_GPUS: dict[str, list[int]] = CATALOG["n1_gpus"]
BUILT_IN_GPUS: dict[str, str] = CATALOG["built_in_gpus"]
G2_GPU_COUNTS: dict[str, int] = CATALOG["g2_gpu_counts"]

TRAINER_FLAGS = tuple(item.name.replace("_", "-") for item in dataclasses.fields(Config))


@dataclass(frozen=True)
class JobShape:
    name: str  # the file's stem, for the default display name
    pools: dict[str, dict]  # by name, in POOLS order
    tuning: Optional[dict]  # None for a plain CustomJob


class _Invalid(Exception):
    """A mistake at `field`; load() adds the file."""

    def __init__(self, field: str, why: str):
        super().__init__(f"{field}: {why}")


def load(path: str) -> JobShape:
    """The job shape in a YAML file, fully checked; UserError naming the file and field otherwise."""
    try:
        with open(path, encoding="utf-8") as file:
            raw = yaml.safe_load(file)
        return _shape(Path(path).stem, raw)
    except OSError as error:
        raise UserError(f"--job-config {path}: cannot read ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise UserError(f"--job-config {path}: not valid YAML ({str(error).splitlines()[0]})") from None
    except _Invalid as error:
        raise UserError(f"--job-config {path}: {error}") from None


def _shape(name: str, raw: Any) -> JobShape:
    top = {pool: dict for pool in POOLS} | {"tuning": dict}
    _check_fields(raw, "", top, ("chief",))
    pools = {pool: _pool(pool, raw[pool]) for pool in POOLS if pool in raw}
    tuning = _tuning(raw["tuning"]) if "tuning" in raw else None
    return JobShape(name, pools, tuning)


def _check_fields(section: Any, where: str, types: dict[str, type], required: tuple[str, ...]) -> None:
    """Checks that `section` is a mapping of known fields, with the required ones, of the right types."""
    if not isinstance(section, dict):
        raise _Invalid(where or "top level", f"expected a mapping of fields, found {type(section).__name__}")
    prefix = f"{where}." if where else ""
    for key in section:
        if key not in types:
            raise _Invalid(f"{prefix}{key}", f"unknown field (known: {', '.join(types)})")
    for key in required:
        if key not in section:
            raise _Invalid(f"{prefix}{key}", "missing")
    for key, value in section.items():
        if not _is_a(value, types[key]):
            raise _Invalid(f"{prefix}{key}", f"{value!r} is not a {TYPE_NAMES[types[key]]}")
        if key in CHOICES and value not in CHOICES[key]:
            raise _Invalid(f"{prefix}{key}", f"{value!r} is not one of {', '.join(CHOICES[key])}")


def _is_a(value: Any, kind: type) -> bool:
    if isinstance(value, bool):  # YAML's yes/true must not pass for a number
        return False
    return isinstance(value, (int, float)) if kind is float else isinstance(value, kind)


def _pool(name: str, pool: Any) -> dict:
    _check_fields(pool, name, {key: kind for key, (kind, _, _) in POOL_FIELDS.items()}, POOL_REQUIRED)
    machine = pool["machine_type"]
    series, _, size = machine.rpartition("-")
    if size not in MACHINE_TYPES.get(series, ()):
        raise _Invalid(f"{name}.machine_type", f"unknown machine type {machine!r} for Vertex AI training")
    least, most, why = REPLICAS[name]
    count = pool["replica_count"]
    if count < least or (most is not None and count > most):
        raise _Invalid(f"{name}.replica_count", f"{count} is not allowed: {why}")
    if "accelerator_type" in pool or "accelerator_count" in pool:
        _check_accelerator(name, pool)
    return pool


def _check_accelerator(name: str, pool: dict) -> None:
    for key in ("accelerator_type", "accelerator_count"):
        if key not in pool:
            raise _Invalid(f"{name}.{key}", "missing (accelerator_type and accelerator_count go together)")
    machine, kind, count = pool["machine_type"], pool["accelerator_type"], pool["accelerator_count"]
    if kind not in ACCELERATOR_TYPES:
        raise _Invalid(f"{name}.accelerator_type", f"unknown accelerator type {kind!r}")
    allowed = gpus_for(machine)
    if kind not in allowed:
        takes = ", ".join(allowed) or "no accelerators"
        raise _Invalid(f"{name}.accelerator_type", f"{machine} cannot take {kind} (it takes {takes})")
    if count not in allowed[kind]:
        counts = ", ".join(map(str, allowed[kind]))
        raise _Invalid(f"{name}.accelerator_count", f"{count} x {kind} is not allowed on {machine} (allowed: {counts})")


def gpus_for(machine_type: str) -> dict[str, list[int]]:
    """The GPU types a (known) machine type takes, each with the counts allowed."""
    series, _, size = machine_type.rpartition("-")
    if series.startswith("n1-"):
        return N1_GPUS
    if series not in BUILT_IN_GPUS:
        return {}
    count = G2_GPU_COUNTS[size] if series == "g2-standard" else int(size.rstrip("g"))
    return {BUILT_IN_GPUS[series]: [count]}


def _tuning(tuning: Any) -> dict:
    _check_fields(tuning, "tuning", TUNING_FIELDS, TUNING_REQUIRED)
    trials, parallel = tuning["max_trial_count"], tuning["parallel_trial_count"]
    if trials < 1:
        raise _Invalid("tuning.max_trial_count", f"{trials} is not allowed: give at least 1")
    if not 1 <= parallel <= trials:
        raise _Invalid("tuning.parallel_trial_count", f"{parallel} is not allowed: give 1 to max_trial_count")
    if tuning["metric"] != METRIC:  # the only metric the trainer reports to the tuning service
        raise _Invalid("tuning.metric", f"{tuning['metric']!r} is not reported by the trainer; use {METRIC!r}")
    if not tuning["parameters"]:
        raise _Invalid("tuning.parameters", "give at least one trainer flag to tune")
    for name, parameter in tuning["parameters"].items():
        _check_parameter(f"tuning.parameters.{name}", name, parameter)
    return tuning


def _check_parameter(where: str, name: str, parameter: Any) -> None:
    # Vertex passes --NAME=VALUE to each trial, and the trainer ignores flags it does not know.
    if name not in TRAINER_FLAGS:
        raise _Invalid(where, "not a flag of python -m trainer.task (spell it as the flag, e.g. learning-rate)")
    _check_fields(parameter, where, PARAMETER_FIELDS, ("type",))
    _, needed = PARAMETER_TYPES[parameter["type"]]
    for key in VALUE_NAMES:
        if key in needed and key not in parameter:
            raise _Invalid(f"{where}.{key}", f"missing ({parameter['type']} parameters need {' and '.join(needed)})")
        if key not in needed and key in parameter:
            raise _Invalid(f"{where}.{key}", f"not used by {parameter['type']} parameters")
    values = [parameter["min"], parameter["max"]] if "min" in parameter else parameter["values"]
    if not values or not all(_is_a(v, float) for v in values) or values != sorted(set(values)):
        raise _Invalid(where, "values must be numbers in increasing order (min below max)")
    if parameter["type"] == "INTEGER" and not all(isinstance(v, int) for v in values):
        raise _Invalid(where, "an INTEGER parameter needs whole-number min and max")
    if parameter.get("scale") == "UNIT_LOG_SCALE" and values[0] <= 0:
        raise _Invalid(f"{where}.scale", "UNIT_LOG_SCALE needs values above 0")


def worker_pool_specs(shape: JobShape, task: dict) -> list[dict]:
    """workerPoolSpecs in Vertex's order, each running `task`; a pool left out before a given one is {}."""
    specs = [_pool_spec(shape.pools[name], task) if name in shape.pools else {} for name in POOLS]
    while not specs[-1]:
        specs.pop()
    return specs


def _pool_spec(pool: dict, task: dict) -> dict:
    spec: dict[str, Any] = {}
    for key, value in pool.items():
        _, message, rest_name = POOL_FIELDS[key]
        (spec.setdefault(message, {}) if message else spec)[rest_name] = value
    return {**spec, **copy.deepcopy(task)}  # no shared objects: YAML would write them as aliases


def study_spec(tuning: dict) -> dict:
    """The StudySpec of a tuning section: the metric to optimize and the parameters to search."""
    spec = {
        "metrics": [{"metricId": tuning["metric"], "goal": tuning["goal"]}],
        "parameters": [_parameter_spec(name, parameter) for name, parameter in tuning["parameters"].items()],
    }
    if "algorithm" in tuning:
        spec["algorithm"] = tuning["algorithm"]
    return spec


def _parameter_spec(name: str, parameter: dict) -> dict:
    value_spec, keys = PARAMETER_TYPES[parameter["type"]]
    spec = {"parameterId": name, value_spec: {VALUE_NAMES[key]: parameter[key] for key in keys}}
    if "scale" in parameter:
        spec["scaleType"] = parameter["scale"]
    return spec


def request_body(shape: JobShape, display_name: str, job_spec: dict) -> dict:
    """The CustomJob body, or the HyperparameterTuningJob body when the shape has a tuning section."""
    if shape.tuning is None:
        return {"displayName": display_name, "jobSpec": job_spec}
    tuning = shape.tuning
    body = {
        "displayName": display_name,
        "studySpec": study_spec(tuning),
        "maxTrialCount": tuning["max_trial_count"],
        "parallelTrialCount": tuning["parallel_trial_count"],
        "trialJobSpec": job_spec,
    }
    if "max_failed_trial_count" in tuning:
        body["maxFailedTrialCount"] = tuning["max_failed_trial_count"]
    return body
