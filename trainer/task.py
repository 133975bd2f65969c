"""`python -m trainer.task`: flags (and an optional YAML config) in, a trained and exported model out.

With no data flags it runs the built-in digits dataset end to end: preprocess, train,
evaluate, export.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import posixpath
import sys

from preprocessing import gcs, storage
from preprocessing.errors import UserError
from trainer import config as config_module
from trainer.config import Config

log = logging.getLogger("trainer")

DEMO_JOB_DIR = os.path.join("runs", "digits")

EXAMPLES = """\
examples:
  python -m trainer.task                                  # the built-in digits, end to end
  python -m trainer.task --data-dir data/mnist --job-dir runs/mnist --train-steps 5000
  python -m trainer.task --train-files 'data/x/train-*' --eval-files 'data/x/eval-*' --job-dir runs/x
  python -m trainer.task --config configs/mnist.yaml --learning-rate 1e-3
"""


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.task",
        description="Train a classifier on a dataset written by `python -m preprocessing`, with a "
        "queue-backed input pipeline and tf.estimator.train_and_evaluate; export SavedModels to "
        "JOB_DIR/export/{latest,best}/ and write the final metrics to JOB_DIR/eval_metrics.json. "
        "Settings come from the defaults, then --config, then flags. A rerun with the same "
        "--job-dir resumes from its last checkpoint.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", help="YAML file of settings (keys as the flags, with - or _)")
    config_module.add_flags(parser)
    # Cloud services add flags of their own; they must not crash the job.
    return parser.parse_known_args(argv)


def prepare_demo(config: Config) -> Config:
    """Points a config with no data at the built-in digits, preprocessing them on first use."""
    from preprocessing.schema import METADATA_FILE
    from preprocessing.sources import SourceOptions, read_digits
    from preprocessing.writer import build_dataset

    job_dir = config.job_dir or DEMO_JOB_DIR
    data_dir = posixpath.join(job_dir, "data")
    if storage.exists(posixpath.join(data_dir, METADATA_FILE)):
        log.info("No data given: using the built-in digits already preprocessed in %s", data_dir)
    else:
        log.info("No data given: preprocessing the built-in digits into %s", data_dir)
        build_dataset(read_digits(None, SourceOptions()), data_dir, source="digits", overwrite=True)
    return dataclasses.replace(config, data_dir=data_dir, job_dir=job_dir)


class _HideDeprecations(logging.Filter):
    """Drops TensorFlow's deprecation notices: this product is built on tf.estimator and queues on
    purpose, and two screens of notices would hide the log lines that matter."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "is deprecated and will be removed" not in record.getMessage()


def cloud_folders(config: Config) -> Config:
    """Applies the folders Vertex AI passes in the environment, where no flag gives them.

    Checkpoints and summaries go to AIP_CHECKPOINT_DIR, exports to AIP_MODEL_DIR. A tuning
    trial (CLOUD_ML_TRIAL_ID) with an explicit --job-dir gets a sub-folder of its own, so that
    trials never resume from each other's checkpoints.
    """
    environ = os.environ
    job_dir = config.job_dir or environ.get("AIP_CHECKPOINT_DIR") or environ.get("AIP_MODEL_DIR")
    if config.job_dir and "CLOUD_ML_TRIAL_ID" in environ:
        job_dir = posixpath.join(config.job_dir, f"trial-{environ['CLOUD_ML_TRIAL_ID']}")
    export_dir = config.export_dir or (None if config.job_dir else environ.get("AIP_MODEL_DIR"))
    if (job_dir, export_dir) != (config.job_dir, config.export_dir):
        log.info("Job dir %s, exports in %s", job_dir, export_dir or posixpath.join(job_dir, "export"))
    return dataclasses.replace(config, job_dir=job_dir, export_dir=export_dir)


def check_access(config: Config) -> None:
    """Fails before any work when credentials are missing or the job dir or export dir cannot be
    written (not only after training, when the first export is due)."""
    import tensorflow as tf

    from trainer.dataset import plain_message

    paths = [config.data_dir, config.train_files, config.eval_files, config.job_dir, config.export_dir]
    if any(path and gcs.is_gcs(path) for path in paths):
        gcs.check_credentials()
    for flag, folder in (("--job-dir", config.job_dir), ("--export-dir", config.export_dir)):
        if not folder:
            continue
        try:
            tf.io.gfile.makedirs(folder)
        except tf.errors.OpError as error:
            raise UserError(f"{flag} {folder}: cannot write there ({plain_message(error)})") from None


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    args, unknown = parse_args(argv)
    if unknown:
        log.warning("Ignoring arguments this trainer does not know: %s", " ".join(unknown))
    flags = {key: value for key, value in vars(args).items() if key != "config"}

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # TensorFlow's C++ start-up notices are noise here
    import tensorflow as tf  # after --help, which should not wait for TensorFlow

    from trainer import experiment
    from trainer.dataset import plain_message
    from trainer.preemption import Preempted

    tf.get_logger().setLevel(logging.INFO)
    tf.get_logger().addFilter(_HideDeprecations())
    try:
        config = cloud_folders(config_module.from_sources(args.config, flags))
        if not (config.data_dir or config.train_files):
            config = prepare_demo(config)
        elif not config.job_dir:
            raise UserError("--job-dir is required when --data-dir or --train-files is given")
        check_access(config)
        metrics = experiment.run(config)
    except UserError as error:
        log.error("%s", error)
        return 2
    except tf.errors.PermissionDeniedError as error:
        log.error("Permission denied: %s; check the account's roles on the bucket", plain_message(error))
        return 2
    except tf.errors.UnauthenticatedError as error:
        log.error("Not authenticated: %s; %s", plain_message(error), gcs.CREDENTIALS_HELP)
        return 2
    except tf.errors.OpError as error:
        log.error("TensorFlow stopped: %s", plain_message(error))
        return 1
    except Preempted as stop:
        log.warning("%s", stop)
        return 143  # 128 + SIGTERM, what a scheduler expects of a task it stopped
    except KeyboardInterrupt:
        log.error("Interrupted; rerun the same command to resume from the last checkpoint")
        return 130
    _report(config, metrics)
    return 0


def _report(config: Config, metrics: dict | None) -> None:
    from trainer.experiment import latest_export
    from trainer.reporting import METRICS_FILE

    if metrics is None:
        log.info("This task does not evaluate; checkpoints are in %s", config.job_dir)
        return
    log.info(
        "Final evaluation at step %d: accuracy %.4f, loss %.4f",
        metrics["global_step"],
        metrics["accuracy"],
        metrics["loss"],
    )
    lines = {
        "checkpoints": config.job_dir,
        "metrics": posixpath.join(config.job_dir, METRICS_FILE),
        "latest export": latest_export(config, "latest"),
        "best export": latest_export(config, "best"),
    }
    for name, path in lines.items():
        shown = os.path.abspath(path) if path and "://" not in path else path
        print(f"{name + ':':15} {shown}")
    print(f"{'accuracy:':15} {metrics['accuracy']:.4f}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
