"""File operations for dataset folders: list, remove and write shards atomically.

A shard appears under its final name only once it is complete, so a reader never sees a
half-written file: locally it is written to a hidden temporary name and renamed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO


def join(folder: str, name: str) -> str:
    return os.path.join(folder, name)


def list_names(folder: str) -> list[str]:
    """The names in `folder`, or [] when it does not exist."""
    if not os.path.isdir(folder):
        return []
    return sorted(os.listdir(folder))


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def make_folder(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)


def temporary_name(name: str) -> str:
    """The hidden name a file has while it is being written."""
    return f".{name}.partial"


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator[BinaryIO]:
    """Yields a file to write; it appears at `path` only if the block finishes without error."""
    folder, name = os.path.split(path)
    partial = os.path.join(folder, temporary_name(name))
    try:
        with open(partial, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    finally:
        remove(partial)


def write_text_atomically(path: str, text: str) -> None:
    with atomic_writer(path) as file:
        file.write(text.encode("utf-8"))


def open_read(path: str) -> BinaryIO:
    return open(path, "rb")


def is_folder(path: str) -> bool:
    return os.path.isdir(path)


def exists(path: str) -> bool:
    return os.path.exists(path)
