"""The exported SavedModel: its signatures, agreement with Estimator.predict, JSON requests, predict CLI."""

import base64
import csv
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from dataformat.errors import UserError
from dataformat.schema import PHOTO_SUFFIXES, encode_record, parse_records
from trainer import predict
from trainer.config import Config
from trainer.dataset import locate
from trainer.experiment import make_estimator
from trainer.export import latest_export
from trainer.exported_model import Model
from trainer.input import make_input_fn
from trainer.instances import respond

SIGNATURES = ("serving_default", "image_bytes:serving_default", "examples:serving_default")


@pytest.fixture(scope="module")
def served(trained_job, digits_dir):
    """The latest export, the eval examples (serialized and parsed) and what Estimator.predict says of them."""
    job_dir, _, _ = trained_job
    config = Config(data_dir=digits_dir, job_dir=job_dir)
    data = locate(config)
    estimator = make_estimator(config, data.metadata)
    expected = list(estimator.predict(make_input_fn(data.eval, data.metadata, config, training=False)))
    records = list(tf.data.TFRecordDataset(data.eval).as_numpy_iterator())
    images, labels = (t.numpy() for t in parse_records(tf.constant(records), data.metadata))
    serialized = [encode_record(images[i : i + 1], labels[i : i + 1]) for i in range(len(labels))]  # one each
    return latest_export(config, "latest"), serialized, images, expected


def png(image: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image[..., 0]).save(buffer, format="PNG")
    return buffer.getvalue()


def assert_same_predictions(outputs, expected):
    np.testing.assert_array_equal([o["class_ids"] for o in outputs], [p["class_ids"] for p in expected])
    np.testing.assert_allclose([o["probabilities"] for o in outputs], [p["probabilities"] for p in expected], atol=1e-5)
    assert [o["classes"] for o in outputs] == [p["classes"].decode() for p in expected]


@pytest.mark.slow
def test_saved_model_cli_lists_every_signature_with_types_and_shapes(served):
    export = served[0]
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    shown = subprocess.run([cli, "show", "--dir", export, "--all"], capture_output=True, text=True, check=True).stdout
    blocks = {block.split("']")[0]: block for block in shown.split("signature_def['")[1:]}
    assert set(SIGNATURES) <= set(blocks)
    assert (
        "inputs['image'] tensor_info:\n        dtype: DT_FLOAT\n        shape: (-1, 8, 8, 1)"
        in blocks["serving_default"]
    )
    assert "inputs['image_bytes'] tensor_info:\n        dtype: DT_STRING\n        shape: (-1)" in blocks[SIGNATURES[1]]
    assert "inputs['examples'] tensor_info:\n        dtype: DT_STRING\n        shape: (-1)" in blocks[SIGNATURES[2]]
    for block in blocks.values():
        for output, dtype in (("class_ids", "DT_INT64"), ("classes", "DT_STRING"), ("probabilities", "DT_FLOAT")):
            assert f"outputs['{output}'] tensor_info:\n        dtype: {dtype}" in block
        assert "outputs['logits'] tensor_info:\n        dtype: DT_FLOAT\n        shape: (-1, 10)" in block


def test_every_signature_agrees_with_estimator_predict(served):
    export, serialized, images, expected = served
    model = Model(export)
    assert model.metadata.class_names == tuple(str(i) for i in range(10))  # the metadata travels along
    assert_same_predictions(model.predict("serving_default", images.astype(np.float32)), expected)
    assert_same_predictions(model.predict(SIGNATURES[1], [png(image) for image in images]), expected)
    assert_same_predictions(model.predict(SIGNATURES[2], serialized), expected)


def test_json_request_bodies_round_trip(served):
    export, serialized, images, expected = served
    model = Model(export)
    requests = [
        {"instances": images[:5].tolist()},
        {"instances": [{"image": image.tolist()} for image in images[:5]]},
        {
            "signature_name": SIGNATURES[1],
            "instances": [{"image_bytes": {"b64": base64.b64encode(png(i)).decode()}} for i in images[:5]],
        },
        {
            "signature_name": SIGNATURES[2],
            "instances": [{"examples": {"b64": base64.b64encode(r).decode()}} for r in serialized[:5]],
        },
    ]
    for request in requests:
        response = json.loads(json.dumps(respond(model, json.loads(json.dumps(request)))))
        assert_same_predictions(response["predictions"], expected[:5])


@pytest.mark.slow
def test_predict_cli_on_every_kind_of_file(served, tmp_path):
    export, serialized, images, expected = served
    (tmp_path / "one.png").write_bytes(png(images[0]))
    np.savez(tmp_path / "some.npz", x=images[:3, ..., 0])
    rows = [",".join(map(str, image.ravel())) for image in images[:2]]
    (tmp_path / "rows.csv").write_text("\n".join(rows) + "\n")
    with tf.io.TFRecordWriter(str(tmp_path / "few.tfrecord")) as writer:
        for record in serialized[:4]:
            writer.write(record)
    files = [str(tmp_path / name) for name in ("one.png", "some.npz", "rows.csv", "few.tfrecord")]
    result = subprocess.run(
        [sys.executable, "-m", "trainer.predict", "--model-dir", os.path.dirname(export), "--input", *files],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["input"] for line in lines] == [
        files[0], *(f"{files[1]}#{i}" for i in range(3)), *(f"{files[2]}#{i}" for i in range(2)),
        *(f"{files[3]}#{i}" for i in range(4)),
    ]  # fmt: skip
    expected_ids = [p["class_ids"] for p in [expected[0], *expected[:3], *expected[:2], *expected[:4]]]
    assert [line["class_ids"] for line in lines] == expected_ids


def test_an_image_scaled_otherwise_than_the_training_images_is_warned_of(served, tmp_path, caplog):
    """The digits (values 0 to 16) model answered 7 for a PNG of a 0 saved in 0-255, silently."""
    export, _, images, _ = served
    (tmp_path / "as-trained.png").write_bytes(png(images[0]))
    (tmp_path / "as-saved.png").write_bytes(png((images[0] / images[0].max() * 255).astype(np.uint8)))
    np.savez(tmp_path / "some.npz", x=images[:5, ..., 0].astype(np.float32) * 16)
    model = Model(os.path.dirname(export))
    paths = [str(tmp_path / name) for name in ("as-trained.png", "as-saved.png", "some.npz")]
    with caplog.at_level("WARNING"):
        assert len(list(predict.predict_files(model, paths, batch_size=8))) == 7  # warned, and predicted
    assert "as-trained.png" not in caplog.text
    assert f"{paths[1]}: values up to 255, far above the training images' (mean " in caplog.text
    assert f"{paths[2]}#2: values up to" in caplog.text and f"{paths[2]}#3: values" not in caplog.text  # 3, a count
    assert f"{paths[2]}: 5 images in all hold values far above the training images'" in caplog.text


@pytest.mark.slow
def test_predict_cli_names_the_image_the_model_rejects_and_predicts_the_others(served, tmp_path):
    """One broken photo among many stopped every prediction; now the others are written and the run fails at the end."""
    export, _, images, expected = served
    for i in range(3):
        (tmp_path / f"{i}.png").write_bytes(png(images[i]))
    (tmp_path / "1.png").write_bytes(png(images[1])[:40])  # truncated, between two good ones in one batch
    files = [str(tmp_path / f"{i}.png") for i in range(3)]
    result = subprocess.run(
        [sys.executable, "-m", "trainer.predict", "--model-dir", export, "--input", *files],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["input"] for line in lines] == [files[0], files[2]]
    assert [line["class_ids"] for line in lines] == [expected[0]["class_ids"], expected[2]["class_ids"]]
    named, last = result.stderr.strip().splitlines()[-2:]
    assert f"{files[1]}: the model rejects it (" in named and "node" not in named and "Traceback" not in result.stderr
    assert f"1 input(s) missing or that the model rejects were left out, the first {files[1]}" in last


@pytest.mark.slow
def test_predict_cli_answers_a_request_body_as_a_server_would(served, tmp_path):
    export, _, images, expected = served
    (tmp_path / "request.json").write_text(json.dumps({"instances": images[:3].tolist()}))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.predict",
            "--model-dir",
            export,
            "--instances-json",
            str(tmp_path / "request.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert_same_predictions(json.loads(result.stdout)["predictions"], expected[:3])


@pytest.mark.slow
@pytest.mark.parametrize(
    "request_body, message",
    [
        ({"instances": []}, "at least one instance"),
        ({"instances": [[1, 2, 3]]}, "inputs have shape [3]; the model takes [8, 8, 1]"),
        ({"signature_name": "nope", "instances": [[0]]}, "no signature 'nope'"),
        ({"signature_name": SIGNATURES[1], "instances": [{"image_bytes": {"b64": "***"}}]}, "not valid base64"),
        (
            {"signature_name": SIGNATURES[1], "instances": [{"image_bytes": {"b64": "anVuaw=="}}]},  # b"junk"
            "--instances-json: instance 0: the model rejects it (Unknown image file format",
        ),
    ],
)
def test_bad_request_bodies_are_one_line_errors(served, tmp_path, caplog, request_body, message):
    """In this process (the CLI's process is tested above): each case would otherwise pay TensorFlow's import."""
    (tmp_path / "request.json").write_text(json.dumps(request_body))
    assert predict.main(["--model-dir", served[0], "--instances-json", str(tmp_path / "request.json")]) == 2
    (error,) = [record for record in caplog.records if record.levelname == "ERROR"]
    assert message in error.getMessage() and "\n" not in error.getMessage()


@pytest.mark.slow
def test_export_loads_and_predicts_without_this_package(served, tmp_path):
    export, _, images, expected = served
    script = f"""
import sys
sys.modules["trainer"] = sys.modules["preprocessing"] = None  # any import of this package fails
import numpy as np, tensorflow as tf
model = tf.saved_model.load({export!r})
outputs = model.signatures["serving_default"](image=tf.constant(np.load(sys.argv[1])))
print(",".join(str(i) for i in outputs["class_ids"].numpy()))
"""
    np.save(tmp_path / "images.npy", images[:6].astype(np.float32))
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "images.npy")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == ",".join(str(p["class_ids"]) for p in expected[:6])


def vertex_batch_instances(input_format: str, images, serialized) -> list:
    """The instances Vertex AI batch prediction sends to serving_default for five examples stored in
    `input_format`, as its reference describes them: a JSON line as it is, a TFRecord record as
    {"b64": ...}, a listed file's bytes as {"b64": ...}."""
    if input_format == "jsonl":
        lines = [json.dumps(image.tolist()) for image in images[:5]]  # what a .jsonl file holds
        return [json.loads(line) for line in lines]
    records = serialized[:5] if input_format == "tf-record" else [png(image) for image in images[:5]]
    return [{"b64": base64.b64encode(data).decode()} for data in records]


@pytest.mark.parametrize(
    "serving_input, input_format", [("numbers", "jsonl"), ("examples", "tf-record"), ("image_bytes", "file-list")]
)
def test_serving_default_takes_what_batch_prediction_sends(
    served, trained_job, digits_dir, tmp_path, serving_input, input_format
):
    from trainer import serving
    from trainer.vertex.batch import INPUTS

    assert INPUTS[input_format] == serving_input
    export, serialized, images, expected = served
    config = Config(data_dir=digits_dir, job_dir=trained_job[0])
    data = locate(config)
    serving_input_fn = serving.with_default_input(serving.make_serving_input_fn(data.metadata), serving_input)
    path = make_estimator(config, data.metadata).export_saved_model(
        str(tmp_path), serving_input_fn, assets_extra={"metadata.json": data.metadata_path}
    )
    model = Model(path.decode())
    assert set(SIGNATURES) <= set(model.signatures)  # the other inputs keep their signatures
    assert ("numbers:serving_default" in model.signatures) == (serving_input != "numbers")
    request = {"instances": vertex_batch_instances(input_format, images, serialized)}
    response = respond(model, json.loads(json.dumps(request)))
    assert_same_predictions(response["predictions"], expected[:5])
    numbers = model.predict(model.numbers_signature, images[:5].astype(np.float32))
    assert_same_predictions(numbers, expected[:5])  # qt-predict finds the numbers where they moved


def test_a_serving_input_the_data_cannot_take_is_one_line(vectors_dir):
    from dataformat.errors import UserError
    from trainer import serving

    metadata = locate(Config(data_dir=vectors_dir)).metadata
    serving_input_fn = serving.with_default_input(serving.make_serving_input_fn(metadata), "image_bytes")
    with (
        tf.Graph().as_default(),
        pytest.raises(
            UserError,
            match=r"--serving-input image_bytes: this dataset's model does not take it \(it takes numbers, examples\)",
        ),
    ):
        serving_input_fn()


def vertex_csv_instances(text: str) -> list:
    """The instances Vertex AI batch prediction makes of a CSV file, as its reference describes them:
    the first row is a header, each other row one instance, a list of its values (unquoted ones
    read as floats, quoted ones as strings)."""
    _, rows = text.split("\n", 1)
    return list(csv.reader(io.StringIO(rows), quoting=csv.QUOTE_NONNUMERIC))


def test_serving_default_takes_the_rows_of_a_csv_file_for_vector_data(vectors_dir, tmp_path):
    """CSV rows are lists, so they fit only a serving_default of one flat input: vector data."""
    from trainer import serving
    from trainer.vertex.batch import INPUTS

    assert INPUTS["csv"] == "numbers"
    config = Config(data_dir=vectors_dir, job_dir=str(tmp_path / "job"), conv_filters=(), hidden_units=(8,))
    data = locate(config)
    estimator = make_estimator(config, data.metadata)
    estimator.train(make_input_fn(data.train, data.metadata, config, training=True), max_steps=8)
    expected = list(estimator.predict(make_input_fn(data.eval, data.metadata, config, training=False)))[:5]
    serving_input_fn = serving.with_default_input(serving.make_serving_input_fn(data.metadata), "numbers")
    path = estimator.export_saved_model(
        str(tmp_path / "export"), serving_input_fn, assets_extra={"metadata.json": data.metadata_path}
    )
    records = list(tf.data.TFRecordDataset(data.eval).as_numpy_iterator())
    vectors = parse_records(tf.constant(records), data.metadata)[0].numpy()[:5]
    header = ",".join(f"x{i}" for i in range(vectors.shape[1]))
    text = "\n".join([header, *(",".join(repr(float(v)) for v in vector) for vector in vectors)]) + "\n"
    request = {"instances": vertex_csv_instances(text)}
    assert request["instances"][0] == [float(v) for v in vectors[0]]  # a bare list of numbers
    response = respond(Model(path.decode()), json.loads(json.dumps(request)))
    assert_same_predictions(response["predictions"], expected)


@pytest.mark.parametrize("shape", [(32, 40, 3), (32, 40, 1)])
def test_served_photos_are_decoded_as_preprocessing_stored_the_training_ones(tmp_path, shape):
    """A transparent PNG's background was black in serving where training saw white (36 of 40 stamps changed class),
    and a large photo, resized without antialiasing, differed by 15 levels a pixel. Pillow and TensorFlow's decoders
    and filters differ by a level or two at most."""
    from types import SimpleNamespace

    from preprocessing.sources import ImageLoader
    from trainer.serving import decode_images

    rng = np.random.default_rng(0)
    photo = Image.fromarray(np.kron(rng.integers(0, 256, (60, 80, 3)), np.ones((8, 8, 1))).astype(np.uint8))
    stamp = np.zeros((64, 80, 4), np.uint8)
    stamp[10:40, 10:50] = (200, 30, 40, 255)
    stamp[40:60, 40:70] = (0, 0, 255, 128)  # half transparent
    images = {
        "photo.jpg": photo,
        "stamp.png": Image.fromarray(stamp, "RGBA"),
        "gray-stamp.png": Image.fromarray(stamp, "RGBA").convert("LA"),
        "palette.png": photo.convert("P", palette=Image.ADAPTIVE),
        "photo.gif": photo.convert("P", palette=Image.ADAPTIVE),
        "photo.bmp": photo,
    }
    for name, image in images.items():
        path = tmp_path / name
        image.save(path, **{"photo.jpg": {"quality": 95}, "palette.png": {"transparency": 0}}.get(name, {}))
        if name == "photo.bmp":  # 32 bits a pixel, the fourth byte 0: no alpha to Pillow (it was served all white)
            path.write_bytes(_bmp32(np.asarray(photo)))
        stored = ImageLoader(shape, resize=True)(str(path)).astype(np.float32)
        served = decode_images(tf.constant([path.read_bytes()]), SimpleNamespace(shape=shape)).numpy()[0]
        assert np.abs(stored - served).mean() < 1.0 and np.abs(stored - served).max() <= 4, name
        if "stamp" in name:
            assert served[0, 0].tolist() == [255.0] * shape[2], name  # the transparent corner: white
    # A 16-bit PNG at the stored size: the same levels exactly (scaled and cut, 40000 was 155 stored and 156 served).
    levels = np.linspace(0, 65535, shape[0] * shape[1]).astype(np.uint16).reshape(shape[:2])
    Image.fromarray(levels, "I;16").save(tmp_path / "gray16.png")
    stored = ImageLoader(shape, resize=False)(str(tmp_path / "gray16.png"))
    served = decode_images(tf.constant([(tmp_path / "gray16.png").read_bytes()]), SimpleNamespace(shape=shape))
    assert np.array_equal(stored, served.numpy()[0].astype(np.uint8))


def _scene() -> np.ndarray:
    """The upright photo the orientation tests store turned: 40x56, in blocks of 8 that JPEG keeps."""
    rng = np.random.default_rng(0)
    return np.kron(rng.integers(0, 256, (5, 7, 3)), np.ones((8, 8, 1))).astype(np.uint8)


# How each EXIF orientation's stored pixels come from the upright photo (Pillow's names; exif_transpose undoes it)
STORED_TURNED = {
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


@pytest.mark.parametrize("file_format, byte_order", [("JPEG", "<"), ("JPEG", ">"), ("PNG", "<"), ("WEBP", "<")])
def test_a_photo_stored_sideways_is_turned_upright_in_training_and_in_serving(tmp_path, file_format, byte_order):
    """Phones store a portrait photo's pixels sideways, with an EXIF orientation that says so; TensorFlow's decoders
    ignore it, so serving saw sideways what Pillow would have turned. Preprocessing, the export (a JPEG's or PNG's
    EXIF block, in either byte order) and qt-predict (which sends a WebP as PNG) now all turn it upright."""
    from types import SimpleNamespace

    from preprocessing.sources import ImageLoader, first_image_shape
    from trainer.prediction_inputs import _image_bytes
    from trainer.serving import decode_images

    upright = _scene()
    for orientation, turn in STORED_TURNED.items():
        image = Image.fromarray(upright)
        stored = image if turn is None else image.transpose(turn)
        path = tmp_path / f"{orientation}.{file_format.lower()}"
        stored.save(path, exif=_exif(orientation, byte_order), quality=95, subsampling=0, lossless=True)
        assert first_image_shape([(str(path), "")], None) == upright.shape, orientation
        trained = ImageLoader(upright.shape, resize=False)(str(path)).astype(np.float32)
        assert np.abs(trained - upright).mean() < 2.0, orientation
        sent = _image_bytes(str(path))  # as qt-predict sends the file
        served = decode_images(tf.constant([sent]), SimpleNamespace(shape=upright.shape)).numpy()[0]
        assert np.abs(trained - served).max() <= 8 and np.abs(trained - served).mean() < 1.0, orientation


def test_an_iphones_heic_photo_is_read_upright_and_sent_to_the_export_as_png(tmp_path):
    """iPhones store photos as HEIC, which a class folder left out and qt-predict refused; a damaged one is skipped
    and named, as other photos are (pi-heif raises EOFError). tests/data/sideways.heic
    is the test scene above stored turned, with the turn (orientation 6) in its HEIF header, written by pillow-heif
    1.9.0: `Image.fromarray(scene).transpose(ROTATE_90).save(path, "HEIF", quality=95, exif=exif_of_orientation_6)`."""
    from types import SimpleNamespace

    from preprocessing.sources import BrokenImage, ImageLoader, class_files, first_image_shape
    from trainer.prediction_inputs import _image_bytes
    from trainer.serving import decode_images

    upright = _scene()
    (tmp_path / "cats").mkdir()
    shutil.copy(os.path.join(os.path.dirname(__file__), "data", "sideways.heic"), tmp_path / "cats" / "IMG_0001.HEIC")
    _, files = class_files(str(tmp_path), PHOTO_SUFFIXES, "image")
    assert files == [("cats/IMG_0001.HEIC", "cats")]
    path = str(tmp_path / "cats" / "IMG_0001.HEIC")
    assert first_image_shape([(path, "")], None) == upright.shape
    trained = ImageLoader(upright.shape, resize=False)(path).astype(np.float32)
    assert np.abs(trained - upright).mean() < 2.0  # 0.26 measured; turned the other way, 87
    sent = _image_bytes(path)
    assert sent.startswith(b"\x89PNG")  # TensorFlow decodes no HEIF
    served = decode_images(tf.constant([sent]), SimpleNamespace(shape=upright.shape)).numpy()[0]
    np.testing.assert_array_equal(served, trained)
    data = (tmp_path / "cats" / "IMG_0001.HEIC").read_bytes()
    pixels = data.index(b"mdat") + 4
    damaged = data[:pixels] + b"\xff" * (len(data) - pixels)
    (tmp_path / "damaged.heic").write_bytes(damaged)
    with pytest.raises(BrokenImage, match="damaged.heic: cannot decode image"):  # skipped and named, as any photo
        ImageLoader(upright.shape, resize=False)(str(tmp_path / "damaged.heic"))
    assert _image_bytes(str(tmp_path / "damaged.heic")) == damaged  # as it is, for the model to reject


def test_a_damaged_exif_block_leaves_a_photo_as_it_is_stored(tmp_path):
    from types import SimpleNamespace

    from preprocessing.sources import ImageLoader
    from trainer.serving import decode_images

    pixels = np.arange(40 * 56 * 3, dtype=np.uint32).reshape(40, 56, 3).astype(np.uint8)
    for name, block in {"cut": _exif(6, "<")[:15], "directory-past-the-end": _exif(6, "<")[:10] + b"\xff" * 4}.items():
        path = tmp_path / f"{name}.png"
        Image.fromarray(pixels).save(path, exif=block)
        np.testing.assert_array_equal(ImageLoader(pixels.shape, resize=False)(str(path)), pixels)
        served = decode_images(tf.constant([path.read_bytes()]), SimpleNamespace(shape=pixels.shape)).numpy()[0]
        np.testing.assert_array_equal(served, pixels)


def _segment(marker: int, payload: bytes) -> bytes:
    """A JPEG segment."""
    import struct

    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def _chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk."""
    import struct
    import zlib

    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _files_as_other_tools_write_them() -> dict[str, tuple[bytes, int]]:
    """Encoded photos whose EXIF block sits where cameras and editors put it, each with the orientation that turns
    it: after a JFIF segment, after 130 KB of ICC profile, a directory not at byte 8, a LONG orientation; and blocks
    that preprocessing and the export both leave unread (a PNG's eXIf chunk after its pixels, a cut block)."""
    jpeg, png = io.BytesIO(), io.BytesIO()
    Image.fromarray(np.full((40, 56, 3), 90, np.uint8)).save(jpeg, "JPEG")
    Image.fromarray(np.full((40, 56, 3), 90, np.uint8)).save(png, "PNG")
    jpeg, png = jpeg.getvalue(), png.getvalue()
    start, pixels = png.index(b"IHDR") + 21, png.index(b"IEND") - 4  # after IHDR's chunk; before IEND's

    def in_jpeg(*segments: bytes) -> bytes:
        return jpeg[:2] + b"".join(segments) + jpeg[2:]

    def exif(block: bytes) -> bytes:
        return _segment(0xE1, block)

    icc = b"".join(_segment(0xE2, b"ICC_PROFILE\0" + bytes([part, 2]) + b"\x11" * 65_000) for part in (1, 2))
    return {
        "after JFIF": (in_jpeg(_segment(0xE0, b"JFIF\0\1\1\0\0\1\0\1\0\0"), exif(_exif(6, "<"))), 6),
        "after 130 KB of ICC profile": (in_jpeg(icc, exif(_exif(8, ">"))), 8),
        "directory at byte 26, LONG": (in_jpeg(exif(_exif(5, ">", directory=26, long=True))), 5),
        "a PNG's eXIf chunk, JPEG's prefix": (png[:start] + _chunk(b"eXIf", _exif(7, "<")) + png[start:], 7),
        "a PNG's eXIf chunk after its pixels": (png[:pixels] + _chunk(b"eXIf", _exif(6, "<")[6:]) + png[pixels:], 1),
        "a directory past the block's end": (in_jpeg(exif(_exif(6, "<", directory=2**32 - 16))), 1),
        "cut": (in_jpeg(exif(_exif(6, "<")[:16])), 1),
    }


def test_the_export_reads_a_photos_orientation_where_preprocessing_does():
    from preprocessing.photos import _orientation, open_photo
    from trainer import exif

    for name, (data, orientation) in _files_as_other_tools_write_them().items():
        with open_photo(data) as image:
            assert _orientation(image) == orientation, name
        assert exif.orientation(tf.constant(data)).numpy() == orientation, name


def _exif(orientation: int, byte_order: str, directory: int = 8, long: bool = False) -> bytes:
    """An EXIF block as cameras write one, "II" (little-endian) or "MM": a make, then the orientation."""
    import struct

    value = (
        struct.pack(f"{byte_order}HHII", 0x0112, 4, 1, orientation)
        if long
        else struct.pack(f"{byte_order}HHIHH", 0x0112, 3, 1, orientation, 0)
    )
    entries = struct.pack(f"{byte_order}HHI4s", 0x010F, 2, 4, b"ACM\0") + value
    header = (b"II*\0" if byte_order == "<" else b"MM\0*") + struct.pack(f"{byte_order}I", directory)
    header += b"\0" * (directory - 8) if directory < 1000 else b""
    return b"Exif\0\0" + header + struct.pack(f"{byte_order}H", 2) + entries + b"\0\0\0\0"


def _bmp32(rgb: np.ndarray) -> bytes:
    """A 32-bit BI_RGB BMP of the pixels, each pixel's fourth byte 0, as some Windows tools write them."""
    import struct

    height, width, _ = rgb.shape
    pixels = np.zeros((height, width, 4), np.uint8)
    pixels[..., :3] = rgb[::-1, :, ::-1]  # bottom-up rows, BGR
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 32, 0, pixels.nbytes, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + pixels.nbytes, 0, 0, 14 + 40) + header + pixels.tobytes()


def test_a_cut_shard_or_a_damaged_export_is_named_in_one_line(served, tmp_path):
    """Each ended in a traceback: TensorFlow's DataLossError for the shard, its OSError or OpError for the export."""
    export, serialized, _, _ = served
    with tf.io.TFRecordWriter(str(tmp_path / "cut.tfrecord")) as writer:
        for record in serialized[:3]:
            writer.write(record)
    data = (tmp_path / "cut.tfrecord").read_bytes()
    (tmp_path / "cut.tfrecord").write_bytes(data[: len(data) - 10])
    model = Model(os.path.dirname(export))
    with pytest.raises(UserError, match=r"cut.tfrecord: damaged or cut short after 2 record\(s\)"):
        list(predict.predict_files(model, [str(tmp_path / "cut.tfrecord")], batch_size=8))
    damaged = shutil.copytree(export, tmp_path / "export")
    shutil.rmtree(damaged / "variables")
    with pytest.raises(UserError, match=r"--model-dir .*export: the export's weights are missing \(variables/ holds"):
        Model(str(damaged))  # qt-deploy's plan uploaded such an export
    shutil.copytree(os.path.join(export, "variables"), damaged / "variables")
    (damaged / "saved_model.pb").write_bytes((damaged / "saved_model.pb").read_bytes()[:100])
    with pytest.raises(UserError, match=r"the export does not load \(Cannot parse file"):
        Model(str(damaged))
