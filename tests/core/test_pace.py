"""A walk's step size follows how fast its last step read."""

import pytest

from lovia_tui.core.store import pace as pacing
from lovia_tui.core.store.pace import FIRST, TARGET, Pace


def _took(pace: Pace, seconds: float, rows: int, monkeypatch) -> int:
    """A step of ``rows`` rows that read in ``seconds``, on a clock of our own."""
    now = [100.0]
    monkeypatch.setattr(pacing, "perf_counter", lambda: now[0])
    pace.start()
    now[0] += seconds
    pace.took(rows)
    return pace.size


def test_starts_small_and_at_most_its_most() -> None:
    assert Pace(5_000).size == FIRST
    assert Pace(7, first=128).size == 7


def test_a_fast_step_at_most_doubles_up_to_the_most(monkeypatch) -> None:
    pace = Pace(1_000)
    assert _took(pace, 0.0001, FIRST, monkeypatch) == 2 * FIRST
    for _ in range(10):
        _took(pace, 0.0001, pace.size, monkeypatch)
    assert pace.size == 1_000


def test_a_slow_step_shrinks_to_what_fits_the_target(monkeypatch) -> None:
    pace = Pace(5_000, first=1_000)
    assert _took(pace, 10 * TARGET, 1_000, monkeypatch) == pytest.approx(100, abs=1)


def test_a_very_slow_row_still_leaves_a_step_of_one(monkeypatch) -> None:
    pace = Pace(5_000)
    assert _took(pace, 1.0, 1, monkeypatch) == 1


def test_a_step_that_read_nothing_changes_nothing(monkeypatch) -> None:
    pace = Pace(5_000)
    assert _took(pace, 1.0, 0, monkeypatch) == FIRST
