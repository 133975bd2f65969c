"""Readers that turn each kind of raw data held in arrays into one in-memory description, `RawData`
(tables stream instead: see tables.py).

Every source checks its input as it reads it and raises UserError naming the file (and line)
at fault. Examples stay in their natural dtype: uint8 pixels, float32 features.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gzip
import io
import itertools
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from dataformat import storage
from dataformat.errors import NotFound, UserError
from dataformat.schema import METADATA_FILE, PHOTO_SUFFIXES
from preprocessing.photos import open_photo, undecodable, upright, upright_size

log = logging.getLogger(__name__)
MNIST_IMAGES = r"(.+)-images[.-]idx3-ubyte(\.gz)?$"  # an IDX file of images, PREFIX-images-idx3-ubyte[.gz]
TEXT_SUFFIX = ".txt"  # --source text: a class folder's documents
CLASS_FOLDERS_PROBED = 20  # a folder's entries looked into for images or texts (on gs://, a request each)


@dataclasses.dataclass(frozen=True)
class RawData:
    """A raw dataset, read and checked, ready to be split and written.

    `items` holds the examples as one array (N, *shape), or, for data too big to hold at
    once, one reference per example (a file path) that `load` turns into an array later,
    inside the worker that writes its shard.
    """

    items: Sequence
    labels: np.ndarray  # int64 class index per example
    keys: Sequence[str]  # a stable name per example; the split is a hash of it
    class_names: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str  # "uint8" or "float32"
    load: Callable[[object], np.ndarray] | None = None
    fixed: np.ndarray | None = None  # each example's fixed split (split.TRAIN, EVAL or FREE), where the source says
    key_name: str = ""  # --key-column: each example's key (its entry of `keys`) is stored under this name


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    """Flags that only some sources read."""

    image_size: tuple[int, int] | None = None  # images: resize every image to (height, width)


def encode_labels(raw: np.ndarray, where: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Raw labels (numbers or strings) to class indices 0..K-1 and the K class names, sorted."""
    values = np.asarray(raw)
    if values.dtype.kind == "f" and np.all(np.mod(values, 1) == 0):
        values = values.astype(np.int64)  # 3.0 is class "3", not "3.0"
    classes, indices = np.unique(values, return_inverse=True)
    if len(classes) < 2:
        raise UserError(f"{where}: found {len(classes)} distinct label(s); a classifier needs at least 2")
    return indices.astype(np.int64), tuple(str(c) for c in classes)


def from_arrays(x: np.ndarray, raw_labels: np.ndarray, where: str) -> RawData:
    """RawData for examples already in memory: rank-1 rows are vectors, the rest images."""
    if len(x) != len(raw_labels):
        raise UserError(f"{where}: {len(x)} examples but {len(raw_labels)} labels")
    if len(x) == 0:
        raise UserError(f"{where}: no examples")
    if x.dtype.kind not in "uifb":
        raise UserError(f"{where}: examples have dtype {x.dtype}; expected numbers")
    if x.ndim == 3:  # (N, H, W): one channel
        x = x[..., np.newaxis]
    if x.ndim not in (2, 4):
        raise UserError(f"{where}: examples have shape {x.shape}; expected (N, D), (N, H, W) or (N, H, W, C)")
    if x.dtype != np.uint8:
        x = x.astype(np.float32)
        if not np.all(np.isfinite(x)):
            raise UserError(f"{where}: examples contain NaN or infinite values")
    labels, class_names = encode_labels(raw_labels, where)
    return RawData(
        items=x,
        labels=labels,
        keys=[str(i) for i in range(len(x))],
        class_names=class_names,
        shape=tuple(x.shape[1:]),
        dtype=str(x.dtype),
    )


def read_digits(path: str | None, options: SourceOptions) -> RawData:
    """scikit-learn's 1,797 real 8x8 handwritten digits (values 0-16), shipped with it."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return from_arrays(digits.images.astype(np.uint8), digits.target, "digits")


def _read_bytes(path: str) -> bytes:
    with storage.open_read(path) as file:
        data = file.read()
    return gzip.decompress(data) if path.endswith(".gz") else data


def read_idx(path: str) -> np.ndarray:
    """An IDX file (the MNIST format) of unsigned bytes, .gz or raw."""
    try:
        data = _read_bytes(path)
    except (OSError, EOFError) as error:
        raise UserError(f"{path}: cannot read ({error})") from None
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] != 0x08:
        raise UserError(f"{path}: not an IDX file of unsigned bytes")
    ndim = data[3]
    header = 4 + 4 * ndim
    dims = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    if len(data) != header + int(np.prod(dims)):
        raise UserError(f"{path}: header says shape {dims} but the file holds {len(data) - header} bytes")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def read_mnist(path: str | None, options: SourceOptions) -> RawData:
    """A folder of MNIST IDX files: every `PREFIX-images-idx3-ubyte[.gz]` with its labels file. Where it holds
    both `train` and `t10k` files (MNIST's and Fashion-MNIST's names), they are the training and evaluation
    splits, as published figures use them; other files are split by --eval-fraction."""
    folder = _require_input(path, "mnist")
    names = storage.list_names(folder)
    pattern = re.compile(MNIST_IMAGES)
    images, labels, keys, prefixes = [], [], [], []
    for name in names:
        match = pattern.match(name)
        if not match:
            continue
        prefix = match.group(1)
        label_names = [n for n in names if re.match(re.escape(prefix) + r"-labels[.-]idx1-ubyte(\.gz)?$", n)]
        if not label_names:
            raise UserError(f"{storage.join(folder, name)}: no matching {prefix}-labels-idx1-ubyte file")
        x = read_idx(storage.join(folder, name))
        y = read_idx(storage.join(folder, label_names[0]))
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise UserError(f"{storage.join(folder, name)}: images {x.shape} do not match labels {y.shape}")
        images.append(x)
        labels.append(y)
        keys.extend(f"{prefix}:{i}" for i in range(len(x)))
        prefixes.extend([prefix] * len(x))
    if not images:
        raise UserError(f"{folder}: no MNIST files (*-images-idx3-ubyte[.gz])")
    data = from_arrays(np.concatenate(images), np.concatenate(labels), folder)
    return dataclasses.replace(data, keys=keys, fixed=_published_split(np.array(prefixes)))


def _published_split(prefixes: np.ndarray) -> np.ndarray | None:
    """Each MNIST example's fixed split by its file's prefix (train, t10k), where the folder holds both."""
    from preprocessing.split import EVAL, FREE, TRAIN

    if not {"train", "t10k"} <= set(prefixes.tolist()):
        return None
    log.info("MNIST's own split: the train files for training, the t10k files for evaluation")
    return np.select([prefixes == "train", prefixes == "t10k"], [TRAIN, EVAL], FREE)


def read_npz(path: str | None, options: SourceOptions) -> RawData:
    """A NumPy .npz file with arrays `x` (examples) and `y` (labels)."""
    where = _require_input(path, "npz")
    try:
        with storage.open_read(where) as file, np.load(io.BytesIO(file.read()), allow_pickle=False) as arrays:
            missing = {"x", "y"} - set(arrays.files)
            if missing:
                found = ", ".join(arrays.files)
                raise UserError(f"{where}: no array named {', '.join(sorted(missing))} (found {found})")
            x, y = arrays["x"], arrays["y"]
    except (OSError, ValueError, EOFError) as error:
        raise UserError(f"{where}: cannot read as .npz ({error})") from None
    if y.ndim != 1:
        raise UserError(f"{where}: labels y have shape {y.shape}; expected (N,)")
    return from_arrays(x, y, where)


GRAY_MODES = ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F")  # Pillow's one-channel modes (LA: with alpha)


class BrokenImage(UserError):
    """An image that is missing or does not decode. The shard writers skip it and name it, with a count,
    while the broken ones are at most BROKEN_FLOOR or MAX_BROKEN_SHARE of the images; anything else wrong
    (a refused read, no credentials) stops."""


# A photo deleted from a bucket should not cost a rerun of a long conversion: broken images are skipped
# while they are at most BROKEN_FLOOR, or MAX_BROKEN_SHARE of all. More stop the run once every shard is
# written; more than BROKEN_FLOOR that are also most of a shard's images so far (a wrong path prefix or
# bucket) stop it in that shard at once.
MAX_BROKEN_SHARE = 0.01
BROKEN_FLOOR = 10
SHAPE_SAMPLE = 20  # the readable images whose sizes and colors choose the shape all are stored in


@contextlib.contextmanager
def _opened_image(path: str, where: str = "") -> Iterator:
    """The image at `path` (local or gs://), opened with Pillow; a file that is missing or does not decode,
    now or while it is used, is a BrokenImage naming it (after `where`, e.g. an image list's file and line)."""
    from PIL import UnidentifiedImageError

    named = f"{where}: {path}" if where else path
    try:
        with storage.open_read(path) as file, open_photo(file.read()) as image:
            yield image
    except (FileNotFoundError, NotFound):
        raise BrokenImage(f"{named}: no such image file") from None
    except UserError as error:  # Cloud Storage's own line: a refused read, no credentials
        raise UserError(f"{where}: {error}" if where else str(error)) from None
    except UnidentifiedImageError:
        raise BrokenImage(f"{named}: cannot decode image (not a format Pillow reads, e.g. PNG or JPEG)") from None
    except undecodable() as error:
        raise BrokenImage(f"{named}: cannot decode image ({error})") from None


def _eight_bit(image):
    """16-bit and float grayscale scaled to 0-255 (Pillow's convert would clip them), other modes as they are. 16-bit
    values keep their high byte, as TensorFlow's PNG decoder keeps it, so the export reads such a photo alike (scaled
    and cut, 40000 was 155 here and 156 there)."""
    from PIL import Image

    if image.mode not in ("I", "I;16", "I;16B", "I;16L", "F"):
        return image
    values = np.asarray(image, dtype=np.float64)
    if image.mode.startswith("I;16") or values.max() > 255:
        return Image.fromarray(np.clip(values // 256, 0, 255).astype(np.uint8))
    return Image.fromarray(np.clip(values, 0, 255).astype(np.uint8))


def _on_white(image):
    """An image with transparency over a white background (dropping alpha would show whatever color the
    transparent pixels hold, often black); others as they are."""
    from PIL import Image

    if image.mode not in ("RGBA", "LA", "PA") and not (image.mode == "P" and "transparency" in image.info):
        return image
    rgba = image.convert("RGBA")
    return Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)


@dataclasses.dataclass(frozen=True)
class ImageLoader:
    """Decodes one image file (a path, or (path, where it was listed)) to a (H, W, C) uint8 array of the
    expected shape: a GIF's first frame, any mode as gray or RGB (transparent parts white)."""

    shape: tuple[int, int, int]
    resize: bool

    def __call__(self, item) -> np.ndarray:
        from PIL import Image

        path, where = item if isinstance(item, tuple) else (item, "")
        with _opened_image(path, where) as image:
            image = _on_white(_eight_bit(upright(image))).convert("L" if self.shape[2] == 1 else "RGB")
            if self.resize:
                image = image.resize((self.shape[1], self.shape[0]), Image.BILINEAR)
            pixels = np.asarray(image, dtype=np.uint8)
        pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
        if pixels.shape != self.shape:
            raise UserError(
                f"{path}: image is {pixels.shape[0]}x{pixels.shape[1]}, not the most common size of the first images, "
                f"{self.shape[0]}x{self.shape[1]}; pass --image-size HEIGHTxWIDTH to resize all"
            )
        return pixels


def first_image_shape(images: Iterable[tuple[str, str]], size: tuple[int, int] | None) -> tuple[int, int, int]:
    """The shape every image will have, from the first SHAPE_SAMPLE readable images: their most common size (or
    --image-size), and three channels if any is in color, else one. The first image alone decided both, so a
    gray icon listed first made thirty color photos gray, and 16x16. `images` are (path, where it was listed,
    or ""). Broken images are skipped later, by the shard writers; the first's error stops the run if the
    first BROKEN_FLOOR + 1 are all broken."""
    sizes, color, first = [], False, None
    for tried, (path, where) in enumerate(itertools.islice(images, SHAPE_SAMPLE + BROKEN_FLOOR), start=1):
        try:
            with _opened_image(path, where) as image:
                color = color or image.mode not in GRAY_MODES
                sizes.append(upright_size(image)[::-1])
        except BrokenImage as error:
            first = first or error
        if len(sizes) == SHAPE_SAMPLE or not sizes and tried > BROKEN_FLOOR:
            break
    if not sizes:
        raise first
    height, width = size or collections.Counter(sizes).most_common(1)[0][0]
    return (height, width, 3 if color else 1)


def read_images(path: str | None, options: SourceOptions) -> RawData:
    """A folder with one sub-folder of image files per class, the sub-folder names the classes; or an image
    list (preprocessing/image_lists.py)."""
    from preprocessing import image_lists

    if path and path.lower().endswith(image_lists.LIST_SUFFIXES):
        return image_lists.read_image_list(_require_input(path, "image list"), options)
    folder = _require_input(path, "images")
    classes, files = class_files(folder, PHOTO_SUFFIXES, "image")
    if len(classes) < 2:
        raise UserError(f"{folder}: found {len(classes)} class folder(s); expected one sub-folder per class, 2 or more")
    paths = [storage.join(folder, name) for name, _ in files]
    index = {name: i for i, name in enumerate(classes)}
    shape = first_image_shape(((path, "") for path in paths), options.image_size)
    return RawData(
        items=paths,
        labels=np.array([index[label] for _, label in files], dtype=np.int64),
        keys=[name for name, _ in files],
        class_names=tuple(classes),
        shape=shape,
        dtype="uint8",
        load=ImageLoader(shape, resize=options.image_size is not None),
    )


def class_files(
    folder: str, suffixes: tuple[str, ...], kind: str, warn: bool = True
) -> tuple[list[str], list[tuple[str, str]]]:
    """A folder of one sub-folder a class: (the classes, sorted; (CLASS/FILE, class) of each file of theirs whose
    name ends in one of `suffixes`). Hidden names (.DS_Store, macOS's ._photo.jpg copies, Jupyter's
    .ipynb_checkpoints) are skipped; a warning names what else is left out: a class's sub-folder, a TIFF, a file
    beside the class folders, each left out silently before. A class folder without such a file is a UserError."""
    names = _visible_names(folder)
    classes = [name for name in names if storage.is_folder(storage.join(folder, name))]
    files, left_out = [], [name for name in names if name not in classes]
    for name in classes:
        found = _visible_names(storage.join(folder, name))
        kept = [f"{name}/{file}" for file in found if file.lower().endswith(suffixes)]
        if not kept:
            raise UserError(f"{storage.join(folder, name)}: class folder has no {kind} files ({', '.join(suffixes)})")
        files += [(path, name) for path in kept]
        left_out += [f"{name}/{file}" for file in found if not file.lower().endswith(suffixes)]
    if left_out and warn:
        more = ", ..." if len(left_out) > 3 else ""
        log.warning("%s: left out %d file(s) or folder(s), as only the %s files at the top of each class folder are "
                    "read: %s%s", folder, len(left_out), kind, ", ".join(left_out[:3]), more)  # fmt: skip
    return classes, files


def _visible_names(folder: str) -> list[str]:
    return [name.rstrip("/") for name in storage.list_names(folder) if not name.startswith(".")]


def folder_source(folder: str) -> str | None:
    """The --source a folder holds: mnist (IDX files), images or text (class sub-folders of image or .txt
    files, judged by the first of CLASS_FOLDERS_PROBED that holds any), or None."""
    names = storage.list_names(folder)
    if any(re.match(MNIST_IMAGES, name) for name in names):
        return "mnist"
    loose = (*PHOTO_SUFFIXES, TEXT_SUFFIX, ".csv", ".json", ".jsonl", ".md")  # files, not class folders
    for name in [name for name in names if not name.lower().endswith(loose)][:CLASS_FOLDERS_PROBED]:
        files = [file.lower() for file in storage.list_names(storage.join(folder, name.rstrip("/")))]
        if METADATA_FILE in files:  # a dataset (--output inside --input): its text columns' vocabularies are no class
            continue
        if any(file.endswith(PHOTO_SUFFIXES) for file in files):
            return "images"
        if any(file.endswith(TEXT_SUFFIX) for file in files):
            return "text"
    return None


def _require_input(path: str | None, source: str) -> str:
    if not path:
        raise UserError(f"--source {source} needs --input")
    if source in ("mnist", "images"):
        if not storage.is_folder(path):
            raise UserError(f"--input {path}: not a folder")
    elif not storage.exists(path):
        raise UserError(f"--input {path}: no such file")
    return path


SOURCES: dict[str, Callable[[str | None, SourceOptions], RawData]] = {
    "digits": read_digits,
    "mnist": read_mnist,
    "npz": read_npz,
    "images": read_images,
}
