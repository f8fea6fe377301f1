"""Every key acts on what the user sees: the focused pane's selection, or it
says in one line why it does nothing (issue 15, items 2 and 7)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from support.app import watched_app
from support.reliability import until

from lovia_tui.app import make_app
from lovia_tui.demo import DemoWorkspace
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen
from lovia_tui.screens.preflight import PreflightScreen
from lovia_tui.widgets.key_bar import KeyBar


@asynccontextmanager
async def watched(demo: DemoWorkspace, **options) -> AsyncIterator[tuple]:
    """The app on the demo at 160×40, its notifications recorded: (pilot, watch)."""
    app = make_app(demo.files, **options)
    async with watched_app(app, (160, 40)) as (pilot, watch):
        yield pilot, watch


async def select_session(pilot, session_id: str) -> None:
    screen = pilot.app.screen
    await pilot.press("1")
    screen.sessions.row_list.cursor = [key[1] for key in screen.sessions.shown].index(
        session_id
    )
    await settle(pilot)


async def select_run(pilot, run_id: str) -> None:
    await pilot.press("3")
    assert pilot.app.screen.runs.select_run(run_id)
    await settle(pilot)


def bar(app) -> str:
    return str(app.screen.query_one(KeyBar).render())


async def test_run_keys_do_not_act_from_the_sessions_pane(demo):
    """Sessions focused on chat-jobs, the runs pane on run-orphan: R opens no
    preflight for the orphan, and says where R acts."""
    async with watched(demo, agent_spec="lovia_tui.demo:agent") as (pilot, watch):
        app = pilot.app
        await select_run(pilot, demo.orphan_run)
        await select_session(pilot, demo.batch_session)
        for key in ("R", "P", "d", "D", "F"):
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, (PreflightScreen, ActionScreen)), key
        said = [text for _, text in watch.notes]
        assert any("acts in the Runs (3) pane" in text for text in said), said
        assert "Resume" not in bar(app) and "Filter" in bar(app)


async def test_transcript_keys_do_not_act_from_the_runs_pane(demo):
    """With the Runs pane focused, w does not rewind the transcript's cursor."""
    async with watched(demo) as (pilot, watch):
        app = pilot.app
        await select_session(pilot, demo.trip_session)
        await pilot.press("2", "up")
        assert app.screen.selection.entry_index is not None
        await pilot.press("3", "w", "W")
        await settle(pilot)
        assert not isinstance(app.screen, ActionScreen)
        assert any("Transcript (2)" in text for _, text in watch.notes)


async def test_the_key_bar_shows_the_focused_panes_keys(demo):
    app = make_app(demo.files)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        line = bar(app)
        for key in ("d Delete", "D Delete…", "F Finalize", "! Doctor"):
            assert key in line, (key, line)
        assert "c Console" in line and "K Cancel run" in line
        assert "Rewind" not in line and "Filter" not in line
        await pilot.press("2")
        line = bar(app)
        assert "w Rewind here" in line and "Resume" not in line


async def test_keys_that_do_not_apply_say_why(demo):
    """P on an interrupted run, f on a completed one, K with nothing running,
    and w, t, u under --readonly: shown dimmed, and pressed, one line says why."""
    async with watched(demo, readonly=True) as (pilot, watch):
        app = pilot.app
        await select_run(pilot, demo.crash_window_run)
        assert app.screen.check_action("follow", ()) is None
        await pilot.press("f")
        await select_run(pilot, demo.interrupted_run)
        assert app.screen.check_action("replay", ()) is None
        assert app.screen.check_action("follow", ()) is True
        await pilot.press("P", "K")
        await select_session(pilot, demo.batch_session)
        await pilot.press("t", "u", "2", "up", "w")
        await settle(pilot)
        said = [text for _, text in watch.notes]
        assert any("read-only" in text and "Replay" in text for text in said), said
        assert any("completed: nothing more to follow" in text for text in said)
        assert any("nothing is running in the console" in text for text in said)
        assert any("Trim" in text and "read-only" in text for text in said)
        assert any("Undo" in text and "read-only" in text for text in said)
        assert any("Rewind here" in text and "read-only" in text for text in said)
        assert isinstance(app.screen, type(app.screen)) and app.is_running


async def test_replay_says_why_on_a_run_that_is_not_completed(demo):
    async with watched(demo) as (pilot, watch):
        app = pilot.app
        await select_run(pilot, demo.interrupted_run)
        await pilot.press("P")
        await settle(pilot)
        assert not isinstance(app.screen, PreflightScreen)
        assert any(
            "replay needs a completed run" in text and "interrupted" in text
            for _, text in watch.notes
        ), watch.notes


async def test_narrow_escape_goes_back_a_pane_and_help_quit_show(demo):
    """At 80×24: Esc goes back a pane, ? Help and q Quit are on the key bar."""
    app = make_app(demo.files)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("3")
        assert "? Help" in bar(app) and "q Quit" in bar(app)
        await pilot.press("escape")
        assert screen.focused_pane == "transcript"
        await pilot.press("escape")
        assert screen.focused_pane == "sessions"
        assert "? Help" in bar(app) and "q Quit" in bar(app)


def detail_text(app) -> str:
    from rich.console import Console

    body = app.screen.query_one("#run-detail-body")
    console = Console(width=100, record=True, color_system=None)
    console.print(body.content)
    return console.export_text()


async def test_the_run_panel_follows_the_highlight_through_filters(demo, monkeypatch):
    """After "Runs: show failed" / "show completed" the panel describes the
    highlighted run, and d acts on that run; its "updated … ago" ticks."""
    import time

    app = make_app(demo.files)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        await select_run(pilot, demo.orphan_run)
        for status in ("failed", "completed"):
            await screen.run_action(f"runs_filter('{status}')")
            await settle(pilot)
            highlighted = screen.runs.selected
            assert (
                highlighted is not None and screen.runs.status_of(highlighted) == status
            )
            assert ["run", highlighted.run_id] in [
                line.split() for line in detail_text(app).splitlines()
            ], status
        await pilot.press("d")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ActionScreen)
        assert highlighted.run_id in dialog.title_text
        await pilot.press("escape")
        shown = detail_text(app)
        later = time.time() + 7_200
        monkeypatch.setattr(time, "time", lambda: later)
        screen.runs.tick()
        assert detail_text(app) != shown and "2h ago" in detail_text(app)


def heads(demo: DemoWorkspace) -> set[str]:
    import sqlite3

    found: set[str] = set()
    for path in (demo.web_db, demo.runs_db):
        with sqlite3.connect(path) as db:
            found |= {row[0] for row in db.execute("SELECT run_id FROM snapshot_heads")}
    return found


async def test_deleting_several_checkpoints_needs_their_count_typed(demo):
    """D then Enter, Enter, Enter deletes nothing; typing the count does."""
    from support.app import confirm

    app = make_app(demo.files, stale_after=0.0)
    before = heads(demo)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("3", "D")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ActionScreen) and dialog.token is not None
        count = int(dialog.token[0])
        assert count > 1
        await pilot.press("enter", "enter", "enter", "enter")
        await settle(pilot)
        assert heads(demo) == before and app.screen is dialog, app.focused
        await confirm(pilot)
        await until(pilot, lambda: len(before - heads(demo)) == count)


async def test_at_80x24_the_console_leaves_the_panes_most_rows(demo):
    app = make_app(demo.files)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        console = app.screen.query_one("#console")
        assert console.display and 0 < console.region.height <= 8
        assert "? Help" in bar(app) and "q Quit" in bar(app)


async def test_toasts_do_not_cover_a_dialog(demo):
    app = make_app(demo.files)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await select_session(pilot, demo.trip_session)
        await pilot.press("t")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ActionScreen)
        app.notify("one line")
        app.notify("and another one")
        await pilot.pause()
        await pilot.pause()
        box = dialog.query_one(".dialog").region
        toasts = [toast.region for toast in dialog.query("Toast")]
        assert toasts and not any(box.overlaps(region) for region in toasts)


async def palette_prompts(pilot, query: str) -> list[str]:
    from textual.command import CommandList, CommandPalette

    await pilot.press("ctrl+p", *query)
    await until(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))
    palette = pilot.app.screen
    found: list[str] = []

    def listed() -> bool:
        options = palette.query_one(CommandList).options
        found[:] = [str(option.prompt) for option in options]
        return bool(found)

    await until(pilot, listed)
    await pilot.pause(0.2)  # bounded: the providers' later hits
    listed()
    await pilot.press("escape")
    return found


async def test_the_palette_finds_status_and_calls_runs_what_the_list_does(demo):
    app = make_app(demo.files, stale_after=0.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        inspector = app.screen
        prompts = await palette_prompts(pilot, "status")
        assert any("show failed" in prompt for prompt in prompts), prompts
        await until(pilot, lambda: app.screen is inspector)
        from lovia_tui.screens.goto import GotoProvider

        provider = GotoProvider(inspector)
        titles = [title for title, _, _ in provider._targets()]
        crashed = next(t for t in titles if f"run {demo.crashed_run} " in t)
        assert "· stale ·" in crashed, crashed


async def test_the_palette_names_a_command_that_acts_elsewhere_and_where(demo_dir):
    """ "rewind" typed in the palette from the sessions list found nothing, as if
    there were no such command: it is listed with the pane where it acts, and
    choosing it says so; from the transcript it rewinds."""
    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with watched_app(app, (160, 40)) as (pilot, watch):
        inspector = app.screen
        prompts = await palette_prompts(pilot, "rewind")
        assert any("Rewind here" in prompt for prompt in prompts), prompts
        listed = {c.title: c for c in app.get_system_commands(inspector)}
        here = listed["Rewind here"]
        assert here.help == (
            "w rewind here acts in the Transcript (2) pane: go there first"
        )
        assert not here.discover  # not in the list shown before anything is typed
        await until(pilot, lambda: app.screen is inspector)
        here.callback()
        assert watch.notes == [("warning", here.help)]
        await pilot.press("2", "end")
        await settle(pilot)
        listed = {c.title: c for c in app.get_system_commands(inspector)}
        # Read-only: it acts in this pane, but not on this file.
        assert listed["Rewind here"].help.startswith("Rewind here: ")


async def test_y_copies_the_id_under_the_cursor(demo, monkeypatch):
    app = make_app(demo.files)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await select_session(pilot, demo.trip_session)
        await pilot.press("y")
        await select_run(pilot, demo.failed_run)
        await pilot.press("y")
        await pilot.press("2")
        await pilot.press("home")
        await settle(pilot)
        await pilot.press("y")
        first = app.screen.transcript.rows[0]
    assert copied == [demo.trip_session, demo.failed_run, first.segment.run_id]


async def test_the_preflight_lists_sessions_with_their_file_and_no_cli_flags(demo):
    app = make_app(demo.files, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await select_run(pilot, demo.cli_crashed_run)
        await pilot.press("R")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PreflightScreen)
        assert dialog.query("#session"), "nothing links the run: the user chooses"
        labels = [label for label, _ in dialog.session_options()]
        assert any(
            demo.cli_session in label and "sessions.db" in label for label in labels
        )
        assert any("assistant.db" in label for label in labels)
        text = " ".join(dialog.pf.problems + dialog.pf.warnings)
        from lovia_tui.screens.preflight import in_the_app

        assert "--session" not in in_the_app(text) and "--force" not in in_the_app(text)


async def test_a_key_right_after_a_move_acts_on_the_session_highlighted(demo):
    """The transcript follows the sessions list a moment after a move; C
    pressed in that moment clears the highlighted session, not the previous."""
    app = make_app(demo.files)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        pane = app.screen.sessions
        # A session below which one with no unfinished run is listed.
        start = next(
            key
            for key, below in zip(pane.shown, pane.shown[1:], strict=False)
            if below not in pane.list.badges
        )
        await select_session(pilot, start[1])
        app.simulate_key("down")
        app.simulate_key("C")
        await settle(pilot)
        highlighted = pane.selected
        assert highlighted is not None and highlighted != start
        dialog = app.screen
        assert isinstance(dialog, ActionScreen)
        assert dialog.title_text == f"Clear session {highlighted[1]}"


async def test_trim_opens_in_its_reason_not_its_options(demo):
    """A reason typed at once is kept, not typed into keep_chars above it."""
    async with watched(demo) as (pilot, _):
        await select_session(pilot, demo.untrimmed_session)
        await pilot.press("t")
        await settle(pilot)
        first = pilot.app.screen
        assert isinstance(first, ActionScreen)
        first.query_one("#field-keep_chars").value = "10"
        first.query_one("#field-keep_runs").value = "0"
        await pilot.click("#again")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, ActionScreen) and not dialog.noop, dialog.lines
        assert pilot.app.focused.id == "reason"
        await pilot.press(*"tidy", "enter")
        assert pilot.app.focused.id == "confirm"
        assert dialog.query_one("#field-keep_chars").value == "10"


async def test_the_key_bar_dims_rewind_off_an_entry(demo):
    async with watched(demo) as (pilot, _):
        await select_session(pilot, demo.trip_session)
        await pilot.press("2", "home")
        await settle(pilot)
        screen = pilot.app.screen
        assert screen.transcript.current_row.kind == "segment"
        assert screen.active_bindings["w"].enabled is False
        await pilot.press("down")
        await settle(pilot)
        assert screen.active_bindings["w"].enabled is True


async def test_the_palette_has_one_entry_for_help_and_one_for_quit(demo_dir):
    """Textual's "Keys" (a panel of the focused widget's keys) sat beside Help,
    and its "Quit" beside ours (which first asks while a run is going in the
    console): one entry each, the inspector's."""
    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with watched_app(app, (160, 40)) as (pilot, _):
        inspector = app.screen
        titles = [c.title for c in app.get_system_commands(inspector)]
        assert len(titles) == len(set(titles)), titles
        assert "Keys" not in titles and {"Help", "Quit", "Theme"} <= set(titles)
        prompts = await palette_prompts(pilot, "keys")
        assert not any(prompt.startswith("Keys") for prompt in prompts), prompts
        await until(pilot, lambda: app.screen is inspector)
        listed = {c.title: c for c in app.get_system_commands(inspector)}
        await listed["Help"].callback()
        await settle(pilot)
        assert type(app.screen).__name__ == "HelpScreen"
