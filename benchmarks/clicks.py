"""Benchmark 6: a click log of the Criteo kind. How fast and in how much memory `python -m preprocessing`
converts a headerless TSV of a label, 13 integer columns and 26 categorical columns whose values follow
a Zipf law over up to 10M distinct values each, against pyarrow.csv.read_csv only parsing the same file.

Each run is the command a user types (or, for pyarrow, a bare interpreter's read_csv), in a child process
of its own, timed whole with its peak RSS (tables.run_child), in turns at two sizes.
"""

from __future__ import annotations

import os
import shutil
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from benchmarks import report
from benchmarks.common import Bench, target
from benchmarks.tables import MEMORY_GOAL, reading_row, run_child

INTEGERS, CATEGORIES = 13, 26
DISTINCT = 10_000_000  # the most distinct values a categorical column draws from
CHUNK_ROWS = 250_000
REPEATS = 3  # runs of each reader and size, in turns (a 10M-row conversion takes minutes)
SPEED_GOAL = 0.4  # rows/s at least this share of pyarrow.csv.read_csv's on the same file
NEW = "python -m preprocessing"
PYARROW = "pyarrow.csv.read_csv"


def clicks_chunk(rng: np.random.Generator, rows: int) -> pa.Table:
    """`rows` rows: a 0/1 label (about 25% clicks, depending on some columns), 13 counts (Zipf, 5%
    empty) and 26 categories written as 8 hex digits, each column's value the hash of a Zipf draw
    (exponent 1.1..1.5) over up to DISTINCT values (2% empty)."""
    counts = np.minimum(rng.zipf(1.8, (rows, INTEGERS)) - 1, 10**6)
    draws = rng.zipf(np.linspace(1.1, 1.5, CATEGORIES), (rows, CATEGORIES)) % DISTINCT
    score = 0.3 * np.log1p(counts[:, 0]) - 0.2 * np.log1p(counts[:, 1]) + 0.5 * (draws[:, 0] % 7 == 0)
    label = (score + rng.logistic(0, 1, rows) > 1.5).astype(np.int64)
    columns = {"label": pa.array(label)}
    for i in range(INTEGERS):
        columns[f"i{i + 1}"] = pa.array(counts[:, i], mask=rng.random(rows) < 0.05)
    hashed = (draws.astype(np.uint64) * np.uint64(0x9E3779B1) + np.arange(CATEGORIES, dtype=np.uint64)) % (2**32)
    for i in range(CATEGORIES):
        text = np.char.mod("%08x", hashed[:, i])
        columns[f"c{i + 1}"] = pa.array(text, mask=rng.random(rows) < 0.02)
    return pa.table(columns)


def write_clicks_tsv(path: str, rows: int, seed: int = 0) -> int:
    """The headerless TSV of `rows` seeded rows, written in chunks; returns its bytes."""
    rng = np.random.default_rng(seed)
    options = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with open(path, "wb") as file:
        for start in range(0, rows, CHUNK_ROWS):
            pacsv.write_csv(clicks_chunk(rng, min(CHUNK_ROWS, rows - start)), file, options)
    return os.path.getsize(path)


def preprocess_command(path: str, output: str) -> list[str]:
    """As a user runs it: the columns named, the label the first; the rest found from the data."""
    names = ["label", *(f"i{i + 1}" for i in range(INTEGERS)), *(f"c{i + 1}" for i in range(CATEGORIES))]
    command = [sys.executable, "-m", "preprocessing", "--source", "csv", "--input", path, "--output", output]
    return command + ["--column-names", ",".join(names), "--label-column", "label"]


PARSE = """
import sys
import pyarrow.csv as pacsv

table = pacsv.read_csv(sys.argv[1], read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                       parse_options=pacsv.ParseOptions(delimiter="\\t"))
print(table.num_rows)
"""


def run(bench: Bench) -> dict:
    size, folder = bench.size, os.path.join(bench.folder, "clicks")
    os.makedirs(folder, exist_ok=True)
    try:
        files = {rows: os.path.join(folder, f"clicks-{rows}.tsv") for rows in size.click_rows}
        file_bytes = {rows: write_clicks_tsv(path, rows) for rows, path in files.items()}
        output, log = os.path.join(folder, "shards"), os.path.join(folder, "child.log")
        # pyarrow first at each size, so that the last log is preprocessing's at the larger size
        measured = {(reader, rows): [] for rows in size.click_rows for reader in (PYARROW, NEW)}
        for _ in range(min(size.repeats, REPEATS)):
            for reader, rows in measured:  # in turns, so that other load falls on every run alike
                shutil.rmtree(output, ignore_errors=True)
                command = preprocess_command(files[rows], output) if reader == NEW else [
                    sys.executable, "-c", PARSE, files[rows]
                ]  # fmt: skip
                measured[reader, rows].append(run_child(command, log))
            summary = _summary_line(log) if os.path.exists(log) else ""
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # gigabytes at full size
    rows = [reading_row(reader, count, runs, file_bytes[count]) for (reader, count), runs in measured.items()]
    result = {"sizes": list(size.click_rows), "rows": rows, "columns": summary}
    return {**result, "targets": _targets(result)}


def _summary_line(log_path: str) -> str:
    """preprocessing's "Read N rows ...: columns" line of the last run (the pyarrow run's log has none)."""
    with open(log_path, errors="replace") as log:
        lines = [line for line in log if " Read " in line]
    return lines[-1].split(": ", 1)[-1].strip() if lines else ""


def _targets(result: dict) -> list[dict]:
    rows = {(row["reader"], row["rows"]): row for row in result["rows"]}
    small, large = result["sizes"]
    memory = rows[NEW, large]["peak_rss_mib"]["median"] / rows[NEW, small]["peak_rss_mib"]["median"]
    found = [
        target(f"clicks: {NEW} peak RSS at {large:,} rows ≤ {MEMORY_GOAL}× at {small:,}", memory, MEMORY_GOAL, False)
    ]
    for count in (small, large):
        ratio = rows[NEW, count]["rows_per_second"]["median"] / rows[PYARROW, count]["rows_per_second"]["median"]
        found.append(target(f"clicks: {NEW} rows/s at {count:,} rows ≥ {SPEED_GOAL}× {PYARROW}'s", ratio, SPEED_GOAL))
    return found


def section(result: dict) -> list[str]:
    headers = ["reader", "rows", "TSV MiB", "s (median)", "rows/s (median)", "min – max", "peak RSS MiB", "min – max"]
    rows = [
        [
            row["reader"],
            f"{row['rows']:,}",
            report.number(row["file_mib"]),
            report.number(row["seconds"]["median"]),
            *report.spread(row["rows_per_second"]),
            *report.spread(row["peak_rss_mib"]),
        ]
        for row in result["rows"]
    ]
    return [
        "## 6. A click log (Criteo-shaped)",
        "",
        f"A seeded headerless TSV: a 0/1 label, {INTEGERS} integer columns (Zipf counts, 5% empty) and "
        f"{CATEGORIES} categorical columns of 8 hex digits, each a Zipf draw (exponent 1.1 to 1.5) over up to "
        f"{DISTINCT:,} values (2% empty). `{NEW}` converts it whole (`--column-names` and `--label-column label`; "
        f"every column's kind, vocabulary and hash buckets found from the data, shards written); `{PYARROW}` only "
        "parses it into memory, types inferred, in a bare interpreter. Each run is a child process, timed whole; "
        f"at most {REPEATS} runs of each, in turns.",
        "",
        *report.table(headers, rows),
        "",
        f"Columns as preprocessing found them at {result['sizes'][-1]:,} rows: {result['columns'] or '(not logged)'}",
    ]


def plot(result: dict, folder: str) -> list[str]:
    labels = [f"{row['reader']}, {row['rows']:,} rows" for row in result["rows"]]
    values = [row["rows_per_second"]["median"] for row in result["rows"]]
    return report.bar_chart(folder, "clicks.png", "Converting a click log", labels, values, "rows / s")
