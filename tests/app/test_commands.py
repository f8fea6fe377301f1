"""The one command list: every key bound once, every action a method of the
inspector, and each command's "why not" read from the selection alone."""

from __future__ import annotations

from lovia_tui.commands import COMMANDS, INSPECTOR_COMMANDS
from lovia_tui.screens.inspector import InspectorScreen
from lovia_tui.view.kinds import Pane
from lovia_tui.view.selection import Selection


def selection(**changes) -> Selection:
    values = dict(
        pane=Pane.SESSIONS,
        session=("a.db", "s1"),
        row=None,
        run=None,
        run_status=None,
        readonly=False,
        run_going=False,
    )
    values.update(changes)
    return Selection(**values)


def test_every_key_is_bound_once_to_an_action_of_the_inspector():
    keys = [command.key for command in INSPECTOR_COMMANDS]
    assert len(keys) == len(set(keys))
    for command in INSPECTOR_COMMANDS:
        assert callable(getattr(InspectorScreen, f"action_{command.name}")), command


def test_no_command_takes_a_key_the_lists_move_with():
    """``k`` was Keep partial in the Runs pane: the list never moved up by it,
    and the transcript said "acts in the Runs pane" instead of moving."""
    from lovia_tui.widgets.row_list import RowList
    from lovia_tui.widgets.transcript import Transcript

    moving = {
        key
        for widget in (RowList, Transcript)
        for binding in widget.BINDINGS
        for key in getattr(binding, "key", "").split(",")
    }
    assert {"j", "k", "g", "G"} <= moving
    assert not moving & {command.key for command in INSPECTOR_COMMANDS}


def test_a_command_of_another_pane_says_where_it_acts_and_is_not_shown():
    resume = COMMANDS["resume"]
    assert resume.state(selection()) is False
    assert "Runs (3)" in resume.why_not(selection())
    assert COMMANDS["rewind_here"].on_key_bar(Pane.RUNS) is False
    assert COMMANDS["rewind_here"].on_key_bar(Pane.TRANSCRIPT) is True


def test_what_a_command_needs_is_shown_dimmed_with_its_reason():
    trim = COMMANDS["trim"]
    assert trim.state(selection()) is True
    assert trim.state(selection(readonly=True)) is None
    assert "read-only" in trim.why_not(selection(readonly=True))
    cancel = COMMANDS["cancel_run"]
    assert cancel.state(selection(pane=Pane.RUNS)) is None
    assert "nothing is running" in cancel.why_not(selection(pane=Pane.RUNS))
    assert cancel.state(selection(run_going=True)) is True


def test_help_lists_each_key_once():
    from lovia_tui.screens.help import MOVING

    listed = [key for key, _ in MOVING] + [c.key_label for c in INSPECTOR_COMMANDS]
    assert not any("tab" in key for key, _ in MOVING)  # the command list has them
    assert len(listed) == len(set(listed))


def test_copy_id_is_on_the_runs_key_bar():
    assert COMMANDS["copy_id"].on_key_bar(Pane.RUNS)


def test_a_pane_title_keeps_its_counts_whatever_the_id():
    """A stored id of 100 KB pushed the entry count and position out of the
    one-line title: each part is cut in the middle to at most 48 cells."""
    from lovia_tui.widgets.pane_title import PART_CELLS, fitted

    title = fitted(f"Transcript · {'I' * 100_000}\x1b[31m · 9 entries shown · 3/9")
    assert title.startswith("Transcript · III") and title.endswith(
        " · 9 entries shown · 3/9"
    )
    assert (
        len(title.split(" · ")[1]) == PART_CELLS
        and "…" in title
        and "\x1b" not in title
    )
