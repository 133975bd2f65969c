"""The run's configuration: one frozen dataclass filled from defaults, then YAML, then flags.

Every field is also a command-line flag (`batch_size` -> `--batch-size`) and a YAML key, so
the three can never drift apart. The result is passed down and never mutated.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Optional

import yaml

from dataformat import commandline, yaml_files
from dataformat.commandline import MAX_INT
from dataformat.errors import UserError, yaml_problem
from trainer import metrics

# The settings that name a local folder or file (or a gs:// one), and those that name several, comma-separated.
PATHS = ("data_dir", "metadata", "job_dir", "export_dir", "warm_start_from", "pretrained")
PATH_LISTS = ("train_files", "eval_files")  # the shards' globs
ON_OFF_AUTO = ("stage_on_device", "average_weights")  # the settings that are auto, on or off
CONFIG_FILE = "config.yaml"  # the resolved settings, saved beside the checkpoints
EXPORT_DIR = "export"  # under --job-dir, unless --export-dir says otherwise
SERVING_INPUTS = ("numbers", "image_bytes", "examples")  # the signatures of trainer/serving.py


def _option(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Config:
    # Data and output.
    data_dir: Optional[str] = _option(None, "a folder written by `python -m preprocessing` (uses its metadata.json)")
    train_files: Optional[str] = _option(None, "glob(s) of training shards, comma-separated, instead of --data-dir")
    eval_files: Optional[str] = _option(None, "glob(s) of evaluation shards, comma-separated, with --train-files")
    metadata: Optional[str] = _option(
        None, "metadata.json for --train-files (default: the one beside the first training shard)"
    )
    job_dir: Optional[str] = _option(None, "folder for checkpoints, summaries, exports and eval_metrics.json")
    export_dir: Optional[str] = _option(
        None, "folder for the exported SavedModels, in latest/ and best/ (default: JOB_DIR/export)"
    )
    warm_start_from: Optional[str] = _option(
        None,
        "an earlier model's job dir or export to start from, in a new --job-dir on new data: weights that still fit "
        "are taken, rows of categories and words are moved to their new index by value, new ones start fresh",
    )
    # Training.
    batch_size: int = _option(128, "examples per training step")
    learning_rate: Optional[float] = _option(
        None, "Adam's learning rate (default: 1e-3 for wide_deep and table on a table without text; 3e-4 otherwise)"
    )
    learning_rate_decay: float = _option(1.0, "multiply the learning rate by this every --decay-steps (1 = constant)")
    decay_steps: int = _option(1000, "steps between learning-rate decays")
    train_steps: Optional[int] = _option(
        None,
        "total training steps (default: 2000, or for a table about 40 passes over its training rows where that is "
        "fewer, at least 1000; a rerun resumes from the last checkpoint)",
    )
    num_epochs: Optional[int] = _option(
        None,
        "stop training after this many passes over the data (one machine only); --train-steps then defaults to the "
        "steps they take, and ends training sooner where it is fewer (default: no limit)",
    )
    steps_per_run: str = _option(
        "auto",
        "training steps per session.run, in an in-graph loop (each step its own batch and update; "
        "hooks, logs and checkpoints come between runs); auto: 32",
    )
    eval_steps: Optional[int] = _option(None, "evaluation batches (default: every evaluation example, once)")
    eval_batch_size: int = _option(256, "examples per evaluation batch")
    seed: int = _option(
        0,
        "seed for weights, dropout and shuffling (the reader threads still interleave the rows in their own "
        "order, so the figures of two runs differ a little)",
    )
    # Model.
    model: str = _option(
        "auto",
        "the network: text or text_cnn (tables of text columns alone), cnn (images), mlp (images and vectors), "
        "wide_deep or table (tables), a pretrained backbone for photos (mobilenet_v2, efficientnet_b0, resnet50; "
        "see --pretrained), or auto (the first that reads the data)",
    )
    conv_filters: tuple[int, ...] = _option(
        (32, 64),
        "filters of each convolution block (image inputs; '' for none); larger images get more blocks, of twice the "
        "filters (at most 256), until the last feature map is at most 8x8",
    )
    pretrained: Optional[str] = _option(
        None,
        "the weights a backbone (--model mobilenet_v2, efficientnet_b0, resnet50) starts from: imagenet (Keras's, "
        "downloaded) or an .h5 file of the backbone without its top, local or gs:// (default: random)",
    )
    freeze_steps: Optional[int] = _option(
        None,
        "with --pretrained: steps that train only the head before the backbone's top blocks train too, at a tenth "
        "of the learning rate (default: half of --train-steps; with --num-epochs, all of them)",
    )
    hidden_units: tuple[int, ...] = _option((256,), "units of each dense layer after the convolutions ('' for none)")
    dropout: Optional[float] = _option(
        None, "dropout rate of the dense layers (default: 0.5 for tables, which are often small; 0.3 otherwise)"
    )
    augment: str = _option(
        "auto",
        "photos only: none; flip (a random horizontal flip); shift (a window of the model's input, 87.5%% of each "
        "stored side, at a random place, then a flip); or crop (a random box of 5-100%% of the stored image, "
        "resized to the model's input, then a flip). With shift and crop, evaluation and serving take the center "
        "window. auto: crop for photos (3 channels, 32 pixels a side or more), none for digit-like data",
    )
    data_format: str = _option("auto", "channels_first, channels_last, or auto (channels_first on a GPU)")
    crosses: str = _option(
        "",
        "hashed feature crosses in the linear part of wide_deep, e.g. education:occupation,age:hours:sex "
        "(numeric columns by their quantile bucket), or pairs: each pair of the 8 categorical columns with the "
        "fewest values (default: none; see docs/tables.md for what they measured)",
    )
    embedding_l2: Optional[float] = _option(
        None,
        "L2 penalty on a table's embeddings and linear weights, per example, and on a table of under 6,400 "
        "training rows on its dense layers' logits too (default: 64 / training rows, at most 0.01: small tables "
        "need more)",
    )
    average_weights: str = _option(
        "auto",
        "on: a run that reaches --train-steps ends with the mean of its weights at 10 steps over the last half of "
        "training, which the last evaluation and the exports use; off: its last step's weights; auto: on for "
        "the table networks, wide_deep and table (measured there: docs/tables.md), off otherwise",
    )
    class_weights: str = _option(
        "none",
        "each class's weight in the training loss: none (all 1), balanced (inverse to the class's share of the "
        "training examples, as scikit-learn's), or one weight a class in metadata.json's order, e.g. 1,4",
    )
    # Input pipeline.
    reader_threads: int = _option(2, "parallel readers, each with its own parse thread, filling the shuffle queue")
    read_batch_size: int = _option(256, "examples each reader takes per read (in whole records)")
    shuffle_buffer: int = _option(2048, "examples the shuffle queue keeps before it hands out a batch")
    shuffle_block: int = _option(
        8,
        "examples that move through the shuffle queue together, each read shuffled first "
        "(1: one by one; made a divisor of --batch-size; 1 with --num-epochs)",
    )
    input_timeout_secs: int = _option(
        300, "stop with an error when a step waits this long for its batch (0: wait forever, or until Ctrl-C)"
    )
    skip_corrupt: bool = _option(False, "check every shard first and leave out those with corrupt or malformed records")
    # Device tuning: these matter on GPUs, and are left as they are on a CPU.
    stage_on_device: str = _option(
        "auto", "copy the next batch onto the device while a step runs: on, off, or auto (on with a GPU)"
    )
    num_towers: str = _option(
        "auto",
        "copies of the model, one per GPU, each training on its own batch of --batch-size (the global "
        "batch is towers x batch size); auto: one per visible GPU, one without GPUs",
    )
    xla: bool = _option(False, "compile clusters of ops with XLA (fuses batch norm and activations on a GPU)")
    mixed_precision: bool = _option(
        False, "compute in float16 on the GPU, with float32 variables and dynamic loss scaling (tensor-core GPUs)"
    )
    inter_op_threads: int = _option(0, "threads running independent ops at once (0: TensorFlow's choice, the cores)")
    intra_op_threads: int = _option(0, "threads inside one op, e.g. a matrix multiply (0: TensorFlow's choice)")
    progress_secs: float = _option(
        30.0, "seconds between two progress lines when not on a terminal (on a terminal: a progress bar)"
    )
    # Checkpoints and evaluation.
    save_checkpoints_steps: int = _option(500, "steps between checkpoints (and evaluations)")
    keep_checkpoint_max: int = _option(5, "checkpoints to keep")
    eval_throttle_secs: int = _option(10, "least seconds between two evaluations during training")
    eval_start_delay_secs: int = _option(10, "seconds a distributed evaluator waits before its first evaluation")
    early_stopping_evals: Optional[int] = _option(
        None,
        "stop training when --best-metric has not improved for this many evaluations, then evaluate and export as a "
        "finished run does (one machine or a TF_CONFIG cluster; default: train to --train-steps)",
    )
    best_metric: str = _option(
        "auto",
        f"the metric that picks the best export and that the final summary leads with: {metrics.CHOOSABLE_TEXT}; "
        "auto: auc for binary labels, log_loss for more classes (a constant model never wins by them)",
    )
    tuning_metric: str = _option(
        "accuracy",
        f"the metric a hyperparameter-tuning trial reports after every evaluation: {metrics.CHOOSABLE_TEXT} "
        "(qt-submit passes the job config's tuning.metric)",
    )
    # Export.
    serving_input: str = _option(
        "numbers",
        "what the export's serving_default takes, as Vertex AI batch prediction sends it: numbers, image_bytes "
        "(PNG/JPEG files) or examples (serialized tf.Example); the other inputs keep their own signatures",
    )

    def __post_init__(self) -> None:
        check_values(self)


_POSITIVE = (
    "batch_size",
    "decay_steps",
    "eval_batch_size",
    "reader_threads",
    "read_batch_size",
    "shuffle_block",
    "save_checkpoints_steps",
    "keep_checkpoint_max",
)
_POSITIVE_IF_SET = ("train_steps", "num_epochs", "eval_steps", "early_stopping_evals")
_NON_NEGATIVE_IF_SET = ("freeze_steps",)
_NON_NEGATIVE = (
    "shuffle_buffer",
    "input_timeout_secs",
    "inter_op_threads",
    "intra_op_threads",
    "eval_throttle_secs",
    "eval_start_delay_secs",
)


MOST_READERS = 1024  # --reader-threads: more threads than any machine's cores many times over


def check_values(config: Config) -> None:
    """Raises UserError naming the first flag whose value makes no sense."""

    def fail(name: str, why: str) -> None:
        raise UserError(f"--{name.replace('_', '-')} {getattr(config, name)}: {why}")

    for name, kind in _types().items():  # inf and nan pass every comparison's check below, or fail them wrongly
        value = getattr(config, name)
        if float in (kind, *typing.get_args(kind)) and value is not None and not math.isfinite(value):
            fail(name, "must be a finite number")
    if not 0 <= config.seed < 2**32:
        fail("seed", "must be in 0 to 2**32 - 1, as TensorFlow's seeds are")
    for name, kind in _types().items():  # a larger one ended in OverflowError or ValueError, and a traceback
        value = getattr(config, name)
        numbers = value if isinstance(value, tuple) else (value,)
        if name != "seed" and int in (kind, *typing.get_args(kind)) and any(abs(n) > MAX_INT for n in numbers if n):
            fail(name, f"must be at most {MAX_INT:,}, the most TensorFlow takes there")
    for name in _POSITIVE + _POSITIVE_IF_SET:  # an optional one may be unset (None)
        if getattr(config, name) is not None and getattr(config, name) < 1:
            fail(name, "must be at least 1")
    for name in _NON_NEGATIVE + _NON_NEGATIVE_IF_SET:
        if getattr(config, name) is not None and getattr(config, name) < 0:
            fail(name, "must not be negative")
    if not config.progress_secs > 0:
        fail("progress_secs", "must be positive")
    if config.learning_rate is not None and not config.learning_rate > 0:
        fail("learning_rate", "must be positive")
    if not 0 < config.learning_rate_decay <= 1:
        fail("learning_rate_decay", "must be in (0, 1]")
    if config.dropout is not None and not 0 <= config.dropout < 1:
        fail("dropout", "must be in [0, 1)")
    if config.embedding_l2 is not None and not config.embedding_l2 >= 0:
        fail("embedding_l2", "must not be negative")
    if config.data_format not in ("auto", "channels_first", "channels_last"):
        fail("data_format", "must be auto, channels_first or channels_last")
    for name in ON_OFF_AUTO:
        if getattr(config, name) not in ("auto", "on", "off"):
            fail(name, "must be auto, on or off")
    if not metrics.CHOOSABLE.fullmatch(config.tuning_metric):
        fail("tuning_metric", f"must be {metrics.CHOOSABLE_TEXT}")
    if config.best_metric != "auto" and not metrics.CHOOSABLE.fullmatch(config.best_metric):
        fail("best_metric", f"must be auto, {metrics.CHOOSABLE_TEXT}")
    if config.class_weights != "none" and config.class_weights != "balanced":
        try:
            weights = [float(weight) for weight in config.class_weights.split(",")]
        except ValueError:
            weights = []
        if not weights or not all(0 <= weight < math.inf for weight in weights):
            fail("class_weights", "must be none, balanced, or one non-negative weight a class, e.g. 1,4")
        if not any(weights):
            fail("class_weights", "must weigh some class above 0: with every weight 0 nothing is learnt")
    if config.serving_input not in SERVING_INPUTS:
        fail("serving_input", f"must be {', '.join(SERVING_INPUTS[:-1])} or {SERVING_INPUTS[-1]}")
    for name in ("steps_per_run", "num_towers"):
        value = getattr(config, name)
        if value != "auto" and not (_is_int(value) and 1 <= int(float(value)) <= MAX_INT):
            fail(name, f"must be auto or a whole number from 1 to {MAX_INT:,}")
    if config.reader_threads > MOST_READERS:  # 2,147,483,647 built readers' ops for minutes, silently
        fail("reader_threads", f"must be at most {MOST_READERS}: a thread a reader")
    if any(n < 1 for n in config.conv_filters + config.hidden_units):
        fail("conv_filters" if any(n < 1 for n in config.conv_filters) else "hidden_units", "sizes must be positive")
    for name in ("data_dir", "job_dir", "export_dir", "warm_start_from"):
        if "[" in (getattr(config, name) or ""):  # TensorFlow finds shards and checkpoints by glob
            fail(name, "TensorFlow reads [ ] in a folder's path as a pattern and finds nothing there; name one without")
    if config.data_dir and config.train_files:
        fail("train_files", "give either --data-dir or --train-files, not both")
    if config.data_dir and config.metadata:  # ignored silently: the data dir's own metadata.json describes it
        fail("metadata", "goes with --train-files; --data-dir reads the metadata.json in it")
    if bool(config.train_files) != bool(config.eval_files):
        given, missing = ("--train-files", "--eval-files") if config.train_files else ("--eval-files", "--train-files")
        raise UserError(f"{given} needs {missing} too: the two go together")


def _types() -> dict[str, Any]:
    return typing.get_type_hints(Config)


def _convert(name: str, value: Any, where: str) -> Any:
    """`value` as the type of field `name`, or UserError naming `where`."""
    kind = _types()[name]
    optional = typing.get_origin(kind) is typing.Union
    if optional:
        kind = typing.get_args(kind)[0]
        unset = isinstance(value, str) and kind in (int, float) and value.strip().lower() in UNSET_WORDS
        if value is None or unset:  # a flag that turns off what a --config file set (num_epochs: 3)
            return None
    try:
        if kind is tuple or typing.get_origin(kind) is tuple:
            parts = value
            if isinstance(value, str):  # a flag: "32,64", or "" for none
                parts = value.split(",") if value else []
            elif isinstance(value, int):  # YAML's hidden_units: 64, as --hidden-units 64
                parts = [value]
            if not isinstance(parts, (list, tuple)) or not all(_is_int(p) for p in parts):
                raise ValueError
            return tuple(int(p) for p in parts)
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and _is_int(value):
            return int(float(value))  # "128.0" is 128: Vertex AI's tuning sends DISCRETE values as floats
        if kind is float and not isinstance(value, bool) and isinstance(value, (int, float, str)):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
        if name in ON_OFF_AUTO and isinstance(value, bool):  # YAML reads on, off, yes and no as booleans
            return "on" if value else "off"
        if kind is str and isinstance(value, (int, float)):  # num_towers: 1, where the flag's value can be auto
            return str(value)
    except ValueError:
        pass
    type_name = getattr(kind, "__name__", str(kind))
    raise UserError(f"{where}: {value!r} is not a valid {'list of integers' if type_name == 'tuple' else type_name}")


# What unsets an optional number, its default then following the data (config.yaml writes null).
UNSET_WORDS = ("none", "null", "auto")


def _is_int(value: Any) -> bool:
    """A whole number, also written as an integral float ("128.0", as hyperparameter tuning sends it)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    if not isinstance(value, str):
        return False
    whole, dot, zeros = value.strip().lstrip("-").partition(".")
    return whole.isdigit() and (not dot or set(zeros) <= {"0"})


def load_yaml(path: str) -> dict[str, Any]:
    """The settings in a YAML config file, checked against the Config fields."""
    import tensorflow as tf  # reads gs:// too

    try:
        with tf.io.gfile.GFile(path) as file:
            raw = yaml_files.safe_load(file) or {}
    except yaml.YAMLError as error:
        raise UserError(f"--config {path}: not valid YAML: {yaml_problem(error)}") from None
    except UnicodeDecodeError:  # Notepad's UTF-16, or a file that is no text
        raise UserError(f"--config {path}: not UTF-8 text; save it as UTF-8") from None
    except tf.errors.OpError as error:
        raise UserError(f"--config {path}: cannot read ({error.message})") from None
    if not isinstance(raw, dict):
        raise UserError(f"--config {path}: expected a mapping of settings, found {type(raw).__name__}")
    names = {f.name for f in dataclasses.fields(Config)}
    settings = {}
    for key, value in raw.items():
        name = str(key).replace("-", "_")
        if name not in names:
            raise UserError(f"--config {path}: unknown setting {key!r}")
        settings[name] = _convert(name, value, f"--config {path}: {key}")
    return settings


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per Config field; a flag left out stays out of the namespace (SUPPRESS)."""
    for item in dataclasses.fields(Config):
        flag = "--" + item.name.replace("_", "-")
        default = item.default
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        said = default is None or "(default: " in item.metadata["help"]  # a help that says its default itself
        help_text = item.metadata["help"] if said else f"{item.metadata['help']} (default: {shown})"
        if isinstance(default, bool):  # a switch, with --no-NAME to turn off what a YAML file turned on
            parser.add_argument(
                flag,
                dest=item.name,
                default=argparse.SUPPRESS,
                action=argparse.BooleanOptionalAction,
                help=f"{item.metadata['help']} (default: {'on' if default else 'off'})",
            )
            continue
        parser.add_argument(flag, dest=item.name, default=argparse.SUPPRESS, metavar=item.name.upper(), help=help_text)


def switches() -> set[str]:
    """The flags that take no value: --xla turns it on, --no-xla off."""
    return {"--" + item.name.replace("_", "-") for item in dataclasses.fields(Config) if isinstance(item.default, bool)}


def check_no_switch_values(argv: list[str], unknown: list[str]) -> None:
    """A UserError for a value given to a switch (`--xla false`): the switch took no value, turned on, and the
    value was an unknown argument, ignored with a warning."""
    flags = switches()
    for before, token in zip(argv, argv[1:]):
        if token in unknown and not token.startswith("-") and before in flags:
            raise UserError(
                f"{before} takes no value ({token}): {before} turns it on, {before.replace('--', '--no-', 1)} off"
            )


def from_sources(yaml_path: Optional[str], flags: dict[str, Any]) -> Config:
    """Defaults, overridden by the YAML file, overridden by the flags given."""
    settings = load_yaml(yaml_path) if yaml_path else {}
    for name, value in flags.items():
        settings[name] = _convert(name, value, "--" + name.replace("_", "-"))
    for name in (*PATHS, *PATH_LISTS):  # ~ as the shell expands it, which no shell does in YAML or after --job-dir=
        if isinstance(settings.get(name), str):
            paths = settings[name].split(",") if name in PATH_LISTS else [settings[name]]  # a folder's name may hold ,
            settings[name] = ",".join(map(commandline.path, paths))
    return Config(**settings)


def save(config: Config, folder: str) -> str:
    """Writes the run's settings as FOLDER/config.yaml (null where a default follows the data, as --learning-rate's),
    which `--config` reads back to repeat the run in another job dir; returns its path."""
    import tensorflow as tf  # writes gs:// too

    settings = {
        item.name: list(value) if isinstance(value, tuple) else value
        for item in dataclasses.fields(Config)
        for value in [getattr(config, item.name)]
    }
    path = f"{folder.rstrip('/')}/{CONFIG_FILE}"
    tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(path, "w") as file:
        file.write(f"# The settings of this run (null: the default for its data); repeat it with --config {path} "
                   "--job-dir NEW_DIR (in this job dir it resumes; reader threads interleave rows in their own order, "
                   "so its figures differ a little)\n")  # fmt: skip
        file.write(yaml.safe_dump(settings, sort_keys=False))
    return path


def job_exports(job_dir: str) -> str:
    """Where a job dir's exports went: the --export-dir its saved settings (CONFIG_FILE) name, else
    JOB_DIR/export. Without TensorFlow, which qt-deploy runs without."""
    from dataformat import storage

    settings = storage.join(job_dir, CONFIG_FILE)
    if storage.exists(settings):
        with storage.open_read(settings) as file:
            saved = yaml.safe_load(file)
        if isinstance(saved, dict) and saved.get("export_dir"):
            return str(saved["export_dir"])
    return storage.join(job_dir, EXPORT_DIR)


def newest_export(folder: str) -> str | None:
    """`folder` if it is an export (saved_model.pb), else its newest numbered one (TF Serving's layout: a
    sub-folder a version), else None. Without TensorFlow, as job_exports."""
    from dataformat import storage

    folder = folder.rstrip("/") or folder  # "/" stays itself
    if storage.exists(storage.join(folder, "saved_model.pb")):
        return folder
    versions = [name for name in storage.list_names(folder) if name.isascii() and name.isdigit()]
    return storage.join(folder, max(versions, key=int)) if versions else None


def served_export(model_dir: str) -> str | None:
    """What a --model-dir serves: an export, the newest of a folder of them, a job dir's best, or an export folder's
    (JOB_DIR/export); else None."""
    from dataformat import storage

    model_dir = model_dir.rstrip("/") or model_dir
    best = newest_export(storage.join(job_exports(model_dir), "best"))
    return newest_export(model_dir) or best or newest_export(storage.join(model_dir, "best"))
