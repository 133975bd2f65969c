"""`python -m trainer.task`: flags (and an optional YAML config) in, a trained and exported model out."""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import posixpath
import shlex
import sys

from dataformat import commandline, gcs, lease, storage
from dataformat.errors import UserError, tensorflow_error_line
from trainer import config as config_module
from trainer.config import Config

log = logging.getLogger("trainer")

EXAMPLES = """\
examples:
  qt-preprocess --source digits --output data/digits      # first, a dataset
  qt-train --data-dir data/digits --job-dir runs/digits
  qt-train --data-dir data/mnist --job-dir runs/mnist --train-steps 5000
  qt-train --train-files 'data/x/train-*' --eval-files 'data/x/eval-*' --job-dir runs/x
  qt-train --config configs/mnist.yaml --data-dir data/mnist --job-dir runs/mnist --learning-rate 3e-4
"""
# An AUC below this says the model ranks little better than chance (0.5); a constant model's is 0.5.
CHANCE_AUC = 0.55
NO_DATA = (
    "--data-dir or --train-files is required: a dataset written by qt-preprocess "
    "(to try the built-in digits end to end: bash scripts/demo.sh)"
)


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = commandline.ArgumentParser(
        prog="qt-train",
        description="(also: python -m trainer.task) "
        "Train a classifier on a dataset written by `python -m preprocessing`, with a "
        "queue-backed input pipeline and tf.estimator.train_and_evaluate; export SavedModels to "
        "JOB_DIR/export/{latest,best}/ and write the final metrics to JOB_DIR/eval_metrics.json. "
        "Settings come from the defaults, then --config, then flags. A rerun with the same "
        "--job-dir resumes from its last checkpoint.",
        examples=EXAMPLES,
    )
    parser.add_argument(
        "--config", type=commandline.path, help="YAML file of settings (keys as the flags, with - or _)"
    )
    config_module.add_flags(parser)
    # Cloud services add flags of their own; they must not crash the job.
    return parser.parse_known_args(argv)


class _HideDeprecations(logging.Filter):
    """Drops TensorFlow's deprecation notices: this product is built on tf.estimator and queues on
    purpose, and two screens of notices would hide the log lines that matter."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "is deprecated and will be removed" not in record.getMessage()


def check_access(config: Config) -> None:
    """Fails before any work when the job dir or export dir cannot be written, or is on gs:// without
    credentials (not only after training, when the first export is due). Data on gs:// needs none where
    its bucket is public: TensorFlow and dataformat.gcs then read it anonymously."""
    import tensorflow as tf

    if any(folder and gcs.is_gcs(folder) for folder in (config.job_dir, config.export_dir)):
        gcs.check_credentials()
    for flag, folder in (("--job-dir", config.job_dir), ("--export-dir", config.export_dir)):
        if not folder:
            continue
        if gcs.is_gcs(folder):  # TensorFlow's makedirs in a missing bucket never returns, deaf to Ctrl-C
            gcs.check_bucket(folder, flag)
        try:
            tf.io.gfile.makedirs(folder)
        except tf.errors.OpError as error:
            raise UserError(f"{flag} {folder}: cannot write there ({tensorflow_error_line(error)})") from None


def _lease_if_chief(job_dir: str):
    """The job dir's lease: one training run at a time writes checkpoints there. In a TF_CONFIG
    cluster only the chief writes checkpoints, so only it holds the lease."""
    from trainer.cluster import is_chief

    if is_chief():
        return lease.held(job_dir, what="training", flag="--job-dir")
    return contextlib.nullcontext()


def main(argv: list[str] | None = None) -> int:
    return commandline.run(
        lambda: _train(argv), "rerun the same command to resume (from the last checkpoint, if one was saved)"
    )


def _train(argv: list[str] | None) -> int:
    args, unknown = parse_args(argv)
    config_module.check_no_switch_values(sys.argv[1:] if argv is None else argv, unknown)
    if unknown:
        log.warning("Ignoring arguments this trainer does not know: %s", " ".join(unknown))
    flags = {key: value for key, value in vars(args).items() if key not in ("config", "verbosity")}

    import tensorflow as tf  # after --help, which should not wait for TensorFlow

    from trainer import cluster, experiment
    from trainer.preemption import Preempted
    from trainer.vertex.environment import cloud_folders, trial_best_metric

    # TensorFlow's modules are hundreds of thousands of objects that live as long as the process: out of the
    # garbage collector's sight, every full collection while the graphs are built no longer scans them again
    # (a 4,096-column table's export, two runs each in one sitting: 1.19 s to 1.07 s).
    gc.freeze()
    tf.get_logger().addFilter(_HideDeprecations())
    cluster.check_tf_config()
    config = trial_best_metric(cloud_folders(config_module.from_sources(args.config, flags)))
    if not (config.data_dir or config.train_files):
        raise UserError(NO_DATA)
    if not config.job_dir:
        raise UserError("--job-dir is required when --data-dir or --train-files is given")
    if config.data_dir and storage.same_folder(config.job_dir, config.data_dir):
        raise UserError(f"--job-dir {config.job_dir}: it is --data-dir, whose shards the checkpoints would mix with")
    if config.data_dir and config.export_dir and storage.same_folder(config.export_dir, config.data_dir):
        raise UserError(f"--export-dir {config.export_dir}: it is --data-dir, whose shards the exports would mix with")
    check_access(config)
    try:
        with _lease_if_chief(config.job_dir):
            metrics = experiment.run(config)
    except tf.errors.PermissionDeniedError as error:
        raise UserError(
            f"Permission denied: {tensorflow_error_line(error)}; check the account's roles on the bucket"
        ) from None
    except tf.compat.v1.train.NanLossDuringTrainingError:
        rate = f"{config.learning_rate:g}" if config.learning_rate else "its default"
        given = [f"--{name.replace('_', '-')} {getattr(config, name)}" for name in DIVERGING
                 if getattr(config, name) not in (None, 0, "none")]  # fmt: skip
        also = f", or check {' and '.join(given)}" if given else ""  # --embedding-l2 1e30 was blamed on the rate
        raise UserError(
            f"the training loss became NaN (the model diverged); rerun with a lower --learning-rate (it was {rate})"
            f"{also}, in a new --job-dir"
        ) from None
    except tf.errors.UnauthenticatedError as error:
        raise UserError(f"Not authenticated: {tensorflow_error_line(error)}; {gcs.CREDENTIALS_HELP}") from None
    except tf.errors.OpError as error:
        if "No space left on device" in error.message:  # nothing to debug: say what to do
            raise UserError(
                f"--job-dir {config.job_dir}: the disk is full ({tensorflow_error_line(error)}); free some space "
                "and rerun the same command to resume from the last checkpoint"
            ) from None
        if "OOM when allocating" in error.message:  # a GPU's memory, mostly, that a batch's activations fill
            raise UserError(
                f"out of memory: {tensorflow_error_line(error)}; rerun with a lower --batch-size (it was "
                f"{config.batch_size}) or --eval-batch-size ({config.eval_batch_size}) to resume from the last "
                "checkpoint, or with a smaller network in a new --job-dir"
            ) from None
        log.error("TensorFlow stopped: %s", tensorflow_error_line(error))
        return 1
    except Preempted as stop:
        log.warning("%s", stop)
        return 143  # 128 + SIGTERM, what a scheduler expects of a task it stopped
    _report(config, metrics)
    return 0


# Settings besides the learning rate that can make the loss diverge when large.
DIVERGING = ("embedding_l2", "class_weights")


def _report(config: Config, metrics: dict | None) -> None:
    """The run's last words: where everything went, the accuracy, and what to try next."""
    import tensorflow as tf

    from trainer import early_stopping, figures
    from trainer import metrics as names
    from trainer.export import BEST_REPORT_DIR, METRICS_FILE, latest_export

    if metrics is None:
        log.info("This task does not evaluate; checkpoints are in %s", config.job_dir)
        return
    lead = names.resolve_best(config.best_metric, len(metrics[names.CONFUSION]))
    files = (figures.CONFUSION_FILE, figures.CURVES_FILE, figures.CURVES_OF_THRESHOLDS_FILE)
    pictures = [posixpath.join(config.job_dir, name) for name in files]
    best = latest_export(config, "best")
    lines = {
        "checkpoints": config.job_dir,
        "metrics": posixpath.join(config.job_dir, METRICS_FILE),
        "report": posixpath.join(config.job_dir, figures.REPORT_FILE),
        "best's report": _existing(posixpath.join(config.job_dir, BEST_REPORT_DIR, figures.REPORT_FILE)),
        "figures": ", ".join(_shown(path) for path in pictures if tf.io.gfile.exists(path)) or None,
        "latest export": latest_export(config, "latest"),
        "best export": best,
    }
    for name, path in lines.items():
        if path:
            print(f"{name + ':':15} {_shown(path)}")
    for name in dict.fromkeys([lead, names.ACCURACY]):
        print(f"{name + ':':15} {metrics[name]:.4f}")
    _report_best(config.job_dir, best, metrics, lead)
    _warn_if_learned_little(metrics, lead, config.class_weights != "none")
    stop = early_stopping.read_stop(config.job_dir)
    if stop:
        # Why it stopped, not which model is best: training ends a few steps past that evaluation (at the next
        # check), and the last evaluation, of the last step, may be better and the best export.
        print(f"{'stopped early:':15} at step {stop.step}, after {stop.evaluations} evaluation(s) with no "
              f"{stop.metric} better than step {stop.best_step}'s {stop.best:.4f}")  # fmt: skip
    if best:  # commands to paste: a path with a space or a quote, quoted as the shell reads it
        job, model = shlex.quote(_shown(config.job_dir)), shlex.quote(_shown(best))
        print(f"{'next:':15} qt-predict --model-dir {model} --input FILE   (or: tensorboard --logdir {job})")
    sys.stdout.flush()


def _report_best(job_dir: str, best: str | None, metrics: dict, lead: str) -> None:
    """Where the figures above (the last evaluation's) are not the best export's, the best export's too: a model
    that overfit (a date's or an ID's values memorized) printed its worse last figures beside the better export's
    path."""
    from trainer import metrics as names
    from trainer.export import evaluations, held_evaluation

    series = evaluations(job_dir)
    found = held_evaluation(series, lead, best)
    if found is not None and names.better_by(lead)(best_eval_result=metrics, current_eval_result=found[1]):
        step, value = found[0], found[1][lead]
        accuracy = dict(series.get(names.ACCURACY, [])).get(step)
        shown = f", accuracy {accuracy:.4f}" if accuracy is not None and lead != names.ACCURACY else ""
        label = "best export's:"
        print(f"{label:15} {lead} {value:.4f}{shown}, of the evaluation at step {step}")


def _warn_if_learned_little(metrics: dict, lead: str, class_weights: bool) -> None:
    """A warning where the last evaluation says the model learned little: by AUC where it leads (two classes),
    since on rare positives a good model's accuracy may lie below always answering the majority class (Caravan's
    6% buyers: AUC 0.72, as logistic regression's, at accuracy 0.938 against 0.940); else by that accuracy, unless
    --class-weights trades accuracy for the rare classes' recall on purpose."""
    from trainer import metrics as names

    if lead == names.AUC:
        if metrics[names.AUC] < CHANCE_AUC:
            log.warning("The last evaluation's AUC, %.4f, is near chance's 0.5: the model learned little, or overfit "
                        "(see report.md's curves)", metrics[names.AUC])  # fmt: skip
        return
    majority = names.majority_rate(metrics)
    # At the majority's rate, it learned nothing; the metric is a float32 (0.6666667 for 2/3), hence the tolerance.
    if majority is not None and metrics[names.ACCURACY] <= majority + 1e-6 and not class_weights:
        log.warning(
            "The last evaluation's accuracy, %.4f, is no better than always answering the majority class, %.4f: the "
            "model learned little, or overfit (see report.md's curves)",
            metrics[names.ACCURACY],
            majority,
        )


def _existing(path: str) -> str | None:
    import tensorflow as tf

    return path if tf.io.gfile.exists(path) else None


def _shown(path: str) -> str:
    """Local paths in full, so they can be copied from anywhere; gs:// paths as they are."""
    return os.path.abspath(path) if "://" not in path and ", " not in path else path


if __name__ == "__main__":
    sys.exit(main())
