"""Human formatting shared by the CLI and the UI: stored text made safe to
show, times, ages and sizes."""

from __future__ import annotations

import re
import time

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""What a terminal acts on instead of showing: C0 and C1 controls (ESC starts
every escape sequence; C1 CSI and OSC are sequences by themselves), DEL, and
the separators and bidirectional overrides that move or reorder what is drawn."""
_UNSAFE_LINES = re.compile(f"[{_CONTROLS}]")
"""For views laid out over lines: tab and newline are left to them."""
_UNSAFE = re.compile(f"[{_CONTROLS}\t\n]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""What JSON text may hold raw that a terminal acts on (it escapes C0 itself)."""


def _visible(match: re.Match[str]) -> str:
    """C0 and DEL as their Unicode control pictures (one cell each: ␛ ␇ ␀ ␍ ␊),
    the rest as an escape (``\x9b``, ``\u202e``)."""
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object, *, multiline: bool = False) -> str:
    """``text`` as a terminal shows it and never acts on it.

    The one gate between stored text (ids, titles, entries, errors, tool
    outputs: whatever a model, a tool or a user wrote) and a screen: every
    control character comes out visible (``ESC[2J`` as ``␛[2J``), so nothing
    stored can move the cursor, clear the screen, set the title or the
    clipboard, or make the terminal type an answer into the shell.
    ``multiline`` keeps newlines and tabs for views laid out over lines; CR is
    always shown (a bare CR lets a line overwrite itself).
    """
    text = str(text)
    pattern = _UNSAFE_LINES if multiline else _UNSAFE
    return pattern.sub(_visible, text) if pattern.search(text) else text


def printable_json(dumped: str) -> str:
    """JSON text (``json.dumps`` output) with the characters a terminal acts on
    escaped as ``\\uXXXX``: the same JSON value, exact data, safe to print."""
    if not _JSON_UNSAFE.search(dumped):
        return dumped
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def timestamp(epoch: float | None) -> str:
    """Local time of ``epoch``; "?" for a stored value that is no usable time."""
    if epoch is None:
        return "-"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


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
