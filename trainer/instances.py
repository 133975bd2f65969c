"""A predict request's instances, as TF Serving's REST API (which Vertex AI's prebuilt image runs) takes them:
checked as such a server checks them, and answered by an exported model."""

from __future__ import annotations

import base64
import json

from dataformat import tables
from dataformat.errors import UserError
from trainer.exported_model import DEFAULT_SIGNATURE, Model
from trainer.input_warnings import warned


def respond(model: Model, request: dict) -> dict:
    """The response body a TF Serving / Vertex AI server returns for a predict request body."""
    if not isinstance(request, dict) or not isinstance(request.get("instances"), list) or not request["instances"]:
        raise UserError('--instances-json: expected {"instances": [...]} with at least one instance')
    signature = request.get("signature_name", DEFAULT_SIGNATURE)
    if signature not in model.signatures:
        raise UserError(f"--instances-json: the model has no signature {signature!r}")
    names = [f"--instances-json: instance {i}" for i in range(len(request["instances"]))]
    numbers = signature == model.numbers_signature
    if model.metadata.is_table and numbers:  # rows of named columns, as they are, odd dates and numbers warned of
        inputs = tables.request_inputs(model.metadata.columns, model.metadata.key_column)
        instances = [named(instance, inputs) for instance in request["instances"]]
        for instance, name in zip(instances, names):
            problem = served_problem(instance, inputs)
            if problem:
                raise UserError(f"{name}: {problem}")
        instances = [_as_text(instance, name) for instance, name in zip(instances, names)]
        rows = [row for _, row in warned(zip(names, instances), "--instances-json", model)]
        return {"predictions": model.predict(signature, rows, names)}
    input_name = model.input_name(signature)
    values = [_instance_value(instance, input_name, i) for i, instance in enumerate(request["instances"])]
    if numbers:
        values = model.values(values, "--instances-json")
    key = model.metadata.key_column
    keys = [str(instance.get(key, "")) if isinstance(instance, dict) else "" for instance in request["instances"]]
    return {"predictions": model.predict(signature, values, names, keys if key else None)}


def named(instance, inputs: dict[str, bool]):
    """An instance of a signature of one input, sent bare ("a review", as TF Serving takes it there), as
    {input: value}; any other as it is."""
    if len(inputs) == 1 and not isinstance(instance, dict):
        return {next(iter(inputs)): instance}
    return instance


def served_problem(instance, inputs: dict[str, bool]) -> str | None:
    """Why TF Serving's row format, which Vertex AI's prebuilt image runs, would refuse an instance of named inputs
    (`inputs`: each name, and whether it takes a string), or None. It takes an object of exactly the signature's
    inputs, a string for a string input and a number for another, and no null; qt-predict's files are read more
    freely (a column left out is missing), but a request or a batch prediction's line is sent as it is."""
    if not isinstance(instance, dict):
        return f"expected an object of the signature's inputs ({', '.join(inputs)})"
    lacking = [name for name in inputs if name not in instance]
    others = [name for name in instance if name not in inputs]
    if lacking or others:
        said = [f"lacks {', '.join(map(repr, lacking))}"] * bool(lacking) + [
            f"has {', '.join(map(repr, others))}, no input of the model's"
        ] * bool(others)
        return f"{'; '.join(said)}: a server takes exactly the signature's inputs, {', '.join(inputs)}"
    for name, text in inputs.items():
        value = instance[name]
        if value is None and text:
            return f'{name!r} is null, which a server refuses; send "" for a missing value'
        if value is None:
            return (
                f"{name!r} is null, which a server refuses, and JSON has no NaN for a missing number; a model trained "
                "with --serving-input examples takes tf.Example records, where a feature left out is missing"
            )
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        string = isinstance(value, str) or _is_b64(value)  # TF Serving decodes {"b64": ...} to a string's bytes
        if not (string if text else number):
            wanted = "a string" if text else "a number"
            return f"{name!r}: a server takes {wanted} there, not {json.dumps(value)}"
    return None


def _as_text(instance: dict, name: str) -> dict:
    """A table's instance with each {"b64": ...} value, which TF Serving decodes to a string input's bytes, as text."""
    return {
        key: _b64_bytes(value, name).decode("utf-8", "replace") if _is_b64(value) else value
        for key, value in instance.items()
    }


def _is_b64(value) -> bool:
    return isinstance(value, dict) and set(value) == {"b64"}


def _b64_bytes(value: dict, name: str) -> bytes:
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (ValueError, TypeError):
        raise UserError(f"{name}: b64 is not valid base64") from None


def _instance_value(instance, input_name: str, index: int):
    """One instance's value: a bare value, or {input_name: value}; {"b64": ...} is bytes."""
    value = instance.get(input_name, instance) if isinstance(instance, dict) else instance
    if _is_b64(value):
        return _b64_bytes(value, f"--instances-json: instance {index}")
    if isinstance(value, dict):
        raise UserError(f"--instances-json: instance {index}: expected a value or {{{input_name!r}: value}}")
    return value
