"""The Doctor view: findings listed, a fix applied through the inspector's flows,
the doctor run again; and the issue's done-when on a copy of the demo."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from support.app import confirm, snapshot_app, watched_app
from support.reliability import until
from textual.widgets import Select

from lovia_tui.app import make_app
from lovia_tui.demo import DemoWorkspace
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen
from lovia_tui.screens.doctor import READ_ONLY, DoctorScreen
from lovia_tui.screens.preflight import PreflightScreen

FIX_SECONDS = 60.0
"""How long a fix may take to show in the doctor's next audit (a loaded machine)."""


def subjects(screen: DoctorScreen) -> set[tuple[str, str | None]]:
    return {(f.kind, f.run_id) for f in screen.findings}


async def open_doctor_view(pilot) -> DoctorScreen:
    await pilot.press("!")
    await settle(pilot)
    assert isinstance(pilot.app.screen, DoctorScreen)
    return pilot.app.screen


async def select(pilot, screen: DoctorScreen, kind: str, run_id: str) -> None:
    row = next(
        n for n, f in enumerate(screen.findings) if (f.kind, f.run_id) == (kind, run_id)
    )
    screen.query_one("#doctor-table").move_cursor(row=row)
    await pilot.pause()


async def apply(
    pilot, screen: DoctorScreen, kind: str, run_id: str, key: str, dialog: type
) -> None:
    """Choose a finding, press ``key``, confirm the dialog, and wait for the doctor
    to run again without that finding (the fix's worker waits on the user)."""
    await select(pilot, screen, kind, run_id)
    audits = screen.audits
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, dialog), pilot.app.screen
    await confirm(pilot)
    await until_audited(pilot, screen, (kind, run_id), audits)


async def until_audited(
    pilot, screen: DoctorScreen, gone: tuple[str, str], audits: int
) -> None:
    """Wait until the doctor ran again since ``audits`` reports (the fix's worker
    waits on the user, so ``settle`` alone does not wait for it)."""
    deadline = time.monotonic() + FIX_SECONDS
    while time.monotonic() < deadline:  # bounded: a resume runs the demo agent
        await settle(pilot)
        # Another audit (the live tail's) may come first: wait for one without it.
        if (
            screen.audits > audits
            and screen.busy is None
            and gone not in subjects(screen)
        ):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{gone} still reported after the fix: {screen.findings}")


async def test_doctor_view_lists_findings_and_applies_a_fix(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = await open_doctor_view(pilot)
        assert ("stale-running", "run-crashed") in subjects(screen)
        assert "resume it" in str(screen.query_one("#doctor-detail").render())
        # Finalize instead of the suggested resume (which needs an agent).
        await apply(pilot, screen, "stale-running", "run-crashed", "f", ActionScreen)
        # lovia web's Stop on a stranded run stores nothing: its run record stays,
        # interrupted, and is reported as lovia web shows it (info, no fix).
        assert [(f.kind, f.severity, f.fix) for f in screen.findings] == [
            ("web-unsaved-run", "info", None)
        ]
        # The fix's toast says "u undoes it": so it does, from the doctor too.
        audits = screen.audits
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, ActionScreen), app.screen
        await confirm(pilot)
        await until(
            pilot,
            lambda: (
                screen.audits > audits
                and ("stale-running", "run-crashed") in subjects(screen)
            ),
            FIX_SECONDS,
        )
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, DoctorScreen)


async def test_the_doctor_view_offers_no_fix_when_read_only(snap_dir, monkeypatch):
    """Read-only: Enter, x, d, f and u open nothing and each says why (the
    keys shown disabled said nothing)."""
    app = snapshot_app(snap_dir, monkeypatch, readonly=True)
    async with watched_app(app, (160, 45)) as (pilot, watch):
        screen = await open_doctor_view(pilot)
        assert ("stale-running", "run-crashed") in subjects(screen)
        assert screen.check_action("fix", ()) is None
        for key in ("enter", "x", "d", "f", "u"):
            watch.notes.clear()
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen, "no dialog: nothing can be changed"
            assert watch.notes == [("warning", READ_ONLY)], key


async def test_the_doctor_list_moves_with_j_and_k_and_its_detail_names_x(demo_dir):
    """Like every list: j down, k up; the detail says the key the bar shows."""
    from textual.widgets import Static

    from lovia_tui.widgets.key_bar import KeyBar

    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = await open_doctor_view(pilot)
        await until(pilot, lambda: screen.audits == 1)
        assert len(screen.findings) >= 2
        table = screen.query_one("#doctor-table")
        await pilot.press("j")
        assert table.cursor_row == 1
        await pilot.press("k")
        assert table.cursor_row == 0
        await settle(pilot)
        detail = str(screen.query_one("#doctor-detail", Static).render())
        bar = str(screen.query_one(KeyBar).render())
        assert "x (or enter) applies the fix" in detail and "x Apply fix" in bar


async def test_the_demo_is_healed_from_the_doctor_view(
    demo_dir: DemoWorkspace, tmp_path: Path
):
    """Done when: on the demo the doctor reports the crash-window run, the crashed
    run and the orphan, and fixing each in the app leaves none of them reported."""
    copy = DemoWorkspace(tmp_path / "demo")
    shutil.copytree(demo_dir.directory, copy.directory)
    app = make_app(copy.files, stale_after=0.0, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = await open_doctor_view(pilot)
        assert {
            ("crash-window", copy.crash_window_run),
            ("stale-running", copy.crashed_run),
            ("orphan", copy.orphan_run),
        } <= subjects(screen)

        # The crash window: replayed into its chat, its web records settled with it.
        await apply(
            pilot, screen, "crash-window", copy.crash_window_run, "x", PreflightScreen
        )
        # The crashed run: resumed with the demo agent, settled the same way.
        await apply(
            pilot, screen, "stale-running", copy.crashed_run, "enter", PreflightScreen
        )
        # Neither fix left a finding of its own behind.
        assert not {run_id for _, run_id in subjects(screen)} & {
            copy.crash_window_run,
            copy.crashed_run,
        }
        # The CLI's crashed run: nothing links it, so the finalize asks for its session.
        await select(pilot, screen, "stale-running", copy.cli_crashed_run)
        await pilot.press("x")
        await settle(pilot)
        dialog = pilot.app.screen
        assert (
            isinstance(dialog, ActionScreen)
            and "linked to no session" in dialog.lines[1]
        )
        dialog.query_one("#field-session", Select).value = copy.cli_session
        await pilot.click("#again")
        await settle(pilot)
        assert any(copy.cli_session in line for line in pilot.app.screen.lines)
        audits = screen.audits
        await confirm(pilot)
        await until_audited(
            pilot, screen, ("stale-running", copy.cli_crashed_run), audits
        )
        # The orphan ran without any session: delete it.
        await apply(pilot, screen, "orphan", copy.orphan_run, "d", ActionScreen)

        healed = {
            copy.crash_window_run,
            copy.crashed_run,
            copy.cli_crashed_run,
            copy.orphan_run,
        }
        assert not {run_id for _, run_id in subjects(screen)} & healed


async def test_an_unfinished_action_is_found_and_undone_from_the_doctor(
    snap_dir, monkeypatch
):
    """A clear whose process died once lovia had committed: the doctor lists the
    pending journal entry, and its fix (the undo, previewed) puts the rows back."""
    from support.journal_faults import perform_then_die
    from support.lovia_factory import rows

    from lovia_tui.core.actions.session_plans import preview_clear
    from lovia_tui.core.store.workspace import Workspace

    db = snap_dir / "snap.db"
    before = rows(db)
    ws = await Workspace.open([db])
    try:
        preview = await preview_clear(ws, "chat-kyoto", force=True)
        await perform_then_die(ws, preview, monkeypatch)
    finally:
        await ws.close()
    assert rows(db) != before
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = await open_doctor_view(pilot)
        assert ("unfinished-action", None) in subjects(screen)
        await select(pilot, screen, "unfinished-action", None)
        assert f"undo {db.resolve()} 1 --yes" in str(
            screen.query_one("#doctor-detail").render()
        )
        audits = screen.audits
        await pilot.press("enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ActionScreen)
        assert "never finished" in "\n".join(dialog.lines)
        await pilot.press("enter")
        await until_audited(pilot, screen, ("unfinished-action", None), audits)
    assert rows(db) == before
