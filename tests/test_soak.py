"""scripts/soak.py: the kill soak's short version passes and prints its figures; its checks catch what
they are for.

The cluster part (a parameter server and a worker killed and restarted) is left to the script: on
2 cores it needs some 2,000 steps and about two minutes to get through both kills, more than this
tier's budget. Run `python scripts/soak.py --cluster` for it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "soak.py")


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("soak", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules["soak"]


def test_the_short_soak_passes_and_prints_its_figures(tmp_path):
    result = subprocess.run(
        [sys.executable, SCRIPT, "--kills", "1", "--train-steps", "600", "--save-checkpoints-steps", "100",
         "--preprocess-kills", "1", "--preprocess-examples", "200000", "--no-cluster", "--work", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    out = result.stdout
    assert out.rstrip().endswith("PASSED: every check")
    assert re.search(r"^training kills: +1 \(--train-steps 600", out, re.M)
    assert re.search(r"^steps lost per kill: +median \d+, max \d+ ", out, re.M)
    assert re.search(r"^time to resume: +median [\d.]+ s, max [\d.]+ s", out, re.M)
    assert re.search(r"^final run: +global step 600 of 600, .* answered 16 digits", out, re.M)
    assert re.search(r"^preprocessing kills: +1 \(200,000 x 64 float32", out, re.M)
    assert re.search(r"^bytes match: +yes \(11 files", out, re.M)
    assert "cluster:" not in out

    rows = re.findall(r"^ +(\d+) +([\d.]+) +(\d+) +(\d+) +(\d+) +(\d+) +([\d.]+)$", out, re.M)
    assert [int(row[0]) for row in rows] == [1]
    for _, _, before, last, resumed, lost, _ in rows:
        assert int(resumed) >= int(before)  # the kill never took a checkpoint away
        assert 0 <= int(lost) <= 100 and int(lost) == max(0, int(last) - int(resumed))
    with open(tmp_path / "train" / "job" / "eval_metrics.json") as file:
        assert json.load(file)["global_step"] == 600
    assert sorted(os.listdir(tmp_path / "train")) == ["job", "run-01.log", "run-02.log"]


def test_progress_lines_and_steps_lost(soak):
    text = "10:00:01 INFO step 3/3,000 (0%), 2.1 steps/s\n10:00:02 INFO step 1,203/3,000 (40%), 40.0 steps/s\n"
    assert soak.progress_steps(text) == [3, 1203]
    assert soak.Kill(1, 2.0, checkpoint_before=1200, last_progress=1150, resumed_from=1200).steps_lost == 0
    assert soak.Kill(1, 2.0, checkpoint_before=1000, last_progress=1150, resumed_from=1000).steps_lost == 150


def test_datasets_compare_by_their_bytes_but_not_their_timings(soak, tmp_path):
    for name in ("clean", "other"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "train-00000-of-00001.tfrecord").write_bytes(b"records")
        seconds = 1.5 if name == "clean" else 2.5
        (folder / "metadata.json").write_text(json.dumps({"shape": [4], "extra": {"seed": 0, "seconds": seconds}}))
    (tmp_path / "other" / ".lease").write_text("")  # the lease is not part of the dataset
    assert soak.compare_datasets(str(tmp_path / "clean"), str(tmp_path / "other")) == []

    (tmp_path / "other" / ".train-00001-of-00001.tfrecord.partial-7").write_bytes(b"rec")
    (tmp_path / "other" / "train-00000-of-00001.tfrecord").write_bytes(b"recordz")
    metadata = {"shape": [4], "extra": {"seed": 1, "seconds": 1.5}}
    (tmp_path / "other" / "metadata.json").write_text(json.dumps(metadata))
    problems = soak.compare_datasets(str(tmp_path / "clean"), str(tmp_path / "other"))
    assert len(problems) == 3
    assert "leftovers" in problems[0] and "train-00000-of-00001.tfrecord differs" in problems
    assert "metadata.json differs (beyond its timings)" in problems


def test_a_failed_check_exits_1_naming_it(soak, tmp_path, monkeypatch, capsys):
    def lost_too_much(args, data_dir, folder, result):
        result.kills.append(soak.Kill(1, 2.0, checkpoint_before=0, last_progress=250, resumed_from=0))
        result.problems.append("kill 1 lost 250 steps, more than one checkpoint interval (200)")

    def bytes_differ(args, folder, result):
        raise soak.Failure("train-00003-of-00008.tfrecord differs\nmore detail")

    monkeypatch.setattr(soak, "preprocess_digits", lambda output: output)
    monkeypatch.setattr(soak, "soak_training", lost_too_much)
    monkeypatch.setattr(soak, "soak_preprocessing", bytes_differ)
    assert soak.main(["--no-cluster", "--work", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "FAILED: training: kill 1 lost 250 steps, more than one checkpoint interval (200); "
        "preprocessing: train-00003-of-00008.tfrecord differs"
    )
    assert re.search(r"^ +1 +2\.0 +0 +250 +0 +250 +-$", out, re.M)  # the kills before the failure still show


def test_a_work_folder_of_something_else_is_refused(soak, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert soak.main(["--work", str(tmp_path)]) == 2
    assert "holds files of something else" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"
