"""--augment: photos get a random crop and flip on the device in training, and the same center crop in
evaluation and serving; digit-like data gets none."""

from __future__ import annotations

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from dataformat.errors import UserError
from dataformat.schema import Metadata, SplitInfo
from preprocessing.cli import main as preprocess
from trainer import augment, experiment
from trainer.config import Config
from trainer.export import latest_export
from trainer.exported_model import Model


def _metadata(shape, dtype="uint8") -> Metadata:
    split = SplitInfo(examples=0, bytes=0, shards=())
    return Metadata(shape=shape, dtype=dtype, class_names=("a", "b"), splits={"train": split, "eval": split},
                    mean=(0.0,) * shape[-1], std=(1.0,) * shape[-1])  # fmt: skip


def test_photos_are_cropped_digits_and_vectors_are_not():
    assert augment.resolve("auto", _metadata((64, 48, 3))) == "crop"
    assert augment.resolve("auto", _metadata((28, 28, 1))) == "none"
    assert augment.resolve("auto", _metadata((8, 8, 3))) == "none"
    assert augment.input_size("crop", _metadata((256, 256, 3))) == augment.input_size("shift", _metadata((256, 256, 3)))
    assert augment.input_size("shift", _metadata((256, 256, 3))) == (224, 224)
    with pytest.raises(UserError, match="--augment crop: augmentation is for images"):
        augment.resolve("crop", _metadata((16,), "float32"))


def test_random_crops_cover_the_area_and_ratio_ranges_and_half_are_flipped():
    shape = tf.constant([20000, 60, 40, 3])
    boxes = augment.random_boxes(shape, seed=1).numpy()
    heights, widths = (boxes[:, 2] - boxes[:, 0]), (boxes[:, 3] - boxes[:, 1])
    assert (boxes >= 0).all() and (boxes <= 1 + 1e-6).all()
    area, ratio = heights * widths, (widths * 40) / (heights * 60)  # the box's own aspect, in pixels
    whole = (heights < 1) & (widths < 1)  # boxes not cut to the image's side keep their drawn area and ratio
    assert area.min() >= augment.AREA[0] - 1e-6 and np.quantile(area, 0.1) < 0.15 and area.max() > 0.9
    assert ratio[whole].min() >= augment.RATIO[0] - 1e-4 and ratio[whole].max() <= augment.RATIO[1] + 1e-4
    images = np.zeros([4000, 8, 8, 1], np.float32)
    images[:, :, :4] = 1.0  # left half white
    flipped = augment.random_flip(tf.constant(images), seed=1).numpy()[:, 0, 0, 0] == 0
    assert flipped.mean() == pytest.approx(0.5, abs=0.03)
    layer = augment.Augment("crop", (7, 7), seed=3)
    trained, evaluated = layer(tf.constant(images), training=True), layer(tf.constant(images), training=False)
    assert trained.shape == evaluated.shape == (4000, 7, 7, 1)
    np.testing.assert_array_equal(evaluated.numpy()[0], evaluated.numpy()[1])  # the center crop: always the same


def test_a_shift_is_a_window_of_exact_pixels_at_every_place_with_half_flipped():
    """Each training image is the stored image's window of the input size at a whole-pixel place (or its
    mirror), every place is drawn, and the center window is what evaluation takes."""
    count, side, size = 3000, 12, (10, 9)
    stored = np.random.default_rng(0).integers(0, 256, (side, side + 1, 1)).astype(np.uint8)
    layer = augment.Augment("shift", size, seed=5)
    trained = layer(tf.constant(np.repeat(stored[None], count, 0)), training=True).numpy()
    windows = {(top, left): stored[top : top + size[0], left : left + size[1]].astype(np.float32)
               for top in range(side - size[0] + 1) for left in range(side + 1 - size[1] + 1)}  # fmt: skip
    places, flips = [], []
    for image in trained:
        found = [(place, flip) for place, window in windows.items() for flip in (False, True)
                 if np.abs(image - (window[:, ::-1] if flip else window)).max() < 1e-3]  # fmt: skip
        assert found, "a shifted image that is no window of the stored one"
        places.append(found[0][0])
        flips.append(found[0][1])
    assert set(places) == set(windows) and np.mean(flips) == pytest.approx(0.5, abs=0.05)
    evaluated = layer(tf.constant(stored[None]), training=False).numpy()[0]
    np.testing.assert_array_equal(evaluated, windows[(1, 2)])  # (12 - 10) // 2, (13 - 9) // 2


def write_photos(root, side: int, per_class: int, suffix: str) -> None:
    """Photos of colored noise, reddish or bluish, one folder a class, preprocessed into root/data."""
    rng = np.random.default_rng(0)
    for label in ("red", "blue"):
        (root / "photos" / label).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 120, (side, side, 3), dtype=np.uint8)
            pixels[..., 0 if label == "red" else 2] += 120
            Image.fromarray(pixels).save(root / "photos" / label / f"{i}{suffix}")
    argv = ["--source", "images", "--input", str(root / "photos"), "--output", str(root / "data")]
    assert preprocess([*argv, "--workers", "1"]) == 0


def test_evaluation_and_every_serving_input_take_the_same_center_crop(tmp_path):
    write_photos(tmp_path, side=40, per_class=16, suffix=".png")
    config = Config(data_dir=str(tmp_path / "data"), job_dir=str(tmp_path / "job"), train_steps=20, batch_size=8)
    metrics = experiment.run(config)
    assert metrics["accuracy"] >= 0.5
    estimator = experiment.make_estimator(
        config, Metadata.from_json((tmp_path / "data" / "metadata.json").read_text(), "m")
    )
    assert estimator.params["settings"].augment == "crop"
    paths = sorted((tmp_path / "photos" / "red").glob("*.png"))[:4]
    pixels = np.stack([np.asarray(Image.open(path)) for path in paths]).astype(np.float32)
    batch = lambda: tf.data.Dataset.from_tensors({"image": tf.constant(pixels)})  # noqa: E731 (one batch, then the end)
    expected = [p["probabilities"] for p in estimator.predict(batch)]
    model = Model(latest_export(config, "latest"))
    encoded = []
    for image in pixels.astype(np.uint8):
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="PNG")
        encoded.append(buffer.getvalue())
    for signature, values in (("serving_default", list(pixels)), ("image_bytes:serving_default", encoded)):
        served = [p["probabilities"] for p in model.predict(signature, values)]
        np.testing.assert_allclose(served, expected, atol=1e-5)


@pytest.mark.parametrize("side, blocks", [(28, 2), (64, 3), (224, 5)])
def test_the_default_cnn_grows_with_the_photo(side, blocks):
    """From 28x28 digits to 224x224 photos the default CNN ends at 7x7 or 8x8 and stays under 6 million weights."""
    from trainer.model import ModelSettings
    from trainer.networks import image_cnn

    metadata = _metadata((side, side, 3 if side > 28 else 1))
    settings = ModelSettings(network="cnn", augment=augment.resolve("auto", metadata))
    network = image_cnn(settings, metadata)
    network(tf.zeros([1, side, side, metadata.shape[-1]], tf.uint8))
    convolutions = [layer for layer in network.layers if isinstance(layer, tf.keras.layers.Conv2D)]
    assert len(convolutions) == 2 * blocks and network.count_params() < 6_000_000
