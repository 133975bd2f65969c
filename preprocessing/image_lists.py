"""Image lists in Vertex AI's import formats for single-label image classification, as
`--source images --input LIST`:

- CSV, no header, one image a line: `[ML_USE,]PATH,LABEL`;
- JSON lines: {"imageGcsUri": PATH, "classificationAnnotation": {"displayName": LABEL},
  "dataItemResourceLabels": {"aiplatform.googleapis.com/ml_use": ML_USE}}.

PATH is a gs:// URI or a local path (relative to the list's folder). ML_USE `training` puts the image in
the training split, `validation` and `test` in evaluation; without it (or `unassigned`) the image is split
as any other example. A line without a label (Vertex AI keeps unlabelled images in a dataset) is left out,
with a count in the log. Images are decoded later, in the shard writers, where a missing or broken one
is skipped and named (the list's file and line, and the image), up to sources.BROKEN_FLOOR or
sources.MAX_BROKEN_SHARE of them.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import posixpath
from dataclasses import dataclass

import numpy as np

from dataformat import gcs, json_text, storage
from dataformat.errors import UserError, quoted
from dataformat.schema import PHOTO_SUFFIXES
from preprocessing.sources import ImageLoader, RawData, SourceOptions, encode_labels, first_image_shape
from preprocessing.split import EVAL, FREE, TRAIN

log = logging.getLogger(__name__)

LIST_SUFFIXES = (".csv", ".jsonl")
HEAD_BYTES = 1 << 16  # read to tell an image list from a table (is_image_list)
ML_USES = {"training": TRAIN, "validation": EVAL, "test": EVAL, "unassigned": FREE}
ML_USE_LABEL = "aiplatform.googleapis.com/ml_use"


@dataclass(frozen=True)
class Listed:
    path: str  # gs:// URI or local path, resolved
    label: str  # "" when the line has none
    use: int  # TRAIN, EVAL or FREE
    where: str  # "LIST line N", for errors
    listed: str = ""  # the path as the list writes it: the image's key, the same from any working folder


def read_image_list(path: str, options: SourceOptions) -> RawData:
    rows = _without_repeats(read_list(path))
    unlabelled = sum(not row.label for row in rows)
    rows = [row for row in rows if row.label]
    if unlabelled:
        log.warning("%s: left out %d image(s) without a label", path, unlabelled)
    if not rows:
        raise UserError(f"{path}: no labelled image (its delimiter must be a comma: [ML_USE,]PATH,LABEL)")
    labels, classes = encode_labels(np.array([row.label for row in rows]), path)
    shape = first_image_shape(((row.path, row.where) for row in rows), options.image_size)
    uses = np.array([row.use for row in rows], dtype=np.int8)
    log.info("%s: %d images of %d classes; %d listed for training and %d for evaluation by ML_USE",
             path, len(rows), len(classes), np.sum(uses == TRAIN), np.sum(uses == EVAL))  # fmt: skip
    return RawData(
        items=[(row.path, row.where) for row in rows],
        labels=labels,
        keys=[row.listed for row in rows],  # the image as listed: a stable name, whatever the list's order
        class_names=classes,
        shape=shape,
        dtype="uint8",
        load=ImageLoader(shape, resize=True),  # photos come in every size: each is resized to the stored one
        fixed=uses if np.any(uses != FREE) else None,
    )


def _without_repeats(rows: list[Listed]) -> list[Listed]:
    """The rows, an image listed again left out and warned of: kept twice, one listed for training and once for
    evaluation lands in both splits, and evaluation scores the model on what it trained on."""
    first: dict[str, Listed] = {}
    for row in rows:
        first.setdefault(row.path, row)
    repeats = [row for row in rows if first[row.path] is not row]
    if repeats:
        again = repeats[0]
        earlier = first[again.path].where.rsplit(" line ", 1)[-1]
        log.warning("%s: %s is listed again (as on line %s) and left out, with %d more image(s) listed again",
                    again.where, again.listed, earlier, len(repeats) - 1)  # fmt: skip
    return list(first.values())


def is_image_list(path: str) -> bool:
    """Whether a .csv or .jsonl file is an image list, by its first line: an object with imageGcsUri, or
    [ML_USE,]PATH,LABEL whose PATH names an image file (after a header line, if it has one). A pipe is none:
    reading its first line would wait for a writer, or take the line from the reader that follows."""
    if not path.lower().endswith(LIST_SUFFIXES) or not storage.exists(path) or storage.is_stream(path):
        return False
    with storage.open_read(path) as file:
        head = file.read(HEAD_BYTES).decode("utf-8-sig", errors="replace")
    lines = [line for line in head.splitlines() if line.strip()][:2]
    if path.lower().endswith(".jsonl"):
        return bool(lines) and '"imageGcsUri"' in lines[0]
    rows = [[field.strip() for field in fields] for fields in csv.reader(lines)]
    if rows and _is_header(rows[0]):
        rows = rows[1:]
    fields = rows[0] if rows else []
    if fields and fields[0].lower() in ML_USES:
        fields = fields[1:]
    return 1 <= len(fields) <= 2 and fields[0].lower().endswith(PHOTO_SUFFIXES)


def _is_header(fields: list[str]) -> bool:
    """Whether a list's first line names its columns (path,label; ml_use,uri,class): two or three names,
    none a path or an image file. Vertex AI's lists have none, but lists written by hand or by pandas do."""
    return 2 <= len(fields) <= 3 and all(field and not any(mark in field for mark in "/\\.") for field in fields)


def read_list(path: str) -> list[Listed]:
    with storage.open_read(path) as file:
        try:
            text = file.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise UserError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    rows = _jsonl_rows(path, text) if path.lower().endswith(".jsonl") else _csv_rows(path, text)
    return [Listed(_resolved(row.path, path), row.label, row.use, row.where, row.path) for row in rows]


def _resolved(image: str, list_path: str) -> str:
    """A listed path as it is read: gs:// and absolute paths as they are, others from the list's folder."""
    if gcs.is_gcs(image) or posixpath.isabs(image) or "://" in image:
        return image
    return storage.join(list_path.rsplit("/", 1)[0], image) if "/" in list_path else image


def _csv_rows(path: str, text: str) -> list[Listed]:
    rows = []
    for number, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
        fields = [field.strip() for field in fields]
        if not any(fields):
            continue
        where = f"{path} line {number}"
        if not rows and _is_header(fields):
            log.info("%s: a header (%s), left out", where, ",".join(fields))
            continue
        use = FREE
        if fields[0].lower() in ML_USES or (len(fields) == 3 and not fields[0]):  # empty, as pandas writes none
            use, fields = ML_USES.get(fields[0].lower(), FREE), fields[1:]
        elif len(fields) == 3:
            raise UserError(f"{where}: {quoted(fields[0])} is no ML_USE (training, validation, test, unassigned or "
                            "empty)")  # fmt: skip
        if len(fields) > 2 or not fields or not fields[0]:
            raise UserError(
                f"{where}: expected [ML_USE,]PATH,LABEL (one label: single-label classification), found "
                f"{len(fields)} field(s) after the ML_USE"
            )
        rows.append(Listed(fields[0], fields[1] if len(fields) == 2 else "", use, where))
    return rows


def _jsonl_rows(path: str, text: str) -> list[Listed]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            item = json_text.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"{where}: not JSON ({error.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("imageGcsUri"), str):
            raise UserError(f'{where}: expected an object with "imageGcsUri" (Vertex AI\'s image import format)')
        rows.append(Listed(item["imageGcsUri"], _json_label(item, where), _json_use(item, where), where))
    return rows


def _json_label(item: dict, where: str) -> str:
    annotations = item.get("classificationAnnotations") or [item.get("classificationAnnotation") or {}]
    if len(annotations) > 1:
        raise UserError(f"{where}: {len(annotations)} labels; this trainer does single-label classification")
    label = annotations[0].get("displayName", "") if isinstance(annotations[0], dict) else None
    if not isinstance(label, str):
        raise UserError(f'{where}: "classificationAnnotation" needs a "displayName" text')
    return label.strip()


def _json_use(item: dict, where: str) -> int:
    use = str((item.get("dataItemResourceLabels") or {}).get(ML_USE_LABEL, "unassigned")).lower()
    if use not in ML_USES:
        raise UserError(f"{where}: {ML_USE_LABEL} {use!r} is not one of {', '.join(ML_USES)}")
    return ML_USES[use]
