"""An attached image decoded and scaled to a few terminal cells, with Pillow.

Stored images come from models, tools and users: a file that is not an
image, a truncated one, or a decompression bomb is refused with one line,
never raised into a view. Run it off the UI thread (decoding costs time).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

MAX_PIXELS = 40_000_000
"""Largest image decoded (width × height): Pillow refuses a bomb beyond it."""


@dataclass(frozen=True)
class Pixels:
    """An image scaled down: ``rows`` of (r, g, b), ``size`` as stored."""

    rows: tuple[tuple[tuple[int, int, int], ...], ...]
    size: tuple[int, int]
    format: str


def scaled(data: bytes, width: int, height: int) -> Pixels | str:
    """``data`` decoded and fitted into ``width`` × ``height`` pixels (aspect
    kept), or why it cannot be shown."""
    from PIL import Image

    too_many = f"more than {MAX_PIXELS:,} pixels, not decoded"
    with warnings.catch_warnings():  # a big header is refused below, not warned about
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:  # reads the header only
                stored, kind = image.size, image.format or "image"
                if stored[0] * stored[1] > MAX_PIXELS:
                    return f"{stored[0]}x{stored[1]}: {too_many}"
                image.thumbnail((max(1, width), max(1, height)))
                rgb = image.convert("RGB")
        except Image.DecompressionBombError:
            return too_many
        except Exception as exc:  # noqa: BLE001 (any bytes: a bad image is a line, not a crash)
            return f"not an image Pillow can read ({type(exc).__name__})"
    w, h = rgb.size
    raw = rgb.tobytes()
    rows = tuple(
        tuple(
            (raw[i], raw[i + 1], raw[i + 2])
            for i in range(y * w * 3, (y + 1) * w * 3, 3)
        )
        for y in range(h)
    )
    return Pixels(rows, stored, kind)
