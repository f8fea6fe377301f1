"""`s` in the app: the index is built in the background, the sessions list
narrows to the matches, the transcript cursor lands on the first hit and
`n` / `N` step through the hits (older batches load when a hit needs them)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry
from support.lovia_factory import append_entries
from support.reliability import AppWatch, until

from lovia_tui.app import make_app
from lovia_tui.core.search.file_search import FileSearch
from lovia_tui.core.search.index import index_path
from lovia_tui.core.search.query import parse_query
from lovia_tui.pilot import settle
from lovia_tui.widgets.pane_title import PaneTitle


async def _write(path: Path) -> None:
    """Session "long": 45 runs, "beacon" in the first, the 20th and the last;
    session "other" never says it."""
    session = SQLiteSession(path, wal=True)
    for n in range(45):
        said = "beacon here" if n in (0, 20, 44) else f"plain words {n}"
        await session.append(
            "long",
            [InputEntry(role="user", content=said), AssistantTextEntry(content="ok")],
            run_id=f"r{n}",
        )
    await session.append(
        "other",
        [
            InputEntry(role="user", content="nothing to see"),
            AssistantTextEntry(content="ok"),
        ],
        run_id="o1",
    )


@contextlib.asynccontextmanager
async def _app(scratch: Path):
    """The app on :func:`_write`'s file, settled: (path, app, pilot)."""
    path = scratch / "hits.db"
    await _write(path)
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        yield path, app, pilot


async def _until_built(pilot, path: Path) -> None:
    await until(pilot, lambda: index_path(path).exists(), 10, "the index file")
    progress = pilot.app.screen.sessions
    await until(pilot, lambda: "indexing" not in progress.progress, 10, "the build")


async def test_search_lands_on_the_first_hit_and_steps_through_them(scratch: Path):
    ids = dict(
        (run, row) for row, run in enumerate((f"r{n}" for n in range(45)), start=1)
    )
    async with _app(scratch) as (path, app, pilot):
        first, middle, last = (f"seg:{path}:{ids[f'r{n}']}:0" for n in (0, 20, 44))
        await pilot.press("s", *"beacon", "enter")
        await settle(pilot)
        screen = app.screen
        assert [key[1] for key in screen.sessions.shown] == ["long"]
        # The newest 30 runs are shown first: the first hit loads older ones.
        await until(
            pilot, lambda: screen.transcript.current_row.key == first, 10, "first hit"
        )
        assert screen.transcript_pane.hits.rows == [first, middle, last]
        # First in the title, which a narrow pane ends in "…": at 120 columns
        # "hit 1/3" was cut off after the id and the counts.
        title = str(screen.query_one("#transcript-title", PaneTitle).content)
        assert title.startswith("Transcript · hit 1/3 · long"), title
        await pilot.press("2", "n")
        assert screen.transcript.current_row.key == middle
        await pilot.press("n")
        assert screen.transcript.current_row.key == last
        await pilot.press("N", "N")
        assert screen.transcript.current_row.key == first
        # The build finishes in the background and says so in the title.
        await _until_built(pilot, path)


async def test_a_query_with_nothing_to_find_warns(scratch: Path):
    async with _app(scratch) as (_, app, pilot):
        watch = AppWatch()
        watch.attach(app)
        await pilot.press("s", *"!!!", "enter")
        await settle(pilot)
        assert len(app.screen.sessions.shown) == 2
        assert any("nothing to search for" in text for _, text in watch.notes)


async def test_the_index_follows_commits_by_other_writers(scratch: Path):
    async with _app(scratch) as (path, _, pilot):
        await pilot.press("s", "escape")  # the first `s` starts the build
        await _until_built(pilot, path)
        await append_entries(path, "late", 1, prefix="lighthouse")
        search = FileSearch(path)
        try:
            await until(
                pilot,
                lambda: search.index.state().seg_count == 47,
                10,
                "the new segment indexed",
            )
            result = search.search(parse_query("lighthouse"))
            assert result.scanned == 0 and result.groups[0].session_id == "late"
        finally:
            search.close()


async def test_a_hit_among_the_entries_a_huge_run_holds_back_lands_on_its_row(
    scratch: Path, monkeypatch
):
    """A run held by its first and last entries: a hit in its middle puts the
    cursor on the row standing for the entries not held, not nowhere."""
    from lovia.transcript import ToolCallEntry, ToolResultEntry

    from lovia_tui.core.store import entry_stream, segment_parts

    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 2_000)
    monkeypatch.setattr(entry_stream, "MANY_ENTRIES", 5)
    monkeypatch.setattr(segment_parts, "HELD_ENTRIES", 20)
    path = scratch / "huge.db"
    entries = [InputEntry(role="user", content="check every ticket")]
    for n in range(200):
        said = "lighthouse" if n in (2, 150) else "résolu"
        entries += [
            ToolCallEntry(f"c{n}", "ticket", f'{{"id": {n}}}'),
            ToolResultEntry(f"c{n}", f"ticket {n}: {said}"),
        ]
    await SQLiteSession(path, wal=True).append("huge", entries, run_id="r1")
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        shown, held = f"seg:{path}:1:6", f"seg:{path}:1:held-back"
        await pilot.press("s", *"lighthouse", "enter")
        await settle(pilot)
        transcript = app.screen.transcript
        await until(pilot, lambda: transcript.current_row.key == shown, 10, "1st hit")
        assert app.screen.transcript_pane.hits.rows == [shown, f"seg:{path}:1:302"]
        await pilot.press("2", "n")
        assert transcript.current_row.key == held
        await pilot.press("enter")  # says where they are, changes nothing
        assert transcript.current_row.key == held
        await pilot.press("n")
        assert transcript.current_row.key == shown


async def test_the_sessions_found_so_far_show_while_the_scan_goes_on(
    scratch: Path, monkeypatch
):
    """A search with no index scans the whole file (seconds at 1M): the
    sessions found so far narrow the list at once, the title says so, and
    the answer replaces them when the scan ends."""
    import threading

    from lovia_tui.core.search import workspace as search_workspace
    from lovia_tui.widgets.search_box import SearchBox

    answer = threading.Event()
    search_file = search_workspace._search_file

    def slow_search_file(db, query, limit, seen):
        result = search_file(db, query, limit, seen)  # tells "long" as it finds it
        answer.wait(10)  # bounded: the test sets it
        return result

    monkeypatch.setattr(search_workspace, "_search_file", slow_search_file)
    monkeypatch.setattr(SearchBox, "start_index", lambda self: None)  # none built yet
    async with _app(scratch) as (_, app, pilot):
        sessions = app.screen.sessions
        await pilot.press("s", *"beacon", "enter")
        await until(pilot, lambda: "so far" in sessions.progress, 10, "so far")
        assert [key[1] for key in sessions.shown] == ["long"]
        assert "1 so far" in sessions.progress
        answer.set()
        await settle(pilot)
        assert [key[1] for key in sessions.shown] == ["long"]
        assert "so far" not in sessions.progress


async def test_n_steps_on_to_the_next_session_found(scratch: Path):
    """From the results list too (`s beacon Enter n`): past a session's last
    hit, `n` moves to the next session found; past the last one, back to the
    first hit, saying so. It stopped at the pane's edge without a word."""
    path = scratch / "two.db"
    session = SQLiteSession(path, wal=True)
    for sid, words in (
        ("older", ["beacon one", "beacon two"]),
        ("newer", ["beacon three"]),
    ):
        for n, said in enumerate(words):
            await session.append(
                sid,
                [
                    InputEntry(role="user", content=said),
                    AssistantTextEntry(content="ok"),
                ],
                run_id=f"{sid}-{n}",
            )
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("s", *"beacon", "enter")
        await settle(pilot)
        assert [key[1] for key in screen.sessions.shown] == ["newer", "older"]
        hits = screen.transcript_pane.hits
        await until(pilot, lambda: hits.title.endswith("1/1"), 10, "newer's hit")
        await pilot.press("n")  # still in the results list
        await until(pilot, lambda: screen.sessions.selected[1] == "older", 10, "older")
        await until(pilot, lambda: hits.title.endswith("1/2"), 10, "older's first hit")
        await pilot.press("n", "n")
        await settle(pilot)
        assert hits.title.endswith("1/2")
        assert any(
            "back to this one's first hit" in n.message for n in app._notifications
        )


def _title(app) -> str:
    return str(app.screen.query_one("#transcript-title", PaneTitle).content)


async def test_the_hit_counter_goes_when_its_hits_no_longer_apply(scratch: Path):
    """ "hit 1/1" says where the cursor is among the hits of the session shown.
    It stayed in the title over a run opened alone, over rows a commit by
    another writer carried the cursor to, and after the cursor moved away."""
    from lovia.testing import call, text
    from support.lovia_factory import abandoned_run

    path = scratch / "hits.db"
    session = SQLiteSession(path, wal=True)
    await session.append(
        "talk",
        [InputEntry(role="user", content="beacon here"), AssistantTextEntry("ok")],
        run_id="t1",
    )
    await abandoned_run(path, "lone", [call("echo", {"message": "hi"}), text("x")])
    app = make_app([path], stale_after=3600)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        hits = screen.transcript_pane.hits
        await pilot.press("s", *"beacon", "enter")
        await until(pilot, lambda: "hit 1/1" in _title(app), 10, "the hit")
        await pilot.press("2", "end")
        assert "hit" not in _title(app), "the cursor left the hit"
        await pilot.press("n")
        assert "· hit 1/1 ·" in _title(app)
        # Another writer appends to the session: it is read again, the cursor
        # stays on the hit, and a new hit counts.
        await append_entries(path, "talk", 1, prefix="beacon again")
        await until(pilot, lambda: len(hits.rows) == 2, 10, "the new hit")
        assert "· hit 1/2 ·" in _title(app), _title(app)
        assert screen.transcript.current_row.key == hits.rows[0]
        # Off the hits, n and N step from the last one visited (N from the
        # first goes round to the last, this file holding no other session).
        await pilot.press("end")
        assert "hit" not in _title(app)
        await pilot.press("N")
        assert "· hit 2/2 ·" in _title(app), _title(app)
        # On the newest row, the next commit carries the cursor down with it.
        await pilot.press("end")
        await append_entries(path, "talk", 1, prefix="later")
        await until(pilot, lambda: "later 0" in str(_entries(screen)), 10, "later")
        await settle(pilot)
        assert "hit" not in _title(app), _title(app)
        # A run opened alone has none of the session's hits.
        await pilot.press("3")
        await until(pilot, lambda: screen.runs.select_run("lone"), 10, "lone")
        await pilot.press("enter")
        await until(pilot, lambda: screen.transcript_pane.run_view == "lone", 10)
        await settle(pilot)
        assert _title(app).startswith("Run lone"), _title(app)
        assert "hit" not in _title(app) and hits.rows == []


def _entries(screen) -> list[str]:
    return [
        str(row.entry.data.get("content"))
        for row in screen.transcript.rows
        if row.kind == "entry" and row.entry is not None
    ]
