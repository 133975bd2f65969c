"""python -m trainer.vertex.submit: job shapes, request bodies checked against the Vertex AI REST reference,
dry runs, one-line errors, and a real sdist build. Nothing here touches the network."""

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

from trainer.vertex import jobs, submit

CONFIGS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "configs", "jobs", "*.yaml")))
CONFIGS_BY_NAME = {os.path.splitext(os.path.basename(path))[0]: path for path in CONFIGS}

# Vertex AI v1 REST reference (cloud.google.com/vertex-ai/docs/reference/rest/v1): per message,
# (the fields it may have, the fields it must have). Output-only fields are left out.
MESSAGES = {
    "CustomJob": ({"displayName", "jobSpec", "labels", "encryptionSpec"}, {"displayName", "jobSpec"}),
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
    "WorkerPoolSpec": ({"containerSpec", "pythonPackageSpec", "machineSpec", "replicaCount", "diskSpec"}, set()),
    "MachineSpec": ({"machineType", "acceleratorType", "acceleratorCount", "tpuTopology"}, {"machineType"}),
    "DiskSpec": ({"bootDiskType", "bootDiskSizeGb"}, set()),
    "ContainerSpec": ({"imageUri", "command", "args", "env"}, {"imageUri"}),
    "PythonPackageSpec": (
        {"executorImageUri", "packageUris", "pythonModule", "args", "env"},
        {"executorImageUri", "packageUris", "pythonModule"},
    ),
    "GcsDestination": ({"outputUriPrefix"}, {"outputUriPrefix"}),
    "StudySpec": (
        {"metrics", "parameters", "algorithm", "observationNoise", "measurementSelectionType"},
        {"metrics", "parameters"},
    ),
    "MetricSpec": ({"metricId", "goal"}, {"metricId", "goal"}),
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
    "DoubleValueSpec": ({"minValue", "maxValue", "defaultValue"}, {"minValue", "maxValue"}),
    "IntegerValueSpec": ({"minValue", "maxValue", "defaultValue"}, {"minValue", "maxValue"}),
    "DiscreteValueSpec": ({"values", "defaultValue"}, {"values"}),
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
}
ENUMS = {
    "goal": {"MAXIMIZE", "MINIMIZE"},
    "scaleType": {"UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"},
    "algorithm": {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"},
}


def check_message(value, message, where):
    """Walks a body: every key allowed and every required key present, all the way down."""
    allowed, required = MESSAGES[message]
    assert isinstance(value, dict), f"{where}: {message} must be an object"
    assert set(value) <= allowed, f"{where}: {set(value) - allowed} not fields of {message}"
    if value or message != "WorkerPoolSpec":  # an empty pool is how Vertex skips one
        assert required <= set(value), f"{where}: {message} lacks {required - set(value)}"
    for key, field in value.items():
        assert field not in (None, "", [], {}), f"{where}.{key} is empty"
        if key in ENUMS:
            assert field in ENUMS[key], f"{where}.{key}: {field!r}"
        if key in FIELD_MESSAGES:
            for index, item in enumerate(field if isinstance(field, list) else [field]):
                check_message(item, FIELD_MESSAGES[key], f"{where}.{key}[{index}]")


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
    check_message(body, message, message)
    job_spec = body["trialJobSpec"] if tuning else body["jobSpec"]
    assert job_spec["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/runs/x"}
    for pool in pools_of(body):
        assert pool == {} or len({"containerSpec", "pythonPackageSpec"} & set(pool)) == 1


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


def test_tuning_trials_get_no_shared_job_dir(capsys, offline):
    _, body, _ = dry_run(capsys, "--job-config", CONFIGS_BY_NAME["hptuning"], "--image", "IMG")
    (pool,) = pools_of(body)
    assert pool["containerSpec"]["args"] == ["--data-dir", "gs://b/data", "--train-steps", "500"]
    assert body["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    learning_rate, batch_size = body["studySpec"]["parameters"]
    assert learning_rate["parameterId"] == "learning-rate" and learning_rate["scaleType"] == "UNIT_LOG_SCALE"
    assert batch_size == {"parameterId": "batch-size", "discreteValueSpec": {"values": [64, 128, 256]}}


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


def test_image_runs_the_container_and_executor_image_the_package(capsys, offline):
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
            GOOD_POOL + "tuning: {metric: auc, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {learning-rate: {type: DOUBLE, min: 0.001, max: 0.5}}}\n",
            "tuning.metric: 'auc' is not reported by the trainer; use 'accuracy'",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {batch-size: {type: INTEGER, min: 32}}}\n",
            "tuning.parameters.batch-size.max: missing",
        ),
        (
            GOOD_POOL + "tuning: {metric: accuracy, goal: MAXIMIZE, max_trial_count: 4, parallel_trial_count: 2,"
            " parameters: {batch-size: {type: DISCRETE, values: [256, 64]}}}\n",
            "tuning.parameters.batch-size: values must be numbers in increasing order",
        ),
        ("- chief\n", "top level: expected a mapping"),
        ("chief: [\n", "not valid YAML"),
    ],
)
def test_bad_shape_is_one_line_naming_file_and_field(tmp_path, caplog, offline, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert (
        submit.main(["--dry-run", "--project", "p", "--job-dir", "gs://b/x", "--job-config", str(path), "--image", "I"])
        == 2
    )
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error.startswith(f"--job-config {path}: ") and message in error and "\n" not in error


FLAGS = ["--project", "p", "--job-dir", "gs://b/x", "--job-config", CONFIGS_BY_NAME["cpu"]]


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
        (["--image", "I", "--project", ""], "--project is required"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(caplog, offline, flags, message):
    assert submit.main(["--dry-run", *FLAGS, *flags]) == 2  # the last of a repeated flag wins
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert message in error and "\n" not in error


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


class FakeResponse:
    def __init__(self, status, payload):
        self.status_code, self.ok, self.reason, self.payload = status, status < 400, "Bad Request", payload

    def json(self):
        return self.payload


@pytest.fixture
def fake_cloud(monkeypatch, tmp_path):
    """Cloud Storage and Vertex AI stand-ins: uploads land in tmp_path, POSTs are recorded."""
    sent = {"uploads": {}, "posts": [], "response": FakeResponse(200, {"name": "projects/p/locations/r/customJobs/7"})}

    @contextlib.contextmanager
    def atomic_writer(uri):
        local = tmp_path / "uploaded.tar.gz"
        with open(local, "wb") as file:
            yield file
        sent["uploads"][uri] = local

    class Session:
        def __init__(self, credentials):
            assert credentials == "credentials"

        def post(self, url, json, timeout):
            sent["posts"].append((url, json))
            return sent["response"]

    monkeypatch.setattr(submit.gcs, "atomic_writer", atomic_writer)
    monkeypatch.setattr("google.auth.default", lambda scopes: ("credentials", "p"))
    monkeypatch.setattr("google.auth.transport.requests.AuthorizedSession", Session)
    return sent


@pytest.mark.slow
def test_submit_uploads_the_package_then_creates_the_job(fake_cloud):
    flags = ["--executor-image", "EXE", "--staging-dir", "gs://b/st", "--display-name", "run"]
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
    assert submit.main([*argv, *flags, "--", "--train-steps", "9"]) == 0
    ((uri, local),) = fake_cloud["uploads"].items()
    assert uri == f"gs://b/st/run/{submit.package_file()}"
    with tarfile.open(local) as archive:
        assert archive.getmember(f"{submit.package_file()[: -len('.tar.gz')]}/trainer/task.py")
    ((url, body),) = fake_cloud["posts"]
    assert url == "https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/customJobs"
    check_message(body, "CustomJob", "CustomJob")
    assert pools_of(body)[0]["pythonPackageSpec"]["packageUris"] == [uri]


def test_a_refused_job_is_one_line_and_exit_2(fake_cloud, caplog):
    message = "Machine type n1-standard-8 is not available in region xx.\nMore details."
    fake_cloud["response"] = FakeResponse(400, {"error": {"code": 400, "message": message}})
    argv = ["--project", "p", "--job-config", CONFIGS_BY_NAME["cpu"], "--job-dir", "gs://b/x", "--image", "I"]
    assert submit.main(argv) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert error.endswith("Vertex AI refused the job (400): Machine type n1-standard-8 is not available in region xx.")
