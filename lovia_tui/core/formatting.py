"""Human formatting shared by the CLI and the UI: stored text made safe to
show, times, ages and sizes."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import sys
import time

from lovia_tui.core.stored import UNREADABLE_SHOWN

_C0 = "\x00-\x08\x0b-\x1f"
"""C0 controls but tab and newline: ESC starts every escape sequence."""
_ACTIVE = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""DEL, C1 controls (CSI and OSC are sequences by themselves), and the
separators and bidirectional overrides that move or reorder what is drawn."""
_INVISIBLE = "\u200b\u2060-\u2064\ufeff\U000e0000-\U000e007f"
"""Characters that draw nothing: two ids that look the same must not be
(zero-width space, word joiner, BOM, the tag characters that hide text).
Joiners that shape scripts and emoji (U+200C, U+200D) are left alone."""
_UNSAFE_LINES = re.compile(f"[{_C0}{_ACTIVE}{_INVISIBLE}]")
"""For views laid out over lines: tab and newline are left to them."""
_UNSAFE = re.compile(f"[{_C0}{_ACTIVE}{_INVISIBLE}\t\n]")
_JSON_UNSAFE = re.compile(f"[{_ACTIVE}{_INVISIBLE}]")
"""What JSON text may hold raw and a terminal acts on or hides (JSON escapes C0)."""


def _visible(match: re.Match[str]) -> str:
    """C0 and DEL as their Unicode control pictures (one cell each: ␛ ␇ ␀ ␍ ␊),
    the rest as an escape (``\x9b``, ``\u202e``, ``\U000e0041``)."""
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


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


_EDGE_SPACE = re.compile(r"^\s+|\s+$")


def _edge_visible(match: re.Match[str]) -> str:
    """A space as ␠ (the control picture for space), other whitespace escaped."""
    return "".join(
        "\u2420" if char == " " else f"\\u{ord(char):04x}" for char in match.group()
    )


def printable_id(text: object) -> str:
    """An id as lists show it: :func:`printable`, and whitespace at either end
    visible (``mix `` as ``mix␠``, a no-break space as ``\\u00a0``), so ids
    that differ only there never look the same. Spaces inside, and every
    id without such whitespace, look as they are."""
    shown = printable(text)
    if not (shown[:1].isspace() or shown[-1:].isspace()):
        return shown  # every ordinary id, at no cost to a long list
    return _EDGE_SPACE.sub(_edge_visible, shown)


SELECTORS = "\ufe0e\ufe0f"
"""Emoji and text presentation selectors: terminals disagree on whether
``🗓️`` takes one cell or two (most draw one where Rich counts two), so a line
measured with them broke the pane's border until the next full redraw.
Without them every terminal draws the base character as wide as it says."""
_DROPPED = dict.fromkeys(map(ord, SELECTORS))


def as_drawn_text(text: str) -> str:
    """``text`` without presentation selectors: as wide as every terminal
    draws it (for a line laid out in columns: a list row, a table cell)."""
    return text.translate(_DROPPED)


MESSAGE_CHARS = 2_000
"""Characters a message (an error line, a notification) keeps: its start and
its end (a stored id of 100 KB made the refusal that named it 100 KB long)."""


def clipped(text: str, most: int = MESSAGE_CHARS) -> str:
    """``text`` if it is at most ``most`` characters, else its first and last
    halves of them around the number cut out."""
    if len(text) <= most:
        return text
    return f"{text[: most // 2]}…({len(text) - most:,} characters)…{text[-most // 2 :]}"


def printable_json(dumped: str) -> str:
    """JSON text (``json.dumps`` output) with the characters a terminal acts on
    escaped as ``\\uXXXX``: the same JSON value, exact data, safe to print."""
    if not _JSON_UNSAFE.search(dumped):
        return dumped
    # json.dumps' own escape: \u007f, or a surrogate pair beyond the BMP.
    return _JSON_UNSAFE.sub(lambda m: json.dumps(m.group())[1:-1], dumped)


_JSON_UNSAFE_BYTES = re.compile(
    rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\x8b\xa8-\xae]|\xe2\x81[\xa0-\xa4\xa6-\xa9]"
    rb"|\xef\xbb\xbf|\xf3\xa0[\x80\x81][\x80-\xbf]"
)
"""``_JSON_UNSAFE`` over UTF-8 bytes (a lead byte never continues another
character, so a match is always a whole character)."""


def printable_json_bytes(dumped: bytes) -> bytes:
    """:func:`printable_json` on UTF-8 JSON bytes (orjson's output), without a
    decoded copy: a 50 MB tool output is escaped where it lies."""
    if not _JSON_UNSAFE_BYTES.search(dumped):
        return dumped
    return _JSON_UNSAFE_BYTES.sub(
        lambda m: json.dumps(m.group().decode())[1:-1].encode(), dumped
    )


def timestamp(epoch: float | None, missing: str = "-") -> str:
    """Local time of ``epoch``; ``missing`` for None (``UNREADABLE_SHOWN`` where
    lovia always stores a time), "?" for a stored value that is no usable time."""
    if epoch is None:
        return missing
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


PIN = "⚑ "
"""The badge of a chat pinned in lovia web's sidebar."""


CLOCK_SLACK = 1.0
"""Seconds a stored time may be ahead of this clock and still read as now."""
YEAR = 365 * 86400
AGE_UNITS = (("y", YEAR), ("d", 86400), ("h", 3600), ("m", 60))
OLDEST_AGE = 1000 * YEAR
"""Ages beyond it are spelled ``>999y``: what a writer's bad clock, or a
hostile one's 1e308, would make a number hundreds of digits long."""


def age_since(now: float, epoch: float | None) -> str:
    """The :func:`age` of a stored time; ``unreadable`` where it was no number."""
    if epoch is None:
        return UNREADABLE_SHOWN
    return age(now - epoch)


def ago(now: float, epoch: float | None) -> str:
    """When a stored time was, for a sentence: "5m ago", "5m ahead of this
    clock", or that it does not read."""
    if epoch is None:
        return "at an unreadable time"
    if epoch - now > CLOCK_SLACK:
        return f"{age(epoch - now)} ahead of this clock"
    return f"{age(now - epoch)} ago"


def age(seconds: float) -> str:
    """A compact age: 42s, 7m, 3h, 12d, 2y; ``-7m`` for a time ahead of this
    clock (a writer on another machine, or one whose clock is wrong)."""
    if seconds < -CLOCK_SLACK:
        return f"-{age(-seconds)}"
    if seconds >= OLDEST_AGE:
        return ">999y"
    seconds = max(0.0, seconds)
    for unit, size in AGE_UNITS:
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 entry``, ``2 entries``, ``12,000 entries``: a count with its noun agreeing."""
    return f"{count:,} {word if count == 1 else words or word + 's'}"


def size(num_bytes: int) -> str:
    value = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


USAGE_COUNTS = (
    ("input_tokens", "in"),
    ("output_tokens", "out"),
    ("cache_read_tokens", "cache read"),
    ("cache_write_tokens", "cache write"),
)
"""lovia's ``Usage`` counts (a head's ``usage``, lovia web's ``usage_json``),
each with how it is told; ``input_tokens`` already includes the cached ones."""


def usage_line(usage: object, last_input_tokens: object = None) -> str:
    """Token usage on one line: every count lovia keeps, and the last call's
    prompt size (the context's fill) where known. A count that is not a
    number (a hostile head) shows as "?"."""
    counts = usage if isinstance(usage, dict) else {}
    bits = [f"{_tokens(counts.get(key, 0))} {label}" for key, label in USAGE_COUNTS]
    if last_input_tokens is not None:
        bits.append(f"last input {_tokens(last_input_tokens)}")
    return " · ".join(bits)


def _tokens(value: object) -> str:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return f"{value:,}" if is_number else "?"


def command_line(*words: object) -> str:
    """A lovia-tui command to suggest, with the real paths and ids (quoted for
    a shell): ``PATH...`` told a person nothing they could paste; and started
    as this lovia-tui can be (:func:`program`)."""
    return f"{program()} {shell_words(*words)}"


def shell_words(*words: object) -> str:
    """``words`` quoted for a shell, one space between them."""
    return " ".join(shlex.quote(str(word)) for word in words)


def program() -> str:
    """How the person can start the running lovia-tui again, as a shell
    command: ``lovia-tui`` where their shell finds this one by that name;
    else the script's path (``.venv/bin/lovia-tui`` after ``make demo``, not
    on PATH until the virtualenv is activated); ``python -m lovia_tui`` with
    the interpreter running it, when started so. Inside another program (the
    tests), ``lovia-tui``. Worked out once per script, PATH and directory: a
    doctor's thousands of fixes each name it."""
    script = sys.argv[0] if sys.argv else ""
    return _program(script, os.environ.get("PATH", ""), os.getcwd(), sys.executable)


@functools.lru_cache(maxsize=8)
def _program(script: str, _path: str, _cwd: str, python: str) -> str:
    name = os.path.basename(script)
    if name in ("lovia-tui", "lovia-tui.exe"):
        found = shutil.which(name)
        same = found is not None and os.path.abspath(found) == os.path.abspath(script)
        return "lovia-tui" if same else shlex.quote(_from_here(script))
    package = os.path.basename(os.path.dirname(os.path.abspath(script)))
    if name == "__main__.py" and package == "lovia_tui":
        for bare in ("python3", "python"):
            found = shutil.which(bare)
            if found and os.path.abspath(found) == os.path.abspath(python):
                return f"{bare} -m lovia_tui"
        return f"{shlex.quote(_from_here(python))} -m lovia_tui"
    return "lovia-tui"


def _from_here(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else whole."""
    whole = os.path.abspath(path)
    here = os.path.relpath(whole)
    if here.startswith(os.pardir):
        return whole
    return here if os.sep in here else os.path.join(os.curdir, here)
