"""Wires the Estimator: RunConfig, TrainSpec, EvalSpec and exporters, then train_and_evaluate.

Also runs under TF_CONFIG: the Estimator reads the cluster and this task's role from it (trainer/cluster.py).
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath

import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from dataformat.commandline import MAX_INT
from dataformat.errors import UserError, shortened
from dataformat.schema import Metadata
from trainer import (
    averaging,
    checkpoints,
    cluster,
    dataset,
    early_stopping,
    export,
    networks,
    serving,
    stuck,
    warm_start,
)
from trainer import config as config_module
from trainer import metrics as names
from trainer.config import Config
from trainer.devices import has_gpu, resolve_towers, towers_on_cpus
from trainer.input import InputTimeoutHook, StagingHook, eval_capacity, make_input_fn, shuffle_capacity
from trainer.model import ModelSettings, model_fn, resolve_train_steps
from trainer.preemption import SaveOnSigtermHook
from trainer.progress import LastEvaluation, ProgressHook
from trainer.step_loop import StepsRunHook, StopAtTrainStepsHook

log = logging.getLogger(__name__)


def session_config(config: Config) -> tf.compat.v1.ConfigProto:
    """Soft placement (ops without a GPU kernel fall back to the CPU), GPU memory taken as
    needed, and the device knobs of the config."""
    session = tf.compat.v1.ConfigProto(
        allow_soft_placement=True,
        inter_op_parallelism_threads=config.inter_op_threads,
        intra_op_parallelism_threads=config.intra_op_threads,
    )
    session.gpu_options.allow_growth = True
    if towers_on_cpus():  # tests: one virtual CPU device per tower
        session.device_count["CPU"] = resolve_towers(config.num_towers)
    if config.xla:
        session.graph_options.optimizer_options.global_jit_level = tf.compat.v1.OptimizerOptions.ON_1
    # Grappler casts GPU ops that are safe in float16; model_fn scales the loss. Without a GPU it skips the rewrite,
    # saying so in a line of its own for every graph it optimizes (29 in a short run): off there (_log_settings).
    if config.mixed_precision and has_gpu():
        session.graph_options.rewrite_options.auto_mixed_precision = rewriter_config_pb2.RewriterConfig.ON
    return session


def model_params(config: Config, metadata: Metadata) -> dict:
    """What the model_fn receives: the model's own settings and the dataset's description."""
    return {"settings": ModelSettings.of(config, metadata), "metadata": metadata}


def make_estimator(
    config: Config, metadata: Metadata, warm_start: tf.estimator.WarmStartSettings | None = None
) -> tf.estimator.Estimator:
    # Keras draws the seeds of unseeded initializers from Python's random, not the graph's seed.
    tf.keras.utils.set_random_seed(config.seed)
    run_config = tf.estimator.RunConfig(
        model_dir=config.job_dir,
        tf_random_seed=config.seed,
        save_checkpoints_steps=config.save_checkpoints_steps,
        keep_checkpoint_max=config.keep_checkpoint_max,
        log_step_count_steps=100,
        session_config=session_config(config),
    )
    return tf.estimator.Estimator(
        model_fn=model_fn, config=run_config, params=model_params(config, metadata), warm_start_from=warm_start
    )


def run(config: Config) -> dict | None:
    """Trains and evaluates; returns the final evaluation metrics (None on tasks that do not evaluate)."""
    data = dataset.locate(config)
    given_steps = config.train_steps  # None: the data's default, as config.yaml keeps it (a rerun resolves it again)
    config = dataclasses.replace(config, train_steps=resolve_train_steps(config, data.metadata))
    stop = early_stopping.read_stop(config.job_dir)
    if stop and stop.train_steps >= config.train_steps:  # a rerun of a run that stopped early
        log.info("This run %s; nothing to do (--train-steps above its %d trains on)", stop.describe(), stop.train_steps)
        return export.read_metrics(config.job_dir)
    if cluster.is_chief():  # the chief owns the checkpoints: it resumes from an intact one
        checkpoints.newest_intact(config.job_dir)
        if stop:
            early_stopping.clear_stop(config.job_dir)
    since = early_stopping.counted_since(config.job_dir) if config.early_stopping_evals else 0
    _log_dataset(data)
    try:
        with stuck.ctrl_c_between_steps():
            metrics = _train_and_evaluate(config, data, since, given_steps)
    except tf.errors.DeadlineExceededError:
        raise UserError(
            f"no batch reached the model for {config.input_timeout_secs} s (--input-timeout-secs): the input "
            f"queue starved because, for training, {dataset.describe_stall(data.train)}; for evaluation, "
            f"{dataset.describe_stall(data.eval)}"
        ) from None
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
        problem = dataset.first_bad_shard(data.train + data.eval, data.metadata)
        if problem is None:
            raise  # not the data's fault
        raise UserError(f"{problem}; rerun preprocessing, or pass --skip-corrupt to leave such shards out") from None
    if metrics:
        _warn_of_absent_classes(metrics, data.metadata)
    return metrics


def _warn_of_absent_classes(metrics: dict, metadata: Metadata) -> None:
    """A class with no example in the evaluation split (a few rows of it, all drawn for training) has figures
    that say nothing: its recall, and a binary label's AUC."""
    rows = metrics[names.CONFUSION]  # rows: true classes
    absent = [repr(name) for name, row in zip(metadata.class_names, rows) if not sum(row)]
    if absent:
        log.warning(
            "The evaluation split holds no example of class %s: %s; preprocess more rows, or with a larger "
            "--eval-fraction",
            ", ".join(absent),
            "its recall, and the AUC, say nothing" if len(rows) == 2 else "its recall says nothing",
        )


def _log_dataset(data: dataset.DataFiles) -> None:
    metadata = data.metadata
    log.info(
        "Dataset: %d training examples in %d file(s), %d evaluation examples in %d file(s), %d classes, shape %s %s",
        metadata.splits["train"].examples,
        len(data.train),
        metadata.splits["eval"].examples,
        len(data.eval),
        metadata.num_classes,
        "x".join(map(str, metadata.shape)),
        metadata.dtype,
    )
    log.info("Devices: %s", ", ".join(d.name for d in tf.config.list_physical_devices()))


def model_variables(config: Config, metadata: Metadata) -> dict[str, list[int]]:
    """Name -> shape of every variable a training run of `config` creates (optimizer slots included). One step a
    session.run: the variables are the same, and text_cnn's Keras model, called in a loop of steps on data from
    outside it, failed with KeyError '' (every resume and warm start of it)."""
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        data = tf.compat.v1.placeholder(tf.as_dtype(metadata.dtype), [None, *metadata.shape])
        labels = tf.compat.v1.placeholder(tf.int64, [None])
        params = model_params(dataclasses.replace(config, steps_per_run="1"), metadata)
        model_fn({metadata.feature_key: data}, labels, tf.estimator.ModeKeys.TRAIN, params)
        return {variable.op.name: variable.shape.as_list() for variable in tf.compat.v1.global_variables()}


def network_weights(config: Config, metadata: Metadata) -> dict[str, list[int]]:
    """Name -> shape of the network's own weights (not the optimizer's slots, not the global step)."""
    return {
        name: shape for name, shape in model_variables(config, metadata).items() if warm_start.is_network_weight(name)
    }


def _warm_start(config: Config, metadata: Metadata) -> tf.estimator.WarmStartSettings | None:
    """--warm-start-from's settings, for a job dir without a checkpoint of its own (one with resumes)."""
    if not config.warm_start_from:
        return None
    if tf.train.latest_checkpoint(config.job_dir):
        log.info("Resuming from %s's own checkpoint; --warm-start-from is for its first run", config.job_dir)
        return None
    return warm_start.settings(config, metadata, network_weights(config, metadata))


def check_sizes_fit(config: Config, metadata: Metadata, towers: int) -> None:
    """Sizes that the data cannot fill or TensorFlow's queues cannot hold, refused before any step, where they
    failed late in TensorFlow's words or starved the input: a global batch above the training examples, asked for
    by a --batch-size above the default (which, on a dataset smaller than it, trains as before; one of 1e8 failed
    after a minute of allocating), a shuffle buffer above them (filled with their copies for minutes), and queues
    past int32."""
    examples = metadata.splits["train"].examples
    if config.batch_size > Config.batch_size and towers * config.batch_size > examples:
        raise UserError(
            f"--batch-size {config.batch_size}: {towers} tower(s) x {config.batch_size} is more than the "
            f"{examples:,} training examples; use at most {max(1, examples // towers):,}"
        )
    most = max(Config.shuffle_buffer, examples)
    if config.shuffle_buffer > most:
        raise UserError(f"--shuffle-buffer {config.shuffle_buffer}: more than the {examples:,} training examples, "
                        f"whose copies would fill it before a first batch; use at most {most:,}")  # fmt: skip
    queues = {
        "--shuffle-buffer, --reader-threads and --batch-size": shuffle_capacity(config),
        "--eval-batch-size and --read-batch-size": eval_capacity(config),
    }
    for sizes, capacity in queues.items():
        if capacity > MAX_INT:
            raise UserError(f"{sizes}: they make a queue of {capacity:,} examples, more than TensorFlow's {MAX_INT:,}")


def check_checkpoint_fits(config: Config, metadata: Metadata) -> None:
    """A rerun resumes from --job-dir's checkpoint, which must hold this model. TensorFlow restores
    a variable of another shape without a word (a resource variable's assign does not check it) and
    fails steps later on some op's shapes, or trains on."""
    checkpoint = tf.train.latest_checkpoint(config.job_dir)
    if not checkpoint:
        return
    stored = dict(tf.train.list_variables(checkpoint))
    wanted = model_variables(config, metadata)
    dropped = [name for name in stored if warm_start.is_network_weight(name) and name not in wanted]
    if dropped:  # a smaller model (--crosses left out, --model table after wide_deep) trained on, its weights lost
        raise UserError(
            f"--job-dir {config.job_dir}: its checkpoint {posixpath.basename(checkpoint)} is of another model "
            f"({dropped[0]} is there, and not in the model of these flags and data); use a new --job-dir (with "
            f"--warm-start-from {config.job_dir} to start from its weights), or the model flags it was trained with"
        )
    finished = checkpoints.step_of(checkpoint) >= config.train_steps  # such a rerun builds no training graph
    for name, shape in wanted.items():
        if name == averaging.COUNT and name not in stored:
            if finished:
                continue
            if any(other.startswith(f"{averaging.SCOPE}/") for other in stored):
                raise UserError(
                    f"--job-dir {config.job_dir}: its checkpoint {posixpath.basename(checkpoint)} was written by an "
                    f"earlier version of this trainer, which kept no {averaging.COUNT}; rerun with --average-weights "
                    "off to resume it, or start a new --job-dir"
                )
        if name.startswith(f"{averaging.SCOPE}/") and name not in stored:
            raise UserError(
                f"--job-dir {config.job_dir}: its checkpoint {posixpath.basename(checkpoint)} holds no averaged "
                "weights (it was trained with --average-weights off, or before that flag); rerun with "
                "--average-weights off to resume it"
            )
        if stored.get(name) != shape:
            there = f"is {stored[name]} there" if name in stored else "is not there"
            raise UserError(
                f"--job-dir {config.job_dir}: its checkpoint {posixpath.basename(checkpoint)} is of another model "
                f"({name} {there}, {shape} with these flags and data); use a new --job-dir (with --warm-start-from "
                f"{config.job_dir} to start from its weights), or the model flags and dataset it was trained with"
            )
    _check_same_values(config, metadata)


def _check_same_values(config: Config, metadata: Metadata) -> None:
    """A rerun's data must give each row of the checkpoint's embeddings the value or word it was trained for, as
    the job's export records them. Data preprocessed again, or other data, with vocabularies of the same sizes
    resumed silently: 972 of 1,001 words' rows stood for other words, and the AUC fell from 0.78 to 0.53."""
    exports = config_module.job_exports(config.job_dir)
    exported = config_module.newest_export(posixpath.join(exports, "latest"))
    exported = exported or config_module.newest_export(posixpath.join(exports, "best"))
    if not metadata.is_table or not exported:
        return
    try:
        source = warm_start.locate(exported)
    except UserError:  # an export cut short (its metadata.json not copied yet): nothing to compare with
        return
    crossed, crosses = warm_start.crosses_of(source.config, metadata), warm_start.crosses_of(config, metadata)
    if crossed is not None and crosses is not None and crossed != crosses:  # the same shapes, restored by place
        said = ",".join(":".join(cross) for cross in crossed) or "nothing"
        raise UserError(
            f"--crosses {config.crosses}: its model crossed {said} (--job-dir {config.job_dir}); use a new --job-dir "
            f"(with --warm-start-from {config.job_dir}), or the crosses it was trained with"
        )
    trained = networks.row_labels(source.metadata, source.config.hidden_units if source.config else config.hidden_units)
    for name, labels in networks.row_labels(metadata, config.hidden_units).items():
        before = trained.get(name, labels)
        moved = sum(old != new for old, new in zip(before, labels))
        if len(before) == len(labels) and moved:
            raise UserError(
                f"--job-dir {config.job_dir}: its model was trained on other values than this data's ({moved} of "
                f"the {len(labels)} rows of {name} now stand for another value or word: the data was preprocessed "
                f"again, or is other data); use a new --job-dir with --warm-start-from {config.job_dir}, which moves "
                "each value's weights to its new row, or the dataset it was trained on"
            )


def _train_and_evaluate(config: Config, data: dataset.DataFiles, since: int, given_steps: int | None) -> dict | None:
    metadata = data.metadata
    check_checkpoint_fits(config, metadata)
    estimator = make_estimator(config, metadata, _warm_start(config, metadata))
    settings = estimator.params["settings"]
    check_sizes_fit(config, metadata, settings.towers)
    if config.num_epochs is not None and cluster.is_cluster(estimator.config):
        # The evaluator waits for --train-steps, which a run ended by its input never reaches.
        raise UserError("--num-epochs: not for a TF_CONFIG cluster, where training must end at --train-steps")
    trained = checkpoints.step_of(tf.train.latest_checkpoint(config.job_dir))
    if trained < config.train_steps:  # a finished run's rerun trains nothing: nothing to say of how it would
        _log_settings(config, metadata, settings)
        if config.early_stopping_evals:
            _warn_if_it_cannot_stop(config)
    if estimator.config.is_chief and not cluster.is_cluster(estimator.config):  # alone: no evaluator may be exporting
        for name in ("latest", "best"):
            export.remove_unfinished(posixpath.join(export.export_folder(config), name))  # a kill's, mid-export
    if trained:
        log.info("Resuming from the checkpoint of step %d", trained)
    if estimator.config.is_chief:
        finished = trained >= config.train_steps
        before = _settings_before(config.job_dir) if trained else None
        _warn_of_changed_settings(config, before, trained, finished)
        # A run with steps to train saves its settings; so does a finished one whose checkpoints came without them
        # (copied, or of an older trainer), as the exports carry them (the export failed on the missing file).
        if not finished or not tf.io.gfile.exists(posixpath.join(config.job_dir, config_module.CONFIG_FILE)):
            saved = config_module.save(_as_saved(config, given_steps, before, trained), config.job_dir)
            log.info("Settings saved to %s", saved)
    exporters = export.exporters(
        config, data.metadata_path, metadata.class_names, serving.make_serving_input_fn(metadata)
    )
    hooks = [stuck.StopOnCtrlCHook()]  # training's and evaluation's
    if config.input_timeout_secs:
        hooks.append(InputTimeoutHook(config.input_timeout_secs))
    train_files = cluster.worker_share(data.train, estimator.config)
    train_spec = tf.estimator.TrainSpec(
        make_input_fn(train_files, metadata, config, training=True),
        max_steps=config.train_steps,
        hooks=hooks + _train_hooks(config, estimator, data, train_files, since),
    )
    eval_spec = tf.estimator.EvalSpec(
        make_input_fn(data.eval, metadata, config, training=False),
        steps=config.eval_steps,
        exporters=exporters,
        start_delay_secs=config.eval_start_delay_secs,
        throttle_secs=config.eval_throttle_secs,
        hooks=hooks,
    )
    stops = early_stopping.EvaluatorStops(config.job_dir)  # a cluster's evaluator ends at an early stop
    result = checkpoints.TrainingExecutor(estimator, train_spec, eval_spec, continuous_eval_listener=stops).run()
    _after_an_early_stop(config, estimator)
    if result and result[0]:  # this run evaluated (a finished run's rerun has nothing new to draw)
        _figures_of_the_last_evaluation(config, estimator, metadata)
    if not (result and result[0]) and not cluster.is_cluster(estimator.config):
        # Alone, train_and_evaluate returns no metrics only when the checkpoint already holds --train-steps: it
        # trains nothing, so it evaluates nothing. A run killed after its last checkpoint but before its last
        # evaluation and export would stay without them: do them now.
        result = final_evaluation(estimator, eval_spec, config)
    metrics = export.json_numbers(result[0]) if result and result[0] else None  # a task alone gets them back
    if metrics:
        lead = names.resolve_best(config.best_metric, metadata.num_classes)
        best = export.latest_export(config, "best")
        export.write_best_report(config.job_dir, best, metrics, metadata.class_names, lead)
    return metrics


def _log_settings(config: Config, metadata: Metadata, settings) -> None:
    """The run's shape, and what auto chose, which config.yaml does not say."""
    global_batch = settings.towers * config.batch_size
    log.info(
        "Training: %d steps (%.3g passes over the training examples), %d tower(s) x batch %d = global batch %d, "
        "%d step(s) per session.run",
        config.train_steps,
        config.train_steps * global_batch / max(1, metadata.splits["train"].examples),
        settings.towers,
        config.batch_size,
        global_batch,
        settings.steps_per_run,
    )
    if config.model == "auto":
        log.info("Network: %s (--model auto)", settings.network)
    if metadata.is_image and config.augment == "auto":
        log.info("Augmentation: %s (--augment auto)", settings.augment)
    if settings.class_weights is not None:  # which class takes which weight, as sorted classes make it
        named = zip(metadata.class_names, settings.class_weights)
        weights = ", ".join(f"{name} {weight:.3g}" for name, weight in named)
        log.info("Class weights (--class-weights %s): %s", config.class_weights, shortened(weights))
    if config.mixed_precision and not has_gpu():
        log.warning("--mixed-precision: this machine has no GPU, so the model computes in float32 (its loss is "
                    "scaled as on a GPU)")  # fmt: skip


def _train_hooks(config: Config, estimator, data: dataset.DataFiles, train_files: list[str], since: int) -> list:
    """The training task's own hooks: staging, SIGTERM, the step bound, the end of the input, progress, a stuck
    cluster and early stopping."""
    others = estimator.config.num_worker_replicas - 1  # training tasks besides this one, when they share the files
    global_batch = estimator.params["settings"].towers * config.batch_size
    hooks = [
        StagingHook(config.input_timeout_secs),
        SaveOnSigtermHook(config.job_dir, estimator.config.is_chief),
        StopAtTrainStepsHook(config.train_steps),
        StepsRunHook(
            input_ends=config.num_epochs is not None,
            others=others if len(train_files) < len(data.train) else 0,
            cluster=cluster.is_cluster(estimator.config),
        ),
        ProgressHook(config.train_steps, global_batch, config.progress_secs),
    ]
    if cluster.is_cluster(estimator.config):
        hooks.append(cluster.SayWhileWaitingHook(estimator.config))
        if config.input_timeout_secs:
            hooks.append(stuck.NoStepHook(2 * config.input_timeout_secs))
    if config.early_stopping_evals:
        metric = names.resolve_best(config.best_metric, data.metadata.num_classes)
        hooks.append(
            early_stopping.training_hook(estimator, metric, config.early_stopping_evals, config.train_steps, since)
        )
    return hooks


def _after_an_early_stop(config: Config, estimator) -> None:
    """Says where training stopped early, and lets a cluster's evaluator end once the chief's last checkpoint is
    saved."""
    stop = early_stopping.read_stop(config.job_dir)
    if not stop:
        return
    log.info("Training %s", stop.describe())
    if estimator.config.is_chief and stop.final_step < 0:  # its last checkpoint is saved: the evaluator may end
        final = checkpoints.step_of(tf.train.latest_checkpoint(config.job_dir))
        early_stopping.write_stop(config.job_dir, dataclasses.replace(stop, final_step=final))


def _figures_of_the_last_evaluation(config: Config, estimator, metadata: Metadata) -> None:
    """The figures and report.md of a run's last evaluation, where it was not known as the last when it was made (a
    run stopped early at the step it evaluated, or its input ended before --train-steps)."""
    last = export.read_metrics(config.job_dir)
    written = LastEvaluation.figures_of == (config.job_dir, last and last["global_step"])
    if last and not written and not cluster.is_cluster(estimator.config):
        lead = names.resolve_best(config.best_metric, metadata.num_classes)
        export.write_figures(config.job_dir, last, metadata.class_names, lead)


NOT_COMPARED = ("train_steps", "num_epochs", "job_dir")  # what a rerun changes to train on, and a moved job's
# The settings that only shape training (the others act in a finished run's rerun too: its evaluation, exports and
# reports): a rerun of a finished run changes nothing by them.
TRAINING_ONLY = (
    "warm_start_from", "batch_size", "learning_rate", "learning_rate_decay", "decay_steps", "steps_per_run", "seed",
    "model", "conv_filters", "pretrained", "freeze_steps", "hidden_units", "dropout", "augment", "crosses",
    "embedding_l2", "average_weights", "class_weights", "shuffle_buffer", "shuffle_block", "num_towers",
    "mixed_precision", "save_checkpoints_steps", "early_stopping_evals",
)  # fmt: skip


def _as_saved(config: Config, given_steps: int | None, before: Config | None, trained: int) -> Config:
    """config.yaml's settings: --train-steps as given, and on a resume the --warm-start-from of the run `before`,
    where the job's weights started (a resume's own takes no effect, and a later rerun with the file warned of it)."""
    saved = dataclasses.replace(config, train_steps=given_steps)
    if not trained:
        return saved
    return dataclasses.replace(saved, warm_start_from=before.warm_start_from if before else None)


def _settings_before(job_dir: str) -> Config | None:
    """The job dir's config.yaml, the settings of its run before; None where it has none or it does not read."""
    path = posixpath.join(job_dir, config_module.CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        return None
    try:
        return Config(**config_module.load_yaml(path))
    except UserError as error:  # written by another version of this trainer: nothing to compare, and no reason to stop
        log.warning("%s: the settings of the run before could not be read (%s)", path, error)
        return None


def _warn_of_changed_settings(config: Config, before: Config | None, trained: int, finished: bool) -> None:
    """A resume with settings other than those `before`, config.yaml's (a learning rate), trains on with them, and
    config.yaml then holds them alone: say which, where a rerun with the file would no longer repeat the job. A rerun
    of a `finished` one trains nothing: say that they change nothing. (A resume's --warm-start-from has a line of its
    own, _warm_start's.)"""
    if before is None:
        return
    every = [item.name for item in dataclasses.fields(Config) if item.name != "warm_start_from"]
    compared = TRAINING_ONLY if finished else every
    changed = [
        f"--{name.replace('_', '-')} {_said(getattr(config, name))} (was {_said(getattr(before, name))})"
        for name in compared
        if name not in NOT_COMPARED and getattr(config, name) != getattr(before, name)
    ]
    if changed and finished:
        log.warning("Other training settings than its run's, %s, change nothing: training already reached step %d "
                    "(a new --job-dir trains with them)", ", ".join(changed), trained)  # fmt: skip
    elif changed:
        log.warning(
            "Resuming at step %d with other settings than its run before: %s; %s will hold these, not those that "
            "trained the first %d steps",
            trained, ", ".join(changed), posixpath.join(config.job_dir, config_module.CONFIG_FILE), trained,
        )  # fmt: skip


def _said(setting) -> str:
    """A setting as a warning shows it: None is the default for the data (a learning rate chosen by the network)."""
    return "default" if setting is None else str(setting)


def _warn_if_it_cannot_stop(config: Config) -> None:
    """Early stopping needs the best evaluation and --early-stopping-evals after it; a run evaluates after each
    checkpoint at most, and its default --save-checkpoints-steps (500) gives a short run one evaluation."""
    evaluations = config.train_steps // config.save_checkpoints_steps + (
        config.train_steps % config.save_checkpoints_steps > 0
    )
    if evaluations <= config.early_stopping_evals:
        log.warning(
            "--early-stopping-evals %d: this run evaluates %d time(s) at most (after each checkpoint, every "
            "--save-checkpoints-steps %d of its %d steps), so it cannot stop early; lower --save-checkpoints-steps",
            config.early_stopping_evals, evaluations, config.save_checkpoints_steps, config.train_steps,
        )  # fmt: skip


def final_evaluation(estimator: tf.estimator.Estimator, eval_spec: tf.estimator.EvalSpec, config: Config) -> tuple:
    """Evaluates the last checkpoint and runs every exporter on it, as the last evaluation of training does, where
    a run was killed between its last checkpoint and them; where they were done, only reads its metrics."""
    checkpoint = tf.train.latest_checkpoint(config.job_dir)
    step = checkpoints.step_of(checkpoint)
    metrics = export.read_metrics(config.job_dir)
    latest = export.latest_export(config, "latest")
    if metrics and metrics["global_step"] == step and latest and export.export_step(latest) == step:
        log.info(
            "Training already reached step %d (--train-steps %d), evaluated and exported it: nothing to do (a larger "
            "--train-steps trains on)", step, config.train_steps,
        )  # fmt: skip
        # Still: the best export, where a kill cut its copy short (it exports only a better one), and a tuning
        # trial's metric, whose report was lost with its machine.
        for exporter in eval_spec.exporters:
            if exporter.name != "latest":
                exporter.export(estimator, export.export_folder(config), checkpoint, metrics, is_the_final_export=False)
        return metrics, None
    log.info("Training already reached step %d: evaluating and exporting its last checkpoint", step)
    metrics = estimator.evaluate(eval_spec.input_fn, steps=eval_spec.steps, hooks=eval_spec.hooks)
    for exporter in eval_spec.exporters:
        exporter.export(estimator, export.export_folder(config), checkpoint, metrics, is_the_final_export=True)
    return metrics, None
