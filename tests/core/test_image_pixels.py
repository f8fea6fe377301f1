"""An attached image decoded for the screen: drawn when it is stored bytes
Pillow reads, refused with one line otherwise (a URL is never fetched)."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from PIL import Image

from lovia_tui.core.attachments import IMAGE_DRAWN_BYTES, image_bytes
from lovia_tui.core.image_pixels import MAX_PIXELS, Pixels, scaled
from lovia_tui.demo.compaction import _png


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_stored_png_is_scaled_down_to_fit_never_up() -> None:
    png = _png(320)
    pixels = scaled(png, 100, 60)
    assert isinstance(pixels, Pixels)
    assert (pixels.size, pixels.format) == ((320, 24), "PNG")
    assert (len(pixels.rows[0]), len(pixels.rows)) == (100, 8)  # aspect kept
    assert (230, 57, 70) in {p for row in pixels.rows for p in row}  # the red spike
    small = scaled(_png(64), 100, 60)
    assert isinstance(small, Pixels)
    assert (len(small.rows[0]), len(small.rows)) == (64, 24)


def test_inline_data_and_a_data_url_are_decoded_alike() -> None:
    png = _png(64)
    assert image_bytes({"type": "image", "data": _b64(png)}) == png
    url = f"data:image/png;base64,{_b64(png)}"
    assert image_bytes({"type": "image", "url": url}) == png


@pytest.mark.parametrize(
    ("part", "why"),
    [
        ({"type": "image", "url": "https://example.com/x.png"}, "does not fetch"),
        ({"type": "file", "data": _b64(b"log"), "filename": "a.log"}, "not an image"),
        ({"type": "image", "data": "!!not base64!!"}, "not valid base64"),
        (
            {"type": "image", "data": "A" * (IMAGE_DRAWN_BYTES * 4 // 3 + 8)},
            "larger than",
        ),
        ({"type": "image", "data": 42}, "too large to draw"),
        ({"type": "image", "mime_type": "image/png"}, "no bytes stored"),
    ],
)
def test_what_is_not_drawn_says_why(part: dict, why: str) -> None:
    found = image_bytes(part)
    assert isinstance(found, str) and why in found


def _bomb_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height``: Pillow reads only that."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)  # far too short: only the header is read
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"GIF89a but truncated", "not an image Pillow can read"),
        (b"\x00" * 64, "not an image Pillow can read"),
        (_png(64)[:40], "not an image Pillow can read"),
        (_bomb_header(10_000, 5_000), f"more than {MAX_PIXELS:,} pixels"),
        (_bomb_header(100_000, 100_000), f"more than {MAX_PIXELS:,} pixels"),
    ],
)
def test_bad_bytes_are_a_line_never_an_exception(data: bytes, why: str) -> None:
    shown = scaled(data, 100, 60)
    assert isinstance(shown, str) and why in shown


def test_any_mode_pillow_reads_is_drawn_in_rgb() -> None:
    buffer = io.BytesIO()
    Image.new("LA", (10, 4), (128, 200)).save(buffer, "PNG")
    pixels = scaled(buffer.getvalue(), 100, 60)
    assert isinstance(pixels, Pixels)
    assert pixels.rows[0][0] == (128, 128, 128)
