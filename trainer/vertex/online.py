"""`qt-predict --endpoint`: a model deployed on a Vertex AI endpoint, in the place of a local export. The
same input files become the same instances, sent as predict (or explain) requests, and come back as the
same output lines; with --explain each line gains the instance's attributions."""

from __future__ import annotations

import base64
import math

import numpy as np

from dataformat import tables
from dataformat.errors import UserError
from trainer.vertex import endpoints
from trainer.vertex.deploy import read_export

SERVING_DEFAULT = "serving_default"


class OnlineModel:
    """The endpoint's model (the first it serves), as trainer.predict.Model: its metadata, and predict()."""

    def __init__(self, endpoint: str, explain: bool):
        endpoints.parse_endpoint(endpoint)
        deployed = endpoints.get_endpoint(endpoint).get("deployedModels") or []
        if not deployed:
            raise UserError(f"--endpoint {endpoint}: no model is deployed there (qt-deploy deploys one)")
        model = endpoints.get_model(deployed[0]["model"])
        export = read_export(model["artifactUri"])
        self.endpoint, self.explain, self.metadata = endpoint, explain, export.metadata
        self.takes = export.serving_input
        # The local signature each input file goes to -> what the endpoint's serving_default takes.
        local = {"numbers": "serving_default", "image_bytes": "image_bytes:serving_default"}.get(self.takes)
        self.signatures = {local} if local else set()
        self.numbers_signature = "serving_default" if self.takes == "numbers" else "numbers:serving_default"

    def predict(self, signature: str, values, names: list[str]) -> list[dict]:
        if signature not in self.signatures:
            raise UserError(f"{names[0]}: the endpoint's model takes {self.takes} (its --serving-input), not this")
        instances = [self._instance(value, name) for value, name in zip(values, names)]
        answer = endpoints.predict(self.endpoint, instances, self.explain)
        lines = [dict(sorted(prediction.items())) for prediction in answer["predictions"]]
        if self.explain:
            for line, explanation in zip(lines, answer.get("explanations", [])):
                line["attributions"] = explanation["attributions"][0]["featureAttributions"]
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
