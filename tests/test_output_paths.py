"""Every output-path problem is one line and exit 2: not a folder, a file already, no permission, a
place that cannot be created, and a full disk, which leaves no metadata.json and lets a rerun finish."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from dataformat import commandline
from dataformat.errors import UserError
from preprocessing.cli import main as preprocess
from trainer.config import Config, check_values
from trainer.predict import main as predict


def errors(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "output, message",
    [
        ("a-file/data", "a-file/data: cannot create this folder (a part of the path is a file, not a folder)"),
        ("a-file", "a-file: is a file, not a folder"),
        ("/proc/no-such-place/data", "/proc/no-such-place/data: cannot create this folder ("),
    ],
)
def test_preprocessing_output_that_cannot_be_a_folder_is_one_line(tmp_path, caplog, monkeypatch, output, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    assert preprocess(["--source", "digits", "--output", output]) == 2
    (error,) = errors(caplog)
    assert error.startswith(message)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_preprocessing_output_without_permission_is_one_line(tmp_path, caplog):
    (tmp_path / "locked").mkdir(mode=0o500)
    assert preprocess(["--source", "digits", "--output", str(tmp_path / "locked" / "data")]) == 2
    assert "Permission denied" in errors(caplog)[0]


def test_predict_output_under_a_file_is_one_line(tmp_path, caplog, monkeypatch):
    model = SimpleNamespace(metadata=SimpleNamespace(extra={}))  # a model of no recorded encoding
    monkeypatch.setattr("trainer.predict.Model", lambda model_dir: model)
    monkeypatch.setattr("trainer.predict.predictions", lambda *_, **__: iter([("x.csv:2", None, {"x": 1})]))
    (tmp_path / "a-file").write_text("")
    assert predict(["--model-dir", "m", "--input", "x.csv", "--output", str(tmp_path / "a-file" / "p.jsonl")]) == 2
    assert errors(caplog) == [
        f"--output {tmp_path}/a-file/p.jsonl: cannot write (a part of the path is a file, not a folder)"
    ]


def test_predict_output_that_is_an_input_is_refused_before_it_is_erased(tmp_path, caplog, monkeypatch):
    model = SimpleNamespace(metadata=SimpleNamespace(extra={}))
    monkeypatch.setattr("trainer.predict.Model", lambda model_dir: model)
    monkeypatch.setattr("trainer.predict.predictions", lambda *_, **__: iter([("x.csv:2", None, {"x": 1})]))
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    rows = str(tmp_path / "rows.csv")
    assert predict(["--model-dir", "m", "--input", rows, "--output", rows]) == 2  # it was emptied, and read empty
    assert errors(caplog) == [f"--output {rows}: it is --input {rows}, which writing it would erase; name another file"]
    assert (tmp_path / "rows.csv").read_text() == "a,b\n1,2\n"


def user_namespaces_work() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


def in_small_disk(script: str, tmp_path) -> subprocess.CompletedProcess:
    """Runs `script` (sh) with a 300 KB tmpfs mounted at tmp_path/disk, in a user and mount namespace
    of its own: a real filesystem that really fills up, without root."""
    (tmp_path / "disk").mkdir()
    mount = f"mount -t tmpfs -o size=300k tmpfs {tmp_path / 'disk'}"
    return subprocess.run(["unshare", "-rm", "sh", "-c", f"{mount} && {script}"], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.skipif(not user_namespaces_work(), reason="no user namespaces here to mount a small disk in")
def test_a_full_disk_while_preprocessing_leaves_no_dataset_and_a_rerun_with_room_finishes(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "big.npz", x=rng.normal(size=(4000, 64)).astype(np.float32), y=np.arange(4000) % 3)
    python = f"{sys.executable} -m preprocessing --source npz --input {tmp_path / 'big.npz'}"
    out = tmp_path / "disk" / "data"
    result = in_small_disk(
        f"{python} --output {out}; echo exit=$?; ls {out}; echo rerun; "
        f"mount -o remount,size=20m {tmp_path / 'disk'} && {python} --output {out} && ls {out}",
        tmp_path,
    )
    failed, _, rerun = result.stdout.partition("rerun")
    assert "exit=2" in failed and "metadata.json" not in failed, result.stdout  # no dataset after the failure
    (error,) = [line for line in result.stderr.splitlines() if " ERROR " in line]
    assert "cannot write (the disk is full; free some space and rerun)" in error and "Traceback" not in result.stderr
    assert result.returncode == 0 and "metadata.json" in rerun, result.stderr[-2000:]  # the rerun with room finished


@pytest.mark.slow
@pytest.mark.skipif(not user_namespaces_work(), reason="no user namespaces here to mount a small disk in")
def test_training_on_a_full_disk_says_so_in_one_line(tmp_path, digits_dir):
    job = tmp_path / "disk" / "job"
    result = in_small_disk(
        f"{sys.executable} -m trainer.task --data-dir {digits_dir} --job-dir {job} --train-steps 50", tmp_path
    )
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert f"--job-dir {job}: the disk is full" in last and "rerun the same command to resume" in last


def test_preprocessing_refuses_an_output_folder_another_run_writes(tmp_path, caplog):
    from dataformat import lease

    with lease.held(str(tmp_path / "data"), what="preprocessing", flag="--output"):
        assert preprocess(["--source", "digits", "--output", str(tmp_path / "data")]) == 2
    (error,) = errors(caplog)
    assert error.startswith(f"--output {tmp_path / 'data'} is in use by another preprocessing run (host ")
    assert preprocess(["--source", "digits", "--output", str(tmp_path / "data")]) == 0  # free again


def test_a_tilde_in_an_output_flag_is_the_home_folder(tmp_path, monkeypatch):
    """`qt-preprocess --output=~/data/x` (a shell leaves that ~ alone) wrote ./~/data/x."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert preprocess(["--source", "digits", "--output=~/data/digits"]) == 0
    assert (tmp_path / "home" / "data" / "digits" / "metadata.json").exists() and not (tmp_path / "~").exists()


def test_an_output_that_links_to_the_input_folder_is_refused(tmp_path, caplog):
    """The guard compared absolute paths: a link to the input folder as --output wrote the shards among the rows."""
    (tmp_path / "rows").mkdir()
    (tmp_path / "rows" / "t.csv").write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(20)))
    (tmp_path / "link").symlink_to(tmp_path / "rows")
    flags = ["--input", str(tmp_path / "rows"), "--output", str(tmp_path / "link"), "--overwrite"]
    assert preprocess(flags) == 2 and "the folder --input reads" in errors(caplog)[0]
    assert sorted(path.name for path in (tmp_path / "rows").iterdir()) == ["t.csv"]


def test_a_path_with_brackets_is_read_as_it_is_where_it_names_a_file_and_refused_where_tensorflow_globs_it(
    tmp_path, caplog
):
    """A folder named runs[1] is no glob: --input read it as one ("no file matches"), and TensorFlow's checkpoints
    and shards, found by glob, ended training in a traceback."""
    folder = tmp_path / "runs[1]"
    folder.mkdir()
    (folder / "t.csv").write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(20)))
    for given in (folder / "t.csv", folder):
        assert preprocess(["--input", str(given), "--output", str(tmp_path / "data"), "--overwrite"]) == 0
    assert preprocess(["--input", str(tmp_path / "runs[2]"), "--output", str(tmp_path / "data")]) == 2
    assert "runs[2]: no file matches" in errors(caplog)[-1]
    with pytest.raises(UserError, match=r"--job-dir .*runs\[1\]/j: TensorFlow reads \[ \] in a folder's path"):
        check_values(Config(data_dir=str(tmp_path / "data"), job_dir=str(folder / "j")))


def test_a_command_whose_output_reader_stops_reading_ends_quietly(tmp_path, monkeypatch, caplog):
    """`qt-predict ... | head -1` ended in a BrokenPipeError's traceback; it now ends as a tool that SIGPIPE stops
    does: exit 141, no error. Where stdout is no pipe, such an error is another fault's, and is raised."""
    read, write = os.pipe()
    os.close(read)  # the reader has stopped reading
    with open(write, "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert commandline.run(lambda: print("{}\n" * 100_000) or 0, "") == 141
    assert not caplog.records
    with open(tmp_path / "out", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        with pytest.raises(BrokenPipeError):
            commandline.run(lambda: (_ for _ in ()).throw(BrokenPipeError()), "")
