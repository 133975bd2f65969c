"""Job shapes for Vertex AI: the YAML files in configs/jobs/, checked, then turned into request parts.

A shape names up to four pools, which Vertex AI runs in a fixed order (chief, workers,
parameter servers, evaluator) and describes in TF_CONFIG; for a tuning job, the metric and
the trainer flags to tune (tuning.py); and the job options (options.py). Every mistake is
found here, before anything is built or uploaded, and reported in one line naming the file
and the field.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from dataformat import yaml_files
from dataformat.errors import UserError, yaml_problem
from trainer.vertex import options, tuning
from trainer.vertex.fields import Invalid, check_fields

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

# The enumerations of the REST reference that a pool may use.
CHOICES = {"boot_disk_type": ("pd-ssd", "pd-standard", "hyperdisk-balanced")}

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


@dataclass(frozen=True)
class JobShape:
    name: str  # the file's stem, for the default display name
    pools: dict[str, dict]  # by name, in POOLS order
    tuning: Optional[dict]  # None for a plain CustomJob
    options: dict  # the job options (options.py), by their YAML names


def load(path: str) -> JobShape:
    """The job shape in a YAML file, fully checked; UserError naming the file and field otherwise."""
    try:
        with open(path, encoding="utf-8") as file:
            raw = yaml_files.safe_load(file)
        return _shape(Path(path).stem, raw)
    except OSError as error:
        raise UserError(f"--job-config {path}: cannot read ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise UserError(f"--job-config {path}: not valid YAML: {yaml_problem(error)}") from None
    except UnicodeDecodeError:  # Notepad's UTF-16, or a file that is no text
        raise UserError(f"--job-config {path}: not UTF-8 text; save it as UTF-8") from None
    except Invalid as error:
        raise UserError(f"--job-config {path}: {error}") from None


def _shape(name: str, raw: Any) -> JobShape:
    top = {pool: dict for pool in POOLS} | {"tuning": dict, "options": dict}
    check_fields(raw, "", top, ("chief",))
    pools = {pool: _pool(pool, raw[pool]) for pool in POOLS if pool in raw}
    _check_gpus_are_used(pools)
    tuning_section = tuning.check(raw["tuning"]) if "tuning" in raw else None
    return JobShape(name, pools, tuning_section, options.check(raw.get("options", {})))


def _pool(name: str, pool: Any) -> dict:
    check_fields(pool, name, {key: kind for key, (kind, _, _) in POOL_FIELDS.items()}, POOL_REQUIRED, CHOICES)
    machine = pool["machine_type"]
    series, _, size = machine.rpartition("-")
    if size not in MACHINE_TYPES.get(series, ()):
        raise Invalid(f"{name}.machine_type", f"unknown machine type {machine!r} for Vertex AI training")
    least, most, why = REPLICAS[name]
    count = pool["replica_count"]
    if count < least or (most is not None and count > most):
        raise Invalid(f"{name}.replica_count", f"{count} is not allowed: {why}")
    if "accelerator_type" in pool or "accelerator_count" in pool:
        _check_accelerator(name, pool)
    return pool


def _check_accelerator(name: str, pool: dict) -> None:
    for key in ("accelerator_type", "accelerator_count"):
        if key not in pool:
            raise Invalid(f"{name}.{key}", "missing (accelerator_type and accelerator_count go together)")
    problem = accelerator_problem(pool["machine_type"], pool["accelerator_type"], pool["accelerator_count"])
    if problem:
        raise Invalid(f"{name}.{problem[0]}", problem[1])


def check_machine_series(flag: str, machine: str) -> None:
    """A serving or prediction machine of a series the catalog knows (its sizes differ from training's: n1-standard-2
    serves), else UserError naming `flag`: a misspelt one was refused only by Vertex AI, after the upload."""
    series = machine.rpartition("-")[0]
    if series not in MACHINE_TYPES:
        raise UserError(f"{flag} {machine}: no machine series {series!r} (Vertex AI's: {', '.join(MACHINE_TYPES)})")


def accelerator_problem(machine: str, kind: str, count: int) -> Optional[tuple[str, str]]:
    """What is wrong with `count` x `kind` on `machine`, as (the field at fault, why); None if nothing is.
    Training pools and serving machines take GPUs alike."""
    if kind not in ACCELERATOR_TYPES:
        return "accelerator_type", f"unknown accelerator type {kind!r}"
    allowed = gpus_for(machine)
    if kind not in allowed:
        takes = ", ".join(allowed) or "no accelerators"
        return "accelerator_type", f"{machine} cannot take {kind} (it takes {takes})"
    if count not in allowed[kind]:
        counts = ", ".join(map(str, allowed[kind]))
        return "accelerator_count", f"{count} x {kind} is not allowed on {machine} (allowed: {counts})"
    return None


def _check_gpus_are_used(pools: dict[str, dict]) -> None:
    """GPUs the trainer would leave idle are refused: parameter servers run no model, and the
    evaluator runs one tower."""
    servers = pools.get("parameter_servers", {})
    if servers.get("accelerator_count"):
        raise Invalid(
            "parameter_servers.accelerator_count",
            "parameter servers only hold the variables and run no model, so their GPUs would sit idle; "
            "leave accelerator_type and accelerator_count out there",
        )
    gpus = pools.get("evaluator", {}).get("accelerator_count", 0)
    if gpus > 1:
        raise Invalid(
            "evaluator.accelerator_count",
            f"the evaluator runs one tower, so {gpus - 1} of its {gpus} GPUs would sit idle; ask for 1",
        )


def gpus_for(machine_type: str) -> dict[str, list[int]]:
    """The GPU types a (known) machine type takes, each with the counts allowed."""
    series, _, size = machine_type.rpartition("-")
    if series.startswith("n1-"):
        return N1_GPUS
    if series not in BUILT_IN_GPUS or size not in MACHINE_TYPES[series]:
        return {}
    count = G2_GPU_COUNTS[size] if series == "g2-standard" else int(size.rstrip("g"))
    return {BUILT_IN_GPUS[series]: [count]}


def check_towers(shape: JobShape, path: str, trainer_args: list[str]) -> None:
    """Each training machine runs one tower per GPU it has, with no flag. A `--num-towers` among
    the trainer's flags must ask for exactly as many towers as a training pool's machines have
    GPUs: more cannot be placed, fewer would leave GPUs idle."""
    towers = _flag_value(trainer_args, "--num-towers")
    if towers is None or towers == "auto":
        return
    for name in ("chief", "workers"):
        pool = shape.pools.get(name)
        gpus = pool.get("accelerator_count", 0) if pool else None
        if gpus is not None and int(float(towers)) != max(gpus, 1):
            raise UserError(
                f"--num-towers {towers}: {path} gives each {name} machine {gpus} GPU(s); leave the flag out "
                f"(one tower per GPU)"
            )


def _flag_value(args: list[str], flag: str) -> str | None:
    """The value of `flag` (`--flag VALUE` or `--flag=VALUE`) in `args`, the last one given, or None."""
    value = None
    for arg, following in zip(args, [*args[1:], None]):
        if arg == flag:
            value = following
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


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


def request_body(shape: JobShape, display_name: str, job_spec: dict) -> dict:
    """The CustomJob body, or the HyperparameterTuningJob body when the shape has a tuning section,
    with the job options in their places."""
    job_fields, spec_fields = options.request_fields(shape.options)
    job_spec = {**job_spec, **spec_fields}
    if shape.tuning is None:
        body = {"displayName": display_name, "jobSpec": job_spec}
    else:
        body = tuning.request_body(shape.tuning, display_name, job_spec)
    return {**body, **job_fields}
