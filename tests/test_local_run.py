"""The packaged job: the sdist installed into a fresh virtual environment runs the trainer."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_sdist_in_a_fresh_environment_runs_the_job(tmp_path, digits_dir):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "local_run.py"), "--",
         "--data-dir", digits_dir, "--job-dir", str(tmp_path / "job"), "--train-steps", "30"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    installed_at = result.stdout.split("Installed in ")[1].split(" at ")[1].splitlines()[0]
    assert "site-packages" in installed_at and not installed_at.startswith(ROOT + "/trainer")
    with open(tmp_path / "job" / "eval_metrics.json") as file:
        assert json.load(file)["global_step"] == 30


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--", "--data-dir", "d", "--trian-steps", "5"], "unknown flag --trian-steps: did you mean --train-steps?"),
        (["--", "--data-dir", "d", "--train-steps", "-5"], "--train-steps -5: must be"),
        (["--extras", "plots", "--", "--data-dir", "d"], "--extras plots: name cpu or gpu among them"),
    ],
)
def test_mistakes_are_named_before_the_minute_of_building(flags, said):
    """A misspelt flag was named after 35 s of building and installing; --extras plots installed no TensorFlow and
    ended in a traceback."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "local_run.py"), *flags],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 2 and said in result.stderr and "Installing" not in result.stdout
