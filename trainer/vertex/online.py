"""`qt-predict --endpoint`: a model deployed on a Vertex AI endpoint, in the place of a local export. The
same input files become the same instances, sent as predict (or explain) requests, and come back as the
same output lines; with --explain each line gains the instance's attributions."""

from __future__ import annotations

import base64
import json
import math

import numpy as np

from dataformat import tables
from dataformat.errors import UserError
from trainer.exported_model import DEFAULT_SIGNATURE, IMAGES_SIGNATURE, NUMBERS_SIGNATURE, input_values, read_export
from trainer.vertex import endpoints

REQUEST_BYTES = 1_000_000  # instances a request at most: Vertex AI takes 1.5 MB an online request
WHOLE_OUTPUTS = ("class_ids", "all_class_ids")  # numbers that come back as floats through JSON's Value


def _requests(instances: list) -> list[list]:
    """The instances, in requests of at most REQUEST_BYTES of JSON each (one instance at least)."""
    parts, part, size = [], [], 0
    for instance in instances:
        length = len(json.dumps(instance))
        if part and size + length > REQUEST_BYTES:
            parts.append(part)
            part, size = [], 0
        part.append(instance)
        size += length
    return [*parts, part] if part else parts


def _local_types(prediction: dict) -> dict:
    """A prediction as a local one writes it: its keys in order, class IDs as whole numbers."""
    for name in WHOLE_OUTPUTS:
        if name in prediction:
            value = prediction[name]
            prediction[name] = [int(v) for v in value] if isinstance(value, list) else int(value)
    return dict(sorted(prediction.items()))


class OnlineModel:
    """The endpoint's model (the first it serves), as trainer.exported_model.Model: its metadata, and predict()."""

    def __init__(self, endpoint: str, explain: bool):
        endpoints.parse_endpoint(endpoint)
        found = endpoints.get_endpoint(endpoint)
        deployed = found.get("deployedModels") or []
        if not deployed:
            raise UserError(f"--endpoint {endpoint}: no model is deployed there (qt-deploy deploys one)")
        traffic = found.get("trafficSplit") or {}
        serving = max(deployed, key=lambda model: traffic.get(model["id"], 0))  # the one requests go to
        model = endpoints.get_model(serving["model"])
        if not model.get("artifactUri"):  # AutoML's, or a container with its model inside: no export to read
            raise UserError(
                f"--endpoint {endpoint}: its model {serving['model']} was not uploaded from an export (it has no "
                "artifactUri); qt-predict reads the export's metadata.json to know its inputs"
            )
        try:
            export = read_export(model["artifactUri"])
        except UserError as error:  # said of --model-dir, which the user did not give
            raise UserError(f"--endpoint {endpoint}: its model {serving['model']}: {error}") from None
        self.endpoint, self.explain, self.metadata = endpoint, explain, export.metadata
        self.takes = export.serving_input
        # The local signature each input file goes to -> what the endpoint's serving_default takes.
        local = {"numbers": DEFAULT_SIGNATURE, "image_bytes": IMAGES_SIGNATURE}.get(self.takes)
        self.signatures = {local} if local else set()
        self.numbers_signature = DEFAULT_SIGNATURE if self.takes == "numbers" else NUMBERS_SIGNATURE

    def values(self, array, where: str):
        return input_values(self.metadata, array, where)

    def predict(self, signature: str, values, names: list[str]) -> list[dict]:
        if signature not in self.signatures:
            raise UserError(f"{names[0]}: the endpoint's model takes {self.takes} (its --serving-input), not this")
        instances = [self._instance(value, name) for value, name in zip(values, names)]
        lines = []
        for part in _requests(instances):
            answer = endpoints.predict(self.endpoint, part, self.explain)
            found = [_local_types(prediction) for prediction in answer["predictions"]]
            if self.explain:
                for line, explanation in zip(found, answer.get("explanations", [])):
                    line["attributions"] = explanation["attributions"][0]["featureAttributions"]
            lines += found
        return lines

    def _instance(self, value, name: str):
        """One instance as serving_default takes it over JSON; an image with its name as its key (--key-column)."""
        key = {self.metadata.key_column: name} if self.metadata.key_column else {}
        if self.takes == "image_bytes":
            return {"image_bytes": {"b64": base64.b64encode(value).decode()}, **key}
        if not self.metadata.is_table:
            return {self.metadata.feature_key: np.asarray(value).tolist(), **key}
        columns = tables.instance_columns([value], self.metadata.columns, [name], self.metadata.key_column)
        instance = {}
        for column, array in columns.items():
            item = array[0].item() if isinstance(array[0], np.generic) else array[0]
            if isinstance(item, float) and math.isnan(item):  # JSON has no NaN, and a missing number is one
                raise UserError(
                    f"{name}: column {column!r} is missing, and an online request cannot say so (its JSON has no "
                    "NaN); predict it with qt-predict --model-dir on the export, or fill it in"
                )
            instance[column] = item
        return instance
