"""Whether crosses help by default: the tables benchmark's real tables, each trained as a user runs it
(benchmarks.tables.train_ours) with default flags and with `--crosses pairs`, on seeds 0 and 1.

    python -m benchmarks.crosses [OUTPUT.json]     # about 10 minutes on 2 cores

It prints one JSON line a run and a table of the means; the figures are in docs/tables.md ("Crosses").
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

from benchmarks.tables import TABLES, train_ours

SEEDS = (0, 1)
SETTINGS = {"none": (), "pairs": ("--crosses", "pairs")}


def runs(folder: str) -> list[dict]:
    found = []
    for table in TABLES:
        csv = os.path.join(folder, table.name, f"{table.name}.csv")
        os.makedirs(os.path.dirname(csv))
        table.write(csv, table.label)
        for seed in SEEDS:
            for setting, flags in SETTINGS.items():
                run_folder = os.path.join(folder, table.name, f"{setting}-{seed}")
                os.makedirs(run_folder)
                row = train_ours(csv, table.label, run_folder, ("--seed", str(seed), *flags))
                found.append({"table": table.name, "seed": seed, "crosses": setting, **row})
                print(json.dumps(found[-1]), flush=True)
    return found


def summary(rows: list[dict]) -> list[str]:
    """A Markdown table of each table's means over the seeds, with and without crosses."""
    lines = ["| table | accuracy none / pairs | AUC none / pairs | training s none / pairs |"]
    lines.append("| --- | --- | --- | --- |")
    for table in dict.fromkeys(row["table"] for row in rows):
        mine = [row for row in rows if row["table"] == table]
        keys = ("accuracy", "auc", "train_seconds")
        cells = [" / ".join(_mean(mine, setting, key) for setting in SETTINGS) for key in keys]
        lines.append(f"| {table} | " + " | ".join(cells) + " |")
    return lines


def _mean(rows: list[dict], setting: str, key: str) -> str:
    values = [row[key] for row in rows if row["crosses"] == setting and key in row]
    return f"{statistics.mean(values):.4f}" if values else "-"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="crosses-") as folder:
        rows = runs(folder)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as file:
            json.dump(rows, file, indent=1)
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
