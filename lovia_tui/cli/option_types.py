"""What the CLI's option values may be: counts, durations, dates, text.

argparse names the option in its message (``argument --keep: ...``), so each
check says only what is wrong with the value: a script learns which option
it got wrong by the name it typed, never by a name inside lovia.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import datetime

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.formatting import printable

DURATION_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}
"""The one duration syntax of every option taking one: ``30s``, ``5m``, ``2h``, ``7d``."""
DAY = DURATION_UNITS["d"]


MOST = (1 << 63) - 1
"""The largest number SQLite holds: a count past it reached SQLite as an OverflowError."""


def count(minimum: int = 0, most: int = MOST) -> Callable[[str], int]:
    """A whole number from ``minimum`` to ``most``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not minimum <= value <= most:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {minimum} to {most}, got {text!r}"
            )
        return value

    return parse


def _seconds(text: str, plain_unit: str) -> float | None:
    """``text`` as a duration in seconds, a plain number in ``plain_unit``;
    None when it is not one (negative, not a number, no such unit)."""
    value = text.strip()
    unit = value[-1:].lower()
    number = value[:-1] if unit in DURATION_UNITS else value
    try:
        amount = float(number)
    except ValueError:
        return None
    if not amount >= 0 or amount == float("inf"):  # NaN, negative, infinite
        return None
    return amount * DURATION_UNITS[unit if unit in DURATION_UNITS else plain_unit]


def duration(plain_unit: str) -> Callable[[str], float]:
    """A duration (``30s``, ``5m``, ``2h``, ``7d``), as seconds; a plain number
    keeps the option's old meaning: seconds, or days where it always was days."""

    def parse(text: str) -> float:
        seconds = _seconds(text, plain_unit)
        if seconds is None:
            raise argparse.ArgumentTypeError(
                f"expected a duration of 0 or more (30s, 5m, 2h, 7d; a plain number "
                f"is {_UNIT_NAMES[plain_unit]}), got {text!r}"
            )
        return seconds

    return parse


_UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration_text(seconds: float) -> str:
    """``seconds`` in the options' syntax, in the largest unit that divides it."""
    for unit in ("d", "h", "m"):
        if seconds >= DURATION_UNITS[unit] and seconds % DURATION_UNITS[unit] == 0:
            return f"{seconds / DURATION_UNITS[unit]:g}{unit}"
    return f"{seconds:g}s"


def since_time(text: str) -> float:
    """``--since``: an age (``90s``, ``30m``, ``12h``, ``7d``, plain seconds) or
    an ISO date/time (local time unless it names its zone), as epoch seconds."""
    seconds = _seconds(text, "s")
    if seconds is not None:
        return time.time() - seconds
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an age (30m, 12h, 7d) nor an ISO date/time"
        ) from None


FILE_ARGUMENTS = frozenset({"paths", "dir", "output", "users"})
"""Arguments that name files: any bytes a file name may hold. Every other
string argument (ids, reasons, search text) goes to SQLite or lovia, which
take UTF-8 text only; the ids among ``paths`` are checked as they are split off."""


def require_text(value: str, what: str) -> str:
    """``value``, or a LoviaTuiError if the command line gave bytes that are
    not UTF-8 (Python keeps them as lone surrogates, which SQLite refuses)."""
    if any("\ud800" <= char <= "\udfff" for char in value):
        shown = "".join(
            "\ufffd" if "\ud800" <= char <= "\udfff" else char for char in value
        )
        raise LoviaTuiError(
            f"{what} {printable(shown)!r} is not valid UTF-8: lovia's ids and "
            "records are text, so nothing stored can be named by it"
        )
    return value


def require_text_arguments(args: argparse.Namespace) -> None:
    """:func:`require_text` of every argument that is not a file's name."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if name not in FILE_ARGUMENTS:
            for item in values:
                if isinstance(item, str):
                    require_text(item, name.replace("_", "-"))
