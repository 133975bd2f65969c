"""gs:// paths through google-cloud-storage: listing, reading, deleting and streaming uploads.

Each shard streams into a resumable upload as it is written, so no shard is held in memory,
and the object appears only when the upload completes: an interrupted upload leaves nothing
under the final name. Requests are retried with exponential backoff on 429, 5xx and dropped
connections (the library's DEFAULT_RETRY), for up to 2 minutes; the first retry is logged, so a run
without a network does not look hung. Errors become one-line UserErrors that say what to do and never
contain a credential.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterator
from typing import BinaryIO

from dataformat.errors import NotFound, UserError

log = logging.getLogger(__name__)

SCHEME = "gs://"
UPLOAD_CHUNK_BYTES = 8 * 2**20  # resumable-upload chunk: a multiple of 256 KiB, as the API requires
CREDENTIALS_HELP = (
    "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file"
)


def is_gcs(path: str) -> bool:
    return path.startswith(SCHEME)


def split(path: str) -> tuple[str, str]:
    """gs://bucket/a/b -> ("bucket", "a/b")."""
    bucket, _, name = path[len(SCHEME) :].partition("/")
    if not bucket:
        raise UserError(f"{path}: no bucket name")
    return bucket, name.rstrip("/")


@functools.cache
def _client():
    """One client per process (worker processes make their own). Without credentials, an anonymous one:
    public buckets read, as TensorFlow's own gs:// reads do, and anything else answers 401, which says
    what to do. Commands that write to gs:// call check_credentials first."""
    from google.cloud import storage

    retries = logging.getLogger("google.api_core.retry")
    retries.setLevel(logging.DEBUG)  # its records are made, for the filter to see
    retries.addFilter(_SayRetrying())
    if _stood_in() or credentials_found():
        return storage.Client()
    return storage.Client.create_anonymous_client()


class _SayRetrying(logging.Filter):
    """On the client library's retry logger, which says each retry only at DEBUG: says the process's
    first retry at WARNING. The library's own records show at --verbosity debug only."""

    said = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.said:
            self.said = True
            log.warning(
                "a request to Google Cloud failed (no network? busy?); retrying with backoff for up to 2 minutes"
            )
        return logging.getLogger().isEnabledFor(logging.DEBUG)


def _stood_in() -> bool:
    """Whether a local emulator or TensorFlow's test token stands in for Cloud Storage and its login."""
    return bool(os.environ.get("STORAGE_EMULATOR_HOST") or os.environ.get("GOOGLE_AUTH_TOKEN_FOR_TESTING"))


def credentials_found() -> bool:
    """Whether google-auth finds Google Cloud credentials: a login, a key file or a metadata server."""
    import google.auth
    import google.auth.exceptions

    try:
        google.auth.default()
    except google.auth.exceptions.DefaultCredentialsError:
        return False
    return True


def check_credentials() -> None:
    """UserError, saying what to do, when no Google Cloud credentials can be found (and nothing stands in)."""
    if not (_stood_in() or credentials_found()):
        raise no_credentials()


def no_credentials() -> UserError:
    """What to say where google-auth finds no credentials: the key file GOOGLE_APPLICATION_CREDENTIALS names where
    it names one (it was set, and the line said to set it)."""
    named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        why = "no such file" if not os.path.isfile(named) else "not a key file google-auth reads"
        return UserError(f"GOOGLE_APPLICATION_CREDENTIALS {named}: {why}; name a service-account key file there")
    return UserError(f"no Google Cloud credentials found: {CREDENTIALS_HELP}")


def _http_error(path: str, status: int) -> UserError:
    """The message for an HTTP status that retrying will not fix."""
    if status == 404:
        return NotFound(f"{path}: not found (404); does the bucket exist?")
    if status == 403:
        return UserError(f"{path}: permission denied (403); check the account's roles on the bucket")
    if status == 401:
        return UserError(f"{path}: not authorized (401): {CREDENTIALS_HELP}")
    return UserError(f"{path}: Cloud Storage answered HTTP {status}")


@contextlib.contextmanager
def errors(path: str) -> Iterator[None]:
    """Turns Cloud Storage failures on `path` into one-line UserErrors."""
    import google.auth.exceptions
    import requests
    from google.api_core import exceptions
    from google.resumable_media import InvalidResponse  # what resumable uploads raise

    try:
        yield
    except exceptions.ClientError as error:
        raise _http_error(path, error.code) from None
    except InvalidResponse as error:
        raise _http_error(path, error.response.status_code) from None
    except (requests.exceptions.RequestException, google.auth.exceptions.TransportError) as error:
        # Raised only once the retries with backoff have run out.
        raise UserError(f"{path}: cannot reach Cloud Storage ({type(error).__name__})") from None
    except google.auth.exceptions.GoogleAuthError as error:
        raise UserError(f"{path}: cannot authenticate ({type(error).__name__}): {CREDENTIALS_HELP}") from None
    except exceptions.RetryError:
        raise UserError(f"{path}: cannot reach Cloud Storage (gave up after retrying with backoff)") from None
    except exceptions.GoogleAPIError as error:
        code = getattr(error, "code", "")
        raise UserError(f"{path}: Cloud Storage failed ({type(error).__name__} {code})") from None


def _blob(path: str):
    bucket, name = split(path)
    return _client().bucket(bucket).blob(name)


def list_names(folder: str) -> list[str]:
    """Object and sub-folder names directly under `folder`."""
    bucket, prefix = split(folder)
    prefix = f"{prefix}/" if prefix else ""
    with errors(folder):
        pages = _client().list_blobs(bucket, prefix=prefix, delimiter="/")
        names = [blob.name[len(prefix) :] for blob in pages]
        folders = [p[len(prefix) :].rstrip("/") for p in pages.prefixes]
    return sorted(set(filter(None, names + folders)))


def list_below(folder: str) -> list[str]:
    """Object names below `folder` at any depth, relative to it: one request a thousand objects."""
    bucket, prefix = split(folder)
    prefix = f"{prefix}/" if prefix else ""
    with errors(folder):
        names = [blob.name[len(prefix) :] for blob in _client().list_blobs(bucket, prefix=prefix)]
    return sorted(name for name in names if name and not name.endswith("/"))  # not the consoles' folder markers


def is_folder(path: str) -> bool:
    bucket, prefix = split(path)
    with errors(path):
        return any(True for _ in _client().list_blobs(bucket, prefix=f"{prefix}/", max_results=1))


def check_bucket(path: str, flag: str) -> None:
    """UserError naming `flag` where the bucket of `path` is missing or refuses a listing: TensorFlow's own calls
    there hung (makedirs) or gave advice that would fail."""
    try:
        is_folder(path)
    except UserError as error:
        raise UserError(f"{flag} {error}") from None


def exists(path: str) -> bool:
    with errors(path):
        return _blob(path).exists()


def remove(path: str) -> None:
    from google.api_core.exceptions import NotFound

    with errors(path), contextlib.suppress(NotFound):
        _blob(path).delete()


def open_read(path: str) -> BinaryIO:
    with errors(path):
        blob = _blob(path)
        blob.reload()  # fails here, with a clear error, if the object is missing
        return blob.open("rb")


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator[BinaryIO]:
    """A streaming resumable upload; the object appears only when the block completes.

    On an error inside the block (Ctrl-C too) the upload is left unfinished, so nothing appears at `path`: an
    unfinished resumable upload is no object, and Cloud Storage forgets it within a week. google-cloud-storage
    2.x's writer, closed by an error, uploaded what it held and finished a truncated object
    (googleapis/python-storage#1228): a Ctrl-C left half a shard under its final name.
    """
    from google.cloud.storage.retry import DEFAULT_RETRY

    with errors(path):  # a refusal while the block writes (each full chunk is sent) is one line too
        file = _blob(path).open("wb", chunk_size=UPLOAD_CHUNK_BYTES, retry=DEFAULT_RETRY)
        try:
            yield file
        except BaseException:
            _abandon(file)
            raise
        file.close()


def _abandon(file) -> None:
    """Leaves an upload unfinished: 3.x's writer ends its session (terminate); 2.x's has no such call, and its
    own buffer, closed, makes its close() send and finish nothing."""
    terminate = getattr(file, "terminate", None)
    if terminate:
        terminate()
    else:
        file._buffer.close()
