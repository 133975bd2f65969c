"""The same conversion as an Apache Beam pipeline: the DirectRunner here, Dataflow in the cloud.

It shares every step that decides the bytes with the local writer: the sources, the split and the
shards' examples (writer.shard_parts), the seeded order and the shard writer (writer.write_shard),
and writes metadata.json last (writer.write_metadata). So a dataset made with Beam holds the same
shards as one made locally.

The sources are read by the launching process; what the workers share out is decoding
(images), encoding and writing the shards. Only this module imports apache_beam.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import posixpath
import re
import time
from collections import Counter

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
    _BeamArgumentParser,
)
from apache_beam.runners.runner import create_runner

from dataformat import storage
from dataformat.errors import UserError
from dataformat.schema import EXAMPLES_PER_RECORD, METADATA_FILE, SHARD_SUFFIXES, Metadata, ShardInfo
from dataformat.tables import Column
from preprocessing import tables
from preprocessing.sources import RawData
from preprocessing.split import shard_name
from preprocessing.table_files import LateColumn, forget_kept_sheet
from preprocessing.table_shards import ShardWriter
from preprocessing.writer import (
    ShardResult,
    ShardTask,
    clear_output,
    key_fields,
    shard_parts,
    take,
    write_metadata,
    write_shard,
)

log = logging.getLogger(__name__)
STATS_SUFFIX = ".stats.json"  # a worker's statistics of one shard, read back by the launcher
TABLE_SUMMARY = ".table.json"  # a table's columns and classes, as the pipeline decided them


class _WriteShard(beam.DoFn):
    """One shard's example indices in, in their order: the shard written with the local writer, and
    its statistics beside it for the launcher (a retried bundle just writes both again)."""

    def __init__(self, data: RawData, output: str, counts: dict[str, int], compression: str, per_record: int):
        self._data, self._output, self._counts = data, output, counts
        self._compression, self._per_record = compression, per_record

    def process(self, element):
        (split, shard), indices = element
        ordered = np.array(indices, dtype=np.int64)
        suffix = SHARD_SUFFIXES[self._compression]
        path = storage.join(self._output, shard_name(split, shard, self._counts[split], suffix))
        items = take(self._data.items, ordered)
        labels = self._data.labels[ordered]
        task = ShardTask(
            path, items, labels, self._data.load, self._compression, self._per_record, **key_fields(self._data, ordered)
        )
        result = write_shard(task, report=lambda n: None)
        stats = {**result.__dict__, "sums": result.sums.tolist(), "squares": result.squares.tolist()}
        storage.write_text_atomically(_stats_path(path), json.dumps(stats))


def pipeline_options(pipeline_args: list[str]) -> PipelineOptions:
    """Beam's options from --beam-runner and the flags qt-preprocess does not know, checked before the output is
    cleared. Beam 2.72's DirectRunner first downloads the Prism runner from GitHub (a long wait where a firewall
    drops the request) and falls back to the FnApiRunner; here the DirectRunner is that FnApiRunner at once, the
    local runner we test."""
    _check_known(pipeline_args)
    options = PipelineOptions(pipeline_args)
    given = options.view_as(StandardOptions).runner
    try:
        runner = create_runner(given)  # by its name in any case, with or without "Runner"
    except ValueError as error:  # "Unexpected pipeline runner: X. Valid values are ..."
        raise UserError(f"--beam-runner {given}: {str(error).split('. ', 1)[-1]}") from None
    name = type(runner).__name__
    direct = name in ("DirectRunner", "SwitchingDirectRunner")
    options.view_as(StandardOptions).runner = "FnApiRunner" if direct else name
    if "Dataflow" in name:  # what Beam's own check asks of Dataflow, found as it finds them (no bucket looked for)
        cloud = options.view_as(GoogleCloudOptions)
        needed = {
            "--project": cloud.project,
            "--region": cloud.region or runner.get_default_gcp_region(),  # $CLOUDSDK_COMPUTE_REGION, gcloud's config
            "--temp_location": cloud.temp_location or cloud.staging_location,
        }
        missing = [flag for flag, value in needed.items() if not value]
        if missing:
            raise UserError(f"--beam-runner {given} needs {', '.join(missing)} (Beam's pipeline options)")
    return options


def _check_known(pipeline_args: list[str]) -> None:
    """Beam warns of an argument none of its options know, and runs on without it: a file of an unquoted glob
    (one of three files read) or a misspelt flag (--weight for --weight-column) ran to exit 0."""
    parser = _BeamArgumentParser(allow_abbrev=False)  # as PipelineOptions.get_all_options reads them
    for options_class in {str(cls): cls for cls in PipelineOptions.__subclasses__()}.values():
        options_class._add_argparse_args(parser)
    _, unknown = parser.parse_known_args(pipeline_args)
    if unknown:
        raise UserError(f"unrecognized arguments: {' '.join(unknown)} (neither qt-preprocess's flags nor Beam's)")


def template_only(options: PipelineOptions) -> str | None:
    """The --template_location the DataflowRunner writes the job to instead of running it, if any.

    The job is built and staged, not run; a dataset needs metadata.json, which only a run that
    this process waits for writes. Useful to check Dataflow options and staging."""
    runner = options.view_as(StandardOptions).runner or ""
    return options.view_as(GoogleCloudOptions).template_location if "Dataflow" in runner else None


def _stats_path(shard_path: str) -> str:
    folder, name = shard_path.rsplit("/", 1)
    return f"{folder}/.{name}{STATS_SUFFIX}"


def _collect(path: str, data: RawData) -> ShardResult:
    """A written shard's statistics (removing their file), or an empty shard written now:
    every name of the -of-N set must exist, even one that no example hashed to."""
    stats_path = _stats_path(path)
    if not storage.exists(stats_path):
        storage.write_text_atomically(path, "")
        zeros = np.zeros(data.shape[-1])
        return ShardResult(path, 0, 0, zeros, zeros, 0)
    with storage.open_read(stats_path) as file:
        raw = json.loads(file.read())
    storage.remove(stats_path)
    return ShardResult(**{**raw, "sums": np.array(raw["sums"]), "squares": np.array(raw["squares"])})


def build_dataset_with_beam(
    data: RawData,
    output: str,
    *,
    source: str,
    pipeline_args: list[str],
    eval_fraction: float = 0.2,
    seed: int = 0,
    shards: int | None = None,
    overwrite: bool = False,
    compression: str = "",
    examples_per_record: int = EXAMPLES_PER_RECORD,
) -> Metadata | None:
    """Like writer.build_dataset, as a Beam pipeline run with `pipeline_args` (--runner and its
    options). None when the DataflowRunner only wrote the job to --template_location."""
    start = time.time()
    options = pipeline_options(pipeline_args)
    template = template_only(options)
    if not template:
        clear_output(output, overwrite)
    parts = shard_parts(data, eval_fraction, seed, shards)
    counts = {split: len(parts[split]) for split in parts}
    with quiet_beam(), beam.Pipeline(options=options) as pipeline:
        _ = (
            pipeline
            | "Shards"
            >> beam.Create([((split, i), part.tolist()) for split in parts for i, part in enumerate(parts[split])])
            | "Spread" >> beam.Reshuffle()  # each shard to any worker, not those of Create's few bundles
            | "Write" >> beam.ParDo(_WriteShard(data, output, counts, compression, examples_per_record))
        )
    if template:
        log.info("Wrote the Dataflow job to %s without running it: no shards or metadata.json were written", template)
        return None
    suffix = SHARD_SUFFIXES[compression]
    by_split = {
        split: [
            _collect(storage.join(output, shard_name(split, i, counts[split], suffix)), data)
            for i in range(counts[split])
        ]
        for split in ("train", "eval")
    }
    return write_metadata(
        data,
        output,
        by_split,
        source=source,
        seed=seed,
        eval_fraction=eval_fraction,
        start=start,
        compression=compression,
        examples_per_record=examples_per_record,
    )


# Tables: the same two passes as preprocessing/tables.py, as one pipeline.


class _ReadTable(beam.DoFn):
    """One CSV file in: its blocks' counts (tagged "counts") and rows keyed by (split, shard)."""

    def __init__(self, plan: tables.TablePlan):
        self._plan = plan

    def process(self, path: str):
        try:
            for block in tables.read_blocks(path, self._plan):
                yield beam.pvalue.TaggedOutput("counts", block.totals)
                yield from block.parts
        except LateColumn as late:  # the local runner reads the files' keys and starts again; workers cannot
            raise UserError(
                f"{late}; JSON's columns are the keys of the first file's first objects here: give them in its "
                "first object (null values will do; [] for a list), or preprocess with --runner local, which finds "
                "every key"
            ) from None


class _CombineCounts(beam.CombineFn):
    """Every block's totals added up (tables.Totals)."""

    def __init__(self, plan: tables.TablePlan):
        self._plan = plan

    def create_accumulator(self):
        return tables.Totals.empty(self._plan)

    def add_input(self, accumulator, block):
        accumulator.add(block, self._plan)
        return accumulator

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for accumulator in accumulators:
            merged = self.add_input(merged, accumulator)
        return merged

    def extract_output(self, accumulator):
        return accumulator


class _WriteTableShard(beam.DoFn):
    """One shard's rows in: the shard written with the local writer, its statistics beside it."""

    def __init__(self, paths: dict):
        self._paths = paths

    def process(self, element, writer: ShardWriter):
        shard, batches = element
        path = self._paths[shard]
        info, counted = writer.write_and_count(pa.Table.from_batches(list(batches)), path, shard[0])
        date_values = {name: {kind: found.tolist() for kind, found in kinds.items()} for name, kinds in counted.items()}
        stats = {"examples": info.examples, "bytes": info.bytes, "date_values": date_values}
        storage.write_text_atomically(_stats_path(path), json.dumps(stats))


def build_table_dataset_with_beam(
    path: str,
    output: str,
    options: tables.TableOptions,
    pipeline_args: list[str],
    *,
    eval_fraction: float = 0.2,
    seed: int = 0,
    shards: int | None = None,
    overwrite: bool = False,
    compression: str = "",
    examples_per_record: int = EXAMPLES_PER_RECORD,
) -> Metadata | None:
    """Like tables.build_table_dataset, as a Beam pipeline: the files are read in parallel, the
    counts combined into the columns' descriptions, and the shards written from the grouped rows.
    The same hashes place every row, so the shards are those of a local run, byte for byte."""
    start = time.time()
    files, plan = tables.plan_table(path, options, eval_fraction, seed, shards)
    forget_kept_sheet()  # the workers read the sheet, in other processes where they may be
    beam_options = pipeline_options(pipeline_args)
    template = template_only(beam_options)
    if not template:
        clear_output(output, overwrite)
    paths = tables.shard_paths(plan, output, compression)
    summary_path = storage.join(output, TABLE_SUMMARY)

    def decide(totals: tables.Totals) -> ShardWriter:
        writer = tables.decide_writer(plan, totals, path, files, compression, examples_per_record)
        return tables.with_vocabularies(writer, output)

    def keep(writer: ShardWriter, totals: tables.Totals) -> None:
        kept = {"writer": _writer_json(writer), "labels": totals.labels, "rows": totals.rows}
        storage.write_text_atomically(summary_path, json.dumps(kept))

    with quiet_beam(), beam.Pipeline(options=beam_options) as pipeline:
        read = (
            pipeline
            | "Files" >> beam.Create(files)
            | "Read" >> beam.ParDo(_ReadTable(plan)).with_outputs("counts", main="rows")
        )
        summary = read.counts | "Count" >> beam.CombineGlobally(_CombineCounts(plan))
        writer = summary | "Decide" >> beam.Map(decide)
        _ = writer | "Keep" >> beam.Map(keep, beam.pvalue.AsSingleton(summary))
        _ = (
            read.rows
            | "ByShard" >> beam.GroupByKey()
            | "Write" >> beam.ParDo(_WriteTableShard(paths), beam.pvalue.AsSingleton(writer))
        )
    if template:
        log.info("Wrote the Dataflow job to %s without running it: no shards or metadata.json were written", template)
        return None
    with storage.open_read(summary_path) as file:
        summary = json.loads(file.read())
    storage.remove(summary_path)
    writer = _writer_from_json(summary["writer"], output)
    collected = {shard: _collect_table_shard(shard_path, writer, plan) for shard, shard_path in paths.items()}
    written = {shard: info for shard, (info, _) in collected.items()}
    writer = tables.settle_date_values(writer, [date_values for _, date_values in collected.values()], plan)
    extra = {"seconds": round(time.time() - start, 3), "files": len(files)}
    labels = Counter(summary["labels"])
    tables.log_read(summary["rows"], len(files), plan, writer.columns)
    metadata = tables.table_metadata(plan, writer, written, labels, extra)
    storage.write_text_atomically(storage.join(output, METADATA_FILE), metadata.to_json())
    return metadata


class _NoUserErrorTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], UserError))


@contextlib.contextmanager
def quiet_beam():
    """A pipeline's run as the local one's: Beam's own INFO lines (its internals) left out, and a UserError said
    once, in its one line. Beam's runner logged the failing step's traceback and added the step's name to it."""
    beam_log, step_log = logging.getLogger("apache_beam"), logging.getLogger("apache_beam.runners.common")
    level, quiet = beam_log.level, _NoUserErrorTraceback()
    beam_log.setLevel(logging.WARNING)
    step_log.addFilter(quiet)
    try:
        yield
    except UserError as error:
        raise UserError(re.sub(r" \[while running '.*'\]$", "", str(error))) from None
    except RuntimeError as error:  # as Beam's runners wrap a step's error: a worker process's, or Ctrl-C
        said = re.findall(r"dataformat\.errors\.UserError: (.*)", str(error))
        if said:
            raise UserError(re.sub(r" \[while running '.*'\]$", "", said[-1])) from None
        if str(error).startswith("KeyboardInterrupt"):
            raise KeyboardInterrupt from None
        raise
    finally:
        beam_log.setLevel(level)
        step_log.removeFilter(quiet)


def _writer_json(writer: ShardWriter) -> dict:
    return {**dataclasses.asdict(writer), "columns": [column.to_json() for column in writer.columns]}


def _writer_from_json(raw: dict, output: str) -> ShardWriter:
    columns = tuple(Column.from_json(column).located(output) for column in raw["columns"])
    classes = tuple(raw["classes"])
    return ShardWriter(raw["label"], columns, classes, raw["compression"], raw["per_record"], raw["key"], raw["weight"])


def _collect_table_shard(path: str, writer: ShardWriter, plan: tables.TablePlan) -> tuple[ShardInfo, dict]:
    """A written shard's size and its date columns' counts (removing its statistics file), or an empty shard written
    now: every name of the -of-N set must exist, even one that no row hashed to."""
    stats_path = _stats_path(path)
    if not storage.exists(stats_path):
        return writer(plan.bucket_schema.empty_table(), path), {}
    with storage.open_read(stats_path) as file:
        stats = json.loads(file.read())
    storage.remove(stats_path)
    date_values = {
        name: {kind: np.array(found, np.int64) for kind, found in kinds.items()}
        for name, kinds in stats["date_values"].items()
    }
    return ShardInfo(posixpath.basename(path), stats["examples"], stats["bytes"]), date_values
