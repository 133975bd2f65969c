"""qt-deploy and qt-predict --endpoint against the Vertex AI stand-in (fake_vertex.py), through Google's client
library, with a local export staged to the Cloud Storage emulator: upload, endpoint, deploy, online
predictions equal to local ones, explanations, undeploy and delete; every body checked by the library's
message classes."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from fake_vertex import serving_staged_exports
from gcs_emulator.server import BUCKET, client
from test_keys import build

from dataformat import gcs, storage
from trainer import experiment
from trainer.config import Config
from trainer.export import latest_export
from trainer.predict import main as predict_main
from trainer.vertex import deploy

PREBUILT = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"
FAST = ["--poll-secs", "0.01"]


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A table model with a key column and a text column, trained briefly."""
    root = tmp_path_factory.mktemp("deploy")
    build(root)
    config = Config(data_dir=str(root / "data"), job_dir=str(root / "job"), train_steps=60)
    experiment.run(config)
    return latest_export(config, "latest")


@pytest.fixture
def cloud(gcs_server, vertex, monkeypatch, tmp_path):
    """The stand-in, serving each deployed model by running its staged export as downloaded from the emulator."""
    for name, value in gcs_server.env.items():
        monkeypatch.setenv(name, value)
    gcs._client.cache_clear()
    vertex.serve, vertex.storage = serving_staged_exports(client(gcs_server), tmp_path), gcs_server
    yield vertex
    gcs._client.cache_clear()


def _check_bodies(requests: list) -> None:
    """Each body the stand-in received, read by the client library's own request message."""
    from google.cloud import aiplatform_v1

    messages = {"upload": "UploadModelRequest", "deployModel": "DeployModelRequest", "predict": "PredictRequest",
                "undeployModel": "UndeployModelRequest", "explain": "ExplainRequest"}  # fmt: skip
    for method, path, body in requests:
        verb = path.rsplit(":", 1)[-1] if ":" in path else None
        if method == "POST" and verb in messages:
            aiplatform_v1.types.__dict__[messages[verb]].from_json(json.dumps(body))
        elif method == "POST" and path.endswith("/endpoints"):
            aiplatform_v1.Endpoint.from_json(json.dumps(body))


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_deploy_predict_explain_undeploy_and_delete(export, cloud, tmp_path, capsys, caplog):
    flags = ["--project", "p", "--region", "us-central1", "--display-name", "orders", *FAST]
    staging = f"gs://{BUCKET}/staging"
    argv = ["--model-dir", export, "--staging-dir", staging, "--max-replicas", "2", "--explain", *flags]
    assert deploy.main(argv) == 0
    shown = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    endpoint, model = shown["endpoint:"], shown["model:"]
    (uploaded,) = [body["model"] for method, path, body in cloud.requests if path.endswith(":upload")]
    assert uploaded["artifactUri"].startswith(f"{staging}/orders-") and uploaded["artifactUri"].endswith("/1")
    staged = [blob.name for blob in client(cloud.storage).list_blobs(BUCKET, prefix="staging/")]
    assert any(name.endswith("/1/saved_model.pb") for name in staged)
    assert any(name.endswith("/1/assets.extra/metadata.json") for name in staged)
    assert uploaded["containerSpec"] == {"imageUri": PREBUILT}
    explained = uploaded["explanationSpec"]
    assert set(explained["metadata"]["inputs"]) == {"channel", "review", "price"}  # the key is no feature
    assert explained["parameters"] == {"sampledShapleyAttribution": {"pathCount": deploy.SHAPLEY_PATHS}}
    deployed = cloud.endpoints[endpoint]["deployedModels"][0]
    assert deployed["model"] == model and deployed["dedicatedResources"]["maxReplicaCount"] == 2

    rows = tmp_path / "rows.csv"
    rows.write_text('order,channel,review,price\nA-1,web,"Great and wonderful!",3\nB-2,app,"awful, boring",5\n')
    assert predict_main(["--model-dir", export, "--input", str(rows), "--output", str(tmp_path / "local.jsonl")]) == 0
    online = ["--endpoint", endpoint, "--input", str(rows), "--output", str(tmp_path / "online.jsonl")]
    assert predict_main(online) == 0
    assert _lines(tmp_path / "online.jsonl") == _lines(tmp_path / "local.jsonl")  # keys, classes, probabilities
    assert predict_main([*online, "--explain"]) == 0
    for line in _lines(tmp_path / "online.jsonl"):
        assert set(line["attributions"]) == {"channel", "review", "price"} and line["key"] in ("A-1", "B-2")

    # Deployed again under the same name: the endpoint is reused; then everything is tidied up.
    assert deploy.main(["--model-dir", export, "--staging-dir", staging, *flags]) == 0
    assert len(cloud.endpoints) == 1 and len(cloud.endpoints[endpoint]["deployedModels"]) == 2
    said = capsys.readouterr().out
    second = said.split("model:", 1)[1].split()[0]
    first_id = deployed["id"]
    assert f"also deployed:   {first_id} ({model}), with no traffic and its machines still on: qt-deploy" in said
    assert deploy.main(["undeploy", "--endpoint", endpoint, *FAST]) == 0
    assert cloud.endpoints[endpoint]["deployedModels"] == []
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        assert predict_main(online) == 2
    assert "no model is deployed there" in caplog.text
    assert deploy.main(["delete", "--endpoint", endpoint, "--model", model, "--model", second, *FAST]) == 0
    assert cloud.endpoints == {} and cloud.models == {}
    _check_bodies(cloud.requests)


def test_a_job_dir_stands_for_its_best_export(export, tmp_path, caplog):
    job_dir = str(Path(export).parents[2])  # JOB/export/latest/VERSION
    best = latest_export(Config(job_dir=job_dir), "best")
    moved = tmp_path / "job-with-export-dir"  # a job whose --export-dir sent its exports elsewhere
    moved.mkdir()
    (moved / "config.yaml").write_text(f"export_dir: {Path(export).parents[1]}\n")
    assert deploy.read_export(job_dir).path == best and deploy.read_export(str(moved)).path == best
    rows = tmp_path / "rows.csv"
    rows.write_text('order,channel,review,price\nA-1,web,"Great and wonderful!",3\n')
    caplog.set_level(logging.INFO)
    for name, model_dir in (("job", job_dir), ("best", best)):
        assert predict_main(["--model-dir", model_dir, "--input", str(rows), "--output", str(tmp_path / name)]) == 0
    assert f"Model: {best}" in caplog.text  # not the latest export
    assert _lines(tmp_path / "job") == _lines(tmp_path / "best")


def test_explain_needs_a_model_uploaded_for_it(export, cloud, tmp_path, caplog):
    flags = ["--model-dir", export, "--staging-dir", f"gs://{BUCKET}/staging", "--display-name", "plain"]
    assert deploy.main([*flags, "--project", "p", *FAST]) == 0
    (endpoint,) = cloud.endpoints
    rows = tmp_path / "rows.csv"
    rows.write_text("order,channel,review,price\nA-1,web,fine,\n")
    with caplog.at_level(logging.ERROR):
        assert predict_main(["--endpoint", endpoint, "--input", str(rows), "--explain"]) == 2
    assert "column 'price' is missing, and an online request cannot say so" in caplog.text
    rows.write_text("order,channel,review,price\nA-1,web,fine,4\n")
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        assert predict_main(["--endpoint", endpoint, "--input", str(rows), "--explain"]) == 2
    assert "Vertex AI refused (400): The model was not deployed with an explanation spec." in caplog.text


def test_dry_run_prints_every_body_and_touches_nothing(export, vertex, capsys):
    argv = ["--model-dir", export, "--project", "p", "--display-name", "d", "--staging-dir", "gs://b/s", "--dry-run"]
    assert deploy.main([*argv, "--accelerator-type", "NVIDIA_TESLA_T4", "--serving-image", "tfs:2.15.1"]) == 0
    out = capsys.readouterr().out
    assert f"COPY {export} -> gs://b/s/d-" in out and "models:upload" in out and ":deployModel" in out
    upload = json.loads(out.split("models:upload\n", 1)[1].split("\nGET", 1)[0])
    spec = upload["model"]["containerSpec"]
    assert spec["imageUri"] == "tfs:2.15.1" and "--model_base_path=$(AIP_STORAGE_URI)" in spec["args"]
    assert not upload["model"]["artifactUri"].endswith("/1")  # TF Serving reads the numbered folders under it
    assert vertex.requests == []


EUROPE = "projects/p/locations/europe-west4/endpoints/7"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--model-dir", "{tmp}", "--project", "p", "--display-name", "d"],
            "not an export (no saved_model.pb), nor a job dir",
        ),
        (["--model-dir", "{export}", "--project", "p", "--display-name", "d"], "--staging-dir: a gs:// folder"),
        (
            [
                "--model-dir",
                "{export}",
                "--project",
                "p",
                "--display-name",
                "d",
                "--staging-dir",
                "gs://b/s",
                "--min-replicas",
                "3",
                "--max-replicas",
                "2",
            ],
            "--max-replicas 2: below --min-replicas 3",
        ),  # fmt: skip
        (["undeploy", "--endpoint", "nonsense"], "--endpoint nonsense: expected projects/PROJECT/locations/"),
        (["delete"], "give --endpoint, --model, or both"),
        (["--dry-run", "undeploy", "--endpoint", "x"], "undeploy comes first: qt-deploy undeploy [flags]"),
        (
            ["--model-dir", "{export}", "--project", "p", "--display-name", "d", "--endpoint", EUROPE],
            f"--endpoint {EUROPE}: it is in europe-west4, not --region us-central1",
        ),
        (
            ["--model-dir", "{tmp}", "--project", "p", "--display-name", "d", "--accelerator-type", "NVIDIA_T4"],
            "--accelerator-type NVIDIA_T4: unknown accelerator type 'NVIDIA_T4'",
        ),
        (
            [
                "--model-dir",
                "{tmp}",
                "--project",
                "p",
                "--display-name",
                "d",
                "--machine-type",
                "e2-standard-4",
                "--accelerator-type",
                "NVIDIA_TESLA_T4",
            ],
            "e2-standard-4 cannot take NVIDIA_TESLA_T4 (it takes no accelerators)",
        ),  # fmt: skip
        (
            [
                "--model-dir",
                "{tmp}",
                "--project",
                "p",
                "--display-name",
                "d",
                "--accelerator-type",
                "NVIDIA_TESLA_T4",
                "--accelerator-count",
                "3",
            ],
            "--accelerator-count 3: 3 x NVIDIA_TESLA_T4 is not allowed on n1-standard-4 (allowed: 1, 2, 4)",
        ),  # fmt: skip
        (
            ["--model-dir", "{tmp}", "--project", "p", "--display-name", "d", "--machine-type", "g2-standard-24"],
            "--machine-type g2-standard-24: it comes with 2 x NVIDIA_L4; add --accelerator-type NVIDIA_L4 "
            "--accelerator-count 2",
        ),
        # Offline, these passed a dry run: a misspelt series, GPUs left out without their type, no name.
        (
            ["--model-dir", "{export}", "--project", "p", "--display-name", "d", "--machine-type", "n1-nope-4"],
            "--machine-type n1-nope-4: no machine series 'n1-nope' (Vertex AI's: e2-standard,",
        ),
        (
            ["--model-dir", "{export}", "--project", "p", "--display-name", "d", "--accelerator-count", "2"],
            "--accelerator-count 2: give the GPUs' --accelerator-type too",
        ),
        (["--model-dir", "{export}", "--project", "p", "--display-name", ""], "0 characters; Vertex AI takes 1 to 128"),
        (["--model-dir", "{export}", "--project", "p", "--display-name", "d", "--region", ""], "is not a Google Cloud"),
        (["--display-name", "delete", "--model-dir", "{tmp}", "--project", "p"], "not an export"),  # a value
        (["--display_name", "delete", "--model-dir", "{tmp}", "--project", "p"], "not an export"),  # spelt so too
    ],
)
def test_mistakes_are_one_line(export, tmp_path, caplog, argv, message):
    argv = [arg.format(tmp=tmp_path, export=export) for arg in argv]
    with caplog.at_level(logging.ERROR):
        assert deploy.main(argv) == 2
    (line,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert message in line


def test_explain_is_for_endpoints(export, caplog):
    with caplog.at_level(logging.ERROR):
        assert predict_main(["--model-dir", export, "--input", "x.csv", "--explain"]) == 2
    assert "give --endpoint" in caplog.text


def test_online_requests_stay_under_the_size_limit_and_class_ids_stay_whole():
    from trainer.vertex import online

    photos = [{"image_bytes": {"b64": "A" * 600_000}}] * 3  # two would pass Vertex AI's 1.5 MB together
    assert [len(part) for part in online._requests(photos)] == [1, 1, 1]
    assert [len(part) for part in online._requests([{"a": 1}] * 5)] == [5]
    line = online._local_types({"probabilities": [0.2, 0.8], "class_ids": [1.0], "all_class_ids": [0.0, 1.0]})
    assert list(line) == ["all_class_ids", "class_ids", "probabilities"] and line["class_ids"] == [1]
    assert isinstance(line["all_class_ids"][1], int)


CPU_JOB = Path(__file__).resolve().parents[1] / "configs" / "jobs" / "cpu.yaml"


def test_without_credentials_deploy_and_submit_stop_before_uploading(export, monkeypatch, caplog):
    """Each retried its upload for two minutes without network or login, then printed the error a minute early."""
    import google.auth
    import google.auth.exceptions

    from trainer.vertex import submit

    def none_found(*_, **__):
        raise google.auth.exceptions.DefaultCredentialsError("none")

    monkeypatch.setattr(google.auth, "default", none_found)
    monkeypatch.setattr(deploy, "deploy", lambda *_: pytest.fail("deployed without credentials"))
    monkeypatch.setattr(submit, "submit", lambda *_: pytest.fail("submitted without credentials"))
    with caplog.at_level(logging.ERROR):
        assert (
            deploy.main(["--model-dir", export, "--project", "p", "--display-name", "d", "--staging-dir", "gs://b/s"])
            == 2
        )
        job = ["--project", "p", "--job-config", str(CPU_JOB), "--job-dir", "gs://b/job", "--staging-dir", "gs://b/st"]
        assert (
            submit.main([*job, "--executor-image", "us-docker.pkg.dev/x/tf:latest", "--", "--data-dir", "gs://b/d"])
            == 2
        )
    assert caplog.text.count("no Google Cloud credentials found") == 2


def test_a_batch_jobs_json_lines_are_checked_as_its_server_takes_them(export, cloud, caplog):
    """Vertex AI sends each JSON line to the model as it is, and its TF Serving refuses an instance that lacks an
    input or holds a number as text: every such instance failed, an hour into the job. It is refused before."""
    from trainer.vertex import batch

    model = "projects/p/locations/us-central1/models/77"
    cloud.models[model] = {"name": model, "displayName": "orders", "artifactUri": export}
    good = {"order": "A-1", "channel": "web", "review": "great", "price": 3}
    rows = f"gs://{BUCKET}/batch/rows.jsonl"
    argv = ["--model", model, "--input-format", "jsonl", "--input", rows, "--output", f"gs://{BUCKET}/out", "--no-wait"]
    for lines, said in (
        ([good, {**good, "price": "3"}], "line 2: 'price': a server takes a number there, not \"3\""),
        ([{key: value for key, value in good.items() if key != "review"}], "line 1: lacks 'review': a server takes"),
    ):
        with storage.atomic_writer(rows) as file:
            file.write("".join(json.dumps(line) + "\n" for line in lines).encode())
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            assert batch.main(argv) == 2
        assert f"--input {rows}: {said}" in caplog.text and "every such instance would fail" in caplog.text
    assert cloud.created == []
    with storage.atomic_writer(rows) as file:
        file.write((json.dumps(good) + "\n").encode())
    assert batch.main(argv) == 0
    assert [collection for collection, _ in cloud.created] == ["batchPredictionJobs"]


def test_a_display_name_with_quotes_is_one_string_in_the_endpoints_filter():
    """`a"b` ended the filter's string at its quote: display_name="a"b"."""
    from trainer.vertex.endpoints import name_filter

    assert name_filter('a"b') == 'display_name="a\\"b"'
    assert name_filter("c\\d") == 'display_name="c\\\\d"'


def test_deploy_without_the_vertex_extra_says_what_to_install(export, monkeypatch, caplog):
    """The prebuilt serving image is looked up with Google's client library, which was imported unguarded: without
    the vertex extra, qt-deploy stopped with a traceback."""
    for module in ("google.cloud.aiplatform", "google.cloud.aiplatform.helpers"):  # as if not installed
        monkeypatch.setitem(sys.modules, module, None)  # importing it fails, even where a test before imported it
    with caplog.at_level(logging.ERROR):
        code = deploy.main(
            ["--model-dir", export, "--project", "p", "--display-name", "d", "--staging-dir", "gs://b/s"]
        )
    assert code == 2
    assert "deploying to Vertex AI needs Google's client library: pip install 'queue-trainer[vertex]'" in caplog.text
