"""Human formatting of times, ages and sizes, shared by the CLI and the UI."""

from __future__ import annotations

import time


def timestamp(epoch: float | None) -> str:
    """Local time of ``epoch``; "?" for a stored value that is no usable time."""
    if epoch is None:
        return "-"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


PIN = "⚑ "
"""The badge of a chat pinned in lovia web's sidebar."""


def age(seconds: float) -> str:
    """A compact age: 42s, 7m, 3h, 12d."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def size(num_bytes: int) -> str:
    value = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
