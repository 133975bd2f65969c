"""JSON text read as Python's json reads it, but a value nested too deeply for it is a JSONDecodeError too, which
every reader of JSON turns into a line naming the file and line, where Python's parser raised RecursionError."""

from __future__ import annotations

import json

_DECODER = json.JSONDecoder()


def loads(text: str):
    """json.loads."""
    return raw_decode(text, 0, whole=True)[0]


def raw_decode(text: str, position: int, whole: bool = False) -> tuple[object, int]:
    """JSONDecoder.raw_decode: the value that starts at `position`, and where it ends; with `whole`, the value
    that is all of `text` (blanks around it aside), as json.loads reads it."""
    try:
        if whole:
            return json.loads(text), len(text)
        return _DECODER.raw_decode(text, position)
    except RecursionError:  # one line of 100,000 nested objects or lists
        raise json.JSONDecodeError("nested too deeply", text, position) from None
