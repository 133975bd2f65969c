"""--warm-start-from: a run in a new --job-dir starts from an earlier model's weights (a job dir's last
checkpoint, or an export), on new data whose vocabularies may differ.

tf.estimator's WarmStartSettings does the loading, in the chief's first session only (a job dir with a
checkpoint of its own resumes from it instead). This module decides, weight by weight, what it does:
- a weight whose rows follow the data's columns and values (an embedding, a layer's kernel over the
  columns: networks.row_labels) is remapped by value when those labels changed: the row of a category
  or word that kept its name moves to its new index, and rows for new values start fresh;
- any other weight is taken when its shape still fits, and left fresh when not.
A model of another network, layer sizes or classes is refused in one line that names the difference.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import posixpath
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import METADATA_FILE, Metadata
from trainer import checkpoints, networks, wide
from trainer import config as config_module
from trainer.columns import categorical, numeric
from trainer.config import Config
from trainer.model import choose_network, resolve_crosses

log = logging.getLogger("trainer")

NEW_ROWS_RANGE = 0.05  # new rows start uniform in [-0.05, 0.05], as Keras starts an embedding (see _new_rows)
JOINED_FOLDER = "warm-start"  # where in the job dir in_todays_layout writes the earlier model's tables joined
SHOWN_COLUMNS = 10  # a remapped table's line names what at most this many of its columns kept
USES_HIDDEN_UNITS = ("cnn", "mlp", "table", "wide_deep", "text_cnn")  # the networks with --hidden-units layers


@dataclasses.dataclass(frozen=True)
class Source:
    """The earlier model: its checkpoint, the dataset it was trained on, and its settings (when known)."""

    path: str  # as --warm-start-from gave it
    checkpoint: str  # a checkpoint prefix
    metadata: Metadata
    config: Config | None


@dataclasses.dataclass
class Plan:
    taken: list[str] = dataclasses.field(default_factory=list)
    remapped: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # name -> (rows kept, rows)
    fresh: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> why
    previous: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> its name in the checkpoint
    labels: dict[str, tuple[list[str], list[str]]] = dataclasses.field(default_factory=dict)  # (new, old)


def settings(config: Config, metadata: Metadata, weights: dict[str, list[int]]) -> tf.estimator.WarmStartSettings:
    """The WarmStartSettings for --warm-start-from, given the new model's weights (name -> shape); logs
    what is taken, remapped and left fresh."""
    source = locate(config.warm_start_from)
    damage = checkpoints.find_damage(source.checkpoint)  # a cut file read as an IndexError's traceback
    if damage:
        raise UserError(f"--warm-start-from {source.path}: its checkpoint {source.checkpoint}: {damage.describe()}")
    check_fits(source, config, metadata)
    # In the job dir, not a local folder: in a cluster the parameter servers restore the weights they hold.
    source = in_todays_layout(source, posixpath.join(config.job_dir, JOINED_FOLDER))
    folder = _labels_folder()
    plan = make_plan(source, config, metadata, weights)
    if not plan.taken and not plan.remapped:
        raise UserError(f"--warm-start-from {source.path}: it shares no weight with this model")
    _log_plan(source, plan)
    vocab_infos = {}
    for k, (name, (new, old)) in enumerate(plan.labels.items()):
        new_file, old_file = (_write_lines(posixpath.join(folder, f"{k}.{which}.txt"), lines)
                              for which, lines in (("new", new), ("old", old)))  # fmt: skip
        vocab_infos[name] = tf.estimator.VocabInfo(
            new_vocab=new_file,
            new_vocab_size=len(new),
            num_oov_buckets=0,
            old_vocab=old_file,
            old_vocab_size=len(old),
            backup_initializer=_new_rows(name, config.seed),
        )
    names = plan.taken + list(plan.remapped)
    return tf.estimator.WarmStartSettings(
        ckpt_to_initialize_from=source.checkpoint,
        vars_to_warm_start=[f"^{re.escape(name)}:0$" for name in names],  # whole names: not their Adam slots
        var_name_to_vocab_info=vocab_infos,
        var_name_to_prev_var_name={name: old for name, old in plan.previous.items() if name in names},
    )


def is_network_weight(name: str) -> bool:
    """Whether a variable is the network's own weight (not an optimizer's slot, not the global step): what a warm start
    takes."""
    return name.startswith("classifier/") and not re.search(r"/Adam(_\d+)?$", name)


def in_todays_layout(source: Source, folder: str) -> Source:
    """`source`, or, where its checkpoint keeps a table a categorical column of linear weights (jobs trained before
    2026-12-07) or of embeddings (before 2026-12-08), a checkpoint in `folder` of its network's weights with those
    tables joined as today's model keeps them (trainer/wide.py, trainer/columns/categorical.py): each column's rows at
    its offset. Their rows then move by value as any model's do."""
    shapes = dict(tf.train.list_variables(source.checkpoint))
    categories = categorical.categorical_inputs(source.metadata)
    joined = {}  # today's table -> (each table a column it joins, its rows), in its rows' order
    if wide.column_weight_tables(shapes):
        joined[f"{wide.LINEAR_PREFIX}{wide.WEIGHT_TABLE}/embeddings"] = [
            (f"{wide.LINEAR_PREFIX}wide_{category.place}/embeddings", category.size) for category in categories
        ]
    if categorical.column_embedding_tables(shapes):
        per_column = {table.members[0]: table.name for table in categorical.embedding_tables(categories, True)}
        for table in categorical.embedding_tables(categories):
            joined[f"classifier/{table.name}/embeddings"] = [
                (f"classifier/{per_column[j]}/embeddings", categories[j].size) for j in table.members
            ]
    if not joined:
        return source
    parts = {part: rows for tables in joined.values() for part, rows in tables}
    for part, rows in parts.items():
        if shapes.get(part, [None])[0] != rows:
            raise UserError(f"--warm-start-from {source.path}: its {part} does not hold the {rows} rows that the "
                            "dataset found for it describes: it was preprocessed again since; warm start from an "
                            "export")  # fmt: skip
    log.info("%s keeps a table a categorical column, as jobs trained before 2026-12-08 did: its %d tables are "
             "joined into today's %d for the warm start", source.path, len(parts), len(joined))  # fmt: skip
    kept = [name for name in shapes if (is_network_weight(name) or name == "global_step") and name not in parts]
    reader = tf.train.load_checkpoint(source.checkpoint)
    tf.io.gfile.makedirs(folder)
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(reader.get_tensor(name), name=name) for name in kept]
        for name, tables in joined.items():
            rows = np.concatenate([reader.get_tensor(part) for part, _ in tables])
            variables.append(tf.compat.v1.Variable(rows, name=name))
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver = tf.compat.v1.train.Saver(variables)
            checkpoint = saver.save(session, posixpath.join(folder, "model.ckpt"), write_meta_graph=False)
    return dataclasses.replace(source, checkpoint=checkpoint)


def _new_rows(name: str, seed: int):
    """How a weight's new rows start: the linear part's at zero, as a fresh one does; every other's (an
    embedding's, or a dense kernel's rows) uniform in [-NEW_ROWS_RANGE, NEW_ROWS_RANGE]."""
    if name.startswith(wide.LINEAR_PREFIX):
        return tf.compat.v1.zeros_initializer()
    return tf.compat.v1.random_uniform_initializer(-NEW_ROWS_RANGE, NEW_ROWS_RANGE, seed)


def locate(path: str) -> Source:
    """The model at `path`: an export (a SavedModel, or a folder of numbered ones) or a job dir."""
    export = config_module.newest_export(path)
    if export:
        checkpoint = posixpath.join(export, "variables", "variables")
        config = _read_config(posixpath.join(export, "assets.extra", config_module.CONFIG_FILE))
    else:
        checkpoint = tf.train.latest_checkpoint(path) if tf.io.gfile.isdir(path) else None
        if not checkpoint:
            why = "neither an export (saved_model.pb) nor a job dir with a checkpoint"
            raise UserError(f"--warm-start-from {path}: {why}")
        config = _read_config(posixpath.join(path, config_module.CONFIG_FILE))
        exports = config_module.job_exports(path)
        latest = config_module.newest_export(posixpath.join(exports, "latest"))
        export = latest or config_module.newest_export(posixpath.join(exports, "best"))
    if export:  # its metadata.json travels with it, and outlives the dataset
        found = posixpath.join(export, "assets.extra", METADATA_FILE)
        metadata = _read_metadata(found, posixpath.join(export, "assets"), path)
    elif config and (config.data_dir or config.metadata):
        found = config.metadata or posixpath.join(config.data_dir, METADATA_FILE)
        metadata = _read_metadata(found, posixpath.dirname(found), path)
    else:
        raise UserError(f"--warm-start-from {path}: no export and no dataset tell what its model was trained on")
    return Source(path, checkpoint, metadata, config)


def _read_metadata(path: str, vocabularies: str, flag_value: str) -> Metadata:
    if not tf.io.gfile.exists(path):
        raise UserError(f"--warm-start-from {flag_value}: {path} is missing, so its columns are unknown")
    with tf.io.gfile.GFile(path) as file:
        return Metadata.from_json(file.read(), path).located(vocabularies)


def _read_config(path: str) -> Config | None:
    return Config(**config_module.load_yaml(path)) if tf.io.gfile.exists(path) else None


def check_fits(source: Source, config: Config, metadata: Metadata) -> None:
    """Refuses, in one line naming the difference, a model of other classes, another network or other
    layer sizes."""
    where = f"--warm-start-from {source.path}"
    old = source.metadata
    if old.class_names != metadata.class_names:
        raise UserError(f"{where}: its classes are {', '.join(old.class_names)}; this data's are "
                        f"{', '.join(metadata.class_names)}")  # fmt: skip
    if old.is_table != metadata.is_table or (not old.is_table and old.shape != metadata.shape):
        shape = "table rows" if old.is_table else "x".join(map(str, old.shape))
        raise UserError(f"{where}: it was trained on {shape}, and this data is not")
    if source.config is None:
        return  # an export of an older version: its weights' shapes alone decide
    before, now = choose_network(source.config.model, old), choose_network(config.model, metadata)
    checks = [("network (--model)", before, now)]
    if now in USES_HIDDEN_UNITS:
        checks.append(("--hidden-units", source.config.hidden_units, config.hidden_units))
    if now == "cnn":
        checks.append(("--conv-filters", source.config.conv_filters, config.conv_filters))
    for name, was, is_now in checks:
        if was != is_now:
            raise UserError(f"{where}: its {name} is {_shown(was)}; these settings make {_shown(is_now)}")


def _shown(value) -> str:
    return ",".join(map(str, value)) or "none" if isinstance(value, tuple) else str(value)


def make_plan(source: Source, config: Config, metadata: Metadata, weights: dict[str, list[int]]) -> Plan:
    """What becomes of each of the new model's weights."""
    stored = dict(tf.train.list_variables(source.checkpoint))
    old_hidden = source.config.hidden_units if source.config else config.hidden_units
    new_labels = networks.row_labels(metadata, config.hidden_units)
    ranks = set(numeric.rank_labels(source.metadata))
    old_labels = {
        name: _as_stored(labels, stored[name][0], ranks)
        for name, labels in networks.row_labels(source.metadata, old_hidden).items()
        if name in stored
    }
    renamed = _renaming(metadata, source.metadata)
    plan = Plan()
    for name, shape in weights.items():
        previous = renamed(name)
        if previous != name:
            plan.previous[name] = previous
        if previous not in stored:
            plan.fresh[name] = "new"
        elif name in new_labels and previous in old_labels and new_labels[name] != old_labels[previous]:
            new, old = new_labels[name], old_labels[previous]
            if len(old) != stored[previous][0]:
                raise UserError(
                    f"--warm-start-from {source.path}: {previous} has {stored[previous][0]} rows, but the dataset "
                    f"found for it describes {len(old)}: it was preprocessed again since; warm start from an export"
                )
            if stored[previous][1:] != shape[1:]:
                plan.fresh[name] = f"{stored[previous]} there"
                continue
            plan.labels[name] = (new, old)
            plan.remapped[name] = (len(set(new) & set(old)), len(new))
        elif stored[previous] == shape:
            plan.taken.append(name)
        else:
            plan.fresh[name] = f"{stored[previous]} there, {shape} now"
    _bigrams_fresh_where_words_moved(plan)
    _crosses_fresh_where_they_moved(plan, source, config, metadata)
    return plan


def _bigrams_fresh_where_words_moved(plan: Plan) -> None:
    """A text column's bigram buckets hash pairs of word IDs: where its words were remapped (the vocabulary
    changed), a bucket stands for other pairs now, and its old weights would mislead (a warm start on two new
    frequent words took a model that word order alone solves from 1.0 to 0.43)."""
    for name in [name for name in plan.taken if name.endswith("/bigrams/embeddings")]:
        if name.replace("/bigrams/embeddings", "/words/embeddings") in plan.remapped:
            plan.taken.remove(name)
            plan.fresh[name] = "its buckets hash word IDs, which the new vocabulary moved"


CROSS_WEIGHT = re.compile(rf"^{re.escape(wide.LINEAR_PREFIX)}cross_(\d+)/embeddings$")


def _crosses_fresh_where_they_moved(plan: Plan, source: Source, config: Config, metadata: Metadata) -> None:
    """A cross's buckets hash its columns' indices: where the earlier model's cross of the same place crossed other
    columns, or one of its categorical columns' values moved, a bucket stands for other rows now (its weights were
    taken by place: a colour's cross weights went to other colours)."""
    crossed = [(name, int(CROSS_WEIGHT.match(name).group(1))) for name in plan.taken if CROSS_WEIGHT.match(name)]
    if not crossed:
        return
    new, old = crosses_of(config, metadata), crosses_of(source.config, source.metadata)
    was = {column.name: column for column in source.metadata.columns}
    for name, k in crossed:
        if old is None or k >= len(old) or old[k] != new[k]:
            why = "the earlier model's crosses are unknown" if old is None else "it crossed other columns there"
        else:
            moved = [column.name for column in metadata.columns if column.name in new[k] and _moved(column, was)]
            why = f"its buckets hash {moved[0]}'s indices, which the new values moved" if moved else ""
        if why:
            plan.taken.remove(name)
            plan.fresh[name] = why


def crosses_of(config: Config | None, metadata: Metadata) -> tuple[tuple[str, ...], ...] | None:
    """The columns of each of a model's --crosses (None: not known, or not valid for `metadata`)."""
    if config is None:
        return None
    try:
        return resolve_crosses(config.crosses, metadata, choose_network(config.model, metadata))
    except UserError:
        return None


def _moved(column, was: dict) -> bool:
    """Whether a categorical (or date) column's index means another value than in the earlier model's columns
    `was`, by the labels that remap its rows (a numeric column's bucket stays its quantile, as the bucket weights
    do)."""
    if column.category_slot is None:
        return False
    before = was.get(column.name)
    return before is None or before.kind != column.kind or before.index_labels() != column.index_labels()


def _as_stored(labels: list[str], rows: int, ranks: set[str]) -> list[str]:
    """A weight's row labels as its checkpoint has them: a model trained before the dense layers took each
    numeric column's quantile rank (numeric.QuantileRanks, labelled `ranks`) has no rows for the ranks."""
    if len(labels) != rows:
        without_ranks = [label for label in labels if label not in ranks]
        if len(without_ranks) == rows:
            return without_ranks
    return labels


def _renaming(metadata: Metadata, old: Metadata):
    """new variable name -> its name in the old checkpoint, where a column's layers are named after its place."""
    now = networks.column_layers(metadata)
    before = {(layer.rsplit("_", 1)[0], column): layer for layer, column in networks.column_layers(old).items()}

    def renamed(name: str) -> str:
        parts = name.split("/")
        for k, part in enumerate(parts):
            if part in now:
                parts[k] = before.get((part.rsplit("_", 1)[0], now[part]), f"{part} (not in the earlier model)")
        return "/".join(parts)

    return renamed


def _log_plan(source: Source, plan: Plan) -> None:
    step = dict(tf.train.list_variables(source.checkpoint)).get("global_step")
    at = f" at step {tf.train.load_checkpoint(source.checkpoint).get_tensor('global_step')}" if step is not None else ""
    log.info("Warm start from %s%s: %d weight(s) taken, %d remapped by value, %d left fresh",
             source.path, at, len(plan.taken), len(plan.remapped), len(plan.fresh))  # fmt: skip
    for name, (kept, rows) in plan.remapped.items():
        log.info("  remapped %s: %d of its %d rows kept their value's weights, %d start fresh%s",
                 name, kept, rows, rows - kept, _by_column(*plan.labels[name]))  # fmt: skip
    for name, why in plan.fresh.items():
        log.info("  fresh %s (%s)", name, why)


def _by_column(new: list[str], old: list[str]) -> str:
    """The rows each column kept, as " (tailnum 592 of 859, time_hour 3 of 2840)", for a table of columns' rows (each
    labelled "<column> value", trainer/networks.py's row_labels), those with rows that start fresh first; "" for any
    other weight."""
    columns = [re.match(r"<([^<>]*)> ", label) for label in new]
    if not all(columns):
        return ""
    kept, rows, before = {}, {}, set(old)
    for label, column in zip(new, columns):
        rows[column[1]] = rows.get(column[1], 0) + 1
        kept[column[1]] = kept.get(column[1], 0) + (label in before)
    fresh_first = sorted(rows, key=lambda name: kept[name] == rows[name])  # the columns with rows that start fresh
    shown = [f"{name} {kept[name]} of {rows[name]}" for name in fresh_first]
    more = f", and {len(shown) - SHOWN_COLUMNS} more columns" if len(shown) > SHOWN_COLUMNS else ""
    return f" ({', '.join(shown[:SHOWN_COLUMNS])}{more})"


def _labels_folder() -> str:
    """A local folder for this process's label files, which the session reads when it initializes."""
    folder = tempfile.mkdtemp(prefix="warm-start-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _write_lines(path: str, lines: list[str]) -> str:
    with open(path, "w", encoding="utf-8") as file:
        file.write("".join(line + "\n" for line in lines))
    return path
