"""The edge that every command line shares: one parser style, one logging setup, and one way for a
mistake to reach the user. A UserError, a bad flag included, becomes one line on stderr and exit
code 2; Ctrl-C becomes one line and exit code 130. No traceback reaches the user for either."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import NoReturn

from dataformat.errors import UserError

log = logging.getLogger("commandline")


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the examples shown after the options, and a usage mistake raised as a UserError
    like every other mistake (argparse would print the whole usage first)."""

    def __init__(self, prog: str, description: str, examples: str, **kwargs):
        super().__init__(
            prog=prog,
            description=description,
            epilog=examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,
        )

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


def run(command: Callable[[], int], interrupted: str) -> int:
    """Runs a command's body with logging set up; returns its exit code. `interrupted` says, after
    Ctrl-C, what state the work was left in."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    try:
        return command()
    except UserError as error:
        log.error("%s", error)
        return 2
    except KeyboardInterrupt:
        log.error("Interrupted: %s", interrupted)
        return 130
