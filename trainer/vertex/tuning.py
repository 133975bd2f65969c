"""A job shape's tuning section, checked, and the HyperparameterTuningJob's StudySpec made from it:
the metric to optimize, the trainer flags to search (a parameter may have conditional ones, tried
only for some of its values), early stopping, and the trial counts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from trainer import metrics
from trainer.config import Config
from trainer.vertex.fields import Invalid, check_fields, is_a

FIELDS = {
    "metric": str,
    "goal": str,
    "max_trial_count": int,
    "parallel_trial_count": int,
    "max_failed_trial_count": int,
    "algorithm": str,
    "early_stopping": str,
    "measurement_selection": str,
    "parameters": dict,
}
REQUIRED = ("metric", "goal", "max_trial_count", "parallel_trial_count", "parameters")

PARAMETER_FIELDS = {
    "type": str,
    "min": float,
    "max": float,
    "values": list,
    "scale": str,
    "when": list,
    "conditional": dict,
}

# StudySpec and the messages in it, as on https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec
# Parameter type -> its value spec in StudySpec.ParameterSpec and the YAML fields that fill it.
PARAMETER_TYPES = {
    "DOUBLE": ("doubleValueSpec", ("min", "max")),
    "INTEGER": ("integerValueSpec", ("min", "max")),
    "DISCRETE": ("discreteValueSpec", ("values",)),
    "CATEGORICAL": ("categoricalValueSpec", ("values",)),
}
VALUE_NAMES = {"min": "minValue", "max": "maxValue", "values": "values"}
# A conditional parameter's condition on its parent's value, by the parent's type.
PARENT_CONDITIONS = {
    "INTEGER": "parentIntValues",
    "DISCRETE": "parentDiscreteValues",
    "CATEGORICAL": "parentCategoricalValues",
}
# The early-stopping rules of StudySpec (its automated_stopping_spec), by the name a shape uses.
EARLY_STOPPING = {"median": "medianAutomatedStoppingSpec", "decay_curve": "decayCurveStoppingSpec"}
# Which of a trial's measurements counts (StudySpec.measurementSelectionType).
MEASUREMENTS = {"last": "LAST_MEASUREMENT", "best": "BEST_MEASUREMENT"}

CHOICES = {
    "goal": ("MAXIMIZE", "MINIMIZE"),
    "algorithm": ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"),
    "early_stopping": tuple(EARLY_STOPPING),
    "measurement_selection": tuple(MEASUREMENTS),
    "type": tuple(PARAMETER_TYPES),
    "scale": ("UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"),
}

TRAINER_FLAGS = tuple(item.name.replace("_", "-") for item in dataclasses.fields(Config))


def check(tuning: Any) -> dict:
    """The tuning section, fully checked; Invalid names the field otherwise."""
    check_fields(tuning, "tuning", FIELDS, REQUIRED, CHOICES)
    trials, parallel = tuning["max_trial_count"], tuning["parallel_trial_count"]
    if trials < 1:
        raise Invalid("tuning.max_trial_count", f"{trials} is not allowed: give at least 1")
    if not 1 <= parallel <= trials:
        raise Invalid("tuning.parallel_trial_count", f"{parallel} is not allowed: give 1 to max_trial_count")
    _check_metric(tuning["metric"], tuning["goal"])
    if tuning.get("max_failed_trial_count", 0) < 0:
        raise Invalid(
            "tuning.max_failed_trial_count", f"{tuning['max_failed_trial_count']} is not allowed: give 0 or more"
        )
    if not tuning["parameters"]:
        raise Invalid("tuning.parameters", "give at least one trainer flag to tune")
    seen: set[str] = set()
    for name, parameter in tuning["parameters"].items():
        _check_parameter(f"tuning.parameters.{name}", name, parameter, None, seen)
    if tuning.get("algorithm") == "GRID_SEARCH":  # a grid needs values to list: DOUBLE ranges have none
        for where, _, parameter in every_parameter(tuning["parameters"]):
            if parameter["type"] == "DOUBLE":
                raise Invalid(f"{where}.type", "GRID_SEARCH takes INTEGER, DISCRETE or CATEGORICAL parameters")
    return tuning


def _check_metric(metric: str, goal: str) -> None:
    """The metric must be one the trainer's evaluation reports (submit passes it to every trial as
    --tuning-metric), and the goal its direction: lower is better only for the losses."""
    if not metrics.CHOOSABLE.fullmatch(metric):
        raise Invalid("tuning.metric", f"{metric!r} is not reported by the trainer; use {metrics.CHOOSABLE_TEXT}")
    direction = metrics.goal(metric)
    if goal != direction:
        raise Invalid("tuning.goal", f"{goal} does not fit {metric}: use {direction}")


def _check_parameter(where: str, name: str, parameter: Any, parent: dict | None, seen: set[str]) -> None:
    # Vertex passes --NAME=VALUE to each trial, and the trainer ignores flags it does not know.
    if name not in TRAINER_FLAGS:
        raise Invalid(where, "not a flag of python -m trainer.task (spell it as the flag, e.g. learning-rate)")
    if name == "tuning-metric":  # trials would report a metric the study does not read
        raise Invalid(where, "not tunable: tuning.metric sets it")
    if name in seen:
        raise Invalid(where, "tuned twice: a flag appears once among the parameters")
    seen.add(name)
    check_fields(parameter, where, PARAMETER_FIELDS, ("type", "when") if parent else ("type",), CHOICES)
    _, needed = PARAMETER_TYPES[parameter["type"]]
    for key in VALUE_NAMES:
        if key in needed and key not in parameter:
            raise Invalid(f"{where}.{key}", f"missing ({parameter['type']} parameters need {' and '.join(needed)})")
        if key not in needed and key in parameter:
            raise Invalid(f"{where}.{key}", f"not used by {parameter['type']} parameters")
    if parameter["type"] == "CATEGORICAL":
        _check_categories(where, parameter)
    else:
        _check_numbers(where, parameter)
    if parent is None and "when" in parameter:
        raise Invalid(f"{where}.when", "only for a parameter under another's conditional:")
    if parent is not None:
        _check_condition(where, parameter["when"], parent)
    if "conditional" in parameter:
        if parameter["type"] not in PARENT_CONDITIONS:
            raise Invalid(
                f"{where}.conditional", f"not for {parameter['type']} parameters (only {', '.join(PARENT_CONDITIONS)})"
            )
        for child, spec in parameter["conditional"].items():
            _check_parameter(f"{where}.conditional.{child}", child, spec, parameter, seen)


def _check_categories(where: str, parameter: dict) -> None:
    values = parameter["values"]
    if not values or not all(isinstance(v, str) for v in values) or len(set(values)) != len(values):
        raise Invalid(where, "CATEGORICAL values must be different strings (quote numbers: '64')")
    if "scale" in parameter:
        raise Invalid(f"{where}.scale", "not used by CATEGORICAL parameters")


def _check_numbers(where: str, parameter: dict) -> None:
    values = [parameter["min"], parameter["max"]] if "min" in parameter else parameter["values"]
    if not values or not all(is_a(v, float) for v in values) or values != sorted(set(values)):
        raise Invalid(
            where,
            "min must be a number below max"
            if "min" in parameter
            else "values must be different numbers, in increasing order",
        )
    if parameter["type"] == "INTEGER" and not all(isinstance(v, int) for v in values):
        raise Invalid(where, "an INTEGER parameter needs whole-number min and max")
    if parameter.get("scale") == "UNIT_LOG_SCALE" and values[0] <= 0:
        raise Invalid(f"{where}.scale", "UNIT_LOG_SCALE needs values above 0")


def _check_condition(where: str, when: list, parent: dict) -> None:
    """`when` lists values the parent can take: some of its values, or whole numbers in its range."""
    if parent["type"] == "INTEGER":
        fits = all(isinstance(v, int) and not isinstance(v, bool) and parent["min"] <= v <= parent["max"] for v in when)
    else:
        fits = all(not isinstance(v, bool) and v in parent["values"] for v in when)
    if not when or not fits:
        raise Invalid(f"{where}.when", f"{when!r}: give values of the parent parameter")


def every_parameter(parameters: dict, where: str = "tuning.parameters") -> Iterator[tuple[str, str, dict]]:
    """(where in the shape, flag name, parameter) of every parameter, conditional ones too."""
    for name, parameter in parameters.items():
        yield f"{where}.{name}", name, parameter
        yield from every_parameter(parameter.get("conditional", {}), f"{where}.{name}.conditional")


def trial_values(parameter: dict) -> list:
    """Values a study may give a trial: a range's ends (and, for DOUBLE, a number between them with a fraction, as
    a whole-number flag would be given), or the values."""
    if parameter["type"] == "DOUBLE":
        low, high = parameter["min"], parameter["max"]
        return [low, low + (high - low) * 0.37, high]
    if parameter["type"] == "INTEGER":
        return [parameter["min"], parameter["max"]]
    return parameter["values"]


def study_spec(tuning: dict) -> dict:
    """The StudySpec of a tuning section: the metric, the parameters, and how trials are chosen and stopped."""
    spec = {
        "metrics": [{"metricId": tuning["metric"], "goal": tuning["goal"]}],
        "parameters": [_parameter_spec(name, parameter) for name, parameter in tuning["parameters"].items()],
    }
    if "algorithm" in tuning:
        spec["algorithm"] = tuning["algorithm"]
    if "early_stopping" in tuning:
        # The rules' one option, useElapsedDuration, stays false: they compare trials by step.
        spec[EARLY_STOPPING[tuning["early_stopping"]]] = {"useElapsedDuration": False}
    if "measurement_selection" in tuning:
        spec["measurementSelectionType"] = MEASUREMENTS[tuning["measurement_selection"]]
    return spec


def _parameter_spec(name: str, parameter: dict) -> dict:
    value_spec, keys = PARAMETER_TYPES[parameter["type"]]
    spec: dict[str, Any] = {"parameterId": name, value_spec: {VALUE_NAMES[key]: parameter[key] for key in keys}}
    if "scale" in parameter:
        spec["scaleType"] = parameter["scale"]
    if "conditional" in parameter:
        condition = PARENT_CONDITIONS[parameter["type"]]
        spec["conditionalParameterSpecs"] = [
            {"parameterSpec": _parameter_spec(child, sub), condition: {"values": sub["when"]}}
            for child, sub in parameter["conditional"].items()
        ]
    return spec


def request_body(tuning: dict, display_name: str, trial_job_spec: dict) -> dict:
    """The HyperparameterTuningJob body (the job options' fields are added by the caller)."""
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs
    body = {
        "displayName": display_name,
        "studySpec": study_spec(tuning),
        "maxTrialCount": tuning["max_trial_count"],
        "parallelTrialCount": tuning["parallel_trial_count"],
        "trialJobSpec": trial_job_spec,
    }
    if "max_failed_trial_count" in tuning:
        body["maxFailedTrialCount"] = tuning["max_failed_trial_count"]
    return body
