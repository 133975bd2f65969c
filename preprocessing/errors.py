"""The one exception type that both command lines turn into a one-line message."""


class UserError(Exception):
    """Something the user can fix: bad input, a bad flag, a missing file.

    The message names the culprit (file, line, flag) and is printed alone, with no traceback.
    """
