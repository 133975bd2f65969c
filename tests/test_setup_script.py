"""scripts/setup.sh: which Python it picks, and how it refuses, with fake interpreters on a bare PATH.

The fakes are small shell scripts: `--version` answers like Python does, and `-c CODE` runs CODE in this real
Python with sys.version_info replaced, so whatever check setup.sh makes sees the fake's version. Anything else
(`-m venv`, `-m pip ...`) is written to a log, and `-m venv DIR` leaves a copy of the fake as DIR/bin/python.
Nothing here installs anything or needs the network."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "setup.sh"
BASH = shutil.which("bash") or "/bin/bash"
# The commands setup.sh and the fakes run besides the interpreters: linked one by one into a folder of their own,
# since /usr/bin itself may hold a python3 that would be found.
TOOLS = ("bash", "dirname", "sort", "mkdir", "cp", "rm")

FAKE_PYTHON = """#!/bin/sh
# A fake Python {version} for tests/test_setup_script.py.
case "$1" in
  --version) echo "Python {version}" ;;
  -c) shift; exec {real} -I -S -c {patch} "$@" ;;
  *) echo "$0 $*" >> {log}
     if [ "$2 $3 $4" = "pip config list" ]; then printf '%s\n' "${{FAKE_PIP_CONFIG:-}}"; fi
     if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi ;;
esac
"""
# Runs the code that setup.sh passes with -c the way `python -c CODE` would, but with the fake's version.
PATCH = (
    "import sys; code = sys.argv.pop(1); sys.version_info = {info!r}; "
    "exec(compile(code, '<string>', 'exec'), {{'__name__': '__main__'}})"
)
# A fake uv: logs its arguments (and SSL_CERT_FILE, where set); `uv venv ... DIR` leaves a fake Python 3.11 as
# DIR/bin/python, then exits $status.
FAKE_UV = """#!/bin/sh
echo "uv $*${{SSL_CERT_FILE:+ (SSL_CERT_FILE=$SSL_CERT_FILE)}}" >> {log}
if [ "$1" = venv ]; then
  for dir; do :; done
  mkdir -p "$dir/bin" && cp {python} "$dir/bin/python"
fi
exit {status}
"""


def write_script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def fake_python(path: Path, version: str, log: Path) -> Path:
    """A fake interpreter at `path` that reports `version` (e.g. "3.12.1")."""
    info = (*map(int, version.split(".")), "final", 0)
    patch = PATCH.format(info=info)
    text = FAKE_PYTHON.format(version=version, real=shlex.quote(sys.executable), patch=shlex.quote(patch), log=log)
    return write_script(path, text)


class Machine:
    """A bare PATH (tools + a bin folder of fakes), a log of what the fakes were asked, and a copy of the repo's
    setup.sh (so that runs which make a .venv make it in tmp_path, not in this checkout)."""

    def __init__(self, tmp_path: Path):
        self.root = tmp_path
        self.bin = tmp_path / "bin"
        self.log = tmp_path / "calls.log"
        self.repo = tmp_path / "repo"
        tools = tmp_path / "tools"
        tools.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is not installed"
            (tools / tool).symlink_to(found)
        self.bin.mkdir()
        self.path = f"{self.bin}{os.pathsep}{tools}"
        (self.repo / "scripts").mkdir(parents=True)
        shutil.copy(SCRIPT, self.repo / "scripts" / "setup.sh")

    def python(self, name: str, version: str, folder: Path | None = None) -> Path:
        return fake_python((folder or self.bin) / name, version, self.log)

    def uv(self, status: int = 0) -> Path:
        python = self.python("python3.11", "3.11.9", folder=self.root / "uv-python")
        return write_script(self.bin / "uv", FAKE_UV.format(log=self.log, python=python, status=status))

    def run(self, *args: str, script: Path = SCRIPT, **env: str) -> subprocess.CompletedProcess:
        environment = {"PATH": self.path, "HOME": str(self.root), "LC_ALL": "C", **env}  # no PYTHON unless given
        return subprocess.run(
            [BASH, str(script), *args], env=environment, cwd=self.root, capture_output=True, text=True, timeout=60
        )

    def find(self, **env: str) -> subprocess.CompletedProcess:
        return self.run("--find-python", **env)

    def setup(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return self.run(*args, script=self.repo / "scripts" / "setup.sh", **env)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


def chosen(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    return lines[0]


def test_the_bare_path_has_no_python_of_its_own(machine):
    assert not [name for name in os.listdir(machine.path.split(os.pathsep)[1]) if name.startswith("python")]
    assert one_line_error(machine.find())  # not even a python3


def test_python311_is_chosen_over_a_312_python3(machine):
    machine.python("python3", "3.12.1")
    python311 = machine.python("python3.11", "3.11.9")
    assert chosen(machine.find()) == str(python311)


def test_a_supported_python3_is_chosen_first(machine):
    python3 = machine.python("python3", "3.11.4")
    machine.python("python3.10", "3.10.13")
    assert chosen(machine.find()) == str(python3)


@pytest.mark.parametrize(
    "present, expected",
    [(["3.9", "3.10", "3.11"], "3.11"), (["3.9", "3.10"], "3.10"), (["3.9"], "3.9")],
)
def test_the_newest_supported_pythonx_y_on_path_wins(machine, present, expected):
    machine.python("python3", "3.12.1")
    machine.python("python3.12", "3.12.1")
    for minor in present:
        machine.python(f"python{minor}", f"{minor}.7")
    assert chosen(machine.find()) == str(machine.bin / f"python{expected}")


def test_pyenv_versions_are_searched_newest_first(machine):
    machine.python("python3", "3.12.1")
    root = machine.root / "pyenv"
    for version in ("3.9.18", "3.10.13", "3.11.9", "3.11.10", "3.12.1"):
        machine.python("python", version, folder=root / "versions" / version / "bin")
    write_script(machine.bin / "pyenv", f'#!/bin/sh\n[ "$1" = root ] && echo {shlex.quote(str(root))}\n')
    assert chosen(machine.find()) == str(root / "versions" / "3.11.10" / "bin" / "python")


def test_no_supported_python_and_no_uv_says_how_to_get_one(machine):
    machine.python("python3", "3.12.1")
    line = one_line_error(machine.find())
    assert "no Python 3.9-3.11 found (python3 is 3.12)" in line
    assert "python3.11" in line and "uv" in line and "PYTHON=" in line


def test_no_supported_python_but_uv_uses_uv(machine):
    machine.python("python3", "3.12.1")
    machine.uv()
    assert chosen(machine.find()) == "uv:3.11"
    assert machine.calls() == []  # --find-python only looks


def test_an_unsupported_python_env_var_is_refused_in_one_line(machine):
    machine.python("python3", "3.11.4")  # a good python3 does not stand in for the user's choice
    fake312 = machine.python("fake3.12", "3.12.1", folder=machine.root / "elsewhere")
    line = one_line_error(machine.find(PYTHON=str(fake312)))
    assert f"PYTHON={fake312} is Python 3.12" in line


def test_a_python_env_var_that_does_not_run_is_refused_in_one_line(machine):
    line = one_line_error(machine.find(PYTHON=str(machine.root / "missing" / "python3")))
    assert "does not run" in line


def test_a_supported_python_env_var_is_used_as_it_is(machine):
    machine.python("python3", "3.11.4")
    python39 = machine.python("python3.9", "3.9.18", folder=machine.root / "elsewhere")
    assert chosen(machine.find(PYTHON=str(python39))) == str(python39)


def test_setup_makes_venv_with_the_chosen_python_then_installs(machine):
    machine.python("python3", "3.12.1")
    python311 = machine.python("python3.11", "3.11.9")
    result = machine.setup("cpu,test")
    assert result.returncode == 0, result.stderr
    assert f"Creating .venv with {python311} (Python 3.11.9)" in result.stderr
    calls = machine.calls()
    assert calls[0] == f"{python311} -m venv .venv"
    assert calls[-1] == ".venv/bin/python -m pip install --quiet --disable-pip-version-check -e .[cpu,test]"


def test_setup_makes_venv_with_uv_when_there_is_no_python(machine):
    machine.python("python3", "3.12.1")
    machine.uv()
    result = machine.setup()
    assert result.returncode == 0, result.stderr
    calls = machine.calls()
    assert calls[0] == "uv venv --seed --python 3.11 .venv"
    assert calls[-1].endswith("-e .[cpu]")
    assert (machine.repo / ".venv" / "bin" / "python").exists()


def test_a_failed_uv_venv_leaves_no_half_made_venv(machine):
    machine.python("python3", "3.12.1")
    machine.uv(status=1)  # as when uv made the venv but could not fetch pip into it
    result = machine.setup()
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("error: could not create .venv")
    assert not (machine.repo / ".venv").exists()


def test_an_existing_venv_is_reused_without_a_search(machine):
    machine.python("python3", "3.12.1")  # no supported Python anywhere: the .venv's is enough
    machine.python("python", "3.10.13", folder=machine.repo / ".venv" / "bin")
    result = machine.setup("cpu")
    assert result.returncode == 0, result.stderr
    assert "Using existing .venv (Python 3.10.13)" in result.stderr
    assert [call.split(" -m ")[1].split()[0] for call in machine.calls()] == ["pip", "pip"]  # uv's, then ours
    assert "installing with pip instead" in result.stderr  # the fake pip leaves no uv in .venv


def test_uv_installs_from_where_pip_is_configured_to_look(machine):
    machine.python("python", "3.11.9", folder=machine.repo / ".venv" / "bin")
    machine.uv()
    config = [  # as `pip config list` prints them: pip's files, then its environment variables, which win
        "global.index-url='https://mirror.example/simple'",
        "global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'",
        "global.constraint='/etc/pip/constraints.txt'",
        "global.cert='/etc/ssl/ca.pem'",
        ":env:.find-links='/opt/wheels'",
        ":env:.index-url='https://nearer.example/simple'",
    ]
    result = machine.setup("cpu", FAKE_PIP_CONFIG="\n".join(config))
    assert result.returncode == 0, result.stderr
    assert machine.calls()[-1] == (
        "uv pip install --quiet --python .venv/bin/python --compile-bytecode --index-strategy unsafe-best-match "
        "--index-url https://nearer.example/simple --extra-index-url file:///opt/a/simple "
        "--extra-index-url file:///opt/b/simple --find-links /opt/wheels --constraint /etc/pip/constraints.txt "
        "-e .[cpu] (SSL_CERT_FILE=/etc/ssl/ca.pem)"
    )
    assert "with pip instead" not in result.stderr


def test_pip_installs_where_uv_fails(machine):
    machine.python("python", "3.11.9", folder=machine.repo / ".venv" / "bin")
    machine.uv(status=1)
    result = machine.setup("cpu")
    assert result.returncode == 0, result.stderr
    calls = machine.calls()
    assert calls[-2].startswith("uv pip install") and calls[-1].endswith(
        "-m pip install --quiet --disable-pip-version-check -e .[cpu]"
    )
    assert "uv is not to be had or failed (see above); installing with pip instead" in result.stderr


def test_an_existing_venv_with_an_unsupported_python_is_refused(machine):
    machine.python("python3", "3.11.4")
    machine.python("python", "3.12.1", folder=machine.repo / ".venv" / "bin")
    line = one_line_error(machine.setup())
    assert ".venv has Python 3.12" in line and "remove .venv" in line
    assert machine.calls() == []
