"""Stored times come from other machines' clocks and from hostile writers:
their ages read in a few characters, and a time ahead of this clock says so;
counts agree with their nouns."""

from __future__ import annotations

import pytest

from lovia_tui.core.formatting import YEAR, age, ago, plural

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.0, "0s"),
        (-0.5, "0s"),  # within the clock slack: now
        (59.9, "59s"),
        (7 * 60, "7m"),
        (3 * 3600 + 5, "3h"),
        (364 * 86400, "364d"),
        (2 * YEAR + 5, "2y"),
        (999 * YEAR, "999y"),
        (1000 * YEAR, ">999y"),
        (1e308, ">999y"),
        (-7 * 60, "-7m"),
        (-1e308, "->999y"),
    ],
)
def test_an_age_is_a_few_characters_whatever_the_stored_time(
    seconds: float, shown: str
) -> None:
    assert age(seconds) == shown


def test_ago_says_when_a_time_is_ahead_of_this_clock() -> None:
    assert ago(NOW, NOW - 300) == "5m ago"
    assert ago(NOW, NOW + 300) == "5m ahead of this clock"
    assert ago(NOW, -1e308) == ">999y ago"
    assert ago(NOW, None) == "at an unreadable time"


def test_a_count_agrees_with_its_noun_and_groups_its_thousands() -> None:
    assert plural(1, "entry", "entries") == "1 entry"
    assert plural(0, "entry", "entries") == "0 entries"
    assert plural(12_000, "run") == "12,000 runs"
