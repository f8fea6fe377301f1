"""A walk's step size follows how fast its last step read."""

from time import perf_counter

from lovia_tui.core.store.pace import FIRST, TARGET, Pace


def _took(pace: Pace, seconds: float, rows: int) -> int:
    pace.took(perf_counter() - seconds, rows)
    return pace.size


def test_starts_small_and_at_most_its_most() -> None:
    assert Pace(5_000).size == FIRST
    assert Pace(7).size == 7


def test_a_fast_step_at_most_doubles_up_to_the_most() -> None:
    pace = Pace(1_000)
    assert _took(pace, 0.0001, FIRST) == 2 * FIRST
    for _ in range(10):
        _took(pace, 0.0001, pace.size)
    assert pace.size == 1_000


def test_a_slow_step_shrinks_to_what_fits_the_target() -> None:
    pace = Pace(5_000, first=1_000)
    size = _took(pace, 10 * TARGET, 1_000)
    assert 90 <= size <= 100  # a tenth, less the clock's own time


def test_a_very_slow_row_still_leaves_a_step_of_one() -> None:
    pace = Pace(5_000)
    assert _took(pace, 1.0, 1) == 1


def test_a_step_that_read_nothing_changes_nothing() -> None:
    pace = Pace(5_000)
    assert _took(pace, 1.0, 0) == FIRST
