"""`python -m trainer.predict`: predictions from an exported SavedModel, on files or a JSON request.

PNG/JPEG files go through `image_bytes:serving_default` as they are stored; .npz, CSV (for a
table, any file its preprocessing reads), and TFRecord files (a dataset's shards: records that may
pack many examples) are read here and their values go through the numbers' signature
(`serving_default`, or `numbers:serving_default` in an export whose serving_default takes another
input), one prediction per example.
`--instances-json` reads the body of a TF Serving / Vertex AI predict request and prints the
body the server would return.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import NoReturn

import numpy as np

from dataformat import commandline, gcs, json_text, storage
from dataformat.errors import UserError
from trainer.exported_model import Model, Rejected
from trainer.input_warnings import off_scale_warned
from trainer.instances import respond
from trainer.prediction_inputs import JSON_LINES, in_utf8_if_so, requests_for

log = logging.getLogger("trainer.predict")
EXAMPLES = """\
examples:
  qt-predict --model-dir runs/digits/export/best/1795322157 --input digit.png more.npz
  qt-predict --model-dir EXPORT --input data/digits/eval-00000-of-00001.tfrecord --output p.jsonl
  qt-predict --model-dir EXPORT --instances-json request.json
  qt-predict --endpoint projects/my-project/locations/us-central1/endpoints/123 --input rows.csv --explain
"""


class LeftOut(UserError):
    """Inputs left out of a run that predicted the others (missing, or rejected by the model)."""


def predict_files(
    model: Model, paths: list[str], batch_size: int, table_options=None, encoding_given: bool = True
) -> Iterator[dict]:
    """One JSON-ready line per input (json_line) of predictions()."""
    for name, value, prediction in predictions(model, paths, batch_size, table_options, encoding_given):
        yield json_line(name, value, prediction)


def predictions(
    model: Model, paths: list[str], batch_size: int, table_options=None, encoding_given: bool = True
) -> Iterator[tuple[str, object, dict]]:
    """Batches consecutive inputs of the same signature; yields (name, value, outputs) per input. An input the
    model rejects (a broken image) is named in an error and left out, and the run fails at the end, once the
    others are predicted: one broken photo among thousands stopped them all. Without --encoding
    (`encoding_given`), a file in UTF-8 is read so, whatever the training files' encoding (in_utf8_if_so)."""
    batch: list[tuple[str, object]] = []
    signature, rejected = None, []
    for path in paths:
        if not storage.exists(path):
            raise UserError(f"--input {path}: no such file")
        if storage.is_stream(path):
            raise UserError(f"--input {path}: a pipe or device, not a file; write it to a file first")
        found = 0
        options = table_options if encoding_given or table_options is None else in_utf8_if_so(path, table_options)
        for name, sig, value in off_scale_warned(requests_for(path, model, options, rejected), path, model):
            if batch and (sig != signature or len(batch) == batch_size):
                yield from _run(model, signature, batch, rejected)
                batch = []
            signature = sig
            batch.append((name, value))
            found += 1
        if not found and path not in rejected:  # an empty JSON lines file, "[]": an export cut short, or the wrong file
            raise UserError(f"{path}: nothing to predict for in it (no rows, no instances)")
    if batch:
        yield from _run(model, signature, batch, rejected)
    if rejected:
        raise LeftOut(f"{len(rejected)} input(s) missing or that the model rejects were left out, the first "
                      f"{rejected[0]}")  # fmt: skip


def _run(model: Model, signature: str, batch: list, rejected: list[str]) -> Iterator[tuple[str, object, dict]]:
    """(name, value, outputs) per input of a batch. A batch with an input the model rejects is predicted one
    input at a time, each rejected one named in an error and in `rejected`."""
    names, values = zip(*batch)
    try:
        predictions = model.predict(signature, list(values), list(names))
    except Rejected:
        predictions = []
        for name, value in batch:
            try:
                predictions += model.predict(signature, [value], [name])
            except Rejected as error:
                log.error("%s", error)
                rejected.append(name)
                predictions.append(None)
    for name, value, prediction in zip(names, values, predictions):
        if prediction is not None:
            yield name, value, prediction


def json_line(name: str, value, prediction: dict) -> dict:
    """An input's output line: {"input": name, outputs...}, or for a row of JSON lines the line Vertex AI batch
    prediction writes, {"instance": ..., "prediction": {outputs...}}."""
    if name.rsplit(":", 1)[0].lower().endswith(JSON_LINES):  # "FILE:LINE", where FILE may be gs://...
        return {"instance": value.tolist() if isinstance(value, np.ndarray) else value, "prediction": prediction}
    return {"input": name, **prediction}


CSV_LEFT_OUT = ("class_ids", "classes", "logits", "probabilities")  # outputs a .csv --output has no column of


def csv_lines(found: Iterator[tuple[str, object, dict]], class_names: list[str]) -> Iterator[str]:
    """--output FILE.csv: a header, then a line per input: its name, its class, the probability of each class, and
    any other output (a key, explanations; as JSON where not one value). The logits and class IDs are left out."""
    others = None
    for name, _, prediction in found:
        header = ""
        if others is None:  # written with the first line, so that each line written is an input's
            others = [key for key in prediction if key not in CSV_LEFT_OUT]
            header = _csv_line(["input", *others, "class", *(f"probability_{label}" for label in class_names)])
        cells = [prediction[key] if _is_scalar(prediction[key]) else json.dumps(prediction[key]) for key in others]
        yield header + _csv_line([name, *cells, prediction["classes"], *prediction["probabilities"]])


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float))


def _csv_line(cells: list) -> str:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerow(cells)
    return text.getvalue()


def parse_args(argv: list[str] | None):
    from preprocessing.table_files import add_reading_flags

    parser = commandline.ArgumentParser(
        prog="qt-predict",
        description="(also: python -m trainer.predict) "
        "Predict with an exported model (an export, a folder of numbered ones, or a job dir: its best). "
        "Prints one JSON line per input: its name and the model's outputs (class_ids, classes, "
        'probabilities, logits); for JSON lines, Vertex AI batch prediction\'s {"instance": ..., "prediction": '
        "...}; for --instances-json, a server's response body.",
        examples=EXAMPLES,
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument(
        "--model-dir",
        type=commandline.path,
        help="an export (holds saved_model.pb), a folder of numbered exports (the newest), or a job dir (its "
        "export/best/)",
    )
    model.add_argument(
        "--endpoint",
        help="a Vertex AI endpoint (projects/P/locations/R/endpoints/ID, as qt-deploy prints it) to send the "
        "inputs to online instead; the output lines are the same",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="with --endpoint: ask for explanations, added to each line as attributions",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input",
        type=commandline.path,
        nargs="+",
        metavar="FILE",
        help="images (.png, .jpg), .npz, .csv, .jsonl or .tfrecord files; for a text model, .txt files; for a "
        "table, also .tsv, .parquet, .feather, .arrow, .xlsx, .xls, .ods, .arff and any file its preprocessing reads",
    )
    source.add_argument(
        "--instances-json",
        type=commandline.path,
        metavar="FILE",
        help='a predict request body ({"instances": [...]}); - reads stdin',
    )
    add_reading_flags(parser.add_argument_group("tables, as qt-preprocess reads them"), predicting=True)
    parser.add_argument(
        "--output",
        type=commandline.path,
        help="write the predictions here instead of standard output: JSON lines, or for a name ending in .csv a "
        "table of each input's name, class and probability of each class",
    )
    parser.add_argument(
        "--batch-size", type=commandline.positive_int, default=128, help="inputs per call to the model (default: 128)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return commandline.run(
        lambda: _predict(argv),
        "the predictions written so far are complete lines",
        stop_signals=commandline.STOP_SIGNALS,
    )


def _predict(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if args.explain and not args.endpoint:
        raise UserError("--explain: explanations come from a Vertex AI endpoint; give --endpoint (see qt-deploy)")
    if args.endpoint:
        from trainer.vertex.online import OnlineModel

        if args.instances_json:
            raise UserError("--instances-json: send a request body to an endpoint with gcloud ai endpoints predict")
        model = OnlineModel(args.endpoint, args.explain)
    else:
        model = Model(args.model_dir)
    as_csv = bool(args.output) and args.output.lower().endswith(".csv")
    if args.instances_json and as_csv:
        raise UserError(f"--output {args.output}: --instances-json writes a response body, which is JSON; name a .json")
    if args.instances_json:
        lines = [json.dumps(respond(model, _read_request(args.instances_json))) + "\n"]
    else:
        _check_output_is_no_input(args.output, args.input)
        from preprocessing.table_files import reading_options
        from preprocessing.tables import TableOptions

        trained = model.metadata.extra  # new rows come as the training files came: their encoding and decimal mark
        options = TableOptions(**reading_options(args, trained.get("encoding", "utf-8"), trained.get("decimal", ".")))
        found = predictions(model, args.input, args.batch_size, options, encoding_given=bool(args.encoding))
        if as_csv:
            lines = csv_lines(found, model.metadata.class_names)
        else:
            lines = (json.dumps(json_line(*each)) + "\n" for each in found)
    count = _write(lines, args.output)
    if args.output:
        log.info("Wrote %d prediction(s) to %s", count, args.output)
    return 0


def _check_output_is_no_input(output: str | None, inputs: list[str]) -> None:
    """A UserError where --output is one of the --input files, which writing it would erase before it is read."""
    for path in inputs:
        if output and (path == output or _same_local_file(path, output)):
            raise UserError(f"--output {output}: it is --input {path}, which writing it would erase; name another file")


def _same_local_file(one: str, other: str) -> bool:
    local = "://" not in one + other
    return local and os.path.exists(one) and os.path.exists(other) and os.path.samefile(one, other)


def _read_request(path: str) -> dict:
    if path == "-":
        text = sys.stdin.read()
    else:
        if not storage.exists(path):
            raise UserError(f"--instances-json {path}: no such file")
        with storage.open_read(path) as file:
            text = file.read().decode("utf-8")
    try:
        return json_text.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"--instances-json {path}: not JSON ({error})") from None


def _write(lines: Iterator[str], output: str | None) -> int:
    """Writes the output's lines to --output (a file, local or gs://) or stdout; returns how many. Inputs left out
    at the end (a rejected image) leave the others' lines written, then fail the run."""
    count, left_out = 0, None
    with _output(output) as write:
        try:
            for line in lines:
                write(line)
                count += 1
        except LeftOut as error:  # the others' lines stay written; any other error leaves a gs:// --output unwritten
            left_out = error
    if left_out:
        raise left_out
    return count


@contextlib.contextmanager
def _output(output: str | None):
    """A function that writes text to --output, or to stdout without one. On gs:// the object appears when whole."""
    if not output:
        yield sys.stdout.write
        return
    if gcs.is_gcs(output):
        gcs.check_credentials()
        with storage.atomic_writer(output) as file:
            yield lambda text: file.write(text.encode("utf-8"))
        return
    try:
        file = open(output, "w", encoding="utf-8")  # noqa: SIM115 (closed below, its opening's error said apart)
    except OSError as error:
        raise UserError(f"--output {output}: cannot write ({storage.describe_os_error(error)})") from None

    def write(text: str) -> None:
        try:
            file.write(text)
        except OSError as error:  # an input's OSError is its own, not --output's
            raise UserError(f"--output {output}: cannot write ({storage.describe_os_error(error)})") from None

    with file:
        yield write


def cli() -> NoReturn:
    """qt-predict, and python -m trainer.predict."""
    commandline.exit_at_once(main())


if __name__ == "__main__":
    cli()
