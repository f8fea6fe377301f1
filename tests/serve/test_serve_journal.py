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


def test_through_serve_no_one_undoes_another_persons_entry(
    capsys: pytest.CaptureFixture[str],
    two_files: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not by ``u`` (it looks for your own), nor by naming the entry as the
    doctor's fix for an unfinished one does."""
    import asyncio

    from lovia_tui.app import make_app
    from lovia_tui.pilot import settle
    from lovia_tui.screens.undo_flow import undo_flow

    sessions, runs = two_files
    monkeypatch.setenv(SERVE_USER_ENV, "alice from 10.1.2.3")
    argv = ["clear", sessions, runs, "s", "--yes", "--reason", "ticket 7"]
    assert _run(capsys, *argv)[0] == 0
    cleared = rows(sessions)
    monkeypatch.setenv(SERVE_USER_ENV, "bob from 10.1.2.4")
    said: list[str] = []

    async def bob_undoes() -> bool:
        app = make_app([sessions, runs])
        async with app.run_test() as pilot:
            await settle(pilot)
            monkeypatch.setattr(
                app.screen, "notify", lambda text, **_: said.append(text)
            )
            assert app.workspace is not None
            return await undo_flow(app.screen, app.workspace, 1)

    assert asyncio.run(bob_undoes()) is False
    assert said == [
        "journal #1 is alice from 10.1.2.3 (serve)'s action: through serve you "
        "undo only your own"
    ]
    assert rows(sessions) == cleared
