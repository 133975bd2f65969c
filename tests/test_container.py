"""./Dockerfile, checked without Docker: a pinned base image, every package pinned by docker-constraints.txt,
the package's files copied, and python -m trainer.task as the entrypoint. The image itself is built only
where a Docker daemon runs (not on this project's machines)."""

import json
import os
import runpy
import shutil
import subprocess

import pytest
import setuptools
from packaging.requirements import Requirement

ROOT = os.path.join(os.path.dirname(__file__), "..")


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) for each instruction, continuation lines joined, comments left out."""
    with open(os.path.join(ROOT, "Dockerfile")) as file:
        text = file.read().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [tuple(line.split(None, 1)) for line in lines]


@pytest.fixture(scope="module")
def setup_arguments():
    """What setup.py passes to setuptools.setup, read by running it with setup() captured."""
    captured = {}
    original, cwd = setuptools.setup, os.getcwd()
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    try:
        os.chdir(ROOT)
        runpy.run_path("setup.py")
    finally:
        setuptools.setup = original
        os.chdir(cwd)
    return captured


def constraints() -> dict[str, str]:
    with open(os.path.join(ROOT, "docker-constraints.txt")) as file:
        lines = [line.strip() for line in file if line.strip() and not line.startswith("#")]
    pins = dict(line.split("==") for line in lines)
    assert len(pins) == len(lines), "every line is NAME==VERSION"
    return pins


def test_the_entrypoint_runs_the_trainer_on_a_pinned_base_image():
    instructions = dockerfile_instructions()
    (base,) = [arguments for name, arguments in instructions if name == "FROM"]
    image, _, tag = base.partition(":")
    assert image == "tensorflow/tensorflow" and tag.startswith("2.15.") and "latest" not in tag
    assert instructions[-1] == ("ENTRYPOINT", '["python", "-m", "trainer.task"]')
    assert json.loads(instructions[-1][1])[2] == "trainer.task"


def test_the_package_files_are_copied(setup_arguments):
    copied = {}
    for name, arguments in dockerfile_instructions():
        if name == "COPY":
            *sources, target = arguments.split()
            copied.update({source: target for source in sources})
    packages = {package.split(".")[0] for package in setup_arguments["packages"]}
    assert packages == {"dataformat", "preprocessing", "trainer"}
    for needed in [*packages, "setup.py", "README.md", "docker-constraints.txt", "configs"]:
        assert needed in copied, f"the Dockerfile does not copy {needed}"
        assert os.path.exists(os.path.join(ROOT, needed))
    with open(os.path.join(ROOT, ".dockerignore")) as file:
        ignored = {line.strip() for line in file if line.strip() and not line.startswith("#")}
    assert not ignored & set(copied)
    assert "catalog.yaml" in setup_arguments["package_data"]["trainer.vertex"]  # inside trainer/, so copied too


IMAGE_PYTHON = "3.11"  # the base image's, which docker-constraints.txt was resolved for


def test_every_install_is_pinned_and_the_pins_fit_setup_py(setup_arguments):
    installs = [
        arguments for name, arguments in dockerfile_instructions() if name == "RUN" and "pip install" in arguments
    ]
    assert installs and all("--constraint docker-constraints.txt" in command for command in installs)
    pins = constraints()
    for text in setup_arguments["install_requires"]:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate({"python_version": IMAGE_PYTHON}):
            continue  # a requirement of another Python's
        name = requirement.name.lower()
        assert name in pins, f"docker-constraints.txt does not pin {name}"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} does not fit {text}"
    assert pins["tensorflow"].startswith("2.15.") and pins["numpy"] < "2" and pins["protobuf"] < "5"


def docker_daemon() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not docker_daemon(), reason="no Docker daemon here")
def test_the_image_builds_and_runs_the_trainer():
    subprocess.run(["docker", "build", "-t", "queue-trainer:test", ROOT], check=True, timeout=3600)
    result = subprocess.run(["docker", "run", "--rm", "queue-trainer:test", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "qt-train" in result.stdout
