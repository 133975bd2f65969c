"""`python -m preprocessing`: raw data in, sharded TFRecords and metadata.json out."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from typing import NoReturn

from dataformat import commandline, gcs, lease, storage
from dataformat.errors import UserError
from dataformat.schema import EXAMPLES_PER_RECORD, IMAGE_KEY, LABEL_KEY, METADATA_FILE, VECTOR_KEY
from preprocessing import image_lists
from preprocessing.sources import SOURCES, SourceOptions, folder_source
from preprocessing.table_files import SUFFIXES, add_reading_flags, is_table_input, reading_options
from preprocessing.tables import LAST_COLUMN, TableOptions

log = logging.getLogger("preprocessing")

EXAMPLES = """\
examples:
  qt-preprocess --source digits --output data/digits
  qt-preprocess --source mnist --input raw/mnist --output data/mnist --shards 8
  qt-preprocess --source csv --input raw/table.csv --label-column label --output data/table
  qt-preprocess --source csv --input raw/reviews.csv --label-column stars --output data/reviews
  qt-preprocess --source text --input raw/tickets --output data/tickets
  qt-preprocess --source npz --input raw/arrays.npz --output data/arrays
  qt-preprocess --source images --input raw/photos --image-size 64x64 --output data/photos
  qt-preprocess --source images --input gs://my-bucket/flowers/list.csv --image-size 128x128 --output data/flowers
"""


MOST_IMAGE_SIDE = 4096  # pixels a side of --image-size: 48 MB an RGB photo; models take 224 to 600


def _image_size(text: str) -> tuple[int, int]:
    try:
        height, width = (int(n) for n in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not HEIGHTxWIDTH, e.g. 64x64") from None
    if height < 1 or width < 1:
        raise argparse.ArgumentTypeError(f"{text!r} has a zero or negative side")
    if height > MOST_IMAGE_SIDE or width > MOST_IMAGE_SIDE:  # 100000x100000 ran out of memory after a minute
        raise argparse.ArgumentTypeError(f"{text!r}: a side is at most {MOST_IMAGE_SIDE} pixels")
    return height, width


def _date_format(text: str) -> str:
    from dataformat import dates

    try:
        dates.check(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None
    return text


def _first_year(text: str) -> int:
    try:
        year = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a year, e.g. 1969") from None
    if not 1 <= year <= 9900:
        raise argparse.ArgumentTypeError(f"{year}: a year from 1 to 9900")
    return year


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = commandline.ArgumentParser(
        prog="qt-preprocess",
        description="(also: python -m preprocessing) "
        "Convert raw data into sharded TFRecord files of tf.train.Example plus a metadata.json, "
        "with a deterministic, stratified train/eval split. Shards appear only when complete and "
        "metadata.json is written last, so a dataset with a metadata.json is always whole.",
        examples=EXAMPLES,
    )
    _add_input_flags(parser)
    tables = parser.add_argument_group("tables (--source csv)")
    _add_table_flags(tables)
    texts = parser.add_argument_group("text (text columns of --source csv, and --source text)")
    _add_text_flags(texts)
    _add_output_flags(parser)
    _add_runner_flags(parser)
    args, beam_args = parser.parse_known_args(argv)
    if beam_args and args.runner != "beam":
        parser.error(f"unrecognized arguments: {' '.join(beam_args)}")
    if args.runner != "beam" and args.beam_runner:
        parser.error(f"--beam-runner {args.beam_runner}: only with --runner beam (this run is local)")
    if args.runner == "beam" and args.workers:
        parser.error("--workers: the local runner's; Beam's runner decides its own (e.g. --max_num_workers)")
    args.pipeline_args = ["--runner", args.beam_runner or "DirectRunner", *beam_args]
    args.source = _source(args.source, args.input)
    if args.source not in ("csv", "text"):
        _refuse_table_flags(parser, args, tables, texts)
    if args.image_size and args.source != "images":  # the other sources' readers never resize: ignored silently
        parser.error(f"--image-size: a flag of --source images, not of --source {args.source}")
    return args


def _refuse_table_flags(parser: argparse.ArgumentParser, args: argparse.Namespace, *groups) -> None:
    """A table's or a text's flag for arrays or images, which was ignored silently (--label-column foo on digits);
    but --key-column, which names images' keys."""
    for group in groups:
        for action in group._group_actions:  # argparse's own list of the group's flags
            if action.dest != "key_column" and getattr(args, action.dest) != action.default:
                parser.error(f"{action.option_strings[0]}: a flag of {group.title}, not of --source {args.source}")


def _add_input_flags(parser: argparse.ArgumentParser) -> None:
    """What to read and where to write it, and the split."""
    parser.add_argument(
        "--source",
        choices=sorted([*SOURCES, "csv", "text"]),
        help="kind of raw data: digits = scikit-learn's built-in 8x8 handwritten digits (no "
        "download); mnist = a folder of IDX files; csv = a table (CSV in any dialect, JSON lines, Parquet, Feather, "
        "Excel or LibreOffice, SQLite, ARFF, Stata, SPSS or SAS) of numeric, categorical, date and free-text columns "
        "with missing values, in one or many files, of any size (streamed); text = a folder with one sub-folder of "
        ".txt files per class (streamed); "
        "npz = arrays x and y; images = one sub-folder of image files (PNG, JPEG, GIF, BMP, WebP, HEIC) per class, or "
        "an image list in Vertex AI's import format: a .csv of [ML_USE,]PATH,LABEL lines or a .jsonl of "
        "imageGcsUri, classificationAnnotation and ml_use, whose ML_USE decides the split (default: what --input "
        "holds, told by its name and its first line or files; digits without --input)",
    )
    parser.add_argument(
        "--input",
        type=commandline.path,
        help=f"the raw data: a file (npz); a file, a glob or a folder of {', '.join(SUFFIXES)} files, "
        "CSV and JSON compressed (.gz, .bz2, .zst, .xz, or a .zip of one) or not (csv); "
        "a folder (mnist, images, text); an image list, .csv or .jsonl (images)",
    )
    parser.add_argument(
        "--output", type=commandline.path, required=True, help="folder to write the shards and metadata.json into"
    )
    parser.add_argument(
        "--shards",
        type=commandline.positive_int,
        help="number of training shards (default: one per ~100 MB, at least 2); evaluation gets a proportional number",
    )
    parser.add_argument(
        "--eval-fraction",
        type=commandline.fraction,
        default=0.2,
        help="fraction of each class held out for evaluation (default: 0.2)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and shard order (default: 0)")
    parser.add_argument(
        "--workers",
        type=commandline.positive_int,
        help="shards written in parallel: by threads for csv, npz, mnist and digits (default: one per core), "
        "by processes for images (default: one per 50,000 images, at most one per core)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace a dataset already in --output")


def _add_table_flags(group) -> None:
    """How a table's columns are read: the label, the kinds, the vocabularies."""
    group.add_argument(
        "--label-column",
        type=commandline.name,
        default=LAST_COLUMN,
        help="name or 0-based index of the label column, as Python counts (messages number columns from 1, as "
        "spreadsheets do) (default: the column named label, if one is; else -1, the last)",
    )
    add_reading_flags(group)
    group.add_argument(
        "--categorical-columns",
        type=commandline.names,
        default=(),
        metavar="A,B",
        help="columns whose values are categories even if they are numbers, e.g. codes "
        "(default: the columns whose values are not all numbers)",
    )
    group.add_argument(
        "--numeric-columns",
        type=commandline.names,
        default=(),
        metavar="A,B",
        help="columns whose numbers are read as numbers, if at least half their values are; the rest are missing, "
        "named in a warning (default: the columns whose values are numbers but for 2%% bad cells or a few spellings "
        "of a missing value)",
    )
    group.add_argument(
        "--date-columns",
        type=commandline.names,
        default=(),
        metavar="A,B",
        help="columns of dates or timestamps, numbers as 20180305 or Unix times too, if at least half their values "
        "are; the rest are missing (default: the text columns whose "
        "values read as dates in one of the common formats: ISO 8601 and its variants, m/d/Y, d/m/Y, d.m.Y, "
        "'Mar 5, 2018', 'Mar-2018', ...; and the columns named like times, e.g. timestamp, created_at, whose "
        "numbers read as such dates or as Unix times of likely years)",
    )
    group.add_argument(
        "--date-format",
        type=_date_format,
        help="the dates' format with %%Y %%y %%m %%d %%H %%M %%S %%b %%p, e.g. '%%d/%%m/%%Y', tried first on every "
        "column (default: found from the values; other columns' formats still are, and a format that reads no column "
        "is refused); a format without %%H also reads a time of day after the date, AM or PM too; '%%H:%%M' reads "
        "times of day alone; '%%s' reads Unix times (seconds since 1970, UTC; milliseconds, microseconds or "
        "nanoseconds when larger)",
    )
    group.add_argument(
        "--two-digit-years",
        type=_first_year,
        metavar="YEAR",
        help="the first of the hundred years that dates of two-digit years (%%y: 3/5/18, 05-MAR-18) read as, e.g. 1969 "
        "for POSIX's 1969-2068 (default: 80 years before this one, as Java's SimpleDateFormat reads them; "
        "metadata.json keeps it for training and serving)",
    )
    group.add_argument(
        "--text-columns",
        type=commandline.names,
        default=(),
        metavar="A,B",
        help="columns of free text: reviews, tickets, comments, tokenized into words (default: the columns whose "
        "values are mostly distinct and mostly of 3 words or more, and lists, such as JSON's and Parquet's lists "
        "of tags, whose elements are the words)",
    )
    group.add_argument(
        "--ignore-columns", type=commandline.names, default=(), metavar="A,B", help="columns to leave out"
    )
    group.add_argument(
        "--key-column",
        type=commandline.name,
        default=None,
        metavar="NAME",
        help="a column of row keys (an order number, a ticket ID): never a feature, it is stored beside the row and "
        "every prediction returns it as `key`, to join predictions back to their rows; for images, a name for "
        "each image's key, its path as the folder or list gives it, which the export's inputs take as NAME and "
        "return as `key` (default: none)",
    )
    group.add_argument(
        "--positive-class",
        metavar="NAME",
        help="of a label of two classes, the one to find (churned, fraud, default): class 1, the one that "
        "precision, recall, the precision-recall curve and report.md's thresholds are of (default: the second in "
        "sorted order: 1, true, yes)",
    )
    group.add_argument(
        "--weight-column",
        type=commandline.name,
        default=None,
        metavar="NAME",
        help="a column of each row's weight in the training loss, a number >= 0 (a row of weight 2 counts as two, "
        "0 as none): never a feature, and not needed to predict; evaluation's metrics count every row once "
        "(default: none)",
    )
    group.add_argument(
        "--min-frequency",
        type=commandline.positive_int,
        default=None,
        help="a categorical value (or a text's word) seen fewer times in the training rows shares the "
        "out-of-vocabulary index with values never seen (default: 10 for categories, 1 for a column named "
        "like an ID or code whose values repeat, as entities' rows do; 3 for a date's values; 2 for words)",
    )
    group.add_argument(
        "--max-categories",
        type=commandline.positive_int,
        default=TableOptions.max_categories,
        help="a categorical column's vocabulary keeps at most this many of its most frequent values, found in "
        f"bounded memory however many distinct values it has (default: {TableOptions.max_categories})",
    )
    group.add_argument(
        "--hash-buckets",
        type=commandline.non_negative_int,
        default=TableOptions.hash_buckets,
        help="frequent values that a column's vocabulary has no room for hash into buckets: about one for every "
        "10 training rows they hold, at most this many a column; values never seen in training hash into them "
        "too. Rare values, and with --hash-buckets 0 every value outside the vocabulary, share one "
        f"out-of-vocabulary index (default: {TableOptions.hash_buckets})",
    )


def _add_text_flags(group) -> None:
    """How a text's words are kept."""
    group.add_argument(
        "--max-tokens",
        type=commandline.positive_int,
        default=TableOptions.max_tokens,
        help="a text column's vocabulary keeps at most this many of its most frequent words, each seen "
        f"--min-frequency times in the training rows; other words share one index (default: {TableOptions.max_tokens})",
    )
    group.add_argument(
        "--max-length",
        type=commandline.positive_int,
        default=TableOptions.max_length,
        help="a text keeps its first this many words, and the model's input is as wide as the longest training "
        f"text where it has fewer (default: {TableOptions.max_length})",
    )
    group.add_argument(
        "--bigram-buckets",
        type=commandline.non_negative_int,
        help="pairs of neighbouring words hash into this many buckets a text column, as fastText's word bigrams "
        "(default: none below 5 million training words, where they measured worse; from there one for every 10 "
        "training words, at most 100,000)",
    )


def _add_output_flags(parser: argparse.ArgumentParser) -> None:
    """How the examples are written: the images' size, the shards' compression and packing."""
    parser.add_argument(
        "--image-size",
        type=_image_size,
        metavar="HEIGHTxWIDTH",
        help="images: resize every image to this size (default: the most common size of the first 20 images; in a "
        "folder all must then match, from a list every image is resized to it)",
    )
    parser.add_argument(
        "--compression",
        choices=("none", "gzip"),
        default="none",
        help="gzip the shards (.tfrecord.gz): smaller files, more CPU to read them (default: none)",
    )
    parser.add_argument(
        "--examples-per-record",
        type=commandline.positive_int,
        default=EXAMPLES_PER_RECORD,
        help="examples packed into each TFRecord record: fewer bytes and faster reading than one a "
        "record; 1 writes the plain one-tf.train.Example-an-example layout for other readers "
        f"(default: {EXAMPLES_PER_RECORD})",
    )


def _add_runner_flags(parser: argparse.ArgumentParser) -> None:
    """Where the conversion runs: here, or as an Apache Beam pipeline."""
    parser.add_argument(
        "--runner",
        choices=("local", "beam"),
        default="local",
        help="local = this machine's cores; beam = an Apache Beam pipeline (pip install '.[beam]'): "
        "any further flags, e.g. --project, --region, --temp_location, --setup_file, go to Beam (default: local)",
    )
    parser.add_argument(
        "--beam-runner",
        help="with --runner beam: DirectRunner (this machine) or DataflowRunner (default: DirectRunner)",
    )


def _source(source: str | None, path: str | None) -> str:
    """--source, or the kind of --input where it names none: never digits when --input names a file."""
    if source == "digits" and path:
        raise UserError(f"--input {path}: --source digits is built in and reads no input; name its kind with --source")
    if source == "csv" and path and image_lists.is_image_list(path):  # its one column of paths teaches nothing
        raise UserError(f"--input {path}: an image list (its lines name image files and their labels): read it with "
                        "--source images, or leave --source out")  # fmt: skip
    if source:
        return source
    if not path:
        return "digits"
    if path.lower().endswith(".npz"):
        return "npz"
    name_it = "name its kind with --source (csv, text, images, mnist or npz)"
    if not storage.is_folder(path):
        if image_lists.is_image_list(path):
            return "images"
        if is_table_input(path):
            return "csv"
        raise UserError(f"--input {path}: {name_it}" if storage.exists(path) else f"--input {path}: no such file")
    tables, other = is_table_input(path), folder_source(path)
    if tables and other:  # an image folder with its labels.csv beside the class folders, say
        raise UserError(f"--input {path}: the folder holds table files and {other} class folders; {name_it}")
    if not (tables or other):
        raise UserError(f"--input {path}: {name_it}")
    return "csv" if tables else other


def _no_crcmod_advice(record: logging.LogRecord) -> bool:
    return "crcmod package not found" not in record.getMessage()


def _beam():
    """The Beam runner's module; apache-beam is an optional extra, imported only when asked for. Its advice to
    install crcmod, for its own TFRecord reader and writer, which this package does not use, is left out."""
    if _no_crcmod_advice not in logging.getLogger().filters:
        logging.getLogger().addFilter(_no_crcmod_advice)
    try:
        from preprocessing import beam
    except ImportError as error:
        raise UserError(
            f"--runner beam needs apache-beam ({error}); install it with pip install '.[beam]' (Python 3.10 or later)"
        ) from None
    return beam


def main(argv: list[str] | None = None) -> int:
    output: list[str] = []  # --output, once read: what a Ctrl-C left there
    return commandline.run(
        lambda: _convert(argv, output), lambda: _left_after_ctrl_c(output), stop_signals=commandline.STOP_SIGNALS
    )


def _left_after_ctrl_c(output: list[str]) -> str:
    """A Ctrl-C that lands after the dataset's metadata.json was written (the last file) leaves a whole dataset: the
    line said there was none, and to rerun, which then refused the folder as holding a dataset."""
    if output and gcs.is_gcs(output[0]):  # no look at Cloud Storage here: it may take a minute of retries, or fail
        return f"the output is a dataset only if its {METADATA_FILE}, the last file written, is there; else rerun"
    if output and storage.exists(storage.join(output[0], METADATA_FILE)):
        return f"--output {output[0]} holds a whole dataset (its {METADATA_FILE} was written)"
    return f"no {METADATA_FILE} was written, so the output is not a dataset; rerun to redo it"


def _convert(argv: list[str] | None, output: list[str]) -> int:
    args = parse_args(argv)
    output.append(args.output)
    if args.input and storage.is_folder(args.input) and storage.same_folder(args.input, args.output):
        raise UserError(f"--output {args.output}: the folder --input reads; write the dataset to another folder")
    if gcs.is_gcs(args.output):  # before any work: without credentials, only reading public buckets works
        gcs.check_credentials()
    # These import TensorFlow: after --help, which should not wait for it.
    from preprocessing.writer import build_dataset

    start = time.time()
    source = "tables" if args.source == "csv" else args.source  # csv reads every table format
    log.info("Reading %s%s", source, f" from {args.input}" if args.input else "")
    common = dict(
        eval_fraction=args.eval_fraction,
        seed=args.seed,
        shards=args.shards,
        overwrite=args.overwrite,
        compression="GZIP" if args.compression == "gzip" else "",
        examples_per_record=args.examples_per_record,
    )
    with lease.held(args.output, what="preprocessing", flag="--output"):  # one run writes a folder at a time
        if args.source in ("csv", "text"):
            metadata = _convert_table(args, common)
        else:
            data = SOURCES[args.source](args.input, SourceOptions(image_size=args.image_size))
            if args.key_column:
                data = dataclasses.replace(data, key_name=_image_key_name(args.key_column))
            common["source"] = args.source
            if args.runner == "beam":
                metadata = _beam().build_dataset_with_beam(
                    data, args.output, pipeline_args=args.pipeline_args, **common
                )
            else:
                metadata = build_dataset(data, args.output, workers=args.workers, **common)
    if metadata is None:  # Beam only wrote the Dataflow job (--template_location)
        return 0
    _summarize(metadata, args.output, start)
    return 0


def _image_key_name(name: str) -> str:
    """--key-column for arrays and images: a name for the stored keys that no feature or input has."""
    # The records' features, and the export's inputs (trainer/serving.py's IMAGE_BYTES and EXAMPLES).
    if name in (IMAGE_KEY, VECTOR_KEY, LABEL_KEY, "image_bytes", "examples"):
        raise UserError(f"--key-column {name}: a name the records or the export use already; choose another")
    return name


def _convert_table(args: argparse.Namespace, common: dict):
    """--source csv or text, locally or with Beam; None when Beam only wrote a Dataflow job."""
    from preprocessing.table_files import TEXT_COLUMNS
    from preprocessing.tables import build_table_dataset

    if not args.input:
        raise UserError(f"--source {args.source} needs --input")
    text_folder = args.source == "text"
    if text_folder:  # its table is text,label: these were ignored silently
        for flag in ("label_column", "text_columns", "categorical_columns", "numeric_columns", "date_columns",
                     "ignore_columns", "weight_column", "key_column"):  # fmt: skip
            if getattr(args, flag) not in (None, (), LAST_COLUMN):
                raise UserError(f"--{flag.replace('_', '-')}: not for --source text, whose folders are a class each "
                                "and whose files are the one text column")  # fmt: skip
    options = TableOptions(
        label_column=TEXT_COLUMNS[1] if text_folder else args.label_column,
        **reading_options(args),
        categorical=args.categorical_columns,
        numeric=args.numeric_columns,
        dates=args.date_columns,
        date_format=args.date_format or "",
        first_year=args.two_digit_years or 0,
        ignore=args.ignore_columns,
        min_frequency=args.min_frequency,
        max_categories=args.max_categories,
        hash_buckets=args.hash_buckets,
        text=(TEXT_COLUMNS[0],) if text_folder else args.text_columns,
        max_tokens=args.max_tokens,
        max_length=args.max_length,
        bigram_buckets=args.bigram_buckets,
        text_folder=text_folder,
        key=args.key_column or "",
        weight=args.weight_column or "",
        positive_class=args.positive_class or "",
    )
    if args.runner == "beam":
        return _beam().build_table_dataset_with_beam(args.input, args.output, options, args.pipeline_args, **common)
    return build_table_dataset(args.input, args.output, options, workers=args.workers, **common)


def _summarize(metadata, output: str, start: float) -> None:
    from dataformat.schema import METADATA_FILE

    seconds = time.time() - start
    examples = sum(split.examples for split in metadata.splits.values())
    size = sum(split.bytes for split in metadata.splits.values())
    shards = sum(len(split.shards) for split in metadata.splits.values())
    log.info(
        "Wrote %d examples (%d train, %d eval, %d classes, shape %s %s) in %d shards, %.1f MB, "
        "%.1f s (%.0f examples/s)",
        examples,
        metadata.splits["train"].examples,
        metadata.splits["eval"].examples,
        metadata.num_classes,
        "x".join(map(str, metadata.shape)),
        metadata.dtype,
        shards,
        size / 1e6,
        seconds,
        examples / seconds,
    )
    print(storage.join(output, METADATA_FILE))


def cli() -> NoReturn:
    """qt-preprocess, and python -m preprocessing: exits at once after the run's last line, since the interpreter's
    teardown sometimes met pyarrow's or TensorFlow's threads and aborted (exit 134 in place of a SIGTERM's 143)."""
    commandline.exit_at_once(main())


if __name__ == "__main__":
    cli()
