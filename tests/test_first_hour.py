"""What a person meets first: flags that cannot silently miss, quiet logs, readable progress, and
the saved settings of a run."""

from __future__ import annotations

import io
import logging

import pytest
import tensorflow as tf

from trainer import config as config_module
from trainer import task
from trainer.config import Config, from_sources
from trainer.progress import LastEvaluation, ProgressHook, describe


def flags_of(argv: list[str]) -> dict:
    args, unknown = task.parse_args(argv)
    assert not unknown
    return {key: value for key, value in vars(args).items() if key not in ("config", "verbosity")}


def test_underscores_are_aliases_of_dashes():
    flags = flags_of(["--learning_rate", "0.01", "--train_steps=50", "--job-dir", "j"])
    assert from_sources(None, flags) == Config(learning_rate=0.01, train_steps=50, job_dir="j")


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["--learning-rat", "0.1"], "--learning-rate"),
        (["--batch_sise=64"], "--batch-size"),
        (["--some-cloud-flag", "x"], None),
    ],
)
def test_a_near_miss_of_a_flag_stops_the_run_naming_the_flag(caplog, argv, suggestion):
    if suggestion is None:  # too far from any flag: taken for one a cloud service added, and ignored
        assert task.parse_args(argv)[1] == argv
        return
    assert task.main(argv) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error == f"unknown flag {argv[0].split('=')[0]}: did you mean {suggestion}?"


def test_flags_a_cloud_service_adds_stay_accepted():
    args, unknown = task.parse_args(["--job-dir", "gs://b/j", "--hypertune-extra", "1"])
    assert args.job_dir == "gs://b/j" and unknown == ["--hypertune-extra", "1"]


def test_a_switch_turned_on_in_yaml_can_be_turned_off_by_a_flag(tmp_path):
    (tmp_path / "c.yaml").write_text("xla: true\nmixed_precision: true\n")
    assert from_sources(str(tmp_path / "c.yaml"), flags_of(["--no-xla"])) == Config(xla=False, mixed_precision=True)
    assert from_sources(str(tmp_path / "c.yaml"), {}).xla


def test_the_saved_settings_repeat_the_run(tmp_path):
    config = Config(data_dir="d", job_dir=str(tmp_path), hidden_units=(64, 32), xla=True, learning_rate=0.01)
    path = config_module.save(config, str(tmp_path))
    assert from_sources(path, {}) == config


def test_verbosity_hides_tensorflows_info_lines_by_default():
    task.parse_args([])
    assert logging.getLogger("tensorflow").level == logging.WARNING
    task.parse_args(["--verbosity", "debug"])
    assert logging.getLogger("tensorflow").level == logging.DEBUG
    task.parse_args(["--verbosity", "info"])


def test_tensorflows_warning_of_each_column_name_with_a_space_is_not_shown(caplog):
    from absl import logging as absl_logging

    task.parse_args([])
    absl_logging.warning("`%s` is not a valid tf.function parameter name. Sanitizing to `%s`.", "zip code", "zip_code")
    absl_logging.warning("another warning")
    assert "zip code" not in caplog.text and "another warning" in caplog.text


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def train_with(hook: ProgressHook, steps: int) -> None:
    with tf.Graph().as_default():
        step = tf.compat.v1.train.create_global_step()
        weight = tf.Variable(3.0)
        tf.compat.v1.losses.add_loss(weight * weight)
        train = tf.group(tf.compat.v1.assign(weight, weight * 0.9), tf.compat.v1.assign_add(step, 1))
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as session:
            for _ in range(steps):
                session.run(train)


def test_progress_without_a_terminal_is_a_plain_line_with_every_figure(caplog):
    caplog.set_level(logging.INFO)
    LastEvaluation.metrics, LastEvaluation.shown = {"accuracy": 0.75, "auc": 0.8}, "accuracy"
    train_with(ProgressHook(total_steps=40, global_batch=32, every_secs=0.0, stream=io.StringIO()), steps=40)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert lines[-1].startswith("step 40/40 (100%), ")
    assert "loss " in lines[0] and "loss " in lines[-2]  # every report but the last one, after the session
    for field in ("steps/s", "examples/s", "ETA", "last eval accuracy 0.7500"):
        assert field in lines[-2]


def test_progress_on_a_terminal_is_one_bar(caplog):
    terminal = Terminal()
    LastEvaluation.metrics = {}
    train_with(ProgressHook(total_steps=40, global_batch=32, every_secs=30.0, stream=terminal), steps=40)
    shown = terminal.getvalue()
    assert "40/40" in shown and "steps/s" in shown and "examples/s" in shown
    assert not [r for r in caplog.records if r.getMessage().startswith("step ")]  # no plain lines besides the bar


def test_the_last_progress_line_has_no_eta_and_says_when_training_stopped_short():
    line = describe(step=7, total=2000, steps_per_sec=0.5, global_batch=32, loss=None, final=True)
    assert line == "step 7/2,000 (0%), 0.5 steps/s, 16 examples/s, stopped before --train-steps"
    assert "ETA" not in describe(step=2000, total=2000, steps_per_sec=5.0, global_batch=32, loss=None, final=True)


def test_the_progress_line_says_what_is_left():
    line = describe(step=250, total=1000, steps_per_sec=50.0, global_batch=128, loss=0.25)
    assert line.startswith("step 250/1,000 (25%), 50.0 steps/s, 6,400 examples/s, loss 0.2500, ETA 15s")
