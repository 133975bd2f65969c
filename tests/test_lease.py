"""One folder, one run: dataformat.lease on local folders (flock) and on gs:// (a conditionally
written object with a heartbeat, against fake-gcs-server; those tests are slow-marked)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import datetime, timezone

import pytest

from dataformat import gcs, lease
from dataformat.errors import UserError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SINCE = re.compile(r"since (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\)")


def holder_process(folder: str, env: dict | None = None, setup: str = "") -> subprocess.Popen:
    """Another process that takes the lease on `folder` and holds it until its stdin closes."""
    code = textwrap.dedent(f"""
        import sys
        from dataformat import lease
        {setup}
        with lease.held({folder!r}, what="training", flag="--job-dir"):
            print("held", flush=True)
            sys.stdin.read()
    """)
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line == "held\n", process.stderr.read()
    return process


def assert_names_holder(error: pytest.ExceptionInfo, folder: str, pid: int, started: float) -> None:
    message = str(error.value)
    assert "\n" not in message
    expected = f"--job-dir {folder} is in use by another training run (host {socket.gethostname()}, pid {pid}, since "
    assert message.startswith(expected), message
    assert "wait for it to finish, or use another folder" in message
    since = datetime.strptime(SINCE.search(message).group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    assert started - 2 <= since.timestamp() <= time.time() + 1


def take(folder: str) -> None:
    with lease.held(folder, what="training", flag="--job-dir"):
        pass


# Local folders.


def test_a_holder_in_another_process_is_named_and_its_sigkill_frees_the_folder_at_once(tmp_path):
    folder = str(tmp_path / "job")
    started = time.time()
    process = holder_process(folder)
    try:
        with pytest.raises(UserError) as error:
            take(folder)
        assert_names_holder(error, folder, process.pid, started)
    finally:
        process.send_signal(signal.SIGKILL)  # no cleanup runs: only the kernel can release the lock
        process.wait()
    with lease.held(folder, what="training", flag="--job-dir"):
        record = json.loads((tmp_path / "job" / ".lease").read_text())
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
        assert record["what"] == "training"
        assert datetime.fromisoformat(record["since"].replace("Z", "+00:00")).tzinfo is not None


def test_a_holder_that_exits_normally_frees_the_folder(tmp_path):
    process = holder_process(str(tmp_path))
    process.communicate("")  # closes stdin: the holder leaves its block and exits
    assert process.returncode == 0, process.stderr
    take(str(tmp_path))


def test_two_holders_in_one_process_conflict_and_the_lease_can_be_taken_again(tmp_path):
    folder = str(tmp_path)
    with lease.held(folder, what="preprocessing", flag="--output"):
        with pytest.raises(UserError, match=rf"^--output {re.escape(folder)} is in use by another preprocessing run"):
            lease.held(folder, what="preprocessing", flag="--output").__enter__()
        take(str(tmp_path / "another"))  # another folder is free
    take(folder)
    take(folder)
    assert (tmp_path / ".lease").read_bytes() == b""  # kept, so no waiting run locks a removed file; empty


def test_the_lease_is_released_when_the_block_raises(tmp_path):
    with pytest.raises(RuntimeError), lease.held(str(tmp_path), what="training"):
        raise RuntimeError("the run failed")
    take(str(tmp_path))


def test_the_folder_is_created_if_missing_and_the_flag_is_optional(tmp_path):
    folder = tmp_path / "a" / "b"
    with lease.held(str(folder), what="training"):
        assert (folder / ".lease").is_file()
        with pytest.raises(UserError, match=rf"^{re.escape(str(folder))} is in use by another training run \(host"):
            lease.held(str(folder), what="training").__enter__()


def test_a_child_process_does_not_inherit_the_lock(tmp_path):
    lease_file = str(tmp_path / ".lease")
    with lease.held(str(tmp_path), what="training"):
        # close_fds=False: only O_CLOEXEC keeps the descriptor, and so the lock, out of the child. Between fork and
        # exec the child does share it, for an instant: wait until the child runs Python before letting go.
        code = "import sys; print('ready', flush=True); sys.stdin.read()"
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, close_fds=False
        )
        assert child.stdout.readline() == "ready\n"
    try:
        descriptors = os.listdir(f"/proc/{child.pid}/fd")
        assert lease_file not in {os.path.realpath(f"/proc/{child.pid}/fd/{fd}") for fd in descriptors}
        take(str(tmp_path))  # the child is still alive
    finally:
        child.communicate("")


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(
        UserError, match=r"file/job: cannot create this folder \(a part of the path is a file, not a folder\)$"
    ):
        take(str(tmp_path / "file" / "job"))


# gs:// folders, against fake-gcs-server.


@pytest.fixture
def gcs_env(gcs_server, monkeypatch):
    """This process's google-cloud-storage pointed at the emulator, with a short TTL and heartbeat."""
    for name, value in gcs_server.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(lease, "TTL_SECS", 5.0)
    monkeypatch.setattr(lease, "HEARTBEAT_SECS", 0.5)
    gcs._client.cache_clear()
    yield gcs_server
    gcs._client.cache_clear()


def new_folder() -> str:
    from gcs_emulator.server import BUCKET

    return f"gs://{BUCKET}/lease-{uuid.uuid4().hex[:8]}"


def lease_blob(server, folder: str):
    """The lease object of `folder`, as the test's own client sees it (None if absent)."""
    from gcs_emulator.server import client

    bucket, name = gcs.split(folder)
    return client(server).bucket(bucket).get_blob(f"{name}/.lease")


def lease_record(server, folder: str) -> dict | None:
    blob = lease_blob(server, folder)
    return None if blob is None else json.loads(blob.download_as_bytes())


def put_lease(server, folder: str, **record) -> int:
    """Writes a lease object as another run would have; returns its generation."""
    from gcs_emulator.server import client

    bucket, name = gcs.split(folder)
    blob = client(server).bucket(bucket).blob(f"{name}/.lease")
    defaults = {"host": "h1", "pid": 4242, "since": "2026-11-23T02:59:03Z", "what": "training", "token": "other"}
    blob.upload_from_string(json.dumps({**defaults, **record}))
    return blob.generation


def emulator_honours_conditional_delete(server) -> bool:
    """Whether the emulator refuses a delete whose ifGenerationMatch is stale (fake-gcs-server 1.54 does not)."""
    from gcs_emulator.server import client
    from google.api_core.exceptions import PreconditionFailed

    blob = client(server).bucket(gcs.split(new_folder())[0]).blob(f"probe-{uuid.uuid4().hex[:8]}")
    blob.upload_from_string(b"x", if_generation_match=0)
    try:
        blob.delete(if_generation_match=blob.generation + 1)
    except PreconditionFailed:
        blob.delete()
        return True
    return False


@pytest.mark.slow
def test_gcs_a_live_lease_refuses_a_second_run_naming_its_holder(gcs_env):
    folder = new_folder()
    put_lease(gcs_env, folder, expires=time.time() + 60)
    with pytest.raises(UserError) as error:
        take(folder)
    message = str(error.value)
    assert message.startswith(
        f"--job-dir {folder} is in use by another training run (host h1, pid 4242, since 2026-11-23 02:59:03 UTC); "
        "wait for it to finish, or use another folder (if that run died, its lease lapses at "
    ), message
    assert lease_record(gcs_env, folder)["pid"] == 4242  # untouched


@pytest.mark.slow
def test_gcs_a_holder_in_this_process_refuses_a_second(gcs_env):
    folder = new_folder()
    started = time.time()
    with lease.held(folder, what="training", flag="--job-dir"):
        with pytest.raises(UserError) as error:
            take(folder)
        assert_names_holder(error, folder, os.getpid(), started)
    assert lease_blob(gcs_env, folder) is None  # released: deleted


@pytest.mark.slow
def test_gcs_a_killed_holder_blocks_until_its_lease_expires_then_is_taken_over(gcs_env):
    from gcs_emulator.server import child_env

    folder = new_folder()
    started = time.time()
    setup = "lease.TTL_SECS, lease.HEARTBEAT_SECS = 10.0, 0.5"  # the take below must come before it expires
    process = holder_process(folder, env=child_env(gcs_env), setup=setup)
    process.send_signal(signal.SIGKILL)
    process.wait()
    with pytest.raises(UserError) as error:  # nothing tells a dead holder from a slow one before the TTL
        take(folder)
    assert_names_holder(error, folder, process.pid, started)
    time.sleep(max(0.0, lease_record(gcs_env, folder)["expires"] - time.time()) + 0.2)
    with lease.held(folder, what="training", flag="--job-dir"):
        assert lease_record(gcs_env, folder)["pid"] == os.getpid()
    assert lease_blob(gcs_env, folder) is None


@pytest.mark.slow
@pytest.mark.parametrize("content", ["expired", "malformed"])
def test_gcs_an_abandoned_lease_is_taken_over(gcs_env, content, caplog):
    folder = new_folder()
    if content == "expired":
        put_lease(gcs_env, folder, expires=time.time() - 1)
    else:
        put_lease(gcs_env, folder, pid="not a pid")
    with lease.held(folder, what="preprocessing"):
        record = lease_record(gcs_env, folder)
        assert (record["host"], record["pid"], record["what"]) == (socket.gethostname(), os.getpid(), "preprocessing")
        assert record["expires"] > time.time()
    assert "Took over" in caplog.text
    assert lease_blob(gcs_env, folder) is None


def wait_for(condition, timeout: float = 15) -> None:
    """Polls `condition` until true (the heartbeat runs on its own thread, on a possibly busy machine)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
def test_gcs_the_heartbeat_pushes_expiry_on(gcs_env):
    folder = new_folder()
    with lease.held(folder, what="training"):
        first = lease_blob(gcs_env, folder)
        records = [json.loads(first.download_as_bytes())]
        generations = {first.generation}

        def renewed_twice() -> bool:
            blob = lease_blob(gcs_env, folder)
            if blob.generation not in generations:
                generations.add(blob.generation)
                records.append(json.loads(blob.download_as_bytes()))
            return len(records) >= 3

        wait_for(renewed_twice)  # HEARTBEAT_SECS is 0.5
        assert records[-1]["expires"] > time.time() + lease.TTL_SECS - 2
    expires = [record["expires"] for record in records]
    assert expires == sorted(expires) and expires[-1] >= expires[0] + 0.9  # two heartbeats apart at least
    assert {record["since"] for record in records} == {records[0]["since"]}
    assert lease_blob(gcs_env, folder) is None


@pytest.mark.slow
def test_gcs_a_lease_taken_over_is_noticed_by_the_heartbeat_and_left_to_its_new_holder(gcs_env, caplog):
    folder = new_folder()
    with caplog.at_level(logging.ERROR), lease.held(folder, what="training"):
        # Another run takes the lease over, as if this one had stopped renewing for longer than the TTL.
        theirs = put_lease(gcs_env, folder, expires=time.time() + 60)
        wait_for(lambda: "Lost the lease" in caplog.text)
    blob = lease_blob(gcs_env, folder)
    assert blob is not None and blob.generation == theirs  # neither renewed nor deleted by the old holder


@pytest.mark.slow
def test_gcs_release_never_deletes_a_lease_that_another_run_took_over(gcs_env, monkeypatch):
    """The delete at release is conditional on our generation; this covers a takeover that the
    heartbeat has not yet noticed."""
    if not emulator_honours_conditional_delete(gcs_env):
        pytest.skip("fake-gcs-server ignores ifGenerationMatch on DELETE, so it cannot show a refused delete")
    monkeypatch.setattr(lease, "HEARTBEAT_SECS", 60.0)
    folder = new_folder()
    with lease.held(folder, what="training"):
        theirs = put_lease(gcs_env, folder, expires=time.time() + 60)
    blob = lease_blob(gcs_env, folder)
    assert blob is not None and blob.generation == theirs


@pytest.mark.slow
def test_gcs_a_create_whose_reply_was_lost_is_recognised_as_ours(gcs_env):
    """A retried conditional create gets 412 if its first attempt went through: the token tells."""
    folder = new_folder()
    me = lease.Holder.me("training")
    ours = put_lease(gcs_env, folder, **json.loads(me.renewed().to_json()))
    held = lease._GcsLease(f"{folder}/.lease", me)
    held.acquire(folder, "--job-dir")
    assert held.generation == ours
    held.release()
    assert lease_blob(gcs_env, folder) is None


@pytest.mark.slow
def test_gcs_a_missing_bucket_is_one_line(gcs_env):
    with pytest.raises(UserError, match=r"^gs://no-such-bucket-[0-9a-f]+/job: not found \(404\)"):
        take(f"gs://no-such-bucket-{uuid.uuid4().hex[:8]}/job")
