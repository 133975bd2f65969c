"""The errors a user can fix, and the one line a TensorFlow error comes down to.

Every command turns a UserError into that one line and exit code 2 (see commandline.py).
"""

from __future__ import annotations

import re


class UserError(Exception):
    """Something the user can fix: bad input, a bad flag, a missing file.

    The message names the culprit (file, line, flag) and is printed alone, with no traceback.
    """


class NotFound(UserError):
    """A file or Cloud Storage object that is not there."""


_NOISE = ("Graph execution error", "Detected at node", "<stack traces", "File ", "Node:", "[[")


def tensorflow_error_line(error) -> str:
    """The line of a TensorFlow error (`tf.errors.OpError`) that says what went wrong, without the
    header, the trace of where the failing op was defined, and the op and function names around it."""
    lines = [line.strip() for line in error.message.splitlines()]
    wrong = next((text for text in lines if text and not text.startswith(_NOISE)), lines[0] if lines else "")
    message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", wrong)
    return re.sub(r"\s*\[Op:.*$", "", message).strip()
