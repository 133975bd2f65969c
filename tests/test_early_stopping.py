"""--early-stopping-evals: training stops when the best-export metric stops improving, ends as a finished run
does, and a rerun knows it stopped."""

from __future__ import annotations

import json
import logging
import os

import tensorflow as tf

from trainer import early_stopping, experiment, figures
from trainer import metrics as metric_names
from trainer.config import Config


def test_no_improvement_counts_the_evaluations_after_the_best_one():
    auc = {100: {"auc": 0.7}, 200: {"auc": 0.8}, 300: {"auc": 0.79}, 400: {"auc": 0.8}}
    assert early_stopping.no_improvement(auc, "auc", patience=2, since=0) == 200  # equal is no better
    assert early_stopping.no_improvement(auc, "auc", patience=3, since=0) is None
    assert early_stopping.no_improvement(auc, "auc", patience=2, since=300) is None  # a rerun counts its own
    loss = {100: {"log_loss": 0.5}, 200: {"log_loss": 0.4}, 300: {"log_loss": 0.45}}
    assert early_stopping.no_improvement(loss, "log_loss", patience=1, since=0) == 200  # lower is better
    assert early_stopping.no_improvement({}, "auc", patience=1, since=0) is None
    # An exact tie, AUC 1.0 on a small evaluation set, goes to the lower log loss, as the best export does.
    tied = {100: {"auc": 1.0, "log_loss": 0.6}, 200: {"auc": 1.0, "log_loss": 0.2}, 300: {"auc": 1.0, "log_loss": 0.3}}
    assert early_stopping.no_improvement(tied, "auc", patience=1, since=0) == 200
    better = metric_names.better_by("auc")
    assert better(best_eval_result=tied[100], current_eval_result=tied[200])
    assert not better(best_eval_result=tied[200], current_eval_result=tied[300])
    assert not better(best_eval_result=tied[300], current_eval_result={"auc": 1.0})  # no log loss: no tie won
    assert not better(best_eval_result={"auc": 0.9, "log_loss": 0.9}, current_eval_result={"auc": 0.8, "log_loss": 0.1})


def test_training_stops_early_exports_and_a_rerun_does_nothing(vectors_dir, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    config = Config(
        data_dir=vectors_dir, job_dir=str(tmp_path / "job"), train_steps=50_000, save_checkpoints_steps=50,
        eval_throttle_secs=0, early_stopping_evals=2, learning_rate=0.01,
    )  # fmt: skip
    metrics = experiment.run(config)
    stop = early_stopping.read_stop(config.job_dir)
    assert stop is not None and stop.evaluations == 2 and stop.best_step < stop.step < 50_000
    assert stop.step <= metrics["global_step"] < 2_000  # it ran on to the end of its last loop, no further
    assert os.path.exists(tmp_path / "job" / "report.md")  # the last evaluation wrote the figures, as a finished run
    assert f"Training {stop.describe()}." in (tmp_path / "job" / "report.md").read_text()
    assert os.listdir(tmp_path / "job" / "export" / "best") and os.listdir(tmp_path / "job" / "export" / "latest")
    assert "Training stopped early after the evaluation at step" in caplog.text
    caplog.clear()
    assert experiment.run(config) == json.loads((tmp_path / "job" / "eval_metrics.json").read_text())
    assert "nothing to do (--train-steps above its 50000 trains on)" in caplog.text
    more = experiment.run(Config(**{**config.__dict__, "train_steps": 50_001}))
    assert more["global_step"] > metrics["global_step"]  # trained on, and stopped again by its own evaluations
    # The best export is the best evaluation's of both runs: the rerun's first evaluation replaced it, whatever it was.
    assert best_export_step(config) == best_evaluation_step(config)


def test_a_run_that_stops_at_the_step_it_evaluated_last_writes_its_report(vectors_dir, tmp_path, caplog):
    """Training stopped at the very step of the evaluation that stopped it: no evaluation came after the stop was
    known, and the run ended without report.md or figures, though its last lines named report.md."""
    caplog.set_level(logging.INFO)
    config = Config(
        data_dir=vectors_dir, job_dir=str(tmp_path / "job"), train_steps=50_000, save_checkpoints_steps=10,
        eval_throttle_secs=0, early_stopping_evals=2, learning_rate=0.01,
    )  # fmt: skip
    experiment.run(config)
    stop = early_stopping.read_stop(config.job_dir)
    assert stop is not None and os.path.exists(tmp_path / "job" / "report.md")
    assert (
        f"at step {json.loads((tmp_path / 'job' / 'eval_metrics.json').read_text())['global_step']}"
        in (tmp_path / "job" / "report.md").read_text()
    )


def test_a_resume_counts_every_evaluation_and_training_on_after_a_stop_those_after_it(tmp_path):
    """A resume (a preemption) counted only its own evaluations, so a job preempted more often than every N
    evaluations never stopped early. Only a larger --train-steps after an early stop counts from that stop, and
    goes on doing so when that run is itself resumed."""
    job = str(tmp_path)
    assert early_stopping.counted_since(job) == 0  # a first run, or a resumed one: every evaluation counts
    early_stopping.write_stop(job, early_stopping.Stop(500, 200, "auc", 0.8, 3, 1000))
    early_stopping.clear_stop(job)  # a rerun with --train-steps above 1000
    assert early_stopping.read_stop(job) is None and early_stopping.counted_since(job) == 500
    assert early_stopping.counted_since(job) == 500  # and after a preemption of that rerun


def best_export_step(config: Config) -> int:
    (version,) = os.listdir(os.path.join(config.job_dir, "export", "best"))
    return int(
        tf.train.load_variable(
            os.path.join(config.job_dir, "export", "best", version, "variables", "variables"), "global_step"
        )
    )


def best_evaluation_step(config: Config) -> int:
    """The best evaluation's step as the best export ranks them (a tie on the metric to the lower log loss; AUC 1.0
    recurs on the 80 evaluation examples), the first of equals."""
    metric = metric_names.resolve_best(config.best_metric, 2)  # vectors_dir's two classes
    evaluations: dict[int, dict] = {}
    for name, series in figures.read_scalars(os.path.join(config.job_dir, figures.EVAL_DIR)).items():
        for step, value in series:
            evaluations.setdefault(step, {})[name] = value
    ranking = metric_names.ranking(metric)
    return max(evaluations, key=lambda step: (ranking(evaluations[step]), -step))


def test_early_stopping_that_cannot_fire_is_warned_of(caplog):
    """60 steps and a checkpoint each 500: one evaluation, and early stopping needs the best one and 2 after it."""
    experiment._warn_if_it_cannot_stop(Config(train_steps=60, early_stopping_evals=2))
    assert "--early-stopping-evals 2: this run evaluates 1 time(s) at most" in caplog.text
    caplog.clear()
    experiment._warn_if_it_cannot_stop(Config(train_steps=60, early_stopping_evals=2, save_checkpoints_steps=20))
    assert not caplog.text  # evaluations at 20, 40 and 60
