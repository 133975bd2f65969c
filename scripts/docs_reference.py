"""A MkDocs hook: the reference pages are made from the code when the site is built, never copied by hand.

In a page, the line `<!-- help: MODULE [SUBCOMMAND] -->` becomes that command's --help, as its argparse
parser prints it; `<!-- fields: MODULE.CLASS -->` becomes a table of a dataclass's fields (name, type,
default, and the comment beside the field in the source), for metadata.json's parts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import io
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELP = re.compile(r"^<!-- help: (?P<module>[\w.]+)(?: (?P<sub>\w+))? -->$", re.MULTILINE)
FIELDS = re.compile(r"^<!-- fields: (?P<module>[\w.]+)\.(?P<cls>\w+) -->$", re.MULTILINE)
FIELD_LINE = re.compile(r"^\s+(?P<name>\w+): (?P<type>[^=#]+?)(?: = (?P<default>[^#]+?))?\s*(?:# (?P<comment>.*))?$")


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = HELP.sub(lambda match: command_help(match["module"], match["sub"]), markdown)
    return FIELDS.sub(lambda match: fields_table(match["module"], match["cls"]), markdown)


def command_help(module: str, sub: str | None) -> str:
    """The command's --help, as it prints it (80 columns), in a text block."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    os.environ["COLUMNS"] = "100"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        importlib.import_module(module).parse_args([sub, "--help"] if sub else ["--help"])
    return "```text\n" + out.getvalue().rstrip() + "\n```"


def fields_table(module: str, name: str) -> str:
    """A dataclass's fields as a Markdown table, with the comment each has in the source."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    cls = getattr(importlib.import_module(module), name)
    comments, above = {}, []  # a field's comment: beside it, or on the lines just above it
    for line in inspect.getsource(cls).splitlines():
        match = FIELD_LINE.match(line)
        if line.strip().startswith("#"):
            above.append(line.strip().lstrip("# "))
        elif match:
            comments[match["name"]] = (match["comment"] or " ".join(above)).replace("|", "\\|")
            above = []
        else:
            above = []
    rows = ["| field | type | default | what it holds |", "| --- | --- | --- | --- |"]
    for item in dataclasses.fields(cls):
        default = "" if item.default is dataclasses.MISSING else f"`{item.default!r}`"
        kind = str(item.type).replace("|", "\\|")
        rows.append(f"| `{item.name}` | `{kind}` | {default} | {comments.get(item.name, '')} |")
    return "\n".join(rows)
