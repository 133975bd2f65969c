"""Benchmark 10: photos. Accuracy of `python -m trainer.task` on a real labelled photo set from its image
list, with its default flags (augmentation on) and with --augment none, against scikit-learn's logistic
regression on the same split's pixels; and the speed of the training input with augmentation, per core,
for both stored forms.

Photos: Tux Paint's stamps (Debian's tuxpaint-stamps-default, GPL-2): photographs of animals, food,
plants, buildings and household things, cut out of their background (transparent parts become white);
its cartoon drawings are left out. Without the package, made-up photos (colored noise with a tint per class)
stand in, and the report says so.

Speed, in a child process pinned to one core, over the same photos stored at SPEED_SIDE pixels a side:
- this trainer's queue input over pixel shards, alone (the CPU's whole share on a GPU, where the crop runs)
  and then with the Augment layer (random crop to CROP_SIDE and flip) on this CPU;
- a tf.data pipeline over the same shards doing the same work per image in `map(num_parallel_calls=AUTOTUNE)`,
  then batch and prefetch;
- a tf.data pipeline over the same photos stored as JPEG files (quality 90): read, decode, crop, flip.
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import subprocess
import sys

import numpy as np

from benchmarks import report
from benchmarks.common import ROOT, Bench, target
from benchmarks.tables import run_child

STAMPS = "/usr/share/tuxpaint/stamps"
CLASSES = ("animals", "food", "plants", "town", "household")  # those with 30 or more photographs
INSTALL = "apt-get install --no-install-recommends tuxpaint-stamps-default"
STORED_SIDE = 36  # the accuracy runs' stored photos: the model sees 32x32 (the 87.5% center crop)
SPEED_SIDE, CROP_SIDE = 256, 224  # the speed runs': ImageNet's sizes
SPEED_BATCH = 64


def write_list(folder: str) -> tuple[str, str]:
    """(an image list in Vertex AI's CSV format, where its photos come from)."""
    path = os.path.join(folder, "photos.csv")
    lines = []
    for label in CLASSES:
        found = sorted(glob.glob(f"{STAMPS}/{label}/**/*.png", recursive=True))
        lines += [f"{photo},{label}" for photo in found if "/cartoon" not in photo]
    origin = f"Tux Paint's stamp photographs ({INSTALL}): {', '.join(CLASSES)}"
    if not lines:
        lines, origin = made_up_photos(folder), f"made-up photos: Tux Paint's stamps are not installed (`{INSTALL}`)"
    with open(path, "w") as file:
        file.write("\n".join(lines) + "\n")
    return path, origin


def made_up_photos(folder: str, per_class: int = 30) -> list[str]:
    from PIL import Image

    rng, lines = np.random.default_rng(0), []
    for k, label in enumerate(("red", "green", "blue")):
        for i in range(per_class):
            pixels = rng.integers(0, 140, (48, 48, 3), dtype=np.uint8)
            pixels[..., k] += 110
            path = os.path.join(folder, f"{label}-{i}.png")
            Image.fromarray(pixels).save(path)
            lines.append(f"{path},{label}")
    return lines


def preprocess(listed: str, output: str, side: int, log: str) -> None:
    command = [sys.executable, "-m", "preprocessing", "--source", "images", "--input", listed, "--output", output]
    run_child([*command, "--image-size", f"{side}x{side}"], log)


def train(data: str, job: str, log: str, flags: list[str]) -> float:
    run_child([sys.executable, "-m", "trainer.task", "--data-dir", data, "--job-dir", job, *flags], log)
    with open(os.path.join(job, "eval_metrics.json")) as file:
        return json.load(file)["accuracy"]


def pixels_of(data: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's photos as rows of pixels in [0, 1], and their labels."""
    import tensorflow as tf

    from dataformat.schema import Metadata, decode_record

    with open(os.path.join(data, "metadata.json")) as file:
        metadata = Metadata.from_json(file.read(), data)
    xs, ys = [], []
    for shard in metadata.splits[split].shards:
        for record in tf.data.TFRecordDataset(os.path.join(data, shard.file)).as_numpy_iterator():
            x, y = decode_record(record, metadata)
            xs.append(x.reshape(len(y), -1) / 255.0)
            ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


def logistic_regression(data: str) -> float:
    from sklearn.linear_model import LogisticRegression

    (x, y), (x_eval, y_eval) = pixels_of(data, "train"), pixels_of(data, "eval")
    return float(LogisticRegression(max_iter=2000).fit(x, y).score(x_eval, y_eval))


def accuracy(bench: Bench, folder: str, listed: str, log: str) -> dict:
    data = os.path.join(folder, "accuracy")
    preprocess(listed, data, STORED_SIDE, log)
    flags = list(bench.size.photo_trainer_flags)
    runs = {"augmented": [], "none": []}
    for seed in range(bench.size.photo_seeds):
        for name, extra in (("augmented", []), ("none", ["--augment", "none"])):
            job = os.path.join(folder, f"job-{name}-{seed}")
            runs[name].append(train(data, job, log, [*flags, *extra, "--seed", str(seed)]))
    with open(os.path.join(data, "metadata.json")) as file:
        splits = json.load(file)["splits"]
    return {
        "train": splits["train"]["examples"],
        "eval": splits["eval"]["examples"],
        "ours_augmented": runs["augmented"],
        "ours_none": runs["none"],
        "logistic_regression": logistic_regression(data),
        "trainer_flags": flags,
    }


SPEED_CHILD = """
import json, os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
sys.path.insert(0, sys.argv[1])
from benchmarks.photos import speed_in_child
print(json.dumps(speed_in_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))))
"""


def speed(bench: Bench, folder: str, listed: str, log: str) -> dict:
    data, jpegs = os.path.join(folder, "speed"), os.path.join(folder, "jpeg")
    preprocess(listed, data, SPEED_SIDE, log)
    write_jpegs(data, jpegs)
    warmup, timed = bench.size.photo_speed_batches
    command = [sys.executable, "-c", SPEED_CHILD, ROOT, data, jpegs, str(warmup), str(timed)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"the speed child failed:\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    shard_bytes = sum(os.path.getsize(path) for path in glob.glob(os.path.join(data, "train-*")))
    jpeg_bytes = sum(os.path.getsize(path) for path in glob.glob(os.path.join(jpegs, "*.jpg")))
    count = len(glob.glob(os.path.join(jpegs, "*.jpg")))
    return {"rows": rows, "pixel_bytes_per_image": shard_bytes / count, "jpeg_bytes_per_image": jpeg_bytes / count}


def write_jpegs(data: str, folder: str) -> None:
    """The training split's stored photos again, as JPEG files (quality 90)."""
    from PIL import Image

    os.makedirs(folder, exist_ok=True)
    x, y = pixels_of(data, "train")
    for i, (row, label) in enumerate(zip(x, y)):
        image = (row.reshape(SPEED_SIDE, SPEED_SIDE, 3) * 255).round().astype(np.uint8)
        Image.fromarray(image).save(os.path.join(folder, f"{i:05d}-{label}.jpg"), quality=90)


def speed_in_child(data: str, jpegs: str, warmup: int, timed: int) -> list[dict]:
    """Images/s of each way to feed augmented batches, on this process's one core."""
    import tensorflow as tf

    from benchmarks.feeds import queue_feed, session_loop, tf_data_batches
    from dataformat.schema import Metadata
    from trainer import augment
    from trainer.config import Config

    with open(os.path.join(data, "metadata.json")) as file:
        metadata = Metadata.from_json(file.read(), data)
    files = [os.path.join(data, shard.file) for shard in metadata.splits["train"].shards]
    config = Config(batch_size=SPEED_BATCH, shuffle_buffer=256)

    def ours():
        feed = queue_feed(files, metadata, config)
        images = augment.Augment("crop", (CROP_SIDE, CROP_SIDE), seed=0)(feed.features["image"], training=True)
        return tf.reduce_sum(images), None

    def ours_delivery():  # the CPU's share on a GPU, where the crop runs on the device
        return tf.reduce_sum(tf.cast(queue_feed(files, metadata, config).features["image"][:, 0, 0], tf.int32)), None

    def pixels_in_map():
        batches = (
            tf_data_batches(files, metadata, config)
            .unbatch()
            .map(lambda image, label: (_crop_one(image), label), num_parallel_calls=tf.data.AUTOTUNE)
        )
        images, _ = tf.compat.v1.data.make_one_shot_iterator(_batched(batches)).get_next()
        return tf.reduce_sum(images), None

    def jpeg_files():
        paths = tf.data.Dataset.list_files(os.path.join(jpegs, "*.jpg"), seed=0).repeat()
        decoded = paths.map(lambda p: _crop_one(tf.io.decode_jpeg(tf.io.read_file(p), 3)), tf.data.AUTOTUNE)
        images = tf.compat.v1.data.make_one_shot_iterator(_batched(decoded)).get_next()
        return tf.reduce_sum(images), None

    rows = []
    for name, build in (
        ("queue, pixels: delivery only (the CPU's share when the crop runs on a GPU)", ours_delivery),
        ("queue, pixels: crop and flip after the queue (here on the CPU too)", ours),
        ("tf.data, pixels: crop and flip in map", pixels_in_map),
        ("tf.data, JPEG files: decode, crop and flip in map", jpeg_files),
    ):
        with session_loop(build) as loop:
            loop(warmup)
            seconds = loop(timed)
        rows.append({"feed": name, "images_per_second": timed * SPEED_BATCH / seconds})
    return rows


def _crop_one(image):
    """One image's random crop (Inception's box, as augment.AREA and RATIO), resized, and a random flip."""
    import tensorflow as tf

    from trainer import augment

    box = tf.image.sample_distorted_bounding_box(
        tf.shape(image), tf.zeros([0, 0, 4]), area_range=augment.AREA, aspect_ratio_range=augment.RATIO,
        use_image_if_no_bounding_boxes=True,
    )  # fmt: skip
    cropped = tf.slice(image, box[0], box[1])
    return tf.image.random_flip_left_right(tf.image.resize(cropped, [CROP_SIDE, CROP_SIDE]))


def _batched(dataset):
    import tensorflow as tf

    return dataset.batch(SPEED_BATCH, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


# On paper (no GPU here): images/s a GPU trains, from published figures, and from this one's per-core rates
# the cores each stored form needs to feed it. ResNet-50 on an A100 with mixed precision: about 2,400 images/s
# (issue 28's figure, NVIDIA's published training throughput); on a T4: about 250 (an estimate: the T4 has
# about a tenth of the A100's dense float16 throughput, 65 against 624 TFLOPS with sparsity or 312 without).
GPU_IMAGES_PER_SECOND = {"ResNet-50 on an A100": 2400, "ResNet-50 on a T4": 250}


def run(bench: Bench) -> dict:
    folder = os.path.join(bench.folder, "photos")
    os.makedirs(folder, exist_ok=True)
    listed, origin = write_list(folder)
    log = os.path.join(folder, "child.log")
    scores = accuracy(bench, folder, listed, log)
    speeds = speed(bench, folder, listed, log)
    augmented, plain = statistics.median(scores["ours_augmented"]), statistics.median(scores["ours_none"])
    goals = [
        target("photos: accuracy with augmentation − with --augment none (median)", augmented - plain, 0.0),
        target("photos: ours (augmented) − logistic regression", augmented - scores["logistic_regression"], 0.0),
    ]
    return {"origin": origin, "accuracy": scores, "speed": speeds, "targets": goals}


def section(result: dict) -> list[str]:
    scores, speeds = result["accuracy"], result["speed"]
    flags = " ".join(scores["trainer_flags"]) or "none"
    rows = [[row["feed"], report.number(row["images_per_second"])] for row in speeds["rows"]]
    cores = []
    for gpu, rate in GPU_IMAGES_PER_SECOND.items():
        need = "; ".join(f"{row['feed']}: {rate / row['images_per_second']:.1f}" for row in speeds["rows"])
        cores.append(f"- {gpu} (about {rate:,} images/s), cores needed — {need}.")
    return [
        "## 10. Photos",
        "",
        f"{result['origin']}; {scores['train']} training and {scores['eval']} evaluation photos, stored at "
        f"{STORED_SIDE}x{STORED_SIDE}, from their image list. Trainer flags added: {flags}.",
        "",
        *report.table(
            ["run", "accuracy (each seed)"],
            [
                [
                    "python -m trainer.task, defaults (augmentation: crop)",
                    ", ".join(f"{a:.4f}" for a in scores["ours_augmented"]),
                ],
                ["python -m trainer.task --augment none", ", ".join(f"{a:.4f}" for a in scores["ours_none"])],
                ["scikit-learn LogisticRegression on the pixels", f"{scores['logistic_regression']:.4f}"],
            ],
        ),  # fmt: skip
        "",
        f"Training input with augmentation, one core, photos stored at {SPEED_SIDE}x{SPEED_SIDE} and cropped to "
        f"{CROP_SIDE}x{CROP_SIDE}, batches of {SPEED_BATCH}. Stored: {speeds['pixel_bytes_per_image'] / 1024:,.0f} KiB "
        f"a photo as pixels, {speeds['jpeg_bytes_per_image'] / 1024:,.0f} KiB as JPEG.",
        "",
        *report.table(["feed", "images/s on one core"], rows),
        "",
        "On paper (no GPU here), the cores each feed needs to keep a GPU busy:",
        "",
        *cores,
    ]


def plot(result: dict, folder: str) -> list[str]:
    rows = result["speed"]["rows"]
    labels, values = [row["feed"] for row in rows], [row["images_per_second"] for row in rows]
    return report.bar_chart(folder, "photos.png", "Photos: augmented training input, one core", labels, values,
                            "images / s")  # fmt: skip
