"""Checking a YAML section field by field, for every section of a job shape: known fields only,
the required ones present, each of its type and, where the REST reference has an enumeration,
one of its values. A mistake is an Invalid naming the field; jobs.load() adds the file."""

from __future__ import annotations

from typing import Any

TYPE_NAMES = {int: "whole number", float: "number", str: "string", dict: "mapping", list: "list", bool: "true or false"}


class Invalid(Exception):
    """A mistake at `field` of a job shape."""

    def __init__(self, field: str, why: str):
        super().__init__(f"{field}: {why}")


def check_fields(
    section: Any,
    where: str,
    types: dict[str, type],
    required: tuple[str, ...] = (),
    choices: dict[str, tuple] | None = None,
) -> None:
    """Checks that `section` is a mapping of known fields, with the required ones, of the right types."""
    if not isinstance(section, dict):
        raise Invalid(where or "top level", f"expected a mapping of fields, found {type(section).__name__}")
    prefix = f"{where}." if where else ""
    for key in section:
        if key not in types:
            raise Invalid(f"{prefix}{key}", f"unknown field (known: {', '.join(types)})")
    for key in required:
        if key not in section:
            raise Invalid(f"{prefix}{key}", "missing")
    for key, value in section.items():
        if not is_a(value, types[key]):
            raise Invalid(f"{prefix}{key}", f"{value!r} is not a {TYPE_NAMES[types[key]]}")
        allowed = (choices or {}).get(key)
        if allowed and value not in allowed:
            raise Invalid(f"{prefix}{key}", f"{value!r} is not one of {', '.join(allowed)}")


def is_a(value: Any, kind: type) -> bool:
    if isinstance(value, bool):  # YAML's yes/true must not pass for a number
        return kind is bool
    return isinstance(value, (int, float)) if kind is float else isinstance(value, kind)
