"""Opening a photo file with Pillow, as preprocessing and qt-predict both do: any format Pillow reads, and an
iPhone's HEIC; turned upright by its EXIF orientation, as the export turns it in its graph (trainer/exif.py); and
what a file that does not decode raises."""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections.abc import Iterator

EXIF_ORIENTATION = 0x0112  # the EXIF tag that says how a photo's stored pixels are turned
# Pillow's turn that makes each orientation upright, as ImageOps.exif_transpose has it (1: none)
EXIF_TURNS = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE", 6: "ROTATE_270",
              7: "TRANSVERSE", 8: "ROTATE_90"}  # fmt: skip
SIDEWAYS = (5, 6, 7, 8)  # the orientations whose upright photo has its width and height swapped


def open_photo(data: bytes):
    """Pillow's image of a photo file's bytes, an iPhone's HEIC among them (pi-heif adds HEIF to Pillow)."""
    from PIL import Image

    _add_heif()
    with _exif_warnings_off():  # a JPEG's EXIF block is read as it opens, for its resolution
        return Image.open(io.BytesIO(data))


@contextlib.contextmanager
def _exif_warnings_off() -> Iterator[None]:
    """Pillow warns of each damaged EXIF block it reads, often every photo of one camera's: a flood in the log, of
    a block whose photo still decodes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module="PIL.TiffImagePlugin")
        yield


@functools.cache
def _add_heif() -> None:
    """Once a process (preprocessing writes its shards in several). An install from before pi-heif was required
    (an editable one, updated by git pull) still reads every other format."""
    try:
        import pi_heif
    except ImportError:
        return
    pi_heif.register_heif_opener()


def undecodable() -> tuple[type[Exception], ...]:
    """What Pillow raises on a photo that does not decode: damaged (OSError, ValueError; EOFError from pi-heif's
    decoder), or of too many pixels."""
    from PIL import Image

    return (OSError, ValueError, EOFError, Image.DecompressionBombError)


def _orientation(image) -> int:
    """The photo's EXIF orientation (1-8; 1 is upright), read where the export reads it (trainer/exif.py): the block
    Pillow keeps on opening a file, a JPEG's Exif segment or a PNG's eXIf chunk before its pixels (WebP's too,
    which qt-predict sends turned). 1 where there is none, or it does not read."""
    from PIL import Image

    block = image.info.get("exif")
    if not block:
        return 1
    exif = Image.Exif()
    try:
        with _exif_warnings_off():
            exif.load(block)
            return int(exif.get(EXIF_ORIENTATION, 1))
    except Exception:  # Pillow's parser raises many kinds on a damaged block, whose photo still decodes
        return 1


def upright_size(image) -> tuple[int, int]:
    """upright(image).size, without decoding the pixels that turning them takes (the size probe of a folder's
    first photos, most of them a phone's portraits, stored sideways)."""
    width, height = image.size
    return (height, width) if _orientation(image) in SIDEWAYS else (width, height)


def upright(image):
    """The photo turned as its EXIF orientation says (a phone stores a portrait photo's pixels sideways), as the
    export does in serving; one already upright as it is. The turned photo keeps no EXIF block, so that nothing
    turns it again (a PNG that qt-predict writes of it)."""
    from PIL import Image

    turn = EXIF_TURNS.get(_orientation(image))
    if turn is None:
        return image
    turned = image.transpose(Image.Transpose[turn])
    turned.info.pop("exif", None)
    return turned
