"""The documentation stays true: every shell block that README.md or docs/ marks with `<!-- tested -->` runs
as a reader would run it, in a folder where this test has written small data under the names the docs
use, and exits 0; each output line the block shows (as `#   ...`) is checked for its shape: its words up
to the first number, not the numbers."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_text import write_folder

pytestmark = pytest.mark.slow  # end to end: the commands as a reader types them

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARK = "<!-- tested -->"


def marked_blocks() -> list[tuple[str, str]]:
    """(where, the block's text) of every marked shell block."""
    found = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip() != MARK:
                continue
            assert lines[number + 1].startswith("```sh"), f"{path.name}:{number + 1}: {MARK} must precede a ```sh block"
            end = lines.index("```", number + 2)
            found.append((f"{path.relative_to(ROOT)}:{number + 2}", "\n".join(lines[number + 2 : end])))
    return found


def shapes(block: str) -> list[str]:
    """The shown output lines' words up to their first number (or path), each of which the output must hold."""
    shown = [line[len("#   ") :] for line in block.splitlines() if line.startswith("#   ")]
    prefixes = [re.split(r"[\d/]", line, maxsplit=1)[0].strip() for line in shown]
    return [prefix for prefix in prefixes if len(prefix) >= 3]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """The files the docs' examples name: raw/adult.csv and new-people.csv, raw/tickets/."""
    root = tmp_path_factory.mktemp("docs")
    rng = np.random.default_rng(0)
    (root / "raw").mkdir()
    header = ["age", "workclass", "education", "hours_per_week", "income"]
    with open(root / "raw" / "adult.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        for _ in range(600):
            age, hours = int(rng.integers(18, 80)), int(rng.integers(10, 70))
            education = str(rng.choice(["Bachelors", "HS-grad", "Masters", "Some-college"]))
            rich = age / 80 + hours / 70 + (education in ("Bachelors", "Masters")) + rng.normal(0, 0.4) > 1.6
            writer.writerow(
                [age, str(rng.choice(["Private", "State-gov"])), education, hours, ">50K" if rich else "<=50K"]
            )
    (root / "new-people.csv").write_text(
        "age,workclass,education,hours_per_week\n45,Private,Masters,50\n23,State-gov,HS-grad,20\n"
    )
    write_folder(root / "raw" / "tickets", per_class=60)
    return root


def test_the_docs_mark_blocks():
    assert len(marked_blocks()) >= 2


@pytest.mark.parametrize("where, block", marked_blocks(), ids=[where for where, _ in marked_blocks()])
def test_a_marked_block_runs_as_shown(where, block, workspace):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-c", block], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{output[-3000:]}"
    for shape in shapes(block):
        assert shape in output, f"{where}: the output has no {shape!r}\n{output[-3000:]}"
