import gzip

import numpy as np
import pytest
from PIL import Image

from dataformat.errors import UserError
from preprocessing.sources import BrokenImage, SourceOptions, read_digits, read_images, read_mnist, read_npz

OPTIONS = SourceOptions()


def write_idx(path, array: np.ndarray, compress: bool) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(data) if compress else data)


def test_digits_are_the_real_8x8_digits():
    data = read_digits(None, OPTIONS)
    assert data.items.shape == (1797, 8, 8, 1) and data.dtype == "uint8"
    assert data.class_names == tuple(str(i) for i in range(10))
    assert data.items.max() == 16
    assert np.bincount(data.labels).min() > 170


@pytest.mark.parametrize("compress", [True, False])
def test_mnist_folder_of_idx_files(tmp_path, compress):
    images = np.arange(3 * 28 * 28).reshape(3, 28, 28) % 256
    suffix = ".gz" if compress else ""
    write_idx(tmp_path / f"t10k-images-idx3-ubyte{suffix}", images, compress)
    write_idx(tmp_path / f"t10k-labels-idx1-ubyte{suffix}", np.array([7, 2, 7]), compress)
    data = read_mnist(str(tmp_path), OPTIONS)
    assert data.items.shape == (3, 28, 28, 1)
    np.testing.assert_array_equal(data.items[..., 0], images)
    assert data.class_names == ("2", "7")
    np.testing.assert_array_equal(data.labels, [1, 0, 1])
    assert data.keys == ["t10k:0", "t10k:1", "t10k:2"]


def test_mnist_keeps_its_published_split(tmp_path):
    """The train and t10k files were pooled and split 80/20: no figure compared with MNIST's published ones."""
    from preprocessing.writer import build_dataset

    rng = np.random.default_rng(0)
    for prefix, count in (("train", 50), ("t10k", 10)):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (count, 4, 4)), False)
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", np.arange(count) % 2, False)
    data = read_mnist(str(tmp_path), OPTIONS)
    metadata = build_dataset(data, str(tmp_path / "out"), source="mnist", eval_fraction=0.5)
    assert (metadata.splits["train"].examples, metadata.splits["eval"].examples) == (50, 10)
    (tmp_path / "t10k-images-idx3-ubyte").rename(tmp_path / "extra-images-idx3-ubyte")  # no t10k: a split by fraction
    (tmp_path / "t10k-labels-idx1-ubyte").rename(tmp_path / "extra-labels-idx1-ubyte")
    assert read_mnist(str(tmp_path), OPTIONS).fixed is None


def test_mnist_truncated_file_names_the_file(tmp_path):
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((2, 4, 4)), False)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.array([0, 1]), False)
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(UserError, match="train-images-idx3-ubyte: header says shape"):
        read_mnist(str(tmp_path), OPTIONS)


def test_mnist_without_files_is_an_error(tmp_path):
    with pytest.raises(UserError, match="no MNIST files"):
        read_mnist(str(tmp_path), OPTIONS)


def test_npz_images_and_vectors(tmp_path):
    np.savez(tmp_path / "images.npz", x=np.zeros((4, 5, 6), np.uint8), y=np.array([0, 1, 0, 1]))
    np.savez(tmp_path / "vectors.npz", x=np.ones((4, 3), np.float64), y=np.array(["a", "b", "a", "b"]))
    images = read_npz(str(tmp_path / "images.npz"), OPTIONS)
    vectors = read_npz(str(tmp_path / "vectors.npz"), OPTIONS)
    assert (images.shape, images.dtype) == ((5, 6, 1), "uint8")
    assert (vectors.shape, vectors.dtype, vectors.class_names) == ((3,), "float32", ("a", "b"))


def test_npz_missing_array_is_named(tmp_path):
    np.savez(tmp_path / "a.npz", x=np.zeros((2, 2)))
    with pytest.raises(UserError, match="a.npz: no array named y"):
        read_npz(str(tmp_path / "a.npz"), OPTIONS)


def make_image_folder(root, sizes=((6, 5), (6, 5), (6, 5), (6, 5)), mode="L"):
    for i, size in enumerate(sizes):
        folder = root / ("cats" if i % 2 else "dogs")
        folder.mkdir(exist_ok=True)
        Image.new(mode, (size[1], size[0]), color=i * 40).save(folder / f"{i}.png")


def test_images_folder_one_subfolder_per_class(tmp_path):
    make_image_folder(tmp_path)
    data = read_images(str(tmp_path), OPTIONS)
    assert data.class_names == ("cats", "dogs")
    assert data.shape == (6, 5, 1)
    pixels = data.load(data.items[0])
    assert pixels.shape == (6, 5, 1) and pixels.dtype == np.uint8
    assert pixels[0, 0, 0] == 40  # cats/1.png


def test_images_of_different_sizes_need_resizing(tmp_path):
    make_image_folder(tmp_path, sizes=((6, 5), (6, 5), (6, 5), (7, 5)), mode="RGB")
    data = read_images(str(tmp_path), OPTIONS)
    with pytest.raises(UserError, match="3.png: image is 7x5, not the most common size of the first images, 6x5"):
        [data.load(path) for path in data.items]
    resized = read_images(str(tmp_path), SourceOptions(image_size=(4, 4)))
    assert all(resized.load(path).shape == (4, 4, 3) for path in resized.items)


def test_image_that_does_not_decode_is_named(tmp_path):
    make_image_folder(tmp_path)
    (tmp_path / "dogs" / "broken.png").write_bytes(b"not a png")
    data = read_images(str(tmp_path), OPTIONS)
    with pytest.raises(UserError, match=r"broken.png: cannot decode image \(not a format Pillow reads"):
        [data.load(path) for path in data.items]


def test_truncated_image_is_named(tmp_path):
    make_image_folder(tmp_path)
    noise = np.random.default_rng(0).integers(0, 256, (60, 50), dtype=np.uint8)
    Image.fromarray(noise).save(tmp_path / "dogs" / "whole.png")  # noise, so that the PNG is large
    (tmp_path / "dogs" / "truncated.png").write_bytes((tmp_path / "dogs" / "whole.png").read_bytes()[:300])
    data = read_images(str(tmp_path), SourceOptions(image_size=(6, 5)))
    with pytest.raises(UserError, match="truncated.png: cannot decode image"):
        [data.load(path) for path in data.items]


@pytest.mark.parametrize(
    "reader, name, message",
    [
        (read_npz, "empty.npz", "cannot read as .npz"),
    ],
)
def test_empty_input_file_is_named(tmp_path, reader, name, message):
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(UserError, match=f"{name}: {message}"):
        reader(str(tmp_path / name), OPTIONS)


def test_empty_idx_and_image_files_are_named(tmp_path):
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(b"")
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(b"")
    with pytest.raises(UserError, match="t10k-images-idx3-ubyte: not an IDX file"):
        read_mnist(str(tmp_path), OPTIONS)
    (tmp_path / "images").mkdir()
    make_image_folder(tmp_path / "images")
    (tmp_path / "images" / "cats" / "0-empty.png").write_bytes(b"")
    data = read_images(str(tmp_path / "images"), OPTIONS)  # the shape comes from the first image that reads
    assert data.shape == (6, 5, 1)
    with pytest.raises(BrokenImage, match="0-empty.png: cannot decode image"):  # skipped when the shards are written
        data.load(data.items[0])


def test_a_photo_of_too_many_pixels_is_a_broken_image_and_a_huge_image_size_is_refused(tmp_path, monkeypatch, caplog):
    """A 13500x13500 photo stopped the run with Pillow's DecompressionBombError and a traceback; --image-size
    100000x100000 ran out of memory after a minute."""
    from preprocessing.cli import main as preprocess

    make_image_folder(tmp_path, sizes=((60, 50),) * 4)
    data = read_images(str(tmp_path), SourceOptions(image_size=(6, 5)))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 3,000 pixels: more than twice it, Pillow's bomb
    with pytest.raises(BrokenImage, match=r"0.png: cannot decode image \(Image size \(3000 pixels\) exceeds"):
        data.load(next(item for item in data.items if item.endswith("0.png")))
    flags = ["--source", "images", "--input", str(tmp_path), "--output", str(tmp_path / "d")]
    assert preprocess([*flags, "--image-size", "100000x100000"]) == 2
    assert "'100000x100000': a side is at most 4096 pixels" in caplog.text


def test_a_class_whose_every_image_is_broken_is_refused(tmp_path, caplog):
    """Its class was kept with no example, and a model of the other class alone reported accuracy 1.0."""
    from preprocessing.cli import main as preprocess

    for i in range(8):
        (tmp_path / "photos" / "blue").mkdir(parents=True, exist_ok=True)
        (tmp_path / "photos" / "red").mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((6, 5, 3), i * 20, np.uint8)).save(tmp_path / "photos" / "blue" / f"{i}.png")
        (tmp_path / "photos" / "red" / f"{i}.png").write_bytes(b"not a png")
    flags = ["--source", "images", "--input", str(tmp_path / "photos"), "--output", str(tmp_path / "d")]
    assert preprocess(flags) == 2
    assert "class 'red': none of its 8 image(s) reads (" in caplog.text and "/red/" in caplog.text
