"""The whole slice: preprocess -> train_and_evaluate -> export -> serve, as a user runs it."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from trainer import experiment, export
from trainer import metrics as metric_names
from trainer.config import Config
from trainer.experiment import session_config
from trainer.export import latest_export


def run_task(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "trainer.task", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_training_writes_checkpoints_metrics_and_exports(trained_job):
    job_dir, _, result = trained_job
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        metrics = json.load(file)
    assert metrics["global_step"] == 800
    assert metrics["accuracy"] > 0.9  # 800 steps on the digits reach 0.97-0.99; 300 steps gave 0.897 once
    assert tf.train.latest_checkpoint(job_dir).endswith("model.ckpt-800")
    for name in ("latest", "best"):
        export = latest_export(Config(job_dir=job_dir), name)
        assert export and os.path.exists(os.path.join(export, "saved_model.pb"))
        assert f"{name} export:" in result.stdout
    # The best export is a copy of the latest exporter's export of the same checkpoint: same version, same bytes.
    best = latest_export(Config(job_dir=job_dir), "best")
    latest = os.path.join(job_dir, "export", "latest", os.path.basename(best))
    assert file_contents(latest) == file_contents(best) and "saved_model.pb" in file_contents(best)
    assert f"Exported {best} (a copy of {latest})" in result.stderr
    with open(os.path.join(best, "assets.extra", "eval_metrics.json")) as file:  # an export holds its evaluation
        assert json.load(file) == metrics
    assert f"accuracy:       {metrics['accuracy']:.4f}" in result.stdout
    assert "is deprecated" not in result.stderr


def file_contents(folder: str) -> dict[str, bytes]:
    """Every file under `folder`, by its path within it."""
    found = {}
    for directory, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(directory, name), "rb") as file:
                found[os.path.relpath(os.path.join(directory, name), folder)] = file.read()
    return found


@pytest.mark.slow
def test_training_leaves_figures_a_report_and_its_settings(trained_job, digits_dir):
    job_dir, _, result = trained_job
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        matrix = json.load(file)["confusion_matrix"]
    with open(os.path.join(digits_dir, "metadata.json")) as file:
        evaluated = json.load(file)["splits"]["eval"]["examples"]
    assert len(matrix) == 10 and sum(map(sum, matrix)) == evaluated
    for name in ("confusion_matrix.png", "training_curves.png"):
        with open(os.path.join(job_dir, name), "rb") as file:
            assert file.read(8) == b"\x89PNG\r\n\x1a\n"
        assert os.path.join(job_dir, name) in result.stdout  # listed in the summary
    with open(os.path.join(job_dir, "report.md")) as file:
        assert "(confusion_matrix.png)" in file.read()
    assert f"report:         {job_dir}/report.md" in result.stdout
    best = latest_export(Config(job_dir=job_dir), "best")
    assert f"next:           qt-predict --model-dir '{best}' --input FILE" in result.stdout  # quoted, to be pasted


@pytest.mark.slow
def test_the_default_log_is_quiet_and_shows_progress(trained_job):
    _, _, result = trained_job
    assert "Calling model_fn" not in result.stderr and "Create CheckpointSaverHook" not in result.stderr
    assert "INFO step 800/800 (100%), " in result.stderr  # the last progress line, without a terminal
    assert "INFO Evaluation at step 800: log_loss " in result.stderr  # --best-metric auto, for 10 classes
    assert "log_loss" in result.stdout and "accuracy" in result.stdout
    assert len(result.stderr.splitlines()) < 40


@pytest.mark.slow
def test_a_run_repeats_from_its_saved_settings(trained_job, tmp_path):
    job_dir, args, _ = trained_job
    copy = shutil.copytree(job_dir, tmp_path / "job")
    result = run_task("--config", str(copy / "config.yaml"), "--job-dir", str(copy), "--train-steps", "820")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "This task ran 20 training steps; the global step is 820" in result.stderr


@pytest.mark.slow
def test_rerun_resumes_from_the_last_checkpoint(trained_job, tmp_path):
    original, args, _ = trained_job
    job_dir = shutil.copytree(original, tmp_path / "job")  # the shared run stays as it was
    data_dir = args[args.index("--data-dir") + 1]
    result = run_task("--data-dir", data_dir, "--job-dir", str(job_dir), "--train-steps", "850")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "This task ran 50 training steps; the global step is 850" in result.stderr  # not 850 from scratch
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        assert json.load(file)["global_step"] == 850


@pytest.mark.slow
def test_the_best_export_is_measured_and_reported_as_the_evaluation_it_holds(trained_job, tmp_path):
    """A run killed during an export leaves an evaluation whose export never happened. The best export was then
    measured against that evaluation, and the last words gave its figures as the best export's, which held an
    older model. Here: an evaluation at step 5000, far better than any, with no export."""
    original, args, _ = trained_job
    job_dir = shutil.copytree(original, tmp_path / "job")
    metric = metric_names.resolve_best("auto", 10)  # the digits' 10 classes
    better = 0.0 if not metric_names.higher_is_better(metric) else 1.0
    with tf.summary.create_file_writer(str(job_dir / "eval")).as_default():
        tf.summary.scalar(metric, better, step=5000)
    best = os.path.join(job_dir, "export", "best", os.listdir(job_dir / "export" / "best")[0])
    held = export.held_evaluation(export.evaluations(str(job_dir)), metric, best)
    assert held[0] == export.export_step(best) == 800 and held[1][metric] != better
    data_dir = args[args.index("--data-dir") + 1]
    result = run_task("--data-dir", data_dir, "--job-dir", str(job_dir), "--train-steps", "820")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "step 5000" not in result.stdout  # the last words name what best/ holds
    (version,) = os.listdir(job_dir / "export" / "best")
    best = str(job_dir / "export" / "best" / version)
    step, held = export.held_evaluation(export.evaluations(str(job_dir)), metric, best)
    assert step in (800, 820) and held[metric] != better


@pytest.mark.slow
def test_rerun_with_another_model_is_refused_before_touching_the_checkpoint(trained_job, tmp_path):
    original, args, _ = trained_job
    job_dir = shutil.copytree(original, tmp_path / "job")
    data_dir = args[args.index("--data-dir") + 1]
    result = run_task("--data-dir", data_dir, "--job-dir", str(job_dir), "--train-steps", "850", "--hidden-units", "64")
    assert result.returncode == 2
    assert (
        f"--job-dir {job_dir}: its checkpoint model.ckpt-800 is of another model "
        "(classifier/dense/kernel is [256, 256] there, [256, 64] with these flags and data)"
    ) in result.stderr.strip().splitlines()[-1]
    assert f"(with --warm-start-from {job_dir} to start from its weights)" in result.stderr  # the way to keep them
    assert sorted(os.listdir(job_dir)) == sorted(os.listdir(original))  # nothing saved over the old run


@pytest.mark.slow
def test_task_with_missing_data_says_so_in_one_line(tmp_path):
    result = run_task("--data-dir", str(tmp_path), "--job-dir", str(tmp_path / "job"))
    assert result.returncode == 2
    assert f"--data-dir {tmp_path}: not a dataset (no shards, no metadata.json)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_folders_that_cannot_be_written_stop_the_task_before_training(tmp_path, digits_dir):
    (tmp_path / "a-file").write_text("")
    for flag in ("--job-dir", "--export-dir"):
        folders = {"--job-dir": str(tmp_path / "job"), flag: str(tmp_path / "a-file")}
        result = run_task("--data-dir", digits_dir, *[part for item in folders.items() for part in item])
        assert result.returncode == 2
        assert f"{flag} {tmp_path / 'a-file'}: cannot write there (" in result.stderr.strip().splitlines()[-1]
        assert "Calling model_fn" not in result.stderr


@pytest.mark.slow
def test_task_ignores_flags_added_by_a_cloud_service(tmp_path):
    result = run_task("--config", str(tmp_path / "missing.yaml"), "--some-cloud-flag", "x")
    assert "Ignoring arguments this trainer does not know: --some-cloud-flag x" in result.stderr
    assert result.returncode == 2 and "missing.yaml" in result.stderr


@pytest.mark.slow
def test_the_gpu_knobs_also_train_on_a_cpu(tmp_path, digits_dir):
    job_dir = str(tmp_path / "job")
    knobs = ["--stage-on-device", "on", "--xla", "--mixed-precision", "--inter-op-threads", "2"]
    result = run_task("--data-dir", digits_dir, "--job-dir", job_dir, "--train-steps", "60", *knobs)
    assert result.returncode == 0, result.stderr[-3000:]
    assert tf.train.latest_checkpoint(job_dir).endswith("model.ckpt-60")
    variables = [name for name, _ in tf.train.list_variables(job_dir)]
    assert any("loss_scale" in name for name in variables)  # the optimizer scales the loss
    # Said once, where Grappler said that it skipped its rewrite for every graph it optimized (29 lines).
    assert "--mixed-precision: this machine has no GPU" in result.stderr
    assert "No (suitable) GPUs detected" not in result.stderr


def test_session_config_carries_the_device_knobs(monkeypatch):
    session = session_config(Config(xla=True, mixed_precision=True, inter_op_threads=3, intra_op_threads=4))
    assert session.inter_op_parallelism_threads == 3 and session.intra_op_parallelism_threads == 4
    assert session.graph_options.optimizer_options.global_jit_level == tf.compat.v1.OptimizerOptions.ON_1
    assert session.graph_options.rewrite_options.auto_mixed_precision == (1 if experiment.has_gpu() else 0)
    monkeypatch.setattr(experiment, "has_gpu", lambda: True)  # as a GPU machine answers
    session = session_config(Config(mixed_precision=True))
    assert session.graph_options.rewrite_options.auto_mixed_precision == 1  # RewriterConfig.ON
    plain = session_config(Config())
    assert plain.graph_options.optimizer_options.global_jit_level == 0 and plain.allow_soft_placement


@pytest.mark.slow
def test_a_torn_newest_checkpoint_is_named_and_the_run_resumes_from_an_intact_one(trained_job, tmp_path):
    original, args, _ = trained_job
    job_dir = shutil.copytree(original, tmp_path / "job")
    data = job_dir / "model.ckpt-800.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # what a preemption mid-write leaves
    data_dir = args[args.index("--data-dir") + 1]
    result = run_task("--data-dir", data_dir, "--job-dir", str(job_dir), "--train-steps", "420")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "model.ckpt-800 is damaged (its data file is truncated" in result.stderr
    assert "resuming from model.ckpt-400" in result.stderr
    assert "This task ran 20 training steps; the global step is 420" in result.stderr


@pytest.mark.slow
def test_a_run_killed_before_its_last_evaluation_is_evaluated_and_exported_by_the_rerun(trained_job, tmp_path):
    original, args, _ = trained_job
    job_dir = shutil.copytree(original, tmp_path / "job")
    for name in ("eval_metrics.json", "report.md"):  # what a kill after the last checkpoint leaves missing
        os.remove(job_dir / name)
    shutil.rmtree(job_dir / "export")
    result = run_task(*args[: args.index("--job-dir")], "--job-dir", str(job_dir), "--train-steps", "800")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Training already reached step 800: evaluating and exporting its last checkpoint" in result.stderr
    with open(job_dir / "eval_metrics.json") as file:
        assert json.load(file)["global_step"] == 800
    assert latest_export(Config(job_dir=str(job_dir)), "latest") and (job_dir / "report.md").exists()


@pytest.mark.slow
def test_a_rerun_of_a_finished_job_changes_nothing_and_a_resume_with_other_settings_says_so(trained_job, tmp_path):
    """A rerun with --train-steps at or below the job's step evaluated and exported its last checkpoint again (a new
    version in latest/ and best/, which TF Serving reloads), said it had reached step 40 of a 800-step job, and
    saved its flags over config.yaml as the job's settings."""
    original, args, _ = trained_job
    job_dir = shutil.copytree(original, tmp_path / "job")
    before = {name: sorted(os.listdir(job_dir / "export" / name)) for name in ("latest", "best")}
    settings = (job_dir / "config.yaml").read_text()
    (job_dir / "export" / "latest" / "temp-1796524748").mkdir()  # what a kill during an export leaves: removed
    data_dir = args[args.index("--data-dir") + 1]
    result = run_task("--data-dir", data_dir, "--job-dir", str(job_dir), "--train-steps", "40")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Training already reached step 800 (--train-steps 40), evaluated and exported it: nothing to do" in (
        result.stderr
    )
    assert "Wrote the" not in result.stderr  # nor its figures again
    assert {name: sorted(os.listdir(job_dir / "export" / name)) for name in ("latest", "best")} == before
    assert (job_dir / "config.yaml").read_text() == settings
    shutil.rmtree(job_dir / "export" / "best")  # a kill while the best exporter copied the last export
    assert run_task("--data-dir", data_dir, "--job-dir", str(job_dir), "--train-steps", "40").returncode == 0
    (version,) = os.listdir(job_dir / "export" / "best")
    assert export.export_step(str(job_dir / "export" / "best" / version)) == 800
    more = ["--train-steps", "810", "--save-checkpoints-steps", "400", "--seed", "3"]  # the job's flags but --seed
    result = run_task("--data-dir", data_dir, "--job-dir", str(job_dir), *more)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resuming at step 800 with other settings than its run before: --seed 3 (was 0);" in result.stderr


def test_a_checkpoint_removed_before_its_export_is_skipped_and_the_best_export_stays_true(
    trained_job, digits_dir, tmp_path, caplog
):
    """In a cluster, training removes checkpoints past --keep-checkpoint-max while the evaluator still
    evaluates an older one: that export is skipped in one warning (the evaluator, and the job, would
    otherwise die), no half-written folder stays, and the best exporter measures the next evaluation
    against the best export it really holds."""
    from trainer import dataset, experiment, export, serving

    job_dir = str(tmp_path / "job")
    shutil.copytree(trained_job[0], job_dir)
    shutil.rmtree(os.path.join(job_dir, "eval"))  # no evaluations to measure against: the ones below alone count
    config = Config(data_dir=digits_dir, job_dir=job_dir)
    data = dataset.locate(config)
    estimator = experiment.make_estimator(config, data.metadata, None)
    _, latest, best = export.exporters(
        config, data.metadata_path, data.metadata.class_names, serving.make_serving_input_fn(data.metadata)
    )
    older, newer = (os.path.join(job_dir, f"model.ckpt-{step}") for step in (400, 800))
    for path in tf.io.gfile.glob(older + ".*"):
        os.remove(path)  # as the chief's Saver does past --keep-checkpoint-max
    good, worse = {"log_loss": 0.1, "global_step": 400}, {"log_loss": 0.2, "global_step": 800}
    for exporter in (latest, best):
        before = os.listdir(os.path.join(job_dir, "export", exporter.name))
        assert exporter.export(estimator, None, older, good, False) is None
        assert os.listdir(os.path.join(job_dir, "export", exporter.name)) == before  # nor a temp- folder
    assert caplog.text.count("model.ckpt-400 was removed before it could be") == 2
    assert best.export(estimator, None, newer, worse, False)  # worse than the skipped one, yet the best held


class _Recorded(tf.estimator.Exporter):
    """An exporter that notes the steps it is asked to export."""

    def __init__(self):
        self.steps = []

    @property
    def name(self) -> str:
        return "recorded"

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.steps.append(eval_result["global_step"])
        return None


def test_step_0s_untrained_weights_are_exported_only_for_a_warm_start(tmp_path):
    """A run stopped at its first step (a corrupt shard) exported step 0 as latest and best; qt-predict of the job
    dir then answered from untrained weights, and a rerun kept them as best where they won on a tiny split."""
    for skip, expected in ((True, [5]), (False, [0, 5])):  # a warm start's step 0 holds the model it started from
        recorded = _Recorded()
        exporter = export.ExportTo(recorded, str(tmp_path), {}, skip_step_0=skip)
        for step in (0, 5):
            exporter.export(None, None, None, {"global_step": step}, False)
        assert recorded.steps == expected
