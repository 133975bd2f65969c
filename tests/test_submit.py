"""python -m trainer.vertex.submit and qt-batch-predict: job shapes, job options and tuning, request bodies
checked against the Vertex AI REST reference (and the client library's own messages), dry runs, one-line
errors, a real sdist build, and creation against a local stand-in of the API (fake_vertex.py). Nothing here
leaves 127.0.0.1."""

import contextlib
import glob
import json
import logging
import os
import tarfile
import tempfile
from pathlib import Path

import pytest
import yaml

from trainer.vertex import batch, jobs, submit

CONFIGS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "configs", "jobs", "*.yaml")))
CONFIGS_BY_NAME = {os.path.splitext(os.path.basename(path))[0]: path for path in CONFIGS}

# The Vertex AI v1 REST reference: per message, (the fields it may have, the fields it must have), as on the
# page above it. Output-only fields are left out.
MESSAGES = {
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs
    "CustomJob": ({"displayName", "jobSpec", "labels", "encryptionSpec"}, {"displayName", "jobSpec"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs
    "HyperparameterTuningJob": (
        {
            "displayName",
            "studySpec",
            "maxTrialCount",
            "parallelTrialCount",
            "maxFailedTrialCount",
            "trialJobSpec",
            "labels",
            "encryptionSpec",
        },
        {"displayName", "studySpec", "maxTrialCount", "parallelTrialCount", "trialJobSpec"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.batchPredictionJobs
    "BatchPredictionJob": (
        {
            "displayName",
            "model",
            "unmanagedContainerModel",
            "inputConfig",
            "instanceConfig",
            "modelParameters",
            "outputConfig",
            "dedicatedResources",
            "serviceAccount",
            "manualBatchTuningParameters",
            "generateExplanation",
            "explanationSpec",
            "labels",
            "encryptionSpec",
            "disableContainerLogging",
        },
        {"displayName", "inputConfig", "outputConfig"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.batchPredictionJobs#InputConfig
    "InputConfig": ({"gcsSource", "bigquerySource", "instancesFormat"}, {"instancesFormat"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/GcsSource
    "GcsSource": ({"uris"}, {"uris"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.batchPredictionJobs#OutputConfig
    "OutputConfig": ({"gcsDestination", "bigqueryDestination", "predictionsFormat"}, {"predictionsFormat"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/GcsDestination
    "GcsDestination": ({"outputUriPrefix"}, {"outputUriPrefix"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.batchPredictionJobs#BatchDedicatedResources
    "BatchDedicatedResources": ({"machineSpec", "startingReplicaCount", "maxReplicaCount"}, {"machineSpec"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/EncryptionSpec
    "EncryptionSpec": ({"kmsKeyName"}, {"kmsKeyName"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec
    "CustomJobSpec": (
        {
            "workerPoolSpecs",
            "scheduling",
            "serviceAccount",
            "network",
            "reservedIpRanges",
            "baseOutputDirectory",
            "tensorboard",
            "enableWebAccess",
            "enableDashboardAccess",
        },
        {"workerPoolSpecs"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#Scheduling
    "Scheduling": ({"timeout", "restartJobOnWorkerRestart", "strategy", "disableRetries", "maxWaitDuration"}, set()),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#WorkerPoolSpec
    "WorkerPoolSpec": ({"containerSpec", "pythonPackageSpec", "machineSpec", "replicaCount", "diskSpec"}, set()),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/MachineSpec
    "MachineSpec": ({"machineType", "acceleratorType", "acceleratorCount", "tpuTopology"}, {"machineType"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/DiskSpec
    "DiskSpec": ({"bootDiskType", "bootDiskSizeGb"}, set()),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#ContainerSpec
    "ContainerSpec": ({"imageUri", "command", "args", "env"}, {"imageUri"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#PythonPackageSpec
    "PythonPackageSpec": (
        {"executorImageUri", "packageUris", "pythonModule", "args", "env"},
        {"executorImageUri", "packageUris", "pythonModule"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec
    "StudySpec": (
        {
            "metrics",
            "parameters",
            "algorithm",
            "observationNoise",
            "measurementSelectionType",
            "decayCurveStoppingSpec",
            "medianAutomatedStoppingSpec",
            "convexAutomatedStoppingSpec",
        },
        {"metrics", "parameters"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#MetricSpec
    "MetricSpec": ({"metricId", "goal"}, {"metricId", "goal"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#DecayCurveAutomatedStoppingSpec
    "DecayCurveAutomatedStoppingSpec": ({"useElapsedDuration"}, set()),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#MedianAutomatedStoppingSpec
    "MedianAutomatedStoppingSpec": ({"useElapsedDuration"}, set()),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#ParameterSpec
    "ParameterSpec": (
        {
            "parameterId",
            "doubleValueSpec",
            "integerValueSpec",
            "categoricalValueSpec",
            "discreteValueSpec",
            "scaleType",
            "conditionalParameterSpecs",
        },
        {"parameterId"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#DoubleValueSpec
    "DoubleValueSpec": ({"minValue", "maxValue", "defaultValue"}, {"minValue", "maxValue"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#IntegerValueSpec
    "IntegerValueSpec": ({"minValue", "maxValue", "defaultValue"}, {"minValue", "maxValue"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#DiscreteValueSpec
    "DiscreteValueSpec": ({"values", "defaultValue"}, {"values"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#CategoricalValueSpec
    "CategoricalValueSpec": ({"values", "defaultValue"}, {"values"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#ConditionalParameterSpec
    "ConditionalParameterSpec": (
        {"parameterSpec", "parentDiscreteValues", "parentIntValues", "parentCategoricalValues"},
        {"parameterSpec"},
    ),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#DiscreteValueCondition
    "DiscreteValueCondition": ({"values"}, {"values"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#IntValueCondition
    "IntValueCondition": ({"values"}, {"values"}),
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#CategoricalValueCondition
    "CategoricalValueCondition": ({"values"}, {"values"}),
}
# The message an object-valued field holds (a list field holds a list of them).
FIELD_MESSAGES = {
    "jobSpec": "CustomJobSpec",
    "trialJobSpec": "CustomJobSpec",
    "workerPoolSpecs": "WorkerPoolSpec",
    "machineSpec": "MachineSpec",
    "diskSpec": "DiskSpec",
    "containerSpec": "ContainerSpec",
    "pythonPackageSpec": "PythonPackageSpec",
    "baseOutputDirectory": "GcsDestination",
    "studySpec": "StudySpec",
    "metrics": "MetricSpec",
    "parameters": "ParameterSpec",
    "doubleValueSpec": "DoubleValueSpec",
    "integerValueSpec": "IntegerValueSpec",
    "discreteValueSpec": "DiscreteValueSpec",
    "categoricalValueSpec": "CategoricalValueSpec",
    "conditionalParameterSpecs": "ConditionalParameterSpec",
    "parameterSpec": "ParameterSpec",
    "parentDiscreteValues": "DiscreteValueCondition",
    "parentIntValues": "IntValueCondition",
    "parentCategoricalValues": "CategoricalValueCondition",
    "decayCurveStoppingSpec": "DecayCurveAutomatedStoppingSpec",
    "medianAutomatedStoppingSpec": "MedianAutomatedStoppingSpec",
    "scheduling": "Scheduling",
    "encryptionSpec": "EncryptionSpec",
    "inputConfig": "InputConfig",
    "gcsSource": "GcsSource",
    "outputConfig": "OutputConfig",
    "gcsDestination": "GcsDestination",
    "dedicatedResources": "BatchDedicatedResources",
}
ENUMS = {
    "goal": {"MAXIMIZE", "MINIMIZE"},
    "scaleType": {"UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"},
    "algorithm": {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"},
    "strategy": {"STRATEGY_UNSPECIFIED", "ON_DEMAND", "LOW_COST", "STANDARD", "SPOT", "FLEX_START"},
    "measurementSelectionType": {"LAST_MEASUREMENT", "BEST_MEASUREMENT"},
    "instancesFormat": {"jsonl", "csv", "tf-record", "tf-record-gzip", "file-list", "bigquery"},
    "predictionsFormat": {"jsonl", "csv", "bigquery"},
}


def check_message(value, message, where):
    """Walks a body: every key allowed and every required key present, all the way down."""
    allowed, required = MESSAGES[message]
    assert isinstance(value, dict), f"{where}: {message} must be an object"
    assert set(value) <= allowed, f"{where}: {set(value) - allowed} not fields of {message}"
    if value or message != "WorkerPoolSpec":  # an empty pool is how Vertex skips one
        assert required <= set(value), f"{where}: {message} lacks {required - set(value)}"
    for key, field in value.items():
        assert field not in (None, "", []) and (field != {} or key.endswith("StoppingSpec")), f"{where}.{key} is empty"
        if key in ENUMS:
            assert field in ENUMS[key], f"{where}.{key}: {field!r}"
        if key in FIELD_MESSAGES:
            for index, item in enumerate(field if isinstance(field, list) else [field]):
                check_message(item, FIELD_MESSAGES[key], f"{where}.{key}[{index}]")


def check_with_library(body, message):
    """The client library's own message refuses any field the API does not have."""
    from google.cloud import aiplatform_v1

    getattr(aiplatform_v1, message).from_json(json.dumps(body))


def check_body(body, message):
    """A request body checked both ways: against the reference's fields, and by the library."""
    check_message(body, message, message)
    check_with_library(body, message)


def dry_run(capsys, *flags, trainer_args=("--data-dir", "gs://b/data", "--train-steps", "500")):
    """Runs `python -m trainer.vertex.submit --dry-run`; returns (POST line, body, gcloud command)."""
    argv = ["--dry-run", "--project", "p", "--job-dir", "gs://b/runs/x", *flags, "--", *trainer_args]
    assert submit.main(argv) == 0
    request, gcloud = capsys.readouterr().out.strip().split("\n\n")
    post, body = request.split("\n", 1)
    return post, json.loads(body), gcloud


def pools_of(body):
    return (body.get("jobSpec") or body["trialJobSpec"])["workerPoolSpecs"]


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Any upload or credential lookup fails the test: a dry run must touch neither. The gcloud
    --config files it writes land in tmp_path."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a dry run must not upload or look for credentials")

    monkeypatch.setattr(submit.gcs, "atomic_writer", forbidden)
    monkeypatch.setattr("google.auth.default", forbidden)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.mark.parametrize("code", [["--image", "IMG"], ["--executor-image", "EXE", "--staging-dir", "gs://b/st"]])
@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_shipped_shapes_give_documented_bodies(capsys, offline, path, code):
    post, body, _ = dry_run(capsys, "--job-config", path, *code)
    tuning = "tuning" in yaml.safe_load(Path(path).read_text())
    message, collection = (
        ("HyperparameterTuningJob", "hyperparameterTuningJobs") if tuning else ("CustomJob", "customJobs")
    )
    assert (
        post == f"POST https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/{collection}"
    )
    check_body(body, message)
    job_spec = body["trialJobSpec"] if tuning else body["jobSpec"]
    assert job_spec["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/runs/x"}
    for pool in pools_of(body):
        assert pool == {} or len({"containerSpec", "pythonPackageSpec"} & set(pool)) == 1


def test_towers_up_to_the_gpus_of_a_machine_are_taken(capsys, offline):
    path = CONFIGS_BY_NAME["gpu-4"]
    for towers in ("--num-towers=4", "--num-towers=auto"):
        _, body, _ = dry_run(
            capsys, "--job-config", path, "--image", "I", trainer_args=("--data-dir", "gs://b/d", towers)
        )
        assert pools_of(body)[0]["machineSpec"]["acceleratorCount"] == 4
    assert submit.main(["--dry-run", *FLAGS[:4], "--job-config", path, "--image", "I", "--", "--num-towers", "8"]) == 2


def test_trainer_args_pass_through_after_the_job_dir(capsys, offline):
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME["distributed"], "--image", "IMG")
    for pool in pools_of(body):
        assert pool["containerSpec"]["args"] == [
            "--job-dir",
            "gs://b/runs/x",
            "--data-dir",
            "gs://b/data",
            "--train-steps",
            "500",
        ]


def test_tuning_trials_get_the_metric_to_report_and_no_shared_job_dir(capsys, offline):
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME["hptuning"], "--image", "IMG")
    (pool,) = pools_of(body)
    assert pool["containerSpec"]["args"] == [
        "--tuning-metric",
        "accuracy",
        "--data-dir",
        "gs://b/data",
        "--train-steps",
        "500",
    ]
    assert body["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    learning_rate, batch_size, hidden_units = body["studySpec"]["parameters"]
    assert learning_rate["parameterId"] == "learning-rate" and learning_rate["scaleType"] == "UNIT_LOG_SCALE"
    assert batch_size == {"parameterId": "batch-size", "discreteValueSpec": {"values": [64, 128, 256]}}
    assert hidden_units == {
        "parameterId": "hidden-units",
        "categoricalValueSpec": {"values": ["128", "256", "256,128"]},
    }
    assert body["studySpec"]["decayCurveStoppingSpec"] == {"useElapsedDuration": False}
    assert body["studySpec"]["measurementSelectionType"] == "BEST_MEASUREMENT"


def test_pools_in_vertex_order_chief_first(capsys, offline):
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME["distributed"], "--image", "IMG")
    shape = yaml.safe_load(Path(CONFIGS_BY_NAME["distributed"]).read_text())
    pools = pools_of(body)
    assert [pool["machineSpec"]["machineType"] for pool in pools] == [
        shape[name]["machine_type"] for name in jobs.POOLS
    ]
    assert [pool["replicaCount"] for pool in pools] == [shape[name]["replica_count"] for name in jobs.POOLS]
    assert pools[0]["replicaCount"] == 1


def test_a_pool_left_out_before_a_given_one_is_empty(tmp_path, capsys, offline):
    path = tmp_path / "eval.yaml"
    path.write_text(
        "chief: {machine_type: n1-standard-4, replica_count: 1}\n"
        "evaluator: {machine_type: e2-standard-4, replica_count: 1, boot_disk_size_gb: 200}\n"
    )
    _, body, _ = dry_run(capsys, "--job-config", str(path), "--image", "IMG")
    chief, workers, parameter_servers, evaluator = pools_of(body)
    assert workers == parameter_servers == {}
    assert evaluator["diskSpec"] == {"bootDiskSizeGb": 200}
    check_message(body, "CustomJob", "CustomJob")


def test_image_runs_the_container_and_executor_image_the_package(capsys, caplog, offline):
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME["gpu"], "--image", "IMG")
    (pool,) = pools_of(body)
    assert pool["containerSpec"]["imageUri"] == "IMG" and "pythonPackageSpec" not in pool
    assert pool["machineSpec"] == {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 1,
    }

    flags = ("--executor-image", "EXE", "--staging-dir", "gs://b/staging/", "--display-name", "my job")
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME["gpu"], *flags)
    (pool,) = pools_of(body)
    package = pool["pythonPackageSpec"]
    assert "containerSpec" not in pool
    assert package["executorImageUri"] == "EXE" and package["pythonModule"] == "trainer.task"
    assert package["packageUris"] == [f"gs://b/staging/my-job/{submit.package_file()}"]
    assert package["args"][:2] == ["--job-dir", "gs://b/runs/x"]
    assert f"A dry run builds and uploads no package: the gcloud command expects {package['packageUris'][0]}" in (
        caplog.text
    )  # which it names, as if it were there


@pytest.mark.parametrize("name, group", [("cpu", "custom-jobs"), ("hptuning", "hp-tuning-jobs")])
def test_dry_run_prints_the_gcloud_command_and_writes_its_config(capsys, offline, name, group):
    _, body, gcloud = dry_run(
        capsys, "--job-config", CONFIGS_BY_NAME[name], "--image", "IMG", "--display-name", "run 1"
    )
    prefix = f"gcloud ai {group} create --project=p --region=us-central1 '--display-name=run 1' --config="
    assert gcloud.startswith(prefix)
    config_path = gcloud[len(prefix) :]
    with open(config_path) as file:
        config = yaml.safe_load(file)
    assert config == (body["jobSpec"] if name == "cpu" else body)


GOOD_POOL = "chief:\n  machine_type: n1-standard-8\n  replica_count: 1\n"


@pytest.mark.parametrize(
    "text, message",
    [
        ("chief:\n  replica_count: 1\n", "chief.machine_type: missing"),
        (GOOD_POOL + "  machine_typo: x\n", "chief.machine_typo: unknown field"),
        ("workers:\n  machine_type: n1-standard-8\n  replica_count: 2\n", "chief: missing"),
        (GOOD_POOL + "evaluators: {}\n", "evaluators: unknown field"),
        ("chief:\n  machine_type: n1-standard-7\n  replica_count: 1\n", "chief.machine_type: unknown machine type"),
        (
            GOOD_POOL + "  accelerator_type: NVIDIA_TESLA_T5\n  accelerator_count: 1\n",
            "chief.accelerator_type: unknown",
        ),
        (GOOD_POOL + "  accelerator_type: NVIDIA_L4\n  accelerator_count: 1\n", "n1-standard-8 cannot take NVIDIA_L4"),
        (
            "chief:\n  machine_type: e2-standard-8\n  replica_count: 1\n"
            "  accelerator_type: NVIDIA_TESLA_T4\n  accelerator_count: 1\n",
            "e2-standard-8 cannot take NVIDIA_TESLA_T4 (it takes no accelerators)",
        ),
        (GOOD_POOL + "  accelerator_type: NVIDIA_TESLA_T4\n  accelerator_count: 3\n", "chief.accelerator_count: 3 x"),
        (
            "chief:\n  machine_type: a2-highgpu-2g\n  replica_count: 1\n"
            "  accelerator_type: NVIDIA_TESLA_A100\n  accelerator_count: 1\n",
            "chief.accelerator_count: 1 x NVIDIA_TESLA_A100 is not allowed on a2-highgpu-2g (allowed: 2)",
        ),
        (GOOD_POOL + "  accelerator_count: 1\n", "chief.accelerator_type: missing"),
        ("chief:\n  machine_type: n1-standard-8\n  replica_count: 2\n", "chief.replica_count: 2 is not allowed"),
        (GOOD_POOL + "workers:\n  machine_type: n1-standard-8\n  replica_count: 0\n", "workers.replica_count: 0"),
        (GOOD_POOL + "evaluator:\n  machine_type: n1-standard-8\n  replica_count: 2\n", "evaluator.replica_count: 2"),
        (
            "chief:\n  machine_type: n1-standard-8\n  replica_count: yes\n",
            "chief.replica_count: True is not a whole number",
        ),
        (GOOD_POOL + "  boot_disk_type: floppy\n", "chief.boot_disk_type: 'floppy' is not one of"),
        (
            GOOD_POOL
            + "tuning:\n  metric: accuracy\n  goal: MAXIMIZE\n  max_trial_count: 4\n  parallel_trial_count: 2\n",
            "tuning.parameters: missing",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 5,"
            " parameters: {dropout: {type: DOUBLE, min: 0.1, max: 0.5}}}\n",
            "tuning.parallel_trial_count: 5 is not allowed",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: BEST, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {dropout: {type: DOUBLE, min: 0.1, max: 0.5}}}\n",
            "tuning.goal: 'BEST' is not one of MAXIMIZE, MINIMIZE",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {learning_rate: {type: DOUBLE, min: 0.1, max: 0.5}}}\n",
            "tuning.parameters.learning_rate: not a flag of python -m trainer.task",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {learning-rate: {type: DOUBLE, min: 0, max: 0.5, scale: UNIT_LOG_SCALE}}}\n",
            "tuning.parameters.learning-rate.scale: UNIT_LOG_SCALE needs values above 0",
        ),
        (
            GOOD_POOL + "tuning: {metric: f1, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {learning-rate: {type: DOUBLE, min: 0.001, max: 0.5}}}\n",
            "tuning.metric: 'f1' is not reported by the trainer; use accuracy, loss, log_loss, auc, "
            "auc_precision_recall, precision, recall, recall/class_N or precision/class_N",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {batch-size: {type: INTEGER, min: 32}}}\n",
            "tuning.parameters.batch-size.max: missing",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {batch-size: {type: DISCRETE, values: [256, 64]}}}\n",
            "tuning.parameters.batch-size: values must be different numbers, in increasing order",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {batch-size: {type: DISCRETE, values: [64, 64]}}}\n",
            "tuning.parameters.batch-size: values must be different numbers, in increasing order",  # "(min below max)"
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {dropout: {type: DOUBLE, min: 0.5, max: 0.1}}}\n",
            "tuning.parameters.dropout: min must be a number below max",
        ),
        ("- chief\n", "top level: expected a mapping"),
        ("chief: [\n", "not valid YAML: line 2, column 1"),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {batch-size: {type: DISCRETE, values: [32, 64]}, batch-size: {type: INTEGER}}}\n",
            "line 4, column 150: 'batch-size' is given twice",  # the second went unread: the last one won, silently
        ),
        ("chief: {}\n".encode("utf-16"), "not UTF-8 text"),  # Notepad's Unicode: a traceback before
    ],
)
def test_bad_shape_is_one_line_naming_file_and_field(tmp_path, caplog, offline, text, message):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert (
        submit.main(["--dry-run", "--project", "p", "--job-dir", "gs://b/x", "--job-config", str(path), "--image", "I"])
        == 2
    )
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error.startswith(f"--job-config {path}: ") and message in error and "\n" not in error


FLAGS = ["--project", "p", "--job-dir", "gs://b/x", "--job-config", CONFIGS_BY_NAME["cpu"]]
DATA = ["--", "--data-dir", "gs://b/d"]  # the trainer's flags that every job needs


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--image", "I", "--executor-image", "E"], "not allowed with argument"),
        ([], "one of the arguments --image --executor-image is required"),
        (["--image", "I", "--job-dir", "runs/x"], "--job-dir runs/x: must be a gs:// path"),
        (["--executor-image", "E"], "--staging-dir is required with --executor-image"),
        (["--executor-image", "E", "--staging-dir", "/tmp/st"], "--staging-dir /tmp/st: must be a gs:// path"),
        (
            ["--image", "I", "--job-config", "configs/jobs/missing.yaml"],
            "--job-config configs/jobs/missing.yaml: cannot",
        ),
        (["--image", "I", "--", "--job-dir", "gs://b/y"], "--job-dir goes before --"),
        (["--image", "I", "--", "--job_dir=gs://b/y"], "--job-dir goes before --"),
        (
            ["--image", "I", "--job-config", CONFIGS_BY_NAME["hptuning"], "--", "--tuning-metric", "loss"],
            "--tuning-metric: set by tuning.metric in ",
        ),
        (["--image", "I", "--project", ""], "--project is required"),
        (["--image", "I", "--data-dir", "gs://b/d"], "--data-dir gs://b/d (the trainer's flags"),
        (
            ["--image", "I", "--", "--num-towers", "2", "--data-dir", "gs://b/d"],
            "cpu.yaml gives each chief machine 0 GPU(s)",
        ),
        # The trainer's flags are read here as the trainer reads them: a typo stops before the job's start-up.
        (["--image", "I", "--", "--lerning-rate", "0.1"], "unknown flag --lerning-rate: did you mean --learning-rate?"),
        (["--image", "I", "--", "--gpus", "3"], "--gpus (after --): not a flag of the trainer's"),
        (["--image", "I", "--", "--batch-size", "0"], "--batch-size 0: must be at least 1"),
        (["--image", "I", "--", "--xla", "false"], "--xla takes no value (false)"),
        (["--image", "I", "--", "--train-steps", "5"], "--data-dir or --train-files (after --) is required"),
        (["--image", "I", "--", "--data-dir", "data/mnist"], "--data-dir data/mnist (after --): must be a gs:// path"),
        (["--image", "I", "--", "--config", "my.yaml"], "--config my.yaml (after --): the job cannot read a local"),
        (["--image", "I", "--poll-secs", "-1"], "argument --poll-secs: -1 is not a positive number"),  # not a traceback
        (["--image", "I", "--poll-secs", "nan"], "argument --poll-secs: nan is not a positive number"),
        (
            ["--image", "I", "--kms-key", "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"],
            "in europe-west4, where the job runs in us-central1: Vertex AI takes a key of the job's region",
        ),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(caplog, offline, flags, message):
    flags = flags if "--" in flags else [*flags, *DATA]
    assert submit.main(["--dry-run", *FLAGS, *flags]) == 2  # the last of a repeated flag wins
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert message in error and "\n" not in error


def test_a_job_config_under_the_home_folder_is_read_as_the_shell_expands_it(offline, tmp_path, monkeypatch, capsys):
    """`--job-config '~/job.yaml'` said "cannot read", where the trainer's `--config '~/...'` read it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "job.yaml").write_text(Path(CONFIGS_BY_NAME["cpu"]).read_text())
    argv = ["--dry-run", "--project", "p", "--job-dir", "gs://b/x", "--job-config", "~/job.yaml", "--image", "I"]
    assert submit.main([*argv, *DATA]) == 0


@pytest.mark.slow
def test_sdist_holds_the_trainer_and_its_setup(tmp_path):
    tarball = submit.build_sdist(str(tmp_path))
    assert os.path.basename(tarball) == submit.package_file()
    top = os.path.basename(tarball)[: -len(".tar.gz")]
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    for member in (
        "setup.py",
        "README.md",
        "trainer/task.py",
        "trainer/vertex/jobs.py",
        "trainer/vertex/catalog.yaml",
        "dataformat/schema.py",
    ):
        assert f"{top}/{member}" in names


@pytest.fixture
def fake_cloud(monkeypatch, tmp_path, vertex):
    """Uploads land in tmp_path; jobs go to the Vertex AI stand-in."""
    uploads = {}

    @contextlib.contextmanager
    def atomic_writer(uri):
        local = tmp_path / "uploaded.tar.gz"
        with open(local, "wb") as file:
            yield file
        uploads[uri] = local

    monkeypatch.setattr(submit.gcs, "atomic_writer", atomic_writer)
    vertex.uploads = uploads
    return vertex


@pytest.mark.slow
def test_submit_uploads_the_package_then_creates_the_job(fake_cloud):
    flags = ["--executor-image", "EXE", "--staging-dir", "gs://b/st", "--display-name", "run", "--no-wait"]
    argv = [
        "--project",
        "p",
        "--region",
        "europe-west4",
        "--job-config",
        CONFIGS_BY_NAME["cpu"],
        "--job-dir",
        "gs://b/x",
    ]
    assert submit.main([*argv, *flags, "--", "--data-dir", "gs://b/d", "--train-steps", "9"]) == 0
    ((uri, local),) = fake_cloud.uploads.items()
    assert uri == f"gs://b/st/run/{submit.package_file()}"
    with tarfile.open(local) as archive:
        assert archive.getmember(f"{submit.package_file()[: -len('.tar.gz')]}/trainer/task.py")
    ((collection, body),) = fake_cloud.created
    assert collection == "customJobs"
    check_message(body, "CustomJob", "CustomJob")
    assert pools_of(body)[0]["pythonPackageSpec"]["packageUris"] == [uri]


def test_a_refused_job_is_one_line_and_exit_2(fake_cloud, caplog):
    fake_cloud.refuse = (400, "Machine type n1-standard-8 is not available in region xx.\nMore details.")
    argv = ["--project", "p", "--job-config", CONFIGS_BY_NAME["cpu"], "--job-dir", "gs://b/x", "--image", "I"]
    assert submit.main([*argv, "--no-wait", *DATA]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error.endswith("Vertex AI refused (400): Machine type n1-standard-8 is not available in region xx.")


KMS_KEY = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
OPTIONS_SHAPE = GOOD_POOL + (
    "options:\n"
    "  service_account: trainer@p.iam.gserviceaccount.com\n"
    "  labels: {team: vision}\n"
    "  timeout: 12h\n"
    "  restart_job_on_worker_restart: true\n"
    "  scheduling: spot\n"
    "  network: projects/123/global/networks/vpc\n"
    f"  kms_key: {KMS_KEY}\n"
    "  tensorboard: projects/p/locations/us-central1/tensorboards/7\n"
)


# OPTIONS_SHAPE's options, as flags.
OPTION_FLAGS = (
    "--service-account=trainer@p.iam.gserviceaccount.com",
    "--label=team=vision",
    "--timeout=12h",
    "--restart-job-on-worker-restart",
    "--scheduling=spot",
    "--network=projects/123/global/networks/vpc",
    f"--kms-key={KMS_KEY}",
    "--tensorboard=projects/p/locations/us-central1/tensorboards/7",
)


def check_options(body, message):
    """The options of OPTIONS_SHAPE (or OPTION_FLAGS), each at its REST field: on the job, or in its (trials') spec."""
    check_body(body, message)
    assert body["labels"] == {"team": "vision"}
    assert body["encryptionSpec"] == {"kmsKeyName": KMS_KEY}
    spec = body.get("jobSpec") or body["trialJobSpec"]
    assert spec["serviceAccount"] == "trainer@p.iam.gserviceaccount.com"
    assert spec["network"] == "projects/123/global/networks/vpc"
    assert spec["tensorboard"] == "projects/p/locations/us-central1/tensorboards/7"
    assert spec["scheduling"] == {"timeout": "43200s", "restartJobOnWorkerRestart": True, "strategy": "SPOT"}


def test_job_options_go_where_the_reference_has_them(tmp_path, capsys, offline):
    path = tmp_path / "options.yaml"
    path.write_text(OPTIONS_SHAPE)
    _, body, _ = dry_run(capsys, "--job-config", str(path), "--image", "IMG")
    check_options(body, "CustomJob")

    flags = ("--timeout", "90m", "--scheduling", "standard", "--label", "run=a1", "--no-restart-job-on-worker-restart")
    _, body, _ = dry_run(capsys, "--job-config", str(path), "--image", "IMG", *flags)
    assert body["labels"] == {"team": "vision", "run": "a1"}  # labels add up; the other flags win
    assert body["jobSpec"]["scheduling"] == {
        "timeout": "5400s",
        "restartJobOnWorkerRestart": False,
        "strategy": "STANDARD",
    }


@pytest.mark.parametrize("name, message", [("cpu", "CustomJob"), ("hptuning", "HyperparameterTuningJob")])
def test_option_flags_go_where_the_reference_has_them(capsys, offline, name, message):
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME[name], "--image", "IMG", *OPTION_FLAGS)
    check_options(body, message)  # a tuning job: labels and key on the job, the rest on every trial


CONDITIONAL_TUNING = (
    GOOD_POOL
    + """\
tuning:
  metric: accuracy
  goal: MAXIMIZE
  max_trial_count: 8
  parallel_trial_count: 2
  early_stopping: median
  measurement_selection: best
  parameters:
    model:
      type: CATEGORICAL
      values: [cnn, mlp]
      conditional:
        conv-filters:
          when: [cnn]
          type: CATEGORICAL
          values: ["16,32", "32,64"]
    batch-size:
      type: INTEGER
      min: 32
      max: 256
      conditional:
        learning-rate: {when: [32, 64], type: DOUBLE, min: 0.0001, max: 0.01, scale: UNIT_LOG_SCALE}
    eval-batch-size:
      type: DISCRETE
      values: [128, 256]
      conditional:
        dropout: {when: [256], type: DISCRETE, values: [0.1, 0.3]}
"""
)


def test_categorical_conditional_parameters_and_early_stopping(tmp_path, capsys, offline):
    path = tmp_path / "tuning.yaml"
    path.write_text(CONDITIONAL_TUNING)
    _, body, _ = dry_run(capsys, "--job-config", str(path), "--image", "IMG")
    check_body(body, "HyperparameterTuningJob")
    study = body["studySpec"]
    assert study["medianAutomatedStoppingSpec"] == {"useElapsedDuration": False}
    assert study["measurementSelectionType"] == "BEST_MEASUREMENT"
    model, batch_size, eval_batch_size = study["parameters"]
    assert model == {
        "parameterId": "model",
        "categoricalValueSpec": {"values": ["cnn", "mlp"]},
        "conditionalParameterSpecs": [
            {
                "parameterSpec": {
                    "parameterId": "conv-filters",
                    "categoricalValueSpec": {"values": ["16,32", "32,64"]},
                },
                "parentCategoricalValues": {"values": ["cnn"]},
            }
        ],
    }
    (learning_rate,) = batch_size["conditionalParameterSpecs"]
    assert learning_rate["parentIntValues"] == {"values": [32, 64]}
    assert learning_rate["parameterSpec"]["doubleValueSpec"] == {"minValue": 0.0001, "maxValue": 0.01}
    (dropout,) = eval_batch_size["conditionalParameterSpecs"]
    assert dropout["parentDiscreteValues"] == {"values": [256]}


TUNING_HEAD = GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2, "


def tuning_shape(metric, goal):
    return (
        GOOD_POOL + f"tuning: {{metric: {metric}, goal: {goal}, max_trial_count: 4, parallel_trial_count: 2, "
        "parameters: {dropout: {type: DOUBLE, min: 0.1, max: 0.5}}}\n"
    )


@pytest.mark.parametrize(
    "metric, goal", [("accuracy", "MAXIMIZE"), ("loss", "MINIMIZE"), ("recall/class_1", "MAXIMIZE"),
                     ("precision/class_12", "MAXIMIZE")]
)  # fmt: skip
def test_every_metric_the_evaluation_reports_can_be_tuned(tmp_path, capsys, offline, metric, goal):
    path = tmp_path / "tune.yaml"
    path.write_text(tuning_shape(metric, goal))
    _, body, _ = dry_run(capsys, "--job-config", str(path), "--image", "IMG")
    assert body["studySpec"]["metrics"] == [{"metricId": metric, "goal": goal}]
    assert pools_of(body)[0]["containerSpec"]["args"][:2] == ["--tuning-metric", metric]  # each trial reports it


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD_POOL + "options: {timeout: 5x}\n", "options.timeout: '5x' is not a duration such as 90m"),
        (GOOD_POOL + "options: {timeout: 3600}\n", "options.timeout: 3600 is not a string"),
        (GOOD_POOL + "options: {scheduling: preemptible}\n", "options.scheduling: 'preemptible' is not one of"),
        (GOOD_POOL + "options: {labels: {Team: x}}\n", "options.labels: label key 'Team'"),
        (GOOD_POOL + "options: {labels: {team: X Y}}\n", "options.labels: label team: value 'X Y'"),
        (GOOD_POOL + "options: {network: my-vpc}\n", "options.network: 'my-vpc' is not projects/PROJECT_NUMBER"),
        (GOOD_POOL + "options: {restart_job_on_worker_restart: 1}\n", "1 is not a true or false"),
        (GOOD_POOL + "options: {kms_key: k}\n", "options.kms_key: 'k' is not projects/PROJECT/locations"),
        (GOOD_POOL + "options: {service_accounts: a@b}\n", "options.service_accounts: unknown field"),
        (tuning_shape("loss", "MAXIMIZE"), "tuning.goal: MAXIMIZE does not fit loss: use MINIMIZE"),
        (tuning_shape("accuracy", "MINIMIZE"), "tuning.goal: MINIMIZE does not fit accuracy: use MAXIMIZE"),
        (tuning_shape("recall/class_0", "MINIMIZE"), "tuning.goal: MINIMIZE does not fit recall/class_0: use MAXIMIZE"),
        (tuning_shape("log_loss", "MAXIMIZE"), "tuning.goal: MAXIMIZE does not fit log_loss: use MINIMIZE"),
        (tuning_shape("auc", "MINIMIZE"), "tuning.goal: MINIMIZE does not fit auc: use MAXIMIZE"),
        (tuning_shape("accuracy_baseline", "MAXIMIZE"), "tuning.metric: 'accuracy_baseline' is not reported by"),
        (tuning_shape("recall/class_a", "MAXIMIZE"), "tuning.metric: 'recall/class_a' is not reported by the trainer"),
        (tuning_shape("confusion_matrix", "MAXIMIZE"), "tuning.metric: 'confusion_matrix' is not reported by"),
        (TUNING_HEAD + "parameters: {tuning-metric: {type: CATEGORICAL, values: [loss]}}}\n",
         "tuning.parameters.tuning-metric: not tunable: tuning.metric sets it"),
        (TUNING_HEAD + "early_stopping: soon, parameters: {dropout: {type: DOUBLE, min: 0.1, max: 0.5}}}\n",
         "tuning.early_stopping: 'soon' is not one of median, decay_curve"),
        (TUNING_HEAD + "parameters: {model: {type: CATEGORICAL, values: [cnn, 64]}}}\n",
         "tuning.parameters.model: CATEGORICAL values must be different strings"),
        (TUNING_HEAD + "parameters: {dropout: {type: DOUBLE, min: 0.1, max: 0.5, "
         "conditional: {batch-size: {when: [0.2], type: DISCRETE, values: [64]}}}}}\n",
         "tuning.parameters.dropout.conditional: not for DOUBLE parameters"),
        (TUNING_HEAD + "parameters: {model: {type: CATEGORICAL, values: [cnn, mlp], "
         "conditional: {dropout: {when: [rnn], type: DOUBLE, min: 0.1, max: 0.5}}}}}\n",
         "tuning.parameters.model.conditional.dropout.when: ['rnn']: give values of the parent parameter"),
        (TUNING_HEAD + "parameters: {model: {type: CATEGORICAL, values: [cnn, mlp], "
         "conditional: {dropout: {type: DOUBLE, min: 0.1, max: 0.5}}}}}\n",
         "tuning.parameters.model.conditional.dropout.when: missing"),
        (TUNING_HEAD + "parameters: {dropout: {type: DOUBLE, min: 0.1, max: 0.5, when: [1]}}}\n",
         "tuning.parameters.dropout.when: only for a parameter under another's conditional"),
        (TUNING_HEAD + "parameters: {model: {type: CATEGORICAL, values: [cnn, mlp], "
         "conditional: {model: {when: [cnn], type: CATEGORICAL, values: [cnn]}}}}}\n",
         "tuning.parameters.model.conditional.model: tuned twice"),
    ],
)  # fmt: skip
def test_bad_options_and_tuning_are_one_line_naming_file_and_field(tmp_path, caplog, offline, text, message):
    test_bad_shape_is_one_line_naming_file_and_field(tmp_path, caplog, offline, text, message)


@pytest.mark.parametrize(
    "parameters, after, message",
    [
        ("dropout: {type: DOUBLE, min: 0.1, max: 1.5}", [], "tuning.parameters.dropout: a trial given 1.5 would fail: "
         "--dropout 1.5: must be in [0, 1)"),
        ("batch-size: {type: DOUBLE, min: 16, max: 256}", [], "a trial given 104.8 would fail: --batch-size: '104.8'"),
        ("xla: {type: CATEGORICAL, values: ['true', 'false']}", [], "xla: --xla is an on/off switch, which takes no "
         "value; a trial cannot set it"),  # argparse's words: "argument --xla/--no-xla: ignored explicit argument"
        ("num-towers: {type: DISCRETE, values: [1, 2]}", [], "a trial given 2 would fail: --num-towers 2: "),
        # Each trial given resnet9000 failed after its machine's minutes of start-up.
        ("model: {type: CATEGORICAL, values: [cnn, resnet9000]}", [], "a trial given resnet9000 would fail: --model "
         "resnet9000 (after --): not a network; choose auto or one of"),
        ("model: {type: CATEGORICAL, values: [mlp, cnn], conditional: {learning-rate: {when: [cnn], type: DOUBLE, "
         "min: -0.1, max: 0.1}}}", [], "tuning.parameters.model.conditional.learning-rate: a trial given -0.1"),
        ("learning-rate: {type: DOUBLE, min: 0.001, max: 0.1}", ["--learning-rate", "0.5"],
         "--learning-rate (after --): {path} tunes it (tuning.parameters.learning-rate), and each trial's value"),
        ("dropout: {type: DOUBLE, min: 0.1, max: 0.5}", ["--export-dir", "gs://b/e"],
         "--export-dir (after --): a tuning job's trials would all export there"),
        ("dropout: {type: DOUBLE, min: 0.1, max: 0.5}}, algorithm: GRID_SEARCH, max_failed_trial_count: 0", [],
         "tuning.parameters.dropout.type: GRID_SEARCH takes INTEGER, DISCRETE or CATEGORICAL parameters"),
        ("dropout: {type: DOUBLE, min: 0.1, max: 0.5}}, max_failed_trial_count: -3", [],
         "tuning.max_failed_trial_count: -3 is not allowed: give 0 or more"),
    ],
)  # fmt: skip
def test_a_study_whose_trials_would_fail_is_refused_before_it_starts(tmp_path, caplog, offline, parameters, after,
                                                                      message):  # fmt: skip
    """Each value a study may give was only checked to be a trainer flag: a dropout of 1.5, a batch size of 104.8 or
    --xla=true was sent to Vertex AI, and every trial that got it failed after its machine's start-up."""
    path = tmp_path / "tune.yaml"
    closing = "" if parameters.endswith(("0", "-3")) else "}"
    path.write_text(TUNING_HEAD + "parameters: {" + parameters + "}" + closing + "\n")
    flags = ["--project", "p", "--job-dir", "gs://b/x", "--job-config", str(path), "--image", "I"]
    assert submit.main(["--dry-run", *flags, *DATA, *after]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert message.format(path=path) in error and "\n" not in error


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--timeout", "12"], "--timeout 12: '12' is not a duration such as 90m, 12h, 2d or 3600s"),
        (["--label", "team"], "--label team: expected KEY=VALUE"),
        (["--label", "Team=x"], "--label: label key 'Team'"),
        (["--scheduling", "cheap"], "argument --scheduling: invalid choice: 'cheap'"),
        (["--tensorboard", "projects/p/locations/r/tensorboards/1"], "--tensorboard needs --service-account"),
        (["--service-account", "me"], "--service-account me: 'me' is not an e-mail address"),
        (["--label", "a=b", "--label", "a=c"], "--label a=...: the key is given twice"),  # a=c won, silently
        (["--region", "mars"], "'mars' is not a Google Cloud region, such as us-central1"),
        (["--display-name", "x" * 129], "129 characters; Vertex AI takes 1 to 128"),
    ],
)
def test_bad_option_flags_are_one_line_and_exit_2(caplog, offline, flags, message):
    test_bad_flags_are_one_line_and_exit_2(caplog, offline, ["--image", "I", *flags], message)


MODEL = "projects/p/locations/us-central1/models/9"


@pytest.mark.parametrize("input_format", batch.INPUTS)
def test_batch_prediction_dry_run_gives_a_documented_body(capsys, offline, input_format):
    argv = ["--dry-run", "--project", "p", "--model", MODEL, "--input-format", input_format, "--output", "gs://b/out"]
    argv += ["--input", "gs://b/in/a", "gs://b/in/b-*", "--display-name", "digits", "--max-replica-count", "3"]
    argv += ["--service-account", "predictor@p.iam.gserviceaccount.com", "--label", "team=vision", "--kms-key", KMS_KEY]
    assert batch.main(argv) == 0
    post, body = capsys.readouterr().out.split("\n", 1)
    assert post == (
        "POST https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/batchPredictionJobs"
    )
    body = json.loads(body)
    check_body(body, "BatchPredictionJob")
    assert body == {
        "displayName": "digits",
        "model": MODEL,
        "inputConfig": {"instancesFormat": input_format, "gcsSource": {"uris": ["gs://b/in/a", "gs://b/in/b-*"]}},
        "outputConfig": {"predictionsFormat": "jsonl", "gcsDestination": {"outputUriPrefix": "gs://b/out"}},
        "dedicatedResources": {
            "machineSpec": {"machineType": "n1-standard-4"},
            "startingReplicaCount": 1,
            "maxReplicaCount": 3,
        },
        "labels": {"team": "vision"},
        "encryptionSpec": {"kmsKeyName": KMS_KEY},
        "serviceAccount": "predictor@p.iam.gserviceaccount.com",
    }


def test_a_batch_job_runs_in_its_models_region(capsys, caplog, offline):
    model = "projects/p/locations/europe-west4/models/9"
    argv = ["--dry-run", "--model", model, "--input-format", "jsonl", "--input", "gs://b/in", "--output", "gs://b/out"]
    assert batch.main(argv) == 0  # no --project or --region: both are the model's
    post = capsys.readouterr().out.split("\n", 1)[0]
    assert (
        post
        == "POST https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/batchPredictionJobs"
    )
    assert batch.main([*argv, "--region", "us-central1"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error == "--region us-central1: --model is in europe-west4, where a batch prediction job must run"
    caplog.clear()
    assert batch.main([*argv, "--project", "other"]) == 2  # and $GOOGLE_CLOUD_PROJECT does not move it
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error.startswith("--project other: --model is in p,")
    assert batch.main([*argv, "--project", "123456"]) == 0  # a project's number: it may name the same project
    caplog.clear()  # these passed a dry run, for Vertex AI to refuse
    assert batch.main([*argv, "--machine-type", "n1-nope-4"]) == 2
    assert batch.main([*argv[:6], "gs://", *argv[7:]]) == 2
    # a key of another region, an input twice (each instance predicted twice), a folder
    assert batch.main([*argv, "--kms-key", "projects/p/locations/asia-east1/keyRings/r/cryptoKeys/k"]) == 2
    assert batch.main([*argv[:6], "gs://b/in", "gs://b/in", *argv[7:]]) == 2
    assert batch.main([*argv[:6], "gs://b/in/", *argv[7:]]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors[0].startswith("--machine-type n1-nope-4: no machine series 'n1-nope'")
    assert errors[1] == "--input gs://: must be a gs:// path, bucket and all, that Vertex AI can reach"
    assert errors[2].startswith("kms_key projects/p/locations/asia-east1/keyRings/r/cryptoKeys/k: in asia-east1, ")
    assert errors[3] == "--input gs://b/in: given twice, so each of its instances would be predicted twice"
    assert errors[4] == "--input gs://b/in/: a folder; name its files, or a pattern such as gs://b/in/*"


def test_gclouds_endpoint_override_moves_the_vertex_clients(monkeypatch):
    from trainer.vertex import client

    assert client.vertex_address("europe-west4") == "https://europe-west4-aiplatform.googleapis.com"
    monkeypatch.setenv(client.VERTEX_OVERRIDE, "https://aiplatform.googleapis.com/")  # gcloud adds the region
    assert client.vertex_address("europe-west4") == "https://europe-west4-aiplatform.googleapis.com"
    monkeypatch.setenv(client.VERTEX_OVERRIDE, "http://127.0.0.1:8080/")
    assert client.vertex_address("europe-west4") == "http://127.0.0.1:8080"


def test_the_help_examples_dry_run_works_as_written(offline, monkeypatch, capsys):
    """It had no --project, so without $GOOGLE_CLOUD_PROJECT it stopped with '--project is required'."""
    import shlex

    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout: configs/jobs
    (example,) = [part for part in submit.EXAMPLES.replace("\\\n", " ").splitlines() if "--dry-run" in part]
    assert submit.main(shlex.split(example)[1:]) == 0
