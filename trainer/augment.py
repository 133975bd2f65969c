"""Augmentation of photos, on the device, as the network's first layer (Augment): training takes a random
crop and a random horizontal flip of each image; evaluation and serving take the center crop, through the
same layer, so the model sees one size everywhere and serving can never differ from evaluation.

Pixels are decoded once, at preprocessing, and stored a little larger than the model's input: with
`shift` or `crop`, the model sees CENTER of each side of the stored image (224 of 256, as TensorFlow's
ImageNet pipelines do). Two kinds of training crop:
- shift: a window of the model's input size at a random place in the stored image, its pixels: the
  image moves by up to 1/16 of a side each way, at the scale evaluation sees (CIFAR's random crop).
- crop: a random box covering AREA of the stored image at an aspect ratio in RATIO, resized to the
  model's input (Inception's crop, as tf_cnn_benchmarks and tensorflow/models make it for ImageNet).
Boxes are drawn for the whole batch at once and cut with crop_and_resize, which has a GPU kernel: the CPU
never decodes or resizes during training. The center crop is exact pixels.

The default for photos is crop, ImageNet's recipe. On the one real photo set the benchmarks have (Tux Paint's
280 stamp photographs at 32x32, cross-validated), crop and shift each got 211 of the 280 right, and no
augmentation 198 (benchmarks/photos.py, docs/photos.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import Metadata

if TYPE_CHECKING:
    from trainer.model import ModelSettings

AUGMENTS = ("none", "flip", "shift", "crop")  # shift and crop: a random crop, then a flip
CROPPED = ("shift", "crop")  # those that crop: the network sees CENTER of each stored side
CENTER = 0.875
AREA = (0.05, 1.0)
RATIO = (3 / 4, 4 / 3)
PHOTO_SIDE = 32  # images with 3 channels and both sides at least this big are photos


def resolve(setting: str, metadata: Metadata) -> str:
    """--augment: auto is crop for photos, none for anything else. A digit mirrored is another shape (or
    another digit), and an 8x8 or 28x28 digit has no margin to crop; vectors are no images."""
    if setting != "auto":
        if setting not in AUGMENTS:
            raise UserError(f"--augment {setting}: choose auto, {', '.join(AUGMENTS)}")
        if setting != "none" and not metadata.is_image:
            raise UserError(f"--augment {setting}: augmentation is for images, and this dataset's examples are not")
        return setting
    height, width, channels = metadata.shape if metadata.is_image else (0, 0, 0)
    return "crop" if channels == 3 and min(height, width) >= PHOTO_SIDE else "none"


def input_size(augment: str, metadata: Metadata) -> tuple[int, int]:
    """The (height, width) the network sees: CENTER of the stored size with shift or crop, the stored size
    otherwise."""
    height, width = metadata.shape[:2]
    if augment not in CROPPED:
        return height, width
    return round(height * CENTER), round(width * CENTER)


def layer(settings: ModelSettings, metadata: Metadata) -> Augment | None:
    """The Augment layer an image network starts with, where --augment (resolved in `settings`) asks for one."""
    if settings.augment == "none":
        return None
    return Augment(settings.augment, input_size(settings.augment, metadata), settings.seed)


class Augment(tf.keras.layers.Layer):
    """Stored pixels in, the network's input out: a random crop and flip in training, the center crop (and
    nothing else) otherwise. Float32 out with shift or crop, the stored dtype otherwise."""

    def __init__(self, augment: str, size: tuple[int, int], seed: int, **kwargs):
        super().__init__(name="augment", **kwargs)
        self.augment, self.size, self.seed = augment, size, seed

    def call(self, images: tf.Tensor, training: bool = False) -> tf.Tensor:
        if self.augment in CROPPED and training:
            shape = tf.shape(images)
            boxes = (
                random_windows(shape, self.size, self.seed)
                if self.augment == "shift"
                else random_boxes(shape, self.seed)
            )
            images = tf.image.crop_and_resize(tf.cast(images, tf.float32), boxes, tf.range(shape[0]), self.size)
        elif self.augment in CROPPED:
            images = tf.cast(center_crop(images, self.size), tf.float32)
        if training and self.augment != "none":
            images = random_flip(images, self.seed)
        return images


def center_crop(images: tf.Tensor, size: tuple[int, int]) -> tf.Tensor:
    """The central `size` pixels of each image (input_size: CENTER of each side), exact pixels, no resampling."""
    height, width = images.shape[1], images.shape[2]
    top, left = (height - size[0]) // 2, (width - size[1]) // 2
    return images[:, top : top + size[0], left : left + size[1]]


def random_windows(shape: tf.Tensor, size: tuple[int, int], seed: int) -> tf.Tensor:
    """[n, 4] boxes of `size` pixels at random whole-pixel places: crop_and_resize then samples each
    window's pixels, exact to float rounding (box corners are pixel centers: pixel i of a side of n is at
    i / (n - 1))."""
    count, height, width = shape[0], shape[1], shape[2]
    top = tf.random.uniform([count], 0, height - size[0] + 1, tf.int32, seed=seed)
    left = tf.random.uniform([count], 0, width - size[1] + 1, tf.int32, seed=seed + 1)
    corners = [top, left, top + size[0] - 1, left + size[1] - 1]
    sides = [height, width, height, width]
    return tf.stack([tf.cast(c, tf.float32) / tf.cast(s - 1, tf.float32) for c, s in zip(corners, sides)], 1)


def random_boxes(shape: tf.Tensor, seed: int) -> tf.Tensor:
    """[n, 4] random boxes: each covers a share of the image drawn from AREA, at an aspect ratio (width over
    height, in pixels) drawn log-uniformly from RATIO, somewhere inside the image (a box that would not fit
    is cut to the image's side)."""
    count, height, width = shape[0], tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
    area = tf.random.uniform([count], *AREA, seed=seed)
    ratio = tf.exp(tf.random.uniform([count], math.log(RATIO[0]), math.log(RATIO[1]), seed=seed + 1))
    box_height = tf.minimum(tf.sqrt(area / ratio * width / height), 1.0)
    box_width = tf.minimum(tf.sqrt(area * ratio * height / width), 1.0)
    top = tf.random.uniform([count], seed=seed + 2) * (1 - box_height)
    left = tf.random.uniform([count], seed=seed + 3) * (1 - box_width)
    return tf.stack([top, left, top + box_height, left + box_width], axis=1)


def random_flip(images: tf.Tensor, seed: int) -> tf.Tensor:
    """Each image mirrored left to right with probability 1/2."""
    flip = tf.random.uniform([tf.shape(images)[0], 1, 1, 1], seed=seed + 4) < 0.5
    return tf.where(flip, tf.reverse(images, axis=[2]), images)
