"""Following Vertex AI jobs to their end (trainer/vertex/follow.py), and qt-job: every path against the
local stand-in of the Vertex AI and Cloud Logging REST APIs (fake_vertex.py), through Google's client
libraries over real HTTP on 127.0.0.1."""

import io
import logging
import os
import pty
import signal
import threading
import time

import fake_vertex
import pytest
from fake_vertex import log_entry

from trainer.vertex import batch, client, follow, job, submit

NAME = "projects/p/locations/us-central1/customJobs/1"
TUNING = "projects/p/locations/us-central1/hyperparameterTuningJobs/1"
CPU = os.path.join(os.path.dirname(__file__), "..", "configs", "jobs", "cpu.yaml")
HPTUNING = os.path.join(os.path.dirname(__file__), "..", "configs", "jobs", "hptuning.yaml")


@pytest.fixture
def vertex(monkeypatch):
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setenv("TZ", "UTC")  # the lines show local times
    time.tzset()
    with fake_vertex.serving() as fake:
        monkeypatch.setattr(client, "VERTEX_ENDPOINT", fake.url)
        monkeypatch.setattr(client, "LOGGING_ENDPOINT", fake.url)
        monkeypatch.setattr("google.auth.default", lambda scopes: (AnonymousCredentials(), "p"))
        yield fake
    monkeypatch.undo()
    time.tzset()


def errors(caplog):
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


def test_submit_waits_through_queued_running_succeeded_with_the_logs(vertex, capsys):
    vertex.script = [
        {"state": "JOB_STATE_QUEUED", "updateTime": "2024-05-01T12:00:01Z"},
        {"state": "JOB_STATE_RUNNING", "updateTime": "2024-05-01T12:04:10.123456789Z"},
        {
            "state": "JOB_STATE_SUCCEEDED",
            "updateTime": "2024-05-01T12:20:02Z",
            "jobSpec": {"baseOutputDirectory": {"outputUriPrefix": "gs://b/runs/x"}},
        },
    ]
    vertex.logs = [
        log_entry("2024-05-01T12:04:15Z", "Dataset: 1797 training examples"),
        log_entry("2024-05-01T12:04:16Z", {"message": "Evaluation at step 500: accuracy 0.9100"}),
        log_entry("2024-05-01T12:04:16Z", "line two at the same time", task="workerpool0-0", key="b"),
    ]
    argv = ["--project", "p", "--job-config", CPU, "--job-dir", "gs://b/runs/x", "--image", "I", "--wait"]
    assert submit.main([*argv, "--poll-secs", "0.01", "--", "--data-dir", "gs://b/d", "--train-steps", "9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["12:00:01  JOB_STATE_QUEUED", "12:04:15  workerpool0-0  Dataset: 1797 training examples"]
    assert lines[2:4] == [
        "12:04:16  workerpool0-0  Evaluation at step 500: accuracy 0.9100",
        "12:04:16  workerpool0-0  line two at the same time",
    ]  # every line once, over two pages, though each poll asks again from the last time seen
    assert lines[4:] == ["12:04:10  JOB_STATE_RUNNING", "12:20:02  JOB_STATE_SUCCEEDED", "output:    gs://b/runs/x"]
    assert vertex.log_queries[0]["filter"] == (
        'resource.type="ml_job" AND resource.labels.job_id="1" AND timestamp>="1970-01-01T00:00:00.000000Z"'
    )
    assert 'timestamp>="2024-05-01T12:03:16.000000Z"' in vertex.log_queries[-1]["filter"]  # a minute back: LATE


SUBMIT_CPU = ["--project", "p", "--job-config", CPU, "--job-dir", "gs://b/runs/x", "--image", "I"]
SUBMIT_CPU += ["--poll-secs", "0.01", "--", "--data-dir", "gs://b/d"]


def screen(leader: int) -> list[str]:
    """The lines written to a pseudo-terminal, read from its leader once the other end is closed."""
    written = b""
    while True:
        try:
            chunk = os.read(leader, 1024)
        except OSError:  # EIO: the other end is closed and all is read
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    return written.decode().splitlines()


def test_on_a_terminal_submit_follows_the_job_to_its_end_without_wait(vertex, monkeypatch):
    vertex.script = [{"state": "JOB_STATE_RUNNING"}, {"state": "JOB_STATE_FAILED"}]
    leader, follower = pty.openpty()
    with open(follower, "w") as terminal, monkeypatch.context() as patch:
        patch.setattr("sys.stdout", terminal)  # a real terminal, as when a person runs qt-submit
        assert submit.main(SUBMIT_CPU) == 1  # how the job ended, not that it was created
    assert [line.split("  ")[-1] for line in screen(leader)] == ["JOB_STATE_RUNNING", "JOB_STATE_FAILED"]
    assert vertex.gets == 2


def test_elsewhere_submit_returns_once_the_job_is_created(vertex, caplog):
    vertex.script = [{"state": "JOB_STATE_FAILED"}]
    assert submit.main(SUBMIT_CPU) == 0  # stdout is not a terminal here, and no --wait was given
    assert len(vertex.created) == 1 and vertex.gets == 0
    assert f"Follow it with: qt-job wait {NAME}" in caplog.messages


def test_a_failed_job_exits_1_with_its_error_message(vertex, caplog, capsys):
    vertex.script = [
        {"state": "JOB_STATE_RUNNING"},
        {"state": "JOB_STATE_FAILED", "error": {"code": 3, "message": "The replica workerpool0-0 exited with 2"}},
    ]
    assert job.main(["wait", NAME, "--poll-secs", "0.01"]) == 1
    assert errors(caplog) == ["The job ended in JOB_STATE_FAILED: The replica workerpool0-0 exited with 2"]
    assert [line.split("  ")[1] for line in capsys.readouterr().out.splitlines()] == [
        "JOB_STATE_RUNNING",
        "JOB_STATE_FAILED",
    ]


def interrupt_after(vertex, gets: int):
    """Ctrl-C (a real SIGINT to the main thread) once the job has been looked at `gets` times."""

    def send():
        while vertex.gets < gets:
            time.sleep(0.01)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=send, daemon=True).start()


@pytest.mark.slow
def test_ctrl_c_with_cancel_on_interrupt_cancels_and_follows_to_the_end(vertex, capsys):
    vertex.script = [{"state": "JOB_STATE_RUNNING"}]
    interrupt_after(vertex, 2)
    assert job.main(["wait", NAME, "--poll-secs", "0.2", "--cancel-on-interrupt"]) == 1
    assert vertex.cancelled == [NAME]
    assert capsys.readouterr().out.splitlines()[-1].endswith("JOB_STATE_CANCELLED")


@pytest.mark.slow
def test_a_second_ctrl_c_while_a_job_is_being_cancelled_stops_following(vertex, caplog):
    """With --cancel-on-interrupt every Ctrl-C sent the cancel again and went on following: no way out while a job
    took its time to cancel."""
    vertex.script, vertex.cancels_at_once = [{"state": "JOB_STATE_RUNNING"}], False
    interrupt_after(vertex, 2)
    interrupt_after(vertex, 4)
    assert job.main(["wait", NAME, "--poll-secs", "0.2", "--cancel-on-interrupt"]) == 130
    assert vertex.cancelled == [NAME]
    assert f"Stopped following; the job is being cancelled (qt-job status {NAME})" in caplog.text


def test_a_dropped_connection_is_looked_through_again(vertex, caplog):
    """One failed look at the job ended the following, exit 2, mid-job."""
    vertex.script = [{"state": "JOB_STATE_RUNNING"}, {"state": "JOB_STATE_SUCCEEDED"}]
    vertex.drops = 2
    assert job.main(["wait", NAME, "--poll-secs", "0.01"]) == 0
    retried = [r.getMessage() for r in caplog.records if "cannot reach Google Cloud" in r.getMessage()]
    assert len(retried) == 2 and retried[0].endswith("looking again in 0.01 s")
    caplog.clear()
    vertex.drops = follow.RETRIES + 1
    assert job.main(["wait", NAME, "--poll-secs", "0.01"]) == 2
    assert caplog.records[-1].getMessage().endswith(f"the job goes on: follow it again with qt-job wait {NAME}")


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.slow
@pytest.mark.parametrize("answer, cancelled, code", [("y\n", [NAME], 1), ("\n", [], 130)])
def test_ctrl_c_on_a_terminal_asks_whether_to_cancel(vertex, monkeypatch, capsys, answer, cancelled, code):
    vertex.script = [{"state": "JOB_STATE_RUNNING"}]
    monkeypatch.setattr("sys.stdin", Terminal(answer))
    interrupt_after(vertex, 2)
    assert job.main(["wait", NAME, "--poll-secs", "0.2"]) == code
    assert vertex.cancelled == cancelled
    assert f"Cancel {NAME}? [y/N]" in capsys.readouterr().out


def test_cancel_status_and_logs_subcommands(vertex, capsys):
    assert job.main(["cancel", NAME]) == 0
    assert vertex.cancelled == [NAME]
    vertex.script = [{"state": "JOB_STATE_RUNNING", "createTime": "2024-05-01T12:00:00Z"}]
    assert job.main(["status", NAME]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"name:      {NAME}",
        "state:     JOB_STATE_CANCELLED",
        "created:   2024-05-01 12:00:00 UTC",
    ]
    vertex.logs = [log_entry(f"2024-05-01T12:00:0{i}Z", f"line {i}") for i in range(5)]
    assert job.main(["logs", NAME]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[-1] for line in lines] == [f"line {i}" for i in range(5)]  # three pages
    assert [query.get("pageToken") for query in vertex.log_queries] == [None, "2", "4"]


@pytest.mark.parametrize(
    "name",
    [
        "customJobs/1",
        "projects/p/locations/r/models/1",
        "projects/p/locations/us-central1/customJobs/abc",  # these asked for credentials first
        "projects/p/locations/us central1/customJobs/1",
    ],
)
def test_a_name_that_is_not_a_job_is_one_line(caplog, name):
    assert job.main(["status", name]) == 2
    (error,) = errors(caplog)
    assert error.startswith(f"JOB {name}: expected a job's resource name")


@pytest.mark.parametrize(
    "argv",
    [["--verbosity", "warning", "status", NAME], ["status", NAME, "--verbosity", "warning"]],
    ids=["before the subcommand", "after it"],
)
def test_qt_job_verbosity_holds_before_or_after_the_subcommand(argv):
    try:
        assert job.parse_args(argv).verbosity == "warning"
        assert logging.getLogger().level == logging.WARNING
    finally:
        job.parse_args(["status", NAME])  # back to the default, info
    assert logging.getLogger().level == logging.INFO


def test_unreadable_logs_are_said_once_and_the_job_is_still_followed(vertex, monkeypatch, caplog, capsys):
    monkeypatch.setattr(client, "LOGGING_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    vertex.script = [{"state": "JOB_STATE_RUNNING"}] * (follow.RETRIES + 1) + [{"state": "JOB_STATE_SUCCEEDED"}]
    assert job.main(["wait", NAME, "--poll-secs", "0.01"]) == 0  # a log out of reach, look after look
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith("Following the job without its logs:")


def trial(number, state, learning_rate, batch_size, accuracy=None):
    found = {
        "id": number,
        "state": state,
        "startTime": f"2024-05-01T12:0{number}:00Z",
        "parameters": [
            {"parameterId": "learning-rate", "value": learning_rate},
            {"parameterId": "batch-size", "value": batch_size},
        ],
    }
    if accuracy is not None:
        found["endTime"] = f"2024-05-01T12:1{number}:00Z"
        found["finalMeasurement"] = {"stepCount": "2000", "metrics": [{"metricId": "accuracy", "value": accuracy}]}
    return found


def test_a_tuning_job_shows_its_trials_and_ends_with_the_best(vertex, capsys):
    study = {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}]}
    spec = {"baseOutputDirectory": {"outputUriPrefix": "gs://b/tuning"}}
    done_1, done_2 = trial("1", "SUCCEEDED", 0.001, 64.0, 0.91), trial("2", "SUCCEEDED", 0.0003, 128.0, 0.95)
    failed = {
        **trial("3", "INFEASIBLE", 0.01, 256.0),
        "infeasibleReason": "exited with 1",
        "endTime": "2024-05-01T12:13:00Z",
    }
    common = {"studySpec": study, "trialJobSpec": spec}
    vertex.script = [
        {**common, "state": "JOB_STATE_RUNNING", "updateTime": "2024-05-01T12:00:30Z",
         "trials": [trial("1", "ACTIVE", 0.001, 64.0)]},
        {**common, "state": "JOB_STATE_RUNNING", "trials": [done_1, trial("2", "ACTIVE", 0.0003, 128.0)]},
        {**common, "state": "JOB_STATE_SUCCEEDED", "updateTime": "2024-05-01T12:14:00Z",
         "trials": [done_1, done_2, failed]},
    ]  # fmt: skip
    assert job.main(["wait", TUNING, "--poll-secs", "0.01"]) == 0
    best_1, best_2 = "accuracy 0.9100 at step 2000 in trial 1", "accuracy 0.9500 at step 2000 in trial 2"
    assert capsys.readouterr().out.splitlines() == [
        "12:00:30  JOB_STATE_RUNNING",
        "12:01:00  trial 1 started: --learning-rate=0.001 --batch-size=64",
        f"12:11:00  trial 1 finished: accuracy 0.9100 at step 2000 (best so far: {best_1})",
        "12:02:00  trial 2 started: --learning-rate=0.0003 --batch-size=128",
        "12:14:00  JOB_STATE_SUCCEEDED",
        f"12:12:00  trial 2 finished: accuracy 0.9500 at step 2000 (best so far: {best_2})",
        "12:03:00  trial 3 started: --learning-rate=0.01 --batch-size=256",
        "12:13:00  trial 3 failed: exited with 1",
        "best:      trial 2, accuracy 0.9500 at step 2000",
        "flags:     --learning-rate=0.0003 --batch-size=128",
        "model:     gs://b/tuning/2/model/",
    ]
    assert job.main(["status", TUNING]) == 0  # where the best trial's model is, as wait's last words say
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "best:      trial 2, accuracy 0.9500 at step 2000",
        "model:     gs://b/tuning/2/model/",
    ]


def test_submit_and_follow_a_tuning_job(vertex, capsys):
    vertex.script = [
        {"state": "JOB_STATE_SUCCEEDED", "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}]}}
    ]
    argv = ["--project", "p", "--job-config", HPTUNING, "--job-dir", "gs://b/t", "--image", "I", "--wait"]
    assert submit.main([*argv, "--poll-secs", "0.01", "--", "--data-dir", "gs://b/d"]) == 0
    ((collection, body),) = vertex.created
    assert collection == "hyperparameterTuningJobs"
    assert body["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": 1}]  # the library sends enums as numbers
    assert "No trial finished with a metric." in capsys.readouterr().out


def test_a_batch_prediction_job_is_created_and_followed(vertex, capsys):
    vertex.script = [
        {"state": "JOB_STATE_RUNNING", "updateTime": "2024-05-01T12:00:00Z"},
        {
            "state": "JOB_STATE_SUCCEEDED",
            "updateTime": "2024-05-01T12:09:00Z",
            "outputInfo": {"gcsOutputDirectory": "gs://b/out/prediction-digits-2024_05_01T12_00_00"},
            "completionStats": {"successfulCount": "360", "failedCount": "0"},
        },
    ]
    argv = ["--project", "p", "--model", "projects/p/locations/us-central1/models/9", "--input-format", "file-list"]
    argv += ["--input", "gs://b/list.txt", "--output", "gs://b/out", "--wait", "--poll-secs", "0.01"]
    assert batch.main([*argv, "--label", "team=vision", "--max-replica-count", "4"]) == 0
    ((collection, body),) = vertex.created
    assert collection == "batchPredictionJobs"
    assert body["inputConfig"] == {"instancesFormat": "file-list", "gcsSource": {"uris": ["gs://b/list.txt"]}}
    assert body["dedicatedResources"]["maxReplicaCount"] == 4 and body["labels"] == {"team": "vision"}
    assert capsys.readouterr().out.splitlines() == [
        "12:00:00  JOB_STATE_RUNNING",
        "12:09:00  JOB_STATE_SUCCEEDED",
        "output:    gs://b/out/prediction-digits-2024_05_01T12_00_00 (360 predicted, 0 failed)",
    ]


def test_a_batch_job_that_succeeds_with_failed_instances_says_so(vertex, caplog):
    """Vertex AI ends a batch prediction in SUCCEEDED with every instance failed (packed shards sent to a model of
    numbers): exit 0 and nothing said."""
    stats = {"successfulCount": "0", "failedCount": "359"}
    vertex.script = [{"state": "JOB_STATE_SUCCEEDED", "completionStats": stats}]
    assert job.main(["wait", "projects/p/locations/us-central1/batchPredictionJobs/1", "--poll-secs", "0.01"]) == 0
    assert "359 instance(s) failed; the files named errors_* in the output say why" in caplog.text


def test_a_line_logged_late_is_shown_once(vertex, capsys):
    """Cloud Logging may take in one replica's line after newer lines of another; each look asked only from the
    newest line's time, and the late line was never shown while following (qt-job logs showed it)."""
    vertex.logs = [log_entry("2024-05-01T12:04:15Z", "first", key="a")]
    vertex.logs.append(log_entry("2024-05-01T12:04:20Z", "third", key="c"))
    seen = follow.Seen()
    follow.show_new_logs(NAME, seen)
    vertex.logs.insert(1, log_entry("2024-05-01T12:04:18Z", "second, taken in late", task="workerpool1-0", key="b"))
    follow.show_new_logs(NAME, seen)
    follow.show_new_logs(NAME, seen)
    shown = [line.split("  ")[-1] for line in capsys.readouterr().out.splitlines()]
    assert shown == ["first", "third", "second, taken in late"]
