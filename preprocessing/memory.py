"""Freed memory handed back to the system between a table's blocks and passes, so that its conversion's memory
stays flat."""

from __future__ import annotations

import ctypes

import pyarrow as pa


def _glibc_malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: the heap is left as it is
        return None


_MALLOC_TRIM = _glibc_malloc_trim()


def release_memory() -> None:
    """Hands freed memory back to the system: Arrow's pool's, and glibc's heap, which otherwise keeps
    what numpy's arrays of each block freed (Dask's advice for the same: malloc_trim). Without it,
    pass 1 left 180 MB to pass 2."""
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)
