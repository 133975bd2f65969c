"""Benchmark 10: photos. Accuracy of `python -m trainer.task` on a real labelled photo set from its image
list, with its default flags (augmentation on: crop), with --augment shift and with --augment none, against
scikit-learn's logistic regression on the same split's pixels; and the speed of the training input with
augmentation, per core, for both stored forms.

A few hundred photos leave a fifth of them, one split, too few to tell the runs apart (a photo is 1.8
points of 56), so accuracy is cross-validated: the image list's ML_USE column puts each class's every
FOLDS-th photo in evaluation, in turn, and each run's figure is its correct answers over all the folds.

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
import subprocess
import sys

import numpy as np

from benchmarks import report
from benchmarks.common import ROOT, Bench, target
from benchmarks.tables import run_child

STAMPS = "/usr/share/tuxpaint/stamps"
CLASSES = ("animals", "food", "plants", "town", "household")  # those with 30 or more photographs
INSTALL = "apt-get install --no-install-recommends tuxpaint-stamps-default"
FOLDS = 4
AUGMENTS = ("crop", "shift", "none")  # --augment of each accuracy run; the first is the default for photos
STORED_SIDE = 36  # the accuracy runs' stored photos: the model sees 32x32 (the 87.5% center crop)
SPEED_SIDE, CROP_SIDE = 256, 224  # the speed runs': ImageNet's sizes
SPEED_BATCH = 64


def photo_lines(folder: str) -> tuple[list[str], str]:
    """(image-list lines `PATH,LABEL` in Vertex AI's CSV format, class by class, where the photos come from)."""
    lines = []
    for label in CLASSES:
        found = sorted(glob.glob(f"{STAMPS}/{label}/**/*.png", recursive=True))
        lines += [f"{photo},{label}" for photo in found if "/cartoon" not in photo]
    origin = f"Tux Paint's stamp photographs ({INSTALL}): {', '.join(CLASSES)}"
    if not lines:
        lines, origin = made_up_photos(folder), f"made-up photos: Tux Paint's stamps are not installed (`{INSTALL}`)"
    return lines, origin


def write_fold(folder: str, lines: list[str], fold: int) -> str:
    """The image list with ML_USE: each class's every FOLDS-th photo, from the fold-th, for evaluation."""
    path, places = os.path.join(folder, f"photos-fold{fold}.csv"), {}
    with open(path, "w") as file:
        for line in lines:
            label = line.rsplit(",", 1)[1]
            place = places[label] = places.get(label, -1) + 1
            file.write(f"{'validation' if place % FOLDS == fold else 'training'},{line}\n")
    return path


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


def accuracy(bench: Bench, folder: str, lines: list[str], log: str) -> dict:
    """Each fold's accuracy of each run (trainer.task with defaults, then each other --augment), and the
    pooled figure: correct answers over every fold's evaluation photos."""
    flags, folds = list(bench.size.photo_trainer_flags), []
    for fold in range(bench.size.photo_folds):
        data = os.path.join(folder, f"fold{fold}")
        preprocess(write_fold(folder, lines, fold), data, STORED_SIDE, log)
        with open(os.path.join(data, "metadata.json")) as file:
            splits = json.load(file)["splits"]
        found = {"train": splits["train"]["examples"], "eval": splits["eval"]["examples"]}
        for name in AUGMENTS:
            extra = [] if name == AUGMENTS[0] else ["--augment", name]
            found[name] = train(data, os.path.join(folder, f"job-{name}-{fold}"), log, [*flags, *extra])
        found["logistic_regression"] = logistic_regression(data)
        folds.append(found)
    runs = [*AUGMENTS, "logistic_regression"]
    pooled = {run: sum(f[run] * f["eval"] for f in folds) / sum(f["eval"] for f in folds) for run in runs}
    return {"folds": folds, "pooled": pooled, "trainer_flags": flags}


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
# The default CNN's rate is ResNet-50's scaled by their forward FLOPs at CROP_SIDE (TensorFlow's profiler):
# the same effective FLOP rate, which a plain CNN without bottlenecks should reach or beat.
RESNET50_IMAGES_PER_SECOND = {"an A100": 2400, "a T4": 250}


def forward_gflops() -> dict[str, float]:
    """GFLOPs of one image's forward pass at CROP_SIDE: the default CNN on photos stored at SPEED_SIDE
    (trainer.networks.image_cnn, with its center crop), and Keras's ResNet-50."""
    import tensorflow as tf

    from dataformat.schema import Metadata, SplitInfo
    from trainer.model import ModelSettings
    from trainer.networks import image_cnn

    split = SplitInfo(examples=0, bytes=0, shards=())
    stored = Metadata(shape=(SPEED_SIDE, SPEED_SIDE, 3), dtype="uint8", class_names=("a", "b"),
                      splits={"train": split, "eval": split}, mean=(0.0,) * 3, std=(1.0,) * 3)  # fmt: skip
    networks = {
        "default CNN": (lambda: image_cnn(ModelSettings(network="cnn", augment="crop"), stored), SPEED_SIDE),
        "ResNet-50": (lambda: tf.keras.applications.ResNet50(weights=None), CROP_SIDE),
    }
    found = {}
    for name, (build, side) in networks.items():
        with tf.Graph().as_default() as graph:
            build()(tf.zeros([1, side, side, 3]))
            options = {**tf.compat.v1.profiler.ProfileOptionBuilder.float_operation(), "output": "none"}
            found[name] = tf.compat.v1.profiler.profile(graph, options=options).total_float_ops / 1e9
    return found


def gpu_rates(gflops: dict[str, float]) -> dict[str, float]:
    """Images/s each network trains at on each GPU, on paper (RESNET50_IMAGES_PER_SECOND)."""
    ratio = gflops["ResNet-50"] / gflops["default CNN"]
    rates = {f"ResNet-50 on {gpu}": rate for gpu, rate in RESNET50_IMAGES_PER_SECOND.items()}
    return rates | {f"the default CNN on {gpu}": rate * ratio for gpu, rate in RESNET50_IMAGES_PER_SECOND.items()}


def run(bench: Bench) -> dict:
    folder = os.path.join(bench.folder, "photos")
    os.makedirs(folder, exist_ok=True)
    lines, origin = photo_lines(folder)
    log = os.path.join(folder, "child.log")
    scores = accuracy(bench, folder, lines, log)
    speeds = speed(bench, folder, write_fold(folder, lines, 0), log)
    pooled = scores["pooled"]
    goals = [
        target(
            "photos: accuracy with augmentation (default) − with --augment none", pooled["crop"] - pooled["none"], 0.0
        ),
        target("photos: ours (default) − logistic regression", pooled["crop"] - pooled["logistic_regression"], 0.0),
    ]
    return {"origin": origin, "accuracy": scores, "speed": speeds, "gflops": forward_gflops(), "targets": goals}


def section(result: dict) -> list[str]:
    scores, speeds = result["accuracy"], result["speed"]
    flags = " ".join(scores["trainer_flags"]) or "none"
    rows = [[row["feed"], report.number(row["images_per_second"])] for row in speeds["rows"]]
    cores = []
    for gpu, rate in gpu_rates(result["gflops"]).items():
        need = "; ".join(f"{row['feed']}: {rate / row['images_per_second']:.1f}" for row in speeds["rows"])
        cores.append(f"- {gpu} (about {rate:,.0f} images/s), cores needed — {need}.")
    gflops = result["gflops"]
    folds = scores["folds"]
    names = {
        "crop": "python -m trainer.task, defaults (augmentation: crop)",
        "shift": "python -m trainer.task --augment shift",
        "none": "python -m trainer.task --augment none",
        "logistic_regression": "scikit-learn LogisticRegression on the pixels",
    }
    accuracies = [
        [label, f"{scores['pooled'][run]:.4f}", ", ".join(f"{fold[run]:.4f}" for fold in folds)]
        for run, label in names.items()
    ]
    evaluated = sum(fold["eval"] for fold in folds)
    return [
        "## 10. Photos",
        "",
        f"{result['origin']}; {folds[0]['train'] + folds[0]['eval']} photos, stored at {STORED_SIDE}x{STORED_SIDE}, "
        f"from their image list. Cross-validated: in each of {len(folds)} folds of {FOLDS}, ML_USE puts every "
        f"{FOLDS}th photo of each class in evaluation ({evaluated} photos in all). Trainer flags added: {flags}.",
        "",
        *report.table(["run", "accuracy, all folds", "each fold"], accuracies),
        "",
        f"Training input with augmentation, one core, photos stored at {SPEED_SIDE}x{SPEED_SIDE} and cropped to "
        f"{CROP_SIDE}x{CROP_SIDE}, batches of {SPEED_BATCH}. Stored: {speeds['pixel_bytes_per_image'] / 1024:,.0f} KiB "
        f"a photo as pixels, {speeds['jpeg_bytes_per_image'] / 1024:,.0f} KiB as JPEG.",
        "",
        *report.table(["feed", "images/s on one core"], rows),
        "",
        "On paper (no GPU here), the cores each feed needs to keep a GPU busy. ResNet-50's rates are published "
        f"figures (mixed precision); one forward pass at {CROP_SIDE}x{CROP_SIDE} costs "
        f"{gflops['default CNN']:.2f} GFLOPs in the default CNN and {gflops['ResNet-50']:.2f} in ResNet-50 "
        "(TensorFlow's profiler), so the default CNN's rates are ResNet-50's times their ratio:",
        "",
        *cores,
    ]


def plot(result: dict, folder: str) -> list[str]:
    rows = result["speed"]["rows"]
    labels, values = [row["feed"] for row in rows], [row["images_per_second"] for row in rows]
    return report.bar_chart(folder, "photos.png", "Photos: augmented training input, one core", labels, values,
                            "images / s")  # fmt: skip
