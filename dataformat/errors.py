"""The errors a user can fix, and the one line a TensorFlow error comes down to.

Every command turns a UserError into that one line and exit code 2 (see commandline.py).
"""

from __future__ import annotations

import re

SHOWN_CHARACTERS = 60  # of a value a message quotes, at most: a cell may hold a whole text, or an image as SVG


class UserError(Exception):
    """Something the user can fix: bad input, a bad flag, a missing file.

    The message names the culprit (file, line, flag) and is printed alone, with no traceback.
    """


class NotFound(UserError):
    """A file or Cloud Storage object that is not there."""


_NOISE = ("Graph execution error", "Detected at node", "<stack traces", "File ", "Node:", "[[")


def tensorflow_error_line(error) -> str:
    """The line of a TensorFlow error (`tf.errors.OpError`) that says what went wrong, without the
    header, the trace of where the failing op was defined, and the op and function names around it; of another
    error (an OSError of a file cut short), its own words."""
    lines = [line.strip() for line in getattr(error, "message", str(error)).splitlines()]
    wrong = next((text for text in lines if text and not text.startswith(_NOISE)), lines[0] if lines else "")
    message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", wrong)
    return re.sub(r"\s*\[Op:.*$", "", message).strip()


def shortened(text: str) -> str:
    """`text` for a one-line message: itself, or its first SHOWN_CHARACTERS characters and its length."""
    return text if len(text) <= SHOWN_CHARACTERS else f"{text[:SHOWN_CHARACTERS]}... ({len(text):,} characters)"


def quoted(value) -> str:
    """A value of the data, quoted for a one-line message as repr quotes it, but cut as `shortened` cuts it."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= SHOWN_CHARACTERS:
        return repr(value)
    cut = repr(text[:SHOWN_CHARACTERS]) if isinstance(value, str) else text[:SHOWN_CHARACTERS]
    return f"{cut}... ({len(text):,} characters)"


def yaml_problem(error) -> str:
    """A YAML parser's error in a few words, with its place where it has one: "line 1, column 13: expected ',' or
    ']', but got '<stream end>' (while parsing a flow sequence)"."""
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    return where + problem + (f" ({context})" if context else "")
