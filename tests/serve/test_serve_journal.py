"""Actions through ``serve`` are journaled with who and from where, and need a reason."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.lovia_factory import rows

from lovia_tui.cli import main
from lovia_tui.core.actions.actor import SERVE_USER_ENV

pytestmark = pytest.mark.usefixtures("private_journal")


def _run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _intact(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_served_action_names_who_and_where_and_needs_a_reason(
    capsys: pytest.CaptureFixture[str],
    two_files: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions, runs = two_files
    before = rows(sessions)
    monkeypatch.setenv(SERVE_USER_ENV, "alice from 10.1.2.3")
    code, _, err = _run(capsys, "clear", sessions, runs, "s", "--yes")
    assert code == 2 and "a reason is required" in err
    assert rows(sessions) == before

    code, _, _ = _run(
        capsys, "clear", sessions, runs, "s", "--yes", "--reason", "ticket 7"
    )
    assert code == 0 and rows(sessions)["session_runs"] == []
    code, out, _ = _run(capsys, "journal", sessions, "--json")
    [entry] = json.loads(out)["entries"]
    assert (entry["user"], entry["reason"]) == (
        "alice from 10.1.2.3 (serve)",
        "ticket 7",
    )
    code, out, _ = _run(capsys, "journal", sessions)
    assert code == 0 and "alice" in out

    code, out, _ = _run(
        capsys, "undo", sessions, runs, "--yes"
    )  # an undo explains itself
    assert code == 0 and rows(sessions) == before
    _intact(sessions)
    _intact(runs)


def test_the_person_behind_a_served_action_is_told_from_their_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lovia_tui.core.actions.actor import acted_by, served_person, who_acts

    monkeypatch.setenv(SERVE_USER_ENV, "ana from lima from 10.1.2.3")
    assert served_person() == "ana from lima"
    user = who_acts(explained=True)
    assert acted_by(user, "ana from lima")
    assert not acted_by(user, "ana") and not acted_by("ana from lima", "ana from lima")
