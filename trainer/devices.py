"""What hardware this process sees, for the choices that depend on it (data format, staging, towers)."""

from __future__ import annotations

import os

import tensorflow as tf

from dataformat.errors import UserError

# Tests only: put towers on virtual CPU devices (/cpu:0 ... /cpu:N-1, made by the session config),
# so that in-graph replication runs on a machine without GPUs.
TOWERS_ON_CPUS = "QUEUE_TRAINER_TOWERS_ON_CPUS"


def gpu_count() -> int:
    return len(tf.config.list_physical_devices("GPU"))


def has_gpu() -> bool:
    return gpu_count() > 0


def towers_on_cpus() -> bool:
    return os.environ.get(TOWERS_ON_CPUS) == "1"


def resolve_towers(setting: str) -> int:
    """`--num-towers`: auto is one tower per visible GPU (one without GPUs); a number must not
    exceed the GPUs there are."""
    if setting == "auto":
        return max(1, gpu_count())
    towers = int(float(setting))
    if towers > 1 and not towers_on_cpus() and towers > gpu_count():
        raise UserError(f"--num-towers {towers}: this machine has {gpu_count()} GPU(s); use auto or at most that")
    return towers


def tower_device(tower: int) -> str:
    """The device of tower `tower`: its own GPU (the CPU without GPUs; a virtual CPU under TOWERS_ON_CPUS)."""
    return f"/gpu:{tower}" if has_gpu() and not towers_on_cpus() else f"/cpu:{tower}"


# Where a container's memory limit is written: cgroup v2, then v1 (whose "no limit" is a huge number).
CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_bytes() -> int | None:
    """The memory this process may use: the machine's, or its container's limit where lower; None where unknown."""
    try:
        found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # a system without these names
        return None
    for path in CGROUP_LIMITS:
        try:
            with open(path) as file:
                text = file.read().strip()
        except OSError:
            continue
        if text.isdigit():
            found = min(found, int(text))
    return found
