"""newest_intact: a damaged newest checkpoint (as a preemption mid-write leaves it) is skipped, named
in one warning, and the `checkpoint` state file is pointed at the newest intact one. A cluster's
evaluator goes on when training removes the checkpoint it was about to read."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from dataformat.errors import UserError
from trainer.checkpoints import TrainingExecutor, newest_intact

STEPS = (500, 1000, 1500)


def save_checkpoints(job_dir: str, steps=STEPS) -> None:
    """Real checkpoints of a tiny graph: at step s, every weight is s and the bias is -s."""
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        weights = tf.compat.v1.get_variable("weights", initializer=tf.zeros([32, 32]))
        bias = tf.compat.v1.get_variable("bias", initializer=tf.zeros([32]))
        value = tf.compat.v1.placeholder(tf.int64, [])
        assign = [step.assign(value), weights.assign(tf.fill([32, 32], tf.cast(value, tf.float32))),
                  bias.assign(tf.fill([32], -tf.cast(value, tf.float32)))]  # fmt: skip
        saver = tf.compat.v1.train.Saver(max_to_keep=5)
        with tf.compat.v1.Session() as session:
            for s in steps:
                session.run(assign, {value: s})
                saver.save(session, os.path.join(job_dir, "model.ckpt"), global_step=s)


def restored_weights(prefix: str) -> tuple[int, float]:
    """(global step, a weight) after a Saver restores the graph from prefix."""
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        weights = tf.compat.v1.get_variable("weights", shape=[32, 32])
        tf.compat.v1.get_variable("bias", shape=[32])
        with tf.compat.v1.Session() as session:
            tf.compat.v1.train.Saver().restore(session, prefix)
            step_value, weight_values = session.run([step, weights])
    return int(step_value), float(np.unique(weight_values).item())


@pytest.fixture
def job_dir(tmp_path) -> str:
    path = str(tmp_path / "job")
    save_checkpoints(path)
    return path


def ckpt(job_dir: str, step: int) -> str:
    return os.path.join(job_dir, f"model.ckpt-{step}")


def data_file(job_dir: str, step: int) -> str:
    return ckpt(job_dir, step) + ".data-00000-of-00001"


def truncate_data(job_dir: str) -> None:
    path = data_file(job_dir, 1500)
    size = os.path.getsize(path)
    with open(path, "r+b") as file:
        file.truncate(size // 2)


def flip_data_bytes(job_dir: str) -> None:
    """Same size, wrong bytes: only the checksums tell."""
    path = data_file(job_dir, 1500)
    with open(path, "r+b") as file:
        file.seek(os.path.getsize(path) - 100)
        file.write(b"\xff" * 50)


def write_state(job_dir: str, text: bytes) -> None:
    with open(os.path.join(job_dir, "checkpoint"), "wb") as file:
        file.write(text)


def read(path: str) -> str:
    with open(path) as file:
        return file.read()


def warnings(caplog) -> list[str]:
    """The trainer's warnings (not TensorFlow's deprecation notices, which the trainer hides)."""
    return [r.getMessage() for r in caplog.records if r.name == "trainer" and r.levelno >= logging.WARNING]


# (what to do to the job dir, the checkpoint newest_intact must pick, the one warning)
DAMAGE = {
    "truncated data file": (
        truncate_data,
        1000,
        "model.ckpt-1500 is damaged (its data file is truncated: Read less bytes than requested); "
        "resuming from model.ckpt-1000",
    ),
    "corrupted data file": (
        flip_data_bytes,
        1000,
        "model.ckpt-1500 is damaged (its data file is corrupted: ",
    ),
    "missing index": (
        lambda job: os.remove(ckpt(job, 1500) + ".index"),
        1000,
        "model.ckpt-1500 is damaged (its index file is missing); resuming from model.ckpt-1000",
    ),
    "garbage index": (
        lambda job: open(ckpt(job, 1500) + ".index", "wb").write(b"not a table" * 10),  # noqa: SIM115
        1000,
        "model.ckpt-1500 is damaged (its index file is unreadable: ",
    ),
    "missing data file": (
        lambda job: os.remove(data_file(job, 1500)),
        1000,
        "model.ckpt-1500 is damaged (its data file model.ckpt-1500.data-00000-of-00001 is missing); "
        "resuming from model.ckpt-1000",
    ),
    "state names a checkpoint that does not exist": (
        lambda job: write_state(job, b'model_checkpoint_path: "model.ckpt-9999"\n'),
        1500,
        "model.ckpt-9999 is damaged (the checkpoint state file names it, but none of its files exist); "
        "resuming from model.ckpt-1500",
    ),
    "garbage state file": (
        lambda job: write_state(job, b"garbage {{{ \n"),
        1500,
        "/checkpoint is damaged (not a checkpoint state: ",
    ),
    "binary state file": (
        lambda job: write_state(job, bytes(range(256))),
        1500,
        "/checkpoint is damaged (not a checkpoint state: ",
    ),
    "empty state file": (
        lambda job: write_state(job, b""),
        1500,
        "/checkpoint is damaged (it names no checkpoint); resuming from model.ckpt-1500",
    ),
    "missing state file": (
        lambda job: os.remove(os.path.join(job, "checkpoint")),
        1500,
        "/checkpoint is missing; resuming from model.ckpt-1500",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damage_falls_back_to_the_newest_intact_checkpoint(job_dir, caplog, damage):
    damage_job, step, warning = DAMAGE[damage]
    damage_job(job_dir)
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert newest_intact(job_dir) == ckpt(job_dir, step)
    assert len(warnings(caplog)) == 1 and warning in warnings(caplog)[0], warnings(caplog)
    assert "resuming from model.ckpt" in warnings(caplog)[0]
    assert tf.train.latest_checkpoint(job_dir) == ckpt(job_dir, step)
    state = tf.train.get_checkpoint_state(job_dir)
    assert list(state.all_model_checkpoint_paths) == [ckpt(job_dir, s) for s in STEPS if s <= step]
    assert restored_weights(tf.train.latest_checkpoint(job_dir)) == (step, float(step))

    caplog.clear()  # the repair holds: a second look finds nothing more to say
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert newest_intact(job_dir) == ckpt(job_dir, step)
    if step == 1500:
        assert not warnings(caplog)


def test_damaged_files_stay_in_place(job_dir):
    truncate_data(job_dir)
    newest_intact(job_dir)
    assert os.path.exists(ckpt(job_dir, 1500) + ".index") and os.path.exists(data_file(job_dir, 1500))


def test_two_damaged_checkpoints_get_a_warning_each(job_dir, caplog):
    truncate_data(job_dir)
    os.remove(data_file(job_dir, 1000))
    with caplog.at_level(logging.WARNING, logger="trainer"):
        assert newest_intact(job_dir) == ckpt(job_dir, 500)
    damaged = [line.split(" (")[0] for line in warnings(caplog)]
    assert damaged == ["model.ckpt-1500 is damaged", "model.ckpt-1000 is damaged"]
    assert all(line.endswith("; resuming from model.ckpt-500") for line in warnings(caplog))
    assert restored_weights(tf.train.latest_checkpoint(job_dir)) == (500, 500.0)


def test_no_intact_checkpoint_is_a_user_error(tmp_path):
    job_dir = str(tmp_path / "job")
    save_checkpoints(job_dir, steps=(500, 1000))
    os.remove(data_file(job_dir, 500))
    path = data_file(job_dir, 1000)
    with open(path, "r+b") as file:
        file.truncate(os.path.getsize(path) // 2)
    with pytest.raises(UserError) as error:
        newest_intact(job_dir)
    assert str(error.value) == (
        f"--job-dir {job_dir}: no intact checkpoint (model.ckpt-1000: its data file is truncated; "
        "model.ckpt-500: its data file model.ckpt-500.data-00000-of-00001 is missing); "
        "delete the damaged model.ckpt-* files to start over, or use a new --job-dir"
    )
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("exists", [True, False])
def test_no_checkpoint_at_all_is_none(tmp_path, caplog, exists):
    job_dir = tmp_path / "job"
    if exists:
        job_dir.mkdir()
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert newest_intact(str(job_dir)) is None
    assert not warnings(caplog)
    assert not (job_dir / "checkpoint").exists()


def test_a_state_file_left_after_deleting_the_checkpoints_is_no_checkpoint(job_dir, caplog):
    """What the UserError tells the user to do: delete the model.ckpt-* files (the state file stays)."""
    for name in os.listdir(job_dir):
        if name.startswith("model.ckpt-"):
            os.remove(os.path.join(job_dir, name))
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert newest_intact(job_dir) is None
    assert warnings(caplog) == [
        "checkpoint names model.ckpt-1500, model.ckpt-1000, model.ckpt-500, but none of their files exist; "
        "no checkpoint to resume from"
    ]
    assert tf.train.latest_checkpoint(job_dir) is None  # the Estimator starts from scratch


def test_intact_checkpoints_are_left_alone(job_dir, caplog):
    state = os.path.join(job_dir, "checkpoint")
    before = read(state), os.stat(state).st_mtime_ns
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert newest_intact(job_dir) == ckpt(job_dir, 1500)
    assert not [record for record in caplog.records if record.name == "trainer"]
    assert (read(state), os.stat(state).st_mtime_ns) == before


def test_a_newer_whole_checkpoint_the_state_missed_is_used(job_dir, caplog):
    """Preempted after a checkpoint was written whole, before the state file named it."""
    write_state(job_dir, b'model_checkpoint_path: "model.ckpt-1000"\n')
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert newest_intact(job_dir) == ckpt(job_dir, 1500)
    assert not warnings(caplog)
    assert "checkpoint names model.ckpt-1000, but model.ckpt-1500 is newer and intact; resuming from it" in caplog.text
    assert tf.train.latest_checkpoint(job_dir) == ckpt(job_dir, 1500)


def test_job_dir_with_a_trailing_slash(job_dir):
    truncate_data(job_dir)
    assert newest_intact(job_dir + "/") == ckpt(job_dir, 1000)
    assert tf.train.latest_checkpoint(job_dir) == ckpt(job_dir, 1000)


def weight_model_fn(features, labels, mode):
    """One weight, moved towards 1 by each step; evaluation reports it."""
    weight = tf.compat.v1.get_variable("weight", initializer=0.0)
    loss = tf.square(weight - 1.0)
    step = tf.compat.v1.train.get_or_create_global_step()
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
    metrics = {"weight": tf.compat.v1.metrics.mean(weight)}
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train, eval_metric_ops=metrics)


def one_example():
    return tf.data.Dataset.from_tensors(({"x": [1.0]}, [0])).repeat()


def test_a_clusters_evaluator_goes_on_when_training_removed_its_checkpoint(tmp_path, monkeypatch, caplog):
    """The race a cluster's evaluator meets: while it builds the graph for the newest checkpoint, the chief
    trains on and removes it (here a hook of the evaluation trains, with the chief's own Estimator)."""
    job_dir = str(tmp_path)
    run_config = tf.estimator.RunConfig(model_dir=job_dir, save_checkpoints_steps=1, keep_checkpoint_max=2)
    chief = tf.estimator.Estimator(weight_model_fn, config=run_config)
    chief.train(one_example, max_steps=3)

    class ChiefTrainsOn(tf.estimator.SessionRunHook):
        def begin(self):
            if chief.latest_checkpoint() == ckpt(job_dir, 3):
                chief.train(one_example, max_steps=5)  # writes 4 and 5, removes 3

    evaluator_task = {"cluster": {"chief": ["localhost:2222"]}, "task": {"type": "evaluator", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(evaluator_task))
    evaluator = tf.estimator.Estimator(weight_model_fn, config=tf.estimator.RunConfig(model_dir=job_dir))
    train_spec = tf.estimator.TrainSpec(one_example, max_steps=5)
    hooks = [ChiefTrainsOn()]
    eval_spec = tf.estimator.EvalSpec(one_example, steps=1, hooks=hooks, start_delay_secs=0, throttle_secs=0)
    with caplog.at_level(logging.WARNING, logger="trainer"):
        TrainingExecutor(evaluator, train_spec, eval_spec).run()  # returns once it has evaluated step 5
    assert "model.ckpt-3 was removed before it could be evaluated" in caplog.text
    events = tf.io.gfile.glob(os.path.join(job_dir, "eval", "events.out.tfevents.*"))
    evaluated = [event.step for path in events for event in tf.compat.v1.train.summary_iterator(path)
                 if any(value.tag == "weight" for value in event.summary.value)]  # fmt: skip
    assert evaluated == [5]


GCS_SCRIPT = """
import logging, os, sys
import tensorflow as tf
from test_checkpoints import save_checkpoints
from trainer.checkpoints import newest_intact

logging.basicConfig(level=logging.WARNING, format="%(message)s")
for job in sys.argv[1].split(","):
    if sys.argv[2] == "save":
        save_checkpoints(job)
        print(sorted(tf.io.gfile.listdir(job)))
    else:
        print("RESULT", newest_intact(job))
        print("LATEST", tf.train.latest_checkpoint(job))
"""


@pytest.mark.slow
def test_each_kind_of_damage_on_gcs(gcs_server):
    from gcs_emulator.server import BUCKET, TF_FAIL_FAST, child_env, client

    prefix = f"checkpoints-{os.urandom(4).hex()}"
    kinds = ("truncated", "no-index", "state-names-nothing")
    jobs = {kind: f"gs://{BUCKET}/{prefix}/{kind}" for kind in kinds}
    tests = os.path.dirname(os.path.abspath(__file__))
    env = child_env(gcs_server, **TF_FAIL_FAST)
    env["PYTHONPATH"] = os.pathsep.join([tests, os.path.dirname(tests), env.get("PYTHONPATH", "")])

    def run(what: str) -> str:
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(GCS_SCRIPT), ",".join(jobs.values()), what],
                                env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout + result.stderr

    assert "model.ckpt-1500.index" in run("save")
    bucket = client(gcs_server).bucket(BUCKET)
    blob = bucket.blob(f"{prefix}/truncated/model.ckpt-1500.data-00000-of-00001")
    data = blob.download_as_bytes()
    blob.upload_from_string(data[: len(data) // 2])  # what a preemption mid-upload leaves
    bucket.blob(f"{prefix}/no-index/model.ckpt-1500.index").delete()
    bucket.blob(f"{prefix}/state-names-nothing/checkpoint").upload_from_string(
        'model_checkpoint_path: "model.ckpt-9999"\n'
    )
    output = run("check")
    for kind, resumed in (("truncated", 1000), ("no-index", 1000), ("state-names-nothing", 1500)):
        job = jobs[kind]
        assert f"RESULT {job}/model.ckpt-{resumed}" in output and f"LATEST {job}/model.ckpt-{resumed}" in output, output
    damaged = [line for line in output.splitlines() if " is damaged (" in line]
    assert len(damaged) == 3, output
    # TensorFlow's gs:// reader words it `EOF reached. Requested to read N bytes from M.`
    assert damaged[0].startswith("model.ckpt-1500 is damaged (its data file is truncated: "), output
    assert damaged[1] == "model.ckpt-1500 is damaged (its index file is missing); resuming from model.ckpt-1000", output
    assert damaged[2] == (
        "model.ckpt-9999 is damaged (the checkpoint state file names it, but none of its files exist); "
        "resuming from model.ckpt-1500"
    ), output


CTRL_C_WHILE_READING = """
import collections, os, signal, sys, threading, time
import tensorflow as tf
from trainer import checkpoints

prefix = sys.argv[1] + "/model.ckpt-10"
tf.train.Checkpoint(v=tf.Variable(tf.zeros([1000]))).write(prefix)
done, seen = threading.Event(), collections.Counter()

def ctrl_c_again_and_again():
    for i in range(400):
        time.sleep(0.003 + i % 7 / 1000)
        os.kill(os.getpid(), signal.SIGINT)
    done.set()

threading.Thread(target=ctrl_c_again_and_again, daemon=True).start()
while True:
    try:
        if done.is_set():
            break
        damage = checkpoints._read_damage(prefix)
        seen["damaged" if damage else "intact"] += 1
    except KeyboardInterrupt:
        seen["KeyboardInterrupt"] += 1
signal.signal(signal.SIGINT, signal.SIG_IGN)
print(seen["damaged"], seen["KeyboardInterrupt"])
"""


def test_a_ctrl_c_while_a_checkpoint_is_read_is_no_damage(tmp_path):
    """A Ctrl-C that landed while TensorFlow turned a C++ error into Python's (load_checkpoint does inside) came as a
    RuntimeError, which the check took for damage: 472 of 135,000 reads of an intact checkpoint, under a Ctrl-C
    every 3-10 ms, said "its index file is unreadable"; a run would have resumed from an older checkpoint, its
    Ctrl-C lost. 400 Ctrl-Cs here (in a process of its own: one that lands outside the loop ends it)."""
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_READING, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    damaged, interrupts = map(int, done.stdout.split())
    assert damaged == 0 and interrupts > 100
