"""File operations for dataset folders, on local disk or gs://: list, read, remove, write atomically.

A file appears under its final name only once it is complete, so a reader never sees a
half-written shard: locally it is written to a hidden temporary name and renamed; on Cloud
Storage it streams into a resumable upload that creates the object when it completes.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob
import os
import posixpath
from collections.abc import Iterator
from typing import BinaryIO

from dataformat import gcs
from dataformat.errors import UserError


def join(folder: str, name: str) -> str:
    return posixpath.join(folder, name) if gcs.is_gcs(folder) else os.path.join(folder, name)


def list_names(folder: str) -> list[str]:
    """The names in `folder` (files and sub-folders), or [] when it does not exist."""
    if gcs.is_gcs(folder):
        return gcs.list_names(folder)
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def list_below(folder: str) -> list[str]:
    """The paths, relative to `folder`, of every file below it at any depth, sorted; [] when it does not exist."""
    if gcs.is_gcs(folder):
        return gcs.list_below(folder)
    found = []
    for root, _, files in os.walk(folder, followlinks=True):  # as listing a folder at a time follows links
        found += [os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/") for name in files]
    return sorted(found)


def matching(pattern: str) -> list[str]:
    """The files a glob matches, sorted (on gs://, the wildcards may only be in the last part)."""
    if not gcs.is_gcs(pattern):
        return sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
    folder, name = posixpath.split(pattern)
    return [join(folder, match) for match in fnmatch.filter(gcs.list_names(folder), name)]


def is_folder(path: str) -> bool:
    return gcs.is_folder(path) if gcs.is_gcs(path) else os.path.isdir(path)


def exists(path: str) -> bool:
    return gcs.exists(path) if gcs.is_gcs(path) else os.path.exists(path)


def same_folder(one: str, other: str) -> bool:
    """Whether two folders are one: local ones by their real paths (a link to a folder is that folder), gs:// ones by
    their names."""
    if gcs.is_gcs(one) or gcs.is_gcs(other):
        return one.rstrip("/") == other.rstrip("/")
    return os.path.realpath(one) == os.path.realpath(other)


WILDCARDS = "*?["  # what makes a path a glob


def is_pattern(path: str) -> bool:
    """Whether `path` is a glob: it holds WILDCARDS and names no file or folder as it is (runs[1]/ may be a folder)."""
    return any(char in path for char in WILDCARDS) and not exists(path) and not is_folder(path)


def is_stream(path: str) -> bool:
    """Whether a local path is a pipe or a device (/dev/stdin, a shell's <(...)): read once, and not seekable."""
    return not gcs.is_gcs(path) and os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def remove(path: str) -> None:
    if gcs.is_gcs(path):
        gcs.remove(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def make_folder(folder: str) -> None:
    """Creates a local folder and its parents; UserError, saying why, when it cannot be one."""
    if gcs.is_gcs(folder):  # Cloud Storage has no folders to make
        return
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UserError(f"{folder}: is a file, not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise UserError(f"{folder}: cannot create this folder ({describe_os_error(error)})") from None


def describe_os_error(error: OSError) -> str:
    """What went wrong with a file, in words a user acts on: a full disk said as such."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full; free some space and rerun"
    if error.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a folder"
    return error.strerror or str(error)


def open_read(path: str) -> BinaryIO:
    return gcs.open_read(path) if gcs.is_gcs(path) else open(path, "rb")


def temporary_name(name: str) -> str:
    """The hidden name a local file has while this process writes it (two writers never share one)."""
    return f".{name}.partial-{os.getpid()}"


WRITE_BUFFER_BYTES = 2**20  # shards are written a record at a time: one system call per MiB, not per record


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator[BinaryIO]:
    """Yields a file to write; it appears at `path` only if the block finishes without error."""
    if gcs.is_gcs(path):
        with gcs.atomic_writer(path) as file:
            yield file
        return
    folder, name = os.path.split(path)
    partial = os.path.join(folder, temporary_name(name))
    try:
        with open(partial, "wb", buffering=WRITE_BUFFER_BYTES) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    except OSError as error:
        if error.filename not in (None, partial, path) and error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise  # another file's problem (an input, say): its own message names it
        raise UserError(f"{path}: cannot write ({describe_os_error(error)})") from None
    finally:
        remove(partial)


def write_text_atomically(path: str, text: str) -> None:
    with atomic_writer(path) as file:
        file.write(text.encode("utf-8"))
