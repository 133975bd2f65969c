"""Image lists in Vertex AI's import formats (CSV and JSON lines), with ML_USE deciding the split, images of
every format, mode and size, gs:// URIs on the storage emulator, Beam, and a broken image named in one line."""

from __future__ import annotations

import json
import logging
import os
import re
import threading

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from dataformat.errors import UserError
from dataformat.schema import Metadata, decode_record
from preprocessing.cli import main as preprocess
from preprocessing.image_lists import read_list
from preprocessing.sources import SourceOptions, read_images
from preprocessing.writer import ShardResult, build_dataset, report_broken

# (file name, Pillow mode, size): every format and mode a photo collection holds, in several sizes
IMAGES = [
    ("a.png", "RGB", (40, 30)), ("b.jpg", "L", (32, 32)), ("c.gif", "P", (20, 50)), ("d.bmp", "RGB", (64, 48)),
    ("e.webp", "RGB", (33, 33)), ("f.png", "RGBA", (30, 30)), ("g.png", "I;16", (24, 24)), ("h.jpg", "CMYK", (30, 40)),
    ("i.png", "LA", (30, 30)), ("j.png", "1", (16, 16)),
]  # fmt: skip


def red_of(index: int) -> int:
    return 20 + 20 * index  # each image's own red (gray) level: found again in its record


def write_image(path, index: int, mode: str, size: tuple[int, int]) -> None:
    rgb = Image.new("RGB", size, (red_of(index), red_of(index), red_of(index)))
    if mode == "I;16":
        Image.fromarray(np.full(size[::-1], red_of(index) * 257, np.uint16)).save(path)
    elif mode == "1":  # black and white: black for the first of these
        rgb.convert("1").save(path)
    elif mode == "P":  # a two-frame GIF: the first frame is read
        frames = [rgb.convert("P"), Image.new("RGB", size, (255, 0, 0)).convert("P")]
        frames[0].save(path, save_all=True, append_images=frames[1:])
    else:
        rgb.convert(mode).save(path)


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    for index, (name, mode, size) in enumerate(IMAGES):
        write_image(folder / name, index, mode, size)
    return folder


def eval_reds(output) -> dict[str, set[int]]:
    """Per split, the red levels of the images it holds (each image is one flat color)."""
    metadata = json.loads((output / "metadata.json").read_text())
    parsed = Metadata.from_json((output / "metadata.json").read_text(), str(output))
    found = {}
    for split, info in metadata["splits"].items():
        reds = set()
        for shard in info["shards"]:
            for record in tf.data.TFRecordDataset(str(output / shard["file"])).as_numpy_iterator():
                data, _ = decode_record(record, parsed)
                reds.update(red_of(round((image[..., 0].mean() - 20) / 20)) for image in data)  # JPEG: ±2 levels
        found[split] = reds
    return found


def test_a_csv_list_with_ml_use_decides_the_split_and_reads_every_format(photos, tmp_path, caplog):
    uses = ["training", "validation", "test", "", "TRAINING", "training", "validation", "training", "", "training"]
    lines = [f"{use},{name},{'warm' if i % 2 else 'cold'}" if use else f"{name},{'warm' if i % 2 else 'cold'}"
             for i, (use, (name, _, _)) in enumerate(zip(uses, IMAGES))]  # fmt: skip
    (photos / "list.csv").write_text("\n".join([*lines, "unlabelled.png"]) + "\n")
    with caplog.at_level(logging.WARNING):
        data = read_images(str(photos / "list.csv"), SourceOptions(image_size=(24, 24)))
    assert "left out 1 image(s) without a label" in caplog.text
    assert data.shape == (24, 24, 3) and data.class_names == ("cold", "warm")
    output = tmp_path / "data"
    build_dataset(data, str(output), source="images", eval_fraction=0.5, workers=1)
    reds = eval_reds(output)
    listed_eval = {red_of(i) for i, use in enumerate(uses) if use in ("validation", "test")}
    listed_train = {red_of(i) for i, use in enumerate(uses) if use.lower() == "training"}
    assert listed_eval <= reds["eval"] and listed_train <= reds["train"]
    # Every format and mode decodes to the image's own level (the black-and-white one to black or white).
    every = reds["train"] | reds["eval"]
    assert {red_of(i) for i, (_, mode, _) in enumerate(IMAGES) if mode != "1"} <= every


def test_a_jsonl_list_of_gcs_uris(photos, tmp_path, gcs_server, monkeypatch, caplog):
    from gcs_emulator.server import BUCKET, client

    from dataformat import gcs

    for name, value in gcs_server.env.items():
        monkeypatch.setenv(name, value)
    gcs._client.cache_clear()
    bucket = client(gcs_server).bucket(BUCKET)
    lines = []
    for index, (name, _, _) in enumerate(IMAGES[:6]):
        bucket.blob(f"photos/{name}").upload_from_filename(str(photos / name))
        item = {
            "imageGcsUri": f"gs://{BUCKET}/photos/{name}",
            "classificationAnnotation": {"displayName": "ab"[index % 2]},
        }
        if index < 2:
            item["dataItemResourceLabels"] = {"aiplatform.googleapis.com/ml_use": "test"}
        lines.append(json.dumps(item))
    gone = {"imageGcsUri": f"gs://{BUCKET}/photos/gone.png", "classificationAnnotation": {"displayName": "a"}}
    lines.append(json.dumps(gone))  # an object not there (404): skipped, named
    bucket.blob("photos/list.jsonl").upload_from_string("\n".join(lines))
    argv = ["--source", "images", "--input", f"gs://{BUCKET}/photos/list.jsonl", "--output", str(tmp_path / "data")]
    with caplog.at_level(logging.WARNING):
        assert preprocess([*argv, "--image-size", "16x16", "--workers", "1"]) == 0
    assert re.search(
        r"Skipped 1 of 7 images.*list.jsonl line 7: gs://.*/photos/gone.png: no such image file", caplog.text
    )
    gcs._client.cache_clear()
    reds = eval_reds(tmp_path / "data")
    assert {red_of(0), red_of(1)} <= reds["eval"] and len(reds["train"] | reds["eval"]) == 6


def convert_list(photos, tmp_path, lines: list[str]) -> int:
    """qt-preprocess's exit code on an image list of six good images, then `lines`."""
    (photos / "broken.png").write_bytes((photos / "a.png").read_bytes()[:40])  # a truncated PNG
    good = [f"{name},{'warm' if i % 2 else 'cold'}" for i, (name, _, _) in enumerate(IMAGES[:6])]
    (photos / "list.csv").write_text("\n".join([*good, *lines]) + "\n")
    argv = ["--source", "images", "--input", str(photos / "list.csv"), "--output", str(tmp_path / "data")]
    return preprocess([*argv, "--workers", "1", "--image-size", "8x8"])


def test_a_missing_or_broken_image_is_skipped_and_named_by_list_line_and_path(photos, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert convert_list(photos, tmp_path, ["training,missing.png,warm", "training,broken.png,cold"]) == 0
    (line,) = [record.getMessage() for record in caplog.records if "Skipped" in record.getMessage()]
    assert re.search(r"Skipped 2 of 8 images.*list.csv line 7: .*missing.png: no such image file", line), line
    assert re.search(r"list.csv line 8: .*broken.png: cannot decode image", line), line
    metadata = json.loads((tmp_path / "data" / "metadata.json").read_text())
    assert sum(split["examples"] for split in metadata["splits"].values()) == 6
    assert metadata["class_counts"] == [3, 3]  # the six good images; the skipped ones are not counted
    parsed = Metadata.from_json((tmp_path / "data" / "metadata.json").read_text(), str(tmp_path / "data"))
    for shard in [shard for split in metadata["splits"].values() for shard in split["shards"]]:
        for record in tf.data.TFRecordDataset(str(tmp_path / "data" / shard["file"])).as_numpy_iterator():
            for image, label in zip(*decode_record(record, parsed)):  # each image kept its own label
                index = round((image[..., 0].mean() - 20) / 20)  # the image's place in the list (see red_of)
                assert 0 <= index < 6 and label == index % 2


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            [f"missing-{i}.png,warm" for i in range(11)],
            r"list.csv line \d+: .*missing-\d+.png: no such image file; and 10 more of 17 images could not be read",
        ),
        (["a.png,cold,warm"], "list.csv line 7: 'a.png' is no ML_USE \\(training, validation, test, unassigned or"),
        (["test,a.png,cold,warm"], "list.csv line 7: expected \\[ML_USE,\\]PATH,LABEL"),
    ],
)
def test_many_broken_images_or_a_bad_line_stop_the_run_in_one_line(photos, tmp_path, caplog, lines, message):
    with caplog.at_level(logging.ERROR):
        assert convert_list(photos, tmp_path, lines) == 2
    (line,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert re.search(message, line), line
    assert not (tmp_path / "data" / "metadata.json").exists()


def test_jsonl_mistakes_name_the_line(tmp_path):
    path = tmp_path / "list.jsonl"
    path.write_text(
        '{"imageGcsUri": "gs://b/a.png", "dataItemResourceLabels": {"aiplatform.googleapis.com/ml_use": "x"}}\n'
    )
    with pytest.raises(UserError, match="list.jsonl line 1: aiplatform.googleapis.com/ml_use 'x' is not one of"):
        read_list(str(path))
    path.write_text(
        '{"imageGcsUri": "a.png", "classificationAnnotations": [{"displayName": "a"}, {"displayName": "b"}]}'
    )
    with pytest.raises(UserError, match="line 1: 2 labels; this trainer does single-label classification"):
        read_list(str(path))


def test_beam_keeps_ml_use_and_skips_the_same_broken_image(photos, tmp_path):
    pytest.importorskip("apache_beam")
    from preprocessing.beam import build_dataset_with_beam

    lines = [f"{'test,' if i < 3 else ''}{name},{'warm' if i % 2 else 'cold'}" for i, (name, _, _) in enumerate(IMAGES)]
    (photos / "list.csv").write_text("\n".join([*lines, "missing.png,cold"]) + "\n")
    data = read_images(str(photos / "list.csv"), SourceOptions(image_size=(8, 8)))
    local = build_dataset(data, str(tmp_path / "local"), source="images", workers=1)
    beam = build_dataset_with_beam(
        data, str(tmp_path / "beam"), source="images", pipeline_args=["--runner", "DirectRunner"]
    )
    assert eval_reds(tmp_path / "beam") == eval_reds(tmp_path / "local")
    assert {red_of(i) for i in range(3)} <= eval_reds(tmp_path / "local")["eval"]
    assert beam.class_counts == local.class_counts and sum(local.class_counts) == len(IMAGES)


def _results(broken: int, written: int) -> dict[str, list[ShardResult]]:
    zeros = np.zeros(3)
    lines = tuple(f"list.csv line {i + 1}: gone-{i}.png: no such image file" for i in range(broken))
    return {"train": [ShardResult("t", written, 0, zeros, zeros, 0, lines, (0,) * broken)],
            "eval": [ShardResult("e", 5, 0, zeros, zeros, 0)]}  # fmt: skip


def test_broken_images_stop_the_run_past_ten_and_one_percent_or_when_a_split_is_left_empty(caplog):
    with caplog.at_level(logging.WARNING):
        report_broken(_results(10, 80), total=100)
    assert "Skipped 10 of 100 images" in caplog.text and "gone-2.png: no such image file; ..." in caplog.text
    report_broken(_results(20, 1980), total=2000)
    for broken, total in ((11, 100), (21, 2000)):
        with pytest.raises(UserError, match=f"gone-0.png: .*; and {broken - 1} more of {total} images could not"):
            report_broken(_results(broken, total - broken - 5), total)
    with pytest.raises(UserError, match="gone-0.png: no such image file; and every other train image is missing"):
        report_broken(_results(3, 0), total=8)


def test_a_header_line_and_images_listed_again_are_left_out_and_keys_are_paths_as_listed(photos, tmp_path, caplog):
    """A header (path,label) became a class of no photos, or, without --source, the list a table of one column; an
    image listed for training and again for evaluation landed in both splits. The key (and so the split) was the
    path as read from the working folder, so the same list split differently from another folder."""
    lines = ["ml_use,image,label", *(f"{name},{'warm' if i % 2 else 'cold'}" for i, (name, _, _) in enumerate(IMAGES))]
    lines += [f"test,{IMAGES[0][0]},cold", f"{IMAGES[1][0]},warm"]  # listed again: left out
    (photos / "headed.csv").write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.INFO):
        data = read_images(str(photos / "headed.csv"), SourceOptions(image_size=(24, 24)))
    assert data.class_names == ("cold", "warm") and len(data.items) == len(IMAGES)
    assert "headed.csv line 1: a header (ml_use,image,label), left out" in caplog.text
    assert f"headed.csv line 12: {IMAGES[0][0]} is listed again (as on line 2) and left out, with 1 more" in caplog.text
    assert data.keys == [name for name, _, _ in IMAGES]
    # Without --source, the list is still found to be one.
    assert preprocess(["--input", str(photos / "headed.csv"), "--output", str(tmp_path / "d"), "--workers", "1"]) == 0
    assert json.loads((tmp_path / "d" / "metadata.json").read_text())["class_names"] == ["cold", "warm"]


def test_the_stored_shape_is_the_first_images_most_common_size_in_color_if_any_is(tmp_path):
    """A gray icon listed first made thirty color photos gray, and 16x16."""
    names = ["icon.png", *(f"{i}.png" for i in range(6))]
    Image.new("L", (16, 16), 128).save(tmp_path / names[0])
    for name in names[1:]:
        Image.new("RGB", (48, 40), (200, 20, 20)).save(tmp_path / name)
    (tmp_path / "list.csv").write_text("".join(f"{name},{'a' if i % 2 else 'b'}\n" for i, name in enumerate(names)))
    data = read_images(str(tmp_path / "list.csv"), SourceOptions())
    assert data.shape == (40, 48, 3)
    assert data.load(data.items[1])[0, 0].tolist() == [200, 20, 20]
    assert data.load(data.items[0])[0, 0].tolist() == [128, 128, 128]  # the icon: gray as color, and resized


def test_a_folders_hidden_files_are_skipped_and_what_is_left_out_is_named(tmp_path, caplog):
    """macOS's ._photo.jpg copies stopped the run as broken images; Jupyter's .ipynb_checkpoints was a class; a
    class's sub-folder, a TIFF and a photo beside the class folders were left out silently."""
    for label in ("china", "flower", ".ipynb_checkpoints"):
        (tmp_path / label / "more").mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (8, 8), (i * 50, 0, 0)).save(tmp_path / label / f"{i}.jpg")
        (tmp_path / label / f"._{0}.jpg").write_bytes(b"\x00\x05\x16\x07 AppleDouble")
    Image.new("RGB", (8, 8)).save(tmp_path / "china" / "more" / "3.jpg")
    Image.new("RGB", (8, 8)).save(tmp_path / "flower" / "scan.tif")
    Image.new("RGB", (8, 8)).save(tmp_path / "loose.jpg")
    (tmp_path / ".DS_Store").write_bytes(b"\x00")
    with caplog.at_level(logging.WARNING):
        data = read_images(str(tmp_path), SourceOptions())
    assert data.class_names == ("china", "flower") and len(data.items) == 6
    assert [data.load(item).shape for item in data.items] == [(8, 8, 3)] * 6
    left_out = "left out 4 file(s) or folder(s), as only the image files at the top of each class folder are read"
    assert f"{left_out}: loose.jpg, china/more, flower/more, ..." in caplog.text


def test_a_list_whose_ml_use_leaves_a_split_empty_says_so(photos, tmp_path, caplog):
    (photos / "all-training.csv").write_text(
        "".join(f"training,{name},{'a' if i % 2 else 'b'}\n" for i, (name, _, _) in enumerate(IMAGES))
    )
    argv = ["--source", "images", "--input", str(photos / "all-training.csv"), "--output", str(tmp_path / "d")]
    assert preprocess([*argv, "--image-size", "8x8"]) == 2
    assert "the list's ML_USE (every image has one) leaves 10 training and 0 evaluation examples" in caplog.text


def test_a_list_from_a_named_pipe_is_read_once_as_its_writer_writes_it(photos, tmp_path):
    """A list is read once, so a pipe serves (a table, read more than once, is refused); with no writer yet, it
    waits for one, as `cat` does."""
    good = [f"{name},{'warm' if i % 2 else 'cold'}" for i, (name, _, _) in enumerate(IMAGES[:6])]
    pipe = photos / "piped.csv"  # beside the images its lines name
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text("\n".join(good) + "\n"))
    writer.start()
    try:
        argv = ["--source", "images", "--input", str(pipe), "--output", str(tmp_path / "data"), "--workers", "1"]
        assert preprocess([*argv, "--image-size", "8x8", "--eval-fraction", "0.5"]) == 0
    finally:
        writer.join(timeout=10)
        pipe.unlink()
    counts = json.loads((tmp_path / "data" / "metadata.json").read_text())["splits"]
    assert sum(split["examples"] for split in counts.values()) == 6


def test_an_empty_ml_use_is_unassigned(photos, tmp_path):
    """pandas writes a missing ML_USE as an empty field: ",b.jpg,warm" was "found 3 field(s) after the ML_USE"."""
    assert convert_list(photos, tmp_path, [f",{IMAGES[6][0]},warm", f"unassigned,{IMAGES[7][0]},cold"]) == 0
    counts = json.loads((tmp_path / "data" / "metadata.json").read_text())["splits"]
    assert sum(split["examples"] for split in counts.values()) == 8


def test_an_image_list_read_as_a_table_is_refused(photos, tmp_path, caplog):
    """--source csv read a list's paths as a categorical column of no kept values, and trained on nothing: exit 0."""
    (photos / "named.csv").write_text("path,label\n" + "".join(f"{name},warm\n" for name, _, _ in IMAGES[:4]))
    argv = ["--source", "csv", "--input", str(photos / "named.csv"), "--output", str(tmp_path / "data")]
    assert preprocess(argv) == 2
    assert "named.csv: an image list (its lines name image files and their labels): read it with" in caplog.text
