"""Pretrained backbones for photos, from tf.keras.applications: `--model mobilenet_v2`, `efficientnet_b0`
or `resnet50`, each with its own input preprocessing at its own input size, global average pooling,
dropout and the logits.

`--pretrained imagenet` takes Keras's published ImageNet weights (a download); `--pretrained PATH` a weights
file in the format Keras publishes them (the backbone without its top, .h5), local or gs://. No flag:
random initialization, and the whole network trains from the start, but its batch norm stays in inference
mode there too (the Keras application's update ops do not fit this trainer's in-graph step loop yet), so it
learns its scales and offsets, not its statistics: to train photos from scratch, the default CNN is the
one measured.

With weights, training has two phases (the transfer learning of Keras's guide): for --freeze-steps only the
head trains; then the backbone's top blocks train too, at FINE_TUNE_RATE of the learning rate. Its lower
blocks stay frozen throughout, and its batch norm always runs in inference mode, keeping the statistics the
weights came with. The weights are assigned when the job dir has no checkpoint yet (a Scaffold's init_fn),
so a resumed run restores its own.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from dataformat.errors import UserError
from trainer import augment

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.model import ModelSettings

log = logging.getLogger("trainer")

layers = tf.keras.layers
applications = tf.keras.applications
FINE_TUNE_RATE = 0.1  # the backbone's top blocks learn at this share of --learning-rate


@dataclass(frozen=True)
class Backbone:
    make: Callable  # a tf.keras.applications constructor
    preprocess: Callable  # its preprocess_input: from 0-255 RGB to what its weights expect
    size: int  # its input's side
    top: str  # its first layer that fine-tuning trains


BACKBONES = {
    "mobilenet_v2": Backbone(
        applications.MobileNetV2, applications.mobilenet_v2.preprocess_input, 224, "block_13_expand"
    ),
    "efficientnet_b0": Backbone(
        applications.EfficientNetB0, applications.efficientnet.preprocess_input, 224, "block6a_expand_conv"
    ),
    "resnet50": Backbone(applications.ResNet50, applications.resnet50.preprocess_input, 224, "conv5_block1_1_conv"),
}


def takes(metadata: Metadata) -> bool:
    return metadata.is_image and metadata.shape[-1] in (1, 3)


def build(name: str, settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    """The network: augmentation (or the center crop), the backbone's own preprocessing at its size, the
    backbone, dropout, logits. Only the top blocks are trainable when it starts from weights."""
    backbone = BACKBONES[name]
    model = _backbone(name)
    if settings.pretrained:
        first_top = [layer.name for layer in model.layers].index(backbone.top)
        for layer in model.layers[:first_top]:
            layer.trainable = False
    return Classifier(backbone, model, settings, metadata)


def _backbone(name: str) -> tf.keras.Model:
    backbone = BACKBONES[name]
    shape = (backbone.size, backbone.size, 3)
    return backbone.make(include_top=False, weights=None, input_shape=shape, pooling="avg")


class Classifier(tf.keras.Model):
    def __init__(self, backbone: Backbone, model: tf.keras.Model, settings: ModelSettings, metadata: Metadata):
        super().__init__(name="classifier")
        self.augment = augment.layer(settings, metadata)
        self.backbone, self.spec = model, backbone
        self.dropout = layers.Dropout(settings.dropout, seed=settings.seed)
        self.logits = layers.Dense(metadata.num_classes, name="logits")

    def call(self, images: tf.Tensor, training: bool = False) -> tf.Tensor:
        if self.augment is not None:
            images = self.augment(images, training=training)
        images = tf.cast(images, tf.float32)
        if images.shape[-1] == 1:
            images = tf.tile(images, [1, 1, 1, 3])
        images = tf.image.resize(images, [self.spec.size, self.spec.size])
        features = self.backbone(self.spec.preprocess(images), training=False)  # batch norm as the weights left it
        return self.logits(self.dropout(features, training=training))


@functools.lru_cache(maxsize=2)
def pretrained_weights(name: str, source: str) -> tuple[np.ndarray, ...]:
    """The backbone's weights, layer after layer: Keras's ImageNet download, or an .h5 file (local or gs://) as
    Keras publishes them. UserError naming --pretrained when they cannot be had or do not fit. Read with Keras's
    own loader, eagerly, in a thread of its own: a new thread runs eagerly, outside the graph an Estimator may
    be building in this one (in a graph, MobileNetV2's weights took 13.3 s, and Keras warned of each assignment;
    eagerly 1.2-1.7 s)."""
    # The eager context this may start takes GPU memory as it grows, as this trainer's sessions do, rather than
    # the whole GPU at once (a RuntimeError: started already, its memory settled).
    for gpu in tf.config.list_physical_devices("GPU"):
        with contextlib.suppress(RuntimeError):
            tf.config.experimental.set_memory_growth(gpu, True)
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(_read_weights, name, source).result()


def _read_weights(name: str, source: str) -> tuple[np.ndarray, ...]:
    if source == "imagenet":
        try:
            shape = (BACKBONES[name].size,) * 2 + (3,)
            model = BACKBONES[name].make(include_top=False, weights="imagenet", input_shape=shape, pooling="avg")
        except Exception as error:  # the download: no network, a proxy, a full disk
            raise UserError(f"--pretrained imagenet: cannot get Keras's {name} weights ({error}); download "
                            "the no-top .h5 file elsewhere and pass --pretrained PATH") from None  # fmt: skip
    else:
        model = _backbone(name)
        with tempfile.TemporaryDirectory() as folder:
            local = os.path.join(folder, "weights.h5")
            try:
                tf.io.gfile.copy(source, local)
                model.load_weights(local)
            except (tf.errors.OpError, OSError, ValueError) as error:
                why = error.message if isinstance(error, tf.errors.OpError) else str(error).splitlines()[0]
                raise UserError(f"--pretrained {source}: not {name}'s weights without its top (.h5): {why}") from None
    return tuple(weight.numpy() for weight in layer_weights(model))


def layer_weights(model: tf.keras.Model) -> list:
    """A backbone's weights, layer after layer: the order the pretrained values are read in and assigned in (a
    frozen layer's weights come in the same order either way, where the model's own list would not)."""
    return [weight for layer in model.layers for weight in layer.weights]


def init_fn(network: Classifier, name: str, source: str) -> Callable:
    """A Scaffold init_fn that assigns the pretrained weights, through placeholders (ResNet-50's 90 MB would
    not fit in a graph)."""
    values = pretrained_weights(name, source)
    variables = layer_weights(network.backbone)
    feeds = [tf.compat.v1.placeholder(v.dtype.base_dtype, v.shape) for v in variables]
    assign = tf.group(*[v.assign(feed) for v, feed in zip(variables, feeds)])
    log.info("Initializing %s from %s (%d weights)", name, source, len(values))

    def initialize(scaffold, session):
        session.run(assign, dict(zip(feeds, values)))

    return initialize


class TwoRates(tf.compat.v1.train.Optimizer):
    """The head's optimizer for every variable outside the backbone; for the backbone's trainable (top)
    variables, named in `backbone_names`, a second one at FINE_TUNE_RATE of the rate, whose gradients count
    only from `start` on."""

    def __init__(self, head, backbone, start: int, backbone_names: set[str]):
        super().__init__(use_locking=False, name="TwoRates")
        self._head, self._backbone, self._start, self._names = head, backbone, start, backbone_names

    def compute_gradients(self, *args, **kwargs):
        return self._head.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        step = tf.compat.v1.train.get_global_step()
        started = tf.cast(step >= self._start, tf.float32)
        head = [(g, v) for g, v in grads_and_vars if v.op.name not in self._names]
        top = [(None if g is None else g * tf.cast(started, g.dtype), v)
               for g, v in grads_and_vars if v.op.name in self._names]  # fmt: skip
        updates = [self._head.apply_gradients(head)]
        if top:
            updates.append(self._backbone.apply_gradients(top))
        with tf.control_dependencies(updates):
            return global_step.assign_add(1) if global_step is not None else tf.no_op()
