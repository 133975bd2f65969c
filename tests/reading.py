"""Smaller reading sizes for tests of preprocessing.table_files: blocks and heads that cut a table where a test
wants them to."""

import sys

import preprocessing.table_files  # noqa: F401 (loads every module of the package)


def set_reading_size(patch, name: str, value: int) -> None:
    """Sets a size (PARSE_BYTES, SNIFF_BYTES, ...) with `patch` (a pytest MonkeyPatch) in every module of
    preprocessing.table_files that reads it."""
    modules = [
        module
        for key, module in sys.modules.items()
        if key.startswith("preprocessing.table_files.") and hasattr(module, name)
    ]
    assert modules, f"no module of preprocessing.table_files reads {name}"
    for module in modules:
        patch.setattr(module, name, value)
