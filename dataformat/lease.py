"""One folder, one run: a lease on FOLDER/.lease that only one live run can hold at a time.

Training (a job folder) and preprocessing (a dataset output folder) hold it while they write, so a
second run on the same folder stops at once with exit code 2 and one line naming the holder (host,
process id, since when) instead of interleaving its files with the first run's.

A run that died never blocks a rerun:

- Local folders use `flock` on FOLDER/.lease: the kernel drops the lock when its holder's process
  ends, however it ends (SIGKILL and out-of-memory kills included). The file keeps the holder's
  JSON so that a refused run can name it.
- gs:// folders have no locks, so FOLDER/.lease is an object created only if absent
  (`if_generation_match=0`) and renewed by a heartbeat thread, each renewal conditional on the
  generation written last. It records when it expires; a lease past that time was left by a run
  that died, and the next run takes it over (again conditionally, so only one run can).

Usage:

    with lease.held(job_dir, what="training", flag="--job-dir"):
        ...  # write in job_dir
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import logging
import os
import posixpath
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from dataformat import gcs, storage
from dataformat.errors import UserError

log = logging.getLogger(__name__)

LEASE_NAME = ".lease"
# gs:// only. A holder renews its lease every HEARTBEAT_SECS; a lease not renewed for TTL_SECS is
# taken for abandoned. The margin covers a few failed renewals and modest clock skew between hosts
# (`expires` is the holder's clock, compared against the reader's). Tests make both small.
HEARTBEAT_SECS = 20.0
TTL_SECS = 90.0
_ATTEMPTS = 5  # gs:// acquisition rounds, each lost to a concurrent change (creation, release, takeover)
_LOCAL_READ_TRIES = 20  # a lock holder writes its JSON just after locking; a refused run waits this many...
_LOCAL_READ_PAUSE_SECS = 0.05  # ...pauses for it before naming the holder as unknown


@contextlib.contextmanager
def held(folder: str, what: str, flag: str | None = None) -> Iterator[None]:
    """Holds FOLDER/.lease while the block runs; UserError if another live run holds it.

    `what` is the kind of run this is ("training", "preprocessing"): the lease records it, and a run
    refused later reads it back ("in use by another training run"). `flag` is the command-line flag
    that chose the folder ("--job-dir"), so that the message points at what to change. The folder is
    created if missing (locally; Cloud Storage has no folders). The lease is released when the block
    ends, by an exception too, and by the kernel (local) or expiry (gs://) if the process dies.

    FOLDER/.lease (LEASE_NAME) stays in a local folder after the run, empty; code that checks or
    clears a folder's contents must leave it alone: removing it while held would let a second run
    lock a new file.
    """
    hold = _held_on_gcs if gcs.is_gcs(folder) else _held_locally
    with hold(folder, what, flag or ""):
        yield


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: what its file or object records."""

    host: str
    pid: int
    since: str  # ISO 8601, UTC
    what: str
    expires: float | None = None  # gs:// only: epoch seconds, by the holder's clock
    token: str = ""  # gs:// only: tells this run's own lease from another's

    @staticmethod
    def me(what: str) -> Holder:
        since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        return Holder(socket.gethostname(), os.getpid(), since, what, token=uuid.uuid4().hex)

    def renewed(self) -> Holder:
        """This holder with `expires` pushed TTL_SECS from now."""
        return Holder(self.host, self.pid, self.since, self.what, time.time() + TTL_SECS, self.token)

    def to_json(self, *, local: bool = False) -> bytes:
        record = {"host": self.host, "pid": self.pid, "since": self.since, "what": self.what}
        if not local:
            record.update(expires=self.expires, token=self.token)
        return json.dumps(record).encode()

    @staticmethod
    def from_json(data: bytes) -> Holder | None:
        """The holder a lease records, or None when it records none that this module wrote."""
        try:
            record = json.loads(data)
            expires = record.get("expires")
            return Holder(
                str(record["host"]),
                int(record["pid"]),
                str(record["since"]),
                str(record.get("what", "")),
                None if expires is None else float(expires),
                str(record.get("token", "")),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def has_expired(self) -> bool:
        return self.expires is None or self.expires < time.time()


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _since(holder: Holder) -> str:
    """`since` as the message shows it: 2026-11-23 02:59:03 UTC."""
    try:
        return _utc(datetime.datetime.fromisoformat(holder.since.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return holder.since


def _in_use(folder: str, flag: str, holder: Holder | None, after: str = "") -> UserError:
    """The one line a refused run prints: which folder, who holds it, what to do."""
    name = f"{flag} {folder}" if flag else folder
    if holder is None:
        who = "another run (which has not recorded itself yet)"
    else:
        kind = f"{holder.what} " if holder.what else ""
        who = f"another {kind}run (host {holder.host}, pid {holder.pid}, since {_since(holder)})"
    return UserError(f"{name} is in use by {who}; wait for it to finish, or use another folder{after}")


# Local folders: flock.


@contextlib.contextmanager
def _held_locally(folder: str, what: str, flag: str) -> Iterator[None]:
    """Holds an exclusive flock on FOLDER/.lease, with this run's JSON in the file.

    The lock belongs to the open file description, not to the process: the kernel releases it when
    the last descriptor for it closes, which happens when the process dies, however it dies.
    O_CLOEXEC keeps an exec'd child (a subprocess, or a multiprocessing "spawn" worker such as
    preprocessing's) from inheriting the descriptor and so the lock; it shares it only for the
    instant between fork and exec. A forked child that does not exec (multiprocessing's "fork"
    start method) would share it for its whole life, and keep the folder locked after this process
    ended, until the child ends too; the trainer does not fork after taking the lease.
    """
    path = os.path.join(folder, LEASE_NAME)
    storage.make_folder(folder)  # a folder that cannot be made is named as such, not as its lease file
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise UserError(f"{path}: cannot create the lease file ({storage.describe_os_error(error)})") from None
    try:
        _lock(fd, path, folder, flag)
        _write(fd, Holder.me(what).to_json(local=True))
        try:
            yield
        finally:
            # Keep the file, empty: removing it would race with a run that opened it and is about
            # to lock it (that run would lock a file no longer in the folder). Emptying it says
            # nobody holds it; the lock, not the content, is what counts.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


def _lock(fd: int, path: str, folder: str, flag: str) -> None:
    """Takes the lock without waiting; UserError naming the holder if another run has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(folder, flag, _local_holder(fd)) from None
    except OSError as error:  # e.g. a file system without locks
        raise UserError(f"{path}: cannot lock the lease file ({error.strerror})") from None


def _local_holder(fd: int) -> Holder | None:
    """The holder that the locked file records, waiting briefly for one that has just locked it."""
    for _ in range(_LOCAL_READ_TRIES):
        holder = Holder.from_json(_read(fd))
        if holder is not None:
            return holder
        time.sleep(_LOCAL_READ_PAUSE_SECS)
    return None


def _read(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)


def _write(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


# gs:// folders: a conditionally written object, renewed by a heartbeat.


@contextlib.contextmanager
def _held_on_gcs(folder: str, what: str, flag: str) -> Iterator[None]:
    """Holds the lease object FOLDER/.lease, renewed in the background, deleted at the end."""
    ours = _GcsLease(posixpath.join(folder.rstrip("/"), LEASE_NAME), Holder.me(what))
    ours.acquire(folder, flag)
    try:
        yield
    finally:
        ours.release()


class _GcsLease:
    """One run's lease object: acquire, renew on a daemon thread, release.

    Every write is conditional on the generation this run saw or wrote last, so two runs can never
    both believe they hold the lease: the loser of a race gets PreconditionFailed (HTTP 412).
    """

    def __init__(self, path: str, me: Holder):
        bucket, name = gcs.split(path)
        self.path = path
        self.me = me
        self.blob = gcs._client().bucket(bucket).blob(name)
        self.generation: int | None = None  # of the object as this run last wrote it
        self.lost = False  # another run took the lease over
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, folder: str, flag: str) -> None:
        """Creates the lease, or takes over an expired one; UserError naming a live holder."""
        holder = None
        for _ in range(_ATTEMPTS):
            if self._write(0):  # create only if absent
                break
            generation, holder = self._current()
            if generation is None:  # released meanwhile: try creating it again
                continue
            if holder is not None and holder.token == self.me.token:  # our own write, whose reply was lost
                self.generation = generation
                break
            if holder is not None and not holder.has_expired():
                after = f" (if that run died, its lease lapses at {_utc(holder.expires)})" if holder.expires else ""
                raise _in_use(folder, flag, holder, after)
            if self._write(generation):  # abandoned: take it over, unless another run just did
                left = holder or "a record this program cannot read"
                log.warning("Took over %s, which a run that stopped renewing it had left: %s", self.path, left)
                break
        else:
            raise _in_use(folder, flag, holder)
        self._thread = threading.Thread(target=self._renew_until_stopped, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stops renewing and deletes the lease if it is still ours. Never raises: a lease that
        cannot be deleted lapses by itself, and an error here would hide the block's own."""
        from google.api_core.exceptions import NotFound, PreconditionFailed

        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lost:
            return
        try:
            with gcs.errors(posixpath.dirname(self.path)):  # failures name the folder the user gave
                try:
                    self.blob.delete(if_generation_match=self.generation)
                except (NotFound, PreconditionFailed):
                    log.warning("%s was no longer this run's lease at the end; left as it is", self.path)
        except UserError as error:  # retries have run out
            log.warning("Could not delete the lease (%s); it lapses by itself within %d s", error, TTL_SECS)

    def _write(self, generation: int) -> bool:
        """Writes this run's record, renewed, if the object's generation is `generation` (0: if
        absent). False if it is not; True, with self.generation updated, if written."""
        from google.api_core.exceptions import PreconditionFailed

        with gcs.errors(posixpath.dirname(self.path)):
            try:
                self.blob.upload_from_string(
                    self.me.renewed().to_json(), content_type="application/json", if_generation_match=generation
                )
            except PreconditionFailed:
                return False
        self.generation = self.blob.generation
        return True

    def _current(self) -> tuple[int | None, Holder | None]:
        """The lease object's generation and holder as it stands; (None, None) if it is gone, or
        changed while being read (the caller looks again).

        The holder is None when the object records none that this module wrote: taken for expired."""
        from google.api_core.exceptions import NotFound, PreconditionFailed

        with gcs.errors(posixpath.dirname(self.path)):
            blob = self.blob.bucket.get_blob(self.blob.name)
            if blob is None:
                return None, None
            try:
                data = blob.download_as_bytes(if_generation_match=blob.generation)
            except (NotFound, PreconditionFailed):
                return None, None
        return blob.generation, Holder.from_json(data)

    def _renew_until_stopped(self) -> None:
        """The heartbeat: every HEARTBEAT_SECS, pushes `expires` on, conditional on our last write."""
        while not self._stop.wait(HEARTBEAT_SECS):
            try:
                if self._write(self.generation) or self._still_mine():
                    continue
            except UserError as error:  # transient, most likely: the lease is good until it expires
                log.warning("Could not renew %s (%s); trying again in %d s", self.path, error, HEARTBEAT_SECS)
                continue
            # Another run took the lease over: this one stopped renewing for longer than TTL_SECS
            # (a long pause, a lost network) and the other found it expired. Both now write in
            # the folder. A production system would stop this run (e.g. a training hook that
            # checks `lost` and requests a stop); here we only say so, loudly, and stop renewing.
            self.lost = True
            log.error(
                "Lost the lease %s to another run after failing to renew it for %d s; two runs may now be "
                "writing in the same folder",
                self.path,
                TTL_SECS,
            )
            return

    def _still_mine(self) -> bool:
        """After a refused renewal: whether the object is ours anyway (a retried write whose first
        attempt had gone through); if so, adopts its generation."""
        generation, holder = self._current()
        if generation is not None and holder is not None and holder.token == self.me.token:
            self.generation = generation
            return True
        return False
