"""The edge that every command line shares: one parser style, one logging setup, and one way for a
mistake to reach the user. A UserError, a bad flag included, becomes one line on stderr and exit
code 2; Ctrl-C becomes one line and exit code 130. No traceback reaches the user for either.

Every parser also takes `--verbosity`, accepts `--flag_name` for `--flag-name` (as absl and
the Cloud ML samples spell flags), and stops on an unknown flag that is a near miss of one of
its own (`--learning-rat`), which would otherwise be ignored and leave a default in force.
"""

from __future__ import annotations

import argparse
import codecs
import difflib
import logging
import math
import os
import signal
import stat
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn

from dataformat.errors import UserError

log = logging.getLogger("commandline")

VERBOSITY = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
NEAR_MISS = 0.8  # difflib's similarity from which an unknown flag is taken for a misspelt one


def package_version() -> str:
    """The installed package's version (setup.py's), or "(not installed)" when run from a source tree."""
    from importlib import metadata

    try:
        return metadata.version("queue-trainer")
    except metadata.PackageNotFoundError:
        return "(not installed)"


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the examples shown after the options, `--verbosity`, underscore aliases, and a
    usage mistake raised as a UserError like every other mistake (argparse would print the whole
    usage first)."""

    VERBOSITY_DEFAULT = "info"

    def __init__(self, prog: str, description: str, examples: str, **kwargs):
        super().__init__(
            prog=prog,
            description=description,
            epilog=examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,  # --learn would silently mean --learning-rate; near misses are refused below
            **kwargs,
        )
        self.add_argument(
            "--verbosity",
            choices=list(VERBOSITY),
            default=self.VERBOSITY_DEFAULT,
            help="info (default): progress and warnings; debug: the libraries' own log lines too (TensorFlow's, "
            "where it runs); warning, error: less",
        )
        self.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")

    def error(self, message: str) -> NoReturn:
        if message.startswith(("the following arguments are required", "one of the arguments")):
            message += f" (see {self.prog} --help)"  # argparse's usage line, which said the rest, is not printed
        raise UserError(message)

    def add_subparsers(self, **kwargs):
        return super().add_subparsers(parser_class=_Subcommand, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None, namespace=None):
        parsed, unknown = super().parse_known_args(self._dashed(args), namespace)
        self._refuse_near_misses(unknown)
        if "verbosity" in parsed:  # a subcommand's parser leaves it to the main parser
            set_verbosity(parsed.verbosity)
        return parsed, unknown

    def _flags(self) -> list[str]:
        return [flag for action in self._actions for flag in action.option_strings if flag.startswith("--")]

    def _dashed(self, args: Sequence[str] | None) -> list[str]:
        """--learning_rate[=x] as --learning-rate[=x], for this parser's own flags only: flags it does
        not know (Beam's --temp_location) pass on as they are."""
        known = set(self._flags())
        dashed = []
        for arg in sys.argv[1:] if args is None else args:
            name, equals, value = arg.partition("=")
            alias = name.replace("_", "-")
            dashed.append(alias + equals + value if arg.startswith("--") and alias in known else arg)
        return dashed

    def _refuse_near_misses(self, unknown: list[str]) -> None:
        for arg in unknown:
            name = arg.partition("=")[0]
            if not name.startswith("--"):
                continue
            close = difflib.get_close_matches(name.replace("_", "-"), self._flags(), n=1, cutoff=NEAR_MISS)
            if close:
                raise UserError(f"unknown flag {name}: did you mean {close[0]}?")


class _Subcommand(ArgumentParser):
    """A subcommand's parser. Its --verbosity has no default: argparse copies a subcommand's
    defaults over what the main parser read, which would undo `--verbosity X SUBCOMMAND`."""

    VERBOSITY_DEFAULT = argparse.SUPPRESS


def _hide_name_sanitizing_warning(record: logging.LogRecord) -> bool:
    """False for TensorFlow's warning, on loading a signature, that an input's name ("zip code") is no
    Python identifier: the signature still takes the input by that name."""
    return "is not a valid tf.function parameter name" not in record.getMessage()


def set_verbosity(level: str) -> None:
    """This program's log level, and TensorFlow's: its INFO lines only at debug, and none of its warnings
    about table columns' names."""
    logging.getLogger().setLevel(VERBOSITY[level])
    quieter = max(VERBOSITY[level], logging.WARNING) if level != "debug" else logging.DEBUG
    for name in ("tensorflow", "absl"):
        logging.getLogger(name).setLevel(quieter)
        if _hide_name_sanitizing_warning not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_hide_name_sanitizing_warning)
    # TensorFlow's C++ side reads this when it loads: 0 all, 1 no INFO, 2 no WARNING, 3 no ERROR.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", {"debug": "0", "info": "1", "warning": "2", "error": "3"}[level])


MAX_INT = 2**31 - 1  # TensorFlow takes steps, sizes and counts as int32 in places (a larger one: a traceback)


def positive_int(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_INT:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer of at most {MAX_INT:,}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_INT:
        raise argparse.ArgumentTypeError(f"{text} is not zero or a positive integer of at most {MAX_INT:,}")
    return value


def positive_number(text: str) -> float:
    """A finite number above 0 (seconds between two looks: 0 would ask without pause, nan and inf never)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


def encoding(text: str) -> str:
    """A text encoding's name, as Python knows it (--encoding)."""
    try:
        "".encode(text)  # a codec of bytes to bytes (hex, base64) or text to text (rot13) is no text encoding
        return codecs.lookup(text).name
    except LookupError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a text encoding Python knows (e.g. utf-8, latin-1, cp1252)"
        ) from None


def path(text: str) -> str:
    """A local path or gs:// URI flag, with ~ as the shell expands it (--job-dir=~/runs, and a YAML file's ~/data,
    which no shell sees: taken as is, they made a folder named ~ in the current one)."""
    return os.path.expanduser(text)


WHITESPACE = "whitespace"  # --delimiter's word for runs of spaces and tabs between fields


def delimiter(text: str) -> str:
    """One character between a CSV file's fields (--delimiter); \\t or tab for a tab; WHITESPACE for runs of
    spaces and tabs."""
    text = {"\\t": "\t", "tab": "\t"}.get(text, text)
    if text != WHITESPACE and (len(text) != 1 or text in '"\r\n'):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one character other than a quote or a newline, nor {WHITESPACE!r}"
        )
    return text


def name(text: str) -> str:
    """A column's name, as headers' names are read: trimmed of blanks (pandas keeps ' Medal' from 'Name, Medal')."""
    return text.strip()


def names(text: str) -> tuple[str, ...]:
    """Column names, comma-separated (A,B), each as `name` reads it."""
    return tuple(name(part) for part in text.split(",") if name(part))


def exit_at_once(code: int) -> NoReturn:
    """Ends the process with `code` once its output is flushed, without the interpreter's teardown: after a model
    was loaded and a table read, that teardown sometimes met a library's thread still running (TensorFlow's or
    pyarrow's) and aborted, "terminate called without an active exception" and exit 134 in place of the error's 2
    (16 runs of 20 on a loaded machine). Command lines only: a test calls main() and goes on."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a scheduler's stop, `timeout`, a closed terminal), taken as Ctrl-C is: what cleans up after
    an interruption (a table's temporary files) runs, where the signal's default action ended the process at once."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminated(signum: int, frame) -> NoReturn:
    raise Terminated(signum)


def run(command: Callable[[], int], interrupted: str | Callable[[], str], stop_signals: tuple[int, ...] = ()) -> int:
    """Runs a command's body with logging set up; returns its exit code. `interrupted` (or what it returns) says,
    after Ctrl-C, what state the work was left in; after each of `stop_signals` too (exit 128 + the signal), unless
    the process was started to ignore it (`nohup` ignores SIGHUP: a closed terminal stopped a nohup'd run). The
    trainer keeps their default action until its session exists (trainer/preemption.py)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    # Google's libraries warn on import, years ahead, that they will drop this Python: not the user's concern today.
    warnings.filterwarnings("ignore", message="You are using a Python version", category=FutureWarning)
    taken = [signum for signum in stop_signals if signal.getsignal(signum) is not signal.SIG_IGN]
    before = {signum: signal.signal(signum, _terminated) for signum in taken}
    try:
        return command()
    except UserError as error:
        log.error("%s", error)
        return 2
    except KeyboardInterrupt as error:
        log.error("Interrupted: %s", interrupted() if callable(interrupted) else interrupted)
        return 128 + error.signum if isinstance(error, Terminated) else 130
    except BrokenPipeError:
        if not _stdout_is_a_pipe():
            raise
        # The output's reader stopped reading (`qt-predict ... | head`): it has what it wanted. Stop quietly, as a
        # shell tool that SIGPIPE stops does; what is left in stdout's buffer goes nowhere, not into a second error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    finally:
        for signum, handler in before.items():  # as they were: a test runs commands in its own process
            signal.signal(signum, handler)


def _stdout_is_a_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
    except (OSError, ValueError):  # no file behind it (a test's captured output)
        return False
