"""An exported SavedModel loaded in this process, with the dataset metadata that travels with it: each signature
called on a batch of inputs as a predict server calls it, an input it rejects named."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import yaml

from dataformat import storage, tables
from dataformat.errors import UserError, tensorflow_error_line
from dataformat.schema import METADATA_FILE, Metadata
from trainer import config as config_module

log = logging.getLogger("trainer.predict")
DEFAULT_SIGNATURE = "serving_default"
NUMBERS_SIGNATURE = "numbers:serving_default"  # where the numbers go when serving_default takes another input
IMAGES_SIGNATURE = "image_bytes:serving_default"
EXAMPLES_SIGNATURE = "examples:serving_default"  # serialized tf.Examples, one row each


@dataclass(frozen=True)
class Export:
    path: str  # the folder that holds saved_model.pb
    metadata: Metadata
    serving_input: str  # what its serving_default takes (--serving-input at training)


def read_export(model_dir: str) -> Export:
    """The export at --model-dir (or the newest of a folder of numbered ones, or a job dir's best), with the
    metadata and settings that travel in its assets.extra/."""
    path = config_module.served_export(model_dir)
    if not path:
        raise UserError(f"--model-dir {model_dir}: not an export (no saved_model.pb), nor a job dir with one")
    extra = storage.join(path, "assets.extra")
    found = storage.join(extra, METADATA_FILE)
    if not storage.exists(found):
        raise UserError(f"--model-dir {model_dir}: not an export of this trainer (no {found})")
    weights = storage.list_names(storage.join(path, "variables"))
    if "variables.index" not in weights or not any(name.startswith("variables.data-") for name in weights):
        # qt-deploy planned, and would have uploaded, an export that no server could load
        raise UserError(f"--model-dir {path}: the export's weights are missing (variables/ holds "
                        f"{', '.join(weights) or 'nothing'}); export it again")  # fmt: skip
    if "[" in path:  # TensorFlow finds the weights by glob
        raise UserError(f"--model-dir {path}: TensorFlow reads [ ] in an export's path as a pattern and finds no "
                        "weights there; move or copy it to a folder without them")  # fmt: skip
    with storage.open_read(found) as file:
        metadata = Metadata.from_json(file.read().decode("utf-8"), found)
    settings = storage.join(extra, config_module.CONFIG_FILE)
    serving_input = "numbers"
    if storage.exists(settings):
        with storage.open_read(settings) as file:
            serving_input = (yaml.safe_load(file) or {}).get("serving_input", "numbers")
    return Export(path, metadata, serving_input)


class Rejected(UserError):
    """An input the model rejects (an image that does not decode), named."""


class Model:
    """An exported SavedModel and the dataset metadata that travels with it."""

    def __init__(self, model_dir: str):
        import tensorflow as tf

        export = read_export(model_dir)
        log.info("Model: %s", export.path)
        self.metadata = export.metadata
        try:
            self.signatures = tf.saved_model.load(export.path).signatures
        except (tf.errors.OpError, OSError, ValueError) as error:  # a file of it missing, or cut short
            raise UserError(
                f"--model-dir {export.path}: the export does not load ({tensorflow_error_line(error)})"
            ) from None
        self.numbers_signature = NUMBERS_SIGNATURE if NUMBERS_SIGNATURE in self.signatures else DEFAULT_SIGNATURE

    def predict(self, signature: str, values, names: list[str] | None = None, keys: list | None = None) -> list[dict]:
        """One dict of outputs per input, as a predict server's row format returns them. An input
        the model rejects (an image that does not decode) is Rejected, naming it (by `names`,
        or as "input N"). A model that takes keys (--key-column) gets `keys`, by default the names."""
        import tensorflow as tf

        if signature not in self.signatures:
            raise UserError(f"the model has no signature {signature!r} (it has {', '.join(sorted(self.signatures))})")
        function = self.signatures[signature]
        names = names or [f"input {i}" for i in range(len(values))]
        try:
            outputs = _call(function, self._inputs(signature, values, names, keys))
        except tf.errors.InvalidArgumentError as error:
            raise Rejected(self._rejected(signature, values, names, error)) from None
        return [
            {key: _json_value(value[i]) for key, value in sorted(outputs.items())}
            for i in range(len(outputs["class_ids"]))
        ]

    def _inputs(self, signature: str, values: list, names: list[str], keys: list | None = None) -> dict:
        """The signature's inputs for a batch: a table's rows ({column: value} each) as one array a
        column; anything else as one array, and where the model takes keys (--key-column), the inputs' names."""
        if self.metadata.is_table and signature == self.numbers_signature:
            return tables.instance_columns(values, self.metadata.columns, names, self.metadata.key_column)
        inputs = {self.input_name(signature): values}
        if self.metadata.key_column in self.signatures[signature].structured_input_signature[1]:
            given = names if keys is None else keys
            inputs[self.metadata.key_column] = np.array([str(key).encode() for key in given], dtype=np.bytes_)
        return inputs

    def input_name(self, signature: str) -> str:
        """The one input of a signature besides a key (all but a table's numbers have one)."""
        inputs = self.signatures[signature].structured_input_signature[1]
        (name,) = [name for name in inputs if name != self.metadata.key_column or len(inputs) == 1]
        return name

    def _rejected(self, signature: str, values: list, names: list[str], error) -> str:
        """Which input of a failed batch the model rejects, found by trying each alone, and why."""
        import tensorflow as tf

        function = self.signatures[signature]
        for value, name in zip(values, names):
            try:
                _call(function, self._inputs(signature, [value], [name]))
            except tf.errors.InvalidArgumentError as alone:
                said = tensorflow_error_line(alone)
                if "Data types don't match" in said:  # a tf.Example's feature of another type than the column's
                    said += (
                        "; the examples signature takes a numeric column as a float_list feature and any other "
                        "as a bytes_list one (TFX writes integer columns as int64_list: write them as floats)"
                    )
                return f"{name}: the model rejects it ({said})"
        return f"{names[0]} to {names[-1]}: the model rejects this batch ({tensorflow_error_line(error)})"

    def values(self, array: np.ndarray, where: str) -> np.ndarray:
        return input_values(self.metadata, array, where)


def input_values(metadata, array: np.ndarray, where: str) -> np.ndarray:
    """Raw values as float32 of the model's input shape, or UserError naming `where`."""
    shape = tuple(metadata.shape)
    array = np.asarray(array, dtype=np.float32)
    if array.shape[1:] == shape[:-1] and shape[-1] == 1:
        array = array[..., np.newaxis]  # (N, H, W) for one-channel images
    if array.shape[1:] != shape:
        raise UserError(f"{where}: inputs have shape {list(array.shape[1:])}; the model takes {list(shape)}")
    return array


def _call(function, inputs: dict) -> dict[str, np.ndarray]:
    """One call of a signature on a batch of inputs; its outputs as numpy arrays."""
    import tensorflow as tf

    return {key: value.numpy() for key, value in function(**{k: tf.constant(v) for k, v in inputs.items()}).items()}


def _json_value(value):
    """A numpy output as JSON-ready Python."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value.tolist() if isinstance(value, np.ndarray) else value.item()
