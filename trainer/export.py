"""What a run leaves for serving and for people: SavedModels in EXPORT_DIR/{latest,best}/ (TF
Serving's numbered version folders), and the last evaluation's metrics in eval_metrics.json."""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Callable

import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import METADATA_FILE
from trainer import checkpoints, early_stopping, figures, serving
from trainer import metrics as names
from trainer.config import CONFIG_FILE, EXPORT_DIR, Config, newest_export
from trainer.progress import LastEvaluation
from trainer.vertex import environment

log = logging.getLogger("trainer")

METRICS_FILE = "eval_metrics.json"  # in the job dir, the last evaluation's; in an export's assets.extra/, its own
# In the job dir: the best export's report, where it is not the last evaluation's (not "best": --export-dir may be
# the job dir, and its best/ the best exports).
BEST_REPORT_DIR = "best_report"
LATEST_KEPT = 3


class ExportTo(tf.estimator.Exporter):
    """Runs an exporter into FOLDER/NAME instead of the Estimator's fixed MODEL_DIR/export/NAME. Exporters
    that share `exported` build each checkpoint's SavedModel once; the others copy it (ExportsOnce)."""

    def __init__(self, exporter: tf.estimator.Exporter, folder: str, exported: dict, skip_step_0: bool = True):
        self._exporter = exporter
        self._folder = folder
        self._exported = exported
        self._skip_step_0 = skip_step_0  # step 0's weights are untrained, but for a warm start's

    @property
    def name(self) -> str:
        return self._exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._skip_step_0 and eval_result.get("global_step") == 0:
            return None  # a run stopped at its first step (a corrupt shard): qt-predict of the job dir used it
        folder = posixpath.join(self._folder, self.name)
        once = ExportsOnce(estimator, self._exported)
        best_before = getattr(self._exporter, "_best_eval_result", None)  # BestExporter's, None for the others
        try:
            path = self._exporter.export(once, folder, checkpoint_path, eval_result, is_the_final_export)
        except (ValueError, tf.errors.NotFoundError) as error:
            other_value_error = isinstance(error, ValueError) and "not a valid checkpoint" not in str(error)
            if not checkpoint_path or not checkpoints.removed(checkpoint_path) or other_value_error:
                raise
            return self._skip_removed(folder, checkpoint_path, best_before)
        if path:  # the best exporter writes nothing when the evaluation is no better
            _write_json(posixpath.join(_text(path), "assets.extra", METRICS_FILE), json_numbers(eval_result))
            log.info("Exported %s%s", _text(path), f" (a copy of {once.copied_from})" if once.copied_from else "")
        return path

    def _skip_removed(self, folder: str, checkpoint_path: str, best_before) -> None:
        """A checkpoint gone before its export: in a cluster, training keeps --keep-checkpoint-max checkpoints
        and removes older ones while the evaluator still evaluates. The evaluator goes on (it would otherwise
        die, and the job with it); a later evaluation exports, the best exporter measuring it against the
        best export it really holds."""
        remove_unfinished(folder)  # the Estimator's half-written one
        if hasattr(self._exporter, "_best_eval_result"):
            self._exporter._best_eval_result = best_before  # a private field of tf.estimator.BestExporter
        log.warning(
            "Not exported to %s/: %s was removed before it could be (%s)",
            self.name, _text(checkpoint_path), checkpoints.REMOVED_WHY,
        )  # fmt: skip
        return None


def remove_unfinished(folder: str) -> None:
    """Removes the temp-VERSION folders in `folder` (an exporter's): exports cut short, by a kill or a removed
    checkpoint. Only while no other task of the job may be writing one."""
    for unfinished in tf.io.gfile.glob(posixpath.join(folder, "temp-*")):
        tf.io.gfile.rmtree(unfinished)


class ExportsOnce:
    """The Estimator as an exporter sees it, except that a checkpoint already exported with the same
    serving inputs is copied into the new folder (same version number), not built again. Building the
    graph takes seconds for a wide table (4,096 columns: 2.5 s) or a backbone; the copy, milliseconds."""

    def __init__(self, estimator: tf.estimator.Estimator, exported: dict):
        self._estimator = estimator
        self._exported = exported  # (checkpoint path, serving input fn) -> its export
        self.copied_from = ""  # the export copied, if one was

    def __getattr__(self, name: str):
        return getattr(self._estimator, name)

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, *args, checkpoint_path=None, **kwargs):
        done = self._exported.get((checkpoint_path, serving_input_receiver_fn))
        if checkpoint_path and done:
            self.copied_from = _text(done)
            return copy_export(self.copied_from, _text(export_dir_base)).encode()
        path = self._estimator.export_saved_model(
            export_dir_base, serving_input_receiver_fn, *args, checkpoint_path=checkpoint_path, **kwargs
        )
        self._exported[checkpoint_path, serving_input_receiver_fn] = path
        return path


def copy_export(source: str, folder: str) -> str:
    """The SavedModel `source` copied to `folder`/its version, through a temporary folder renamed when
    whole, as the Estimator writes its exports (on local disk TF Serving never sees half of one; on gs://,
    where a rename copies object by object, no more so than with the Estimator's own exports)."""
    version = posixpath.basename(source.rstrip("/"))
    temporary, target = posixpath.join(folder, f"temp-{version}"), posixpath.join(folder, version)
    for directory, _, files in tf.io.gfile.walk(source):
        relative = directory[len(source) :].lstrip("/")
        tf.io.gfile.makedirs(posixpath.join(temporary, relative))
        for name in files:
            tf.io.gfile.copy(posixpath.join(directory, name), posixpath.join(temporary, relative, name), True)
    tf.io.gfile.rename(temporary, target)
    return target


class BestAcrossRuns(tf.estimator.BestExporter):
    """The one best export by `metric`, across the runs of a job: a resumed run (after a preemption, or with more
    --train-steps) exports only an evaluation better than those before it. tf.estimator.BestExporter exports each
    process's first evaluation, whatever it is: a resumed run replaced step 60's best export with step 90's worse
    one, and deleted step 60's."""

    def __init__(self, metric: str, *args, **kwargs):
        super().__init__(*args, compare_fn=names.better_by(metric), exports_to_keep=1, **kwargs)
        self._metric = metric

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        held = newest_export(export_path)  # a best export of an earlier run
        if not self._has_exported and held:
            found = held_evaluation(evaluations(estimator.model_dir), self._metric, held)
            if found is not None:  # else BestExporter's own rule: export
                self._model_dir, self._best_eval_result, self._has_exported = estimator.model_dir, found[1], True
        return super().export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)


def evaluations(job_dir: str) -> dict[str, figures.Series]:
    """Each metric's (step, value) of the job's evaluations, from their summaries."""
    return figures.read_scalars(posixpath.join(job_dir, figures.EVAL_DIR))


def held_evaluation(series: dict[str, figures.Series], metric: str, export_path: str | None) -> tuple | None:
    """(step, {name: value}) of the evaluation of the checkpoint that the export at `export_path` holds; None
    where the summaries have no `metric` for it. Not the best of the summaries: a run killed during an export
    leaves an evaluation whose export never happened, and the best export was then measured, and reported, as
    that evaluation."""
    step = export_step(export_path) if export_path else None
    held = {name: dict(values)[step] for name, values in series.items() if step in dict(values)}
    return (step, held) if metric in held else None


def export_step(path: str) -> int | None:
    """The global step of the checkpoint an export was made from (its variables keep it); None if unreadable."""
    try:
        return int(tf.train.load_variable(posixpath.join(path, "variables", "variables"), "global_step"))
    except (tf.errors.OpError, ValueError):
        return None


class MetricsWriter(tf.estimator.Exporter):
    """After every evaluation (on whichever task evaluates, alone or in a cluster): writes the
    metrics to JOB_DIR/eval_metrics.json, in a tuning trial reports --tuning-metric, and copies
    the summaries where Vertex AI TensorBoard reads them; after the last one, the figures and
    report.md (trainer/figures.py)."""

    def __init__(self, job_dir: str, class_names: tuple[str, ...], tuning_metric: str, best_metric: str):
        check_metric("--tuning-metric", tuning_metric, len(class_names))
        self._job_dir, self._class_names, self._tuning_metric = job_dir, class_names, tuning_metric
        self._best_metric = best_metric
        self._path = posixpath.join(job_dir, METRICS_FILE)

    @property
    def name(self) -> str:
        return "metrics"

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        metrics = json_numbers(eval_result)
        LastEvaluation.metrics, LastEvaluation.shown = metrics, self._best_metric
        log.info("Evaluation at step %d: %s", metrics["global_step"], summary(metrics, self._best_metric))
        _write_json(self._path, metrics)
        if environment.reports_tuning_metric():
            metric = self._tuning_metric
            environment.report_tuning_metric(metric, metrics[metric], metrics["global_step"])
        environment.copy_summaries(self._job_dir)  # for Vertex AI TensorBoard, when the job has one
        stop = early_stopping.read_stop(self._job_dir)
        if is_the_final_export or stop and metrics["global_step"] >= stop.step:  # the last evaluation
            write_figures(self._job_dir, metrics, self._class_names, self._best_metric)
        return None


def write_best_report(job_dir: str, best: str | None, last: dict, class_names: tuple[str, ...], lead: str) -> str:
    """Where the best export is of another evaluation than the last (the one report.md describes), that
    evaluation's report and figures in JOB_DIR/BEST_REPORT_DIR/, and a line in report.md pointing to it: a threshold
    read off the last model's report did not fit the model to deploy. Returns its path, or "" where there is none
    (the same evaluation, or an export from before exports held their evaluation), an earlier run's removed."""
    folder = posixpath.join(job_dir, BEST_REPORT_DIR)
    metrics = read_metrics(posixpath.join(best, "assets.extra")) if best else None
    if not metrics or metrics["global_step"] == last["global_step"]:
        for name in (figures.REPORT_FILE, figures.CONFUSION_FILE, figures.CURVES_OF_THRESHOLDS_FILE):
            if tf.io.gfile.exists(posixpath.join(folder, name)):  # an earlier run's, of another best export
                tf.io.gfile.remove(posixpath.join(folder, name))
        figures.point_to_best(job_dir, "")
        return ""
    written = figures.write_figures(job_dir, metrics, class_names, lead, folder)
    figures.point_to_best(job_dir, f"The best export, by {lead}, is of step {metrics['global_step']}: see [its "
                                   f"report]({BEST_REPORT_DIR}/{figures.REPORT_FILE}).")  # fmt: skip
    log.info("Wrote the best export's report: %s", written["report"])
    return written["report"]


def _write_json(path: str, value: dict) -> None:
    with tf.io.gfile.GFile(path, "w") as file:
        file.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def write_figures(job_dir: str, metrics: dict, class_names: tuple[str, ...], lead: str) -> None:
    """The figures and report.md of an evaluation, its summary led by `lead` (--best-metric's), said in the log."""
    for name, path in figures.write_figures(job_dir, metrics, class_names, lead).items():
        log.info("Wrote the %s: %s", name, path)
    LastEvaluation.figures_of = (job_dir, metrics["global_step"])


def exporters(
    config: Config, metadata_path: str, class_names: tuple[str, ...], serving_input_fn: Callable
) -> list[tf.estimator.Exporter]:
    """The latest exports, the best one by --best-metric, and the metrics file. The dataset's
    metadata.json travels in every export's assets.extra/, for the serving side, and the run's
    config.yaml, for a warm start; serving_default takes what --serving-input says."""
    serving_input_fn = serving.with_default_input(serving_input_fn, config.serving_input)
    with tf.Graph().as_default():
        serving_input_fn()  # a --serving-input the data cannot take stops the run now, not at the first export
    assets = {METADATA_FILE: metadata_path, CONFIG_FILE: posixpath.join(config.job_dir, CONFIG_FILE)}
    folder = export_folder(config)
    latest = tf.estimator.LatestExporter("latest", serving_input_fn, assets_extra=assets, exports_to_keep=LATEST_KEPT)
    best_metric = names.resolve_best(config.best_metric, len(class_names))
    check_metric("--best-metric", best_metric, len(class_names))
    best = BestAcrossRuns(best_metric, "best", serving_input_fn, assets_extra=assets)
    metrics = MetricsWriter(config.job_dir, class_names, config.tuning_metric, best_metric)
    exported = {}  # the best export of a checkpoint the latest exporter has exported is a copy of it
    untrained_at_0 = not config.warm_start_from  # a warm start's step 0 holds the model it started from
    return [metrics, *(ExportTo(exporter, folder, exported, untrained_at_0) for exporter in (latest, best))]


def check_metric(flag: str, name: str, num_classes: int) -> None:
    """A metric (--tuning-metric, --best-metric) this dataset's evaluation reports; UserError before
    training otherwise (qt-submit, which checked the name, could not know the dataset)."""
    problem = names.problem(name, num_classes)
    if problem:
        raise UserError(f"{flag} {name}: {problem}")


def summary(metrics: dict, lead: str) -> str:
    """The evaluation in a few figures: `lead` (--best-metric's) first, then accuracy and log loss. Not the
    Estimator's `loss` beside log loss: it averages each batch's mean, so it depends on --eval-batch-size."""
    shown = dict.fromkeys([lead, names.ACCURACY, names.LOG_LOSS if names.LOG_LOSS in metrics else names.LOSS])
    return ", ".join(f"{name} {metrics[name]:.4f}" for name in shown if name in metrics)


def json_numbers(metrics: dict) -> dict:
    """Evaluation results (numpy scalars and arrays) as plain JSON numbers and lists."""
    return {key: value.tolist() if hasattr(value, "tolist") else value for key, value in metrics.items()}


def read_metrics(folder: str) -> dict | None:
    """The metrics in `folder`'s METRICS_FILE (a job dir's last evaluation, or an export's assets.extra/ own), None
    without one."""
    path = posixpath.join(folder, METRICS_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as file:
        return json.load(file)


def export_folder(config: Config) -> str:
    return config.export_dir or posixpath.join(config.job_dir, EXPORT_DIR)


def latest_export(config: Config, name: str) -> str | None:
    """The newest SavedModel the exporter NAME ("latest" or "best") wrote, or None."""
    return newest_export(posixpath.join(export_folder(config), name))


def _text(path) -> str:
    return path.decode() if isinstance(path, bytes) else str(path)
