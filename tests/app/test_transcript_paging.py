"""Regressions the benchmarks found: paging a long transcript, choosing a session."""

from __future__ import annotations

from contextlib import asynccontextmanager

from support.app import snapshot_app

from lovia_tui.pilot import settle
from lovia_tui.view import transcript_loader
from lovia_tui.widgets import transcript_window


@asynccontextmanager
async def kyoto(snap_dir, monkeypatch, batch: int = 1):
    """The app showing chat-kyoto, whose 2 runs are 2 batches of one segment
    (or one batch, with a larger ``batch``)."""
    monkeypatch.setattr(transcript_loader, "BATCH", batch)
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.go_to_session((str(screen.workspace.databases[0].path), "chat-kyoto"))
        await settle(pilot)
        yield pilot


async def test_home_goes_to_the_start_of_a_long_session(snap_dir, monkeypatch):
    """Home shows the session's first run at once, cursor on its first row:
    not the "▲ older runs" row at the top of what was loaded (it used to stop
    there, and once crashed the app when the batch arrived)."""
    async with kyoto(snap_dir, monkeypatch) as pilot:
        transcript = pilot.app.screen.transcript
        assert transcript.rows[0].kind == "older"
        await pilot.press("2", "home")
        await settle(pilot)
        first = transcript.rows[0]
        assert first.kind == "segment" and first.segment.run_id == "run-kyoto-1"
        assert transcript.current_row is first and transcript.scroll_offset.y == 0
        assert transcript.rows[-1].kind == "newer", "the newer runs load again below"
        # Each batch showed before the session's entries were counted; every
        # entry now has its flat index, what rewind counts: 0, 1, 2... in order.
        indices = [row.entry.index for row in transcript.rows if row.kind == "entry"]
        assert indices == list(range(len(indices))) and indices


async def test_enter_on_a_session_focuses_its_transcript(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        app.screen.sessions.row_list.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert app.focused is app.screen.transcript


async def test_the_transcript_keeps_a_window_of_segments_both_ways(
    snap_dir, monkeypatch
):
    """Scrolling a long session to its start and back holds WINDOW rows at a
    time, in whole segments (one at least): those let go come back through
    "newer" and "older" rows."""
    monkeypatch.setattr(transcript_window, "WINDOW", 1)
    async with kyoto(snap_dir, monkeypatch) as pilot:
        transcript = pilot.app.screen.transcript

        def shown() -> tuple[str, list[str], str]:
            segments = [row.key for row in transcript.rows if row.kind == "segment"]
            return transcript.rows[0].kind, segments, transcript.rows[-1].kind

        first, (newest,), _ = shown()
        assert first == "older"
        await pilot.press("home")
        await settle(pilot)
        first, (oldest,), last = shown()
        assert (first, last) == ("segment", "newer") and oldest != newest
        await pilot.press("end")  # onto the "newer" row: the newest comes back
        await settle(pilot)
        first, segments, last = shown()
        assert (first, segments, last != "newer") == ("older", [newest], True)
        indices = [
            row.entry.index
            for row in transcript.rows
            if row.kind == "entry" and row.segment
        ]
        assert (
            indices
            and indices[0] > 0
            and indices == list(range(indices[0], indices[0] + len(indices)))
        )


async def test_a_reload_keeps_the_cursor_on_its_row(snap_dir, monkeypatch):
    """ctrl+r (as after an action or a change by another process) keeps the
    transcript's cursor on the row it was on, not on the newest entry."""
    async with kyoto(snap_dir, monkeypatch, batch=30) as pilot:
        screen = pilot.app.screen
        await pilot.press("2", "home", "down", "down")
        before = screen.transcript.current_row.key
        assert before != screen.transcript.rows[-1].key
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert screen.transcript.current_row.key == before


async def opened_rows(pilot, path) -> list:
    """The transcript's rows once session "s" of ``path`` is open."""
    await settle(pilot)
    pilot.app.screen.go_to_session((str(path), "s"))
    await settle(pilot)
    return pilot.app.screen.transcript.rows


async def huge_run(tmp_path, monkeypatch) -> tuple:
    """Session "s": a run of one entry, then a run of 402 entries (200 tool
    calls and their results), held in part (HELD_ENTRIES = 20)."""
    from lovia import SQLiteSession
    from lovia.transcript import (
        AssistantTextEntry,
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
    )

    from lovia_tui.core.store import entry_stream, segment_parts

    path = tmp_path / "sessions.db"
    entries = [InputEntry("user", "check every ticket")]
    for n in range(200):
        entries += [
            ToolCallEntry(f"c{n}", "ticket", f'{{"id": {n}}}'),
            ToolResultEntry(f"c{n}", f"ticket {n}: résolu ✓"),
        ]
    entries.append(AssistantTextEntry("done"))
    session = SQLiteSession(path)
    await session.append("s", [InputEntry("user", "hi")], run_id="r0")
    await session.append("s", entries, run_id="r1")
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 2_000)
    monkeypatch.setattr(entry_stream, "MANY_ENTRIES", 5)
    monkeypatch.setattr(segment_parts, "HELD_ENTRIES", 20)
    return path, entries


async def test_a_huge_run_is_held_by_its_first_and_last_entries(tmp_path, monkeypatch):
    """A segment of very many entries is not held whole (a million took
    1.3 GB): its first and last entries show with their flat indices, one row
    says how many between are not held, and a call whose result is among
    them is not called dangling."""
    from lovia_tui.app import make_app
    from lovia_tui.core.run_status import DANGLING_CALL
    from lovia_tui.widgets.transcript_rows import summary_line

    path, entries = await huge_run(tmp_path, monkeypatch)
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        rows = await opened_rows(pilot, path)
        kinds = [row.kind for row in rows]
        assert (
            kinds
            == ["segment", "entry", "segment"]
            + ["entry"] * 10
            + ["held-back"]
            + ["entry"] * 10
        )
        held = rows[13]
        assert held.older == len(entries) - 20 == 382
        indices = [row.entry.index for row in rows if row.kind == "entry"]
        assert indices == [0, *range(1, 11), *range(393, 403)]
        # Entry 10 calls c4; its result, entry 11, is among those not held.
        call = rows[12]
        assert call.entry.data["call_id"] == "c4" and call.result_held_back
        assert DANGLING_CALL not in str(summary_line(call, rows, False))
        assert "382 entries not held" in str(summary_line(held, rows, False))
        # The last part's calls are paired with their results as usual.
        assert all(
            row.partner is not None
            for row in rows[14:-1]
            if row.entry.data["type"] == "tool_call"
        )


async def test_a_huge_output_is_held_by_its_start(tmp_path, monkeypatch):
    """One huge tool output (a 200 MB one took the app to 1.5 GB parsed whole)
    is held by its first characters and a line saying how many more there
    are; the entries around it are whole (show and export print all of it:
    tests/cli/test_giant_segments.py)."""
    from lovia import SQLiteSession
    from lovia.transcript import (
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
        entry_to_dict,
    )

    from lovia_tui.app import make_app
    from lovia_tui.core import huge_text
    from lovia_tui.core.store import entry_stream, segment_reads

    path = tmp_path / "sessions.db"
    output = "log line ✓ " * 2_000  # 22,000 characters
    entries = [
        InputEntry("user", "dump the logs"),
        ToolCallEntry("c1", "logs", "{}"),
        ToolResultEntry("c1", output),
    ]
    await SQLiteSession(path).append("s", entries, run_id="r1")
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 2_000)
    monkeypatch.setattr(huge_text, "HUGE_ABOVE", 2_000)
    monkeypatch.setattr(segment_reads, "HELD_CHARS", 100)
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        rows = await opened_rows(pilot, path)
        held = rows[-1].entry.data["output"]
        assert held.startswith(output[:100])
        assert "21,900 more characters not held here" in held
        assert rows[-2].entry.data == entry_to_dict(entries[1])
        assert rows[-1].partner is not None  # paired with its call as ever


async def test_a_huge_run_shows_its_first_entries_while_it_is_counted(
    tmp_path, monkeypatch
):
    """Rows first, counts later: a run of a million entries took 6 s to count
    before a row showed. Its first entries show at once, with a row saying
    it is being counted and no rewind offered; once counted, its last
    entries and every flat index follow."""
    import asyncio

    from lovia_tui.app import make_app
    from lovia_tui.core.store import segment_reads
    from lovia_tui.widgets.transcript_rows import summary_line

    path, _ = await huge_run(tmp_path, monkeypatch)
    monkeypatch.setattr(segment_reads, "COUNT_IN_SQL_UP_TO", 0)  # counted by a pass
    counted = asyncio.Event()
    flat_starts = segment_reads.flat_starts

    async def held_starts(db, session_id):
        await counted.wait()
        return await flat_starts(db, session_id)

    monkeypatch.setattr(segment_reads, "flat_starts", held_starts)
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        screen.go_to_session((str(path), "s"))
        for _ in range(200):  # the count waits: the rows come without it
            await pilot.pause(0.05)
            if any(row.kind == "held-back" for row in screen.transcript.rows):
                break
        rows = screen.transcript.rows
        assert [row.kind for row in rows] == (
            ["segment", "entry", "segment"] + ["entry"] * 10 + ["held-back"]
        )
        held = rows[-1]
        assert held.segment.uncounted and held.segment.entry_count is None
        assert "being counted" in str(summary_line(held, rows, False))
        assert "counting…" in str(summary_line(rows[2], rows, False))
        assert all(row.entry.index is None for row in rows if row.kind == "entry")
        screen.transcript.focus()
        screen.transcript.select_key(rows[5].key)
        await pilot.pause(0)
        assert not screen.check_action("rewind_here", ())
        counted.set()
        await settle(pilot)
        rows = screen.transcript.rows
        assert [row.kind for row in rows][-12:] == (
            ["entry"] * 10 + ["held-back"] + ["entry"] * 10
        )[-12:]
        assert rows[13].older == 382 and not rows[13].segment.uncounted
        indices = [row.entry.index for row in rows if row.kind == "entry"]
        assert indices == [0, *range(1, 11), *range(393, 403)]
        assert screen.transcript.current_row.key == rows[5].key  # kept its place
        assert screen.check_action("rewind_here", ())


async def test_scrolling_up_past_the_window_lets_the_cursor_row_go_safely(
    snap_dir, monkeypatch
):
    """The view scrolled up (the wheel) with the cursor left on the newest
    row: once the window lets that row go, the cursor moves to the newest row
    kept (the benchmarks crashed here: the row was looked up after it went)."""
    monkeypatch.setattr(transcript_window, "WINDOW", 1)
    async with kyoto(snap_dir, monkeypatch) as pilot:
        transcript = pilot.app.screen.transcript
        newest = transcript.current_row
        assert transcript.rows[0].kind == "older" and newest is transcript.rows[-1]
        # What the view reaching the top asks for (the wheel; here the run
        # fits in the view, which never scrolls): the older run.
        transcript.post_message(transcript.LoadOlder())
        await settle(pilot)
        assert transcript.rows[-1].kind == "newer", "the newest run was let go"
        assert newest not in transcript.rows
        current = transcript.current_row
        assert current is transcript.rows[-2] and current.kind != "newer"
