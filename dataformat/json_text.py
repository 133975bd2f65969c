"""JSON text read as Python's json reads it, but a value nested too deeply for it is a JSONDecodeError too, which
every reader of JSON turns into a line naming the file and line, where Python's parser raised RecursionError."""

from __future__ import annotations

import contextlib
import json

_DECODER = json.JSONDecoder()


def loads(text: str):
    """json.loads."""
    with _nesting_as_decode_error(text, 0):
        return json.loads(text)


def raw_decode(text: str, position: int) -> tuple[object, int]:
    """JSONDecoder.raw_decode: the value that starts at `position`, and where it ends."""
    with _nesting_as_decode_error(text, position):
        return _DECODER.raw_decode(text, position)


@contextlib.contextmanager
def _nesting_as_decode_error(text: str, position: int):
    try:
        yield
    except RecursionError:  # one line of 100,000 nested objects or lists
        raise json.JSONDecodeError("nested too deeply", text, position) from None
