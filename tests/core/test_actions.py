"""Actions through lovia: each one's effect equals calling lovia directly.

Every database is written by real lovia code (see ``lovia_factory``); each
test performs an action on one file and does the same by hand with lovia's
store methods on a copy, then compares every row.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.context.state import result_digest
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    drop_dangling_tool_calls,
)
from lovia.web.store import ChatStore
from support.lovia_factory import (
    DONE,
    READY,
    append_entries,
    copy_db,
    raw,
    rows,
    scratch_directory,
    settled_rows,
    web_wind_down,
)

from lovia_tui.core.actions.fork import perform_fork, preview_fork
from lovia_tui.core.actions.perform import perform
from lovia_tui.core.actions.run_plans import preview_delete_runs, preview_finalize
from lovia_tui.core.actions.session_plans import (
    preview_clear,
    preview_rewind,
    user_turn_start,
)
from lovia_tui.core.actions.trim_plan import preview_trim
from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.workspace import Workspace

pytestmark = pytest.mark.usefixtures("private_journal")


def copies(scratch: Path, *paths: Path) -> list[Path]:
    (scratch / "copy").mkdir(exist_ok=True)
    return [copy_db(p, scratch / "copy" / p.name) for p in paths]


ALL, LATER = {"s-0", "s-1", "s-2"}, {"s-1", "s-2"}


@pytest.mark.parametrize(
    ("keep", "deleted", "kept"),
    [
        (0, ALL, ()),
        (2, LATER, ("s-0",)),
        (4, LATER, ()),
        (6, {"s-2"}, ("s-1",)),
        (8, {"s-2"}, ("s-1",)),
        (10, {"s-2"}, ()),
        (12, set(), ()),
    ],
)
async def test_rewind_equals_lovia(
    two_files: tuple[Path, Path],
    scratch: Path,
    keep: int,
    deleted: set[str],
    kept: tuple[str, ...],
) -> None:
    """Checkpoints of every removed run go too; a completed one whose segment is
    only truncated stays (a replay adds nothing to a segment that exists); the
    unlinked crash stays."""
    sessions, runs = two_files
    copy_sessions, copy_runs = copies(scratch, sessions, runs)
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_rewind(ws, "s", keep, stale_after=3600)
        result = await perform(ws, preview)
    finally:
        await ws.close()
    for checkpoint in preview.checkpoints:
        await SQLiteCheckpointer(copy_runs, wal=True).delete(checkpoint.run_id)
    removed = await SQLiteSession(copy_sessions, wal=True).rewind(
        "s", keep_entries=keep
    )
    assert preview.entries_removed == removed
    assert result.counts.get("entries_removed", 0) == removed
    assert rows(sessions) == rows(copy_sessions)
    assert rows(runs) == rows(copy_runs)
    assert {c.run_id for c in preview.checkpoints} == deleted
    assert preview.kept_checkpoints == kept
    for path in (sessions, runs):
        assert raw(path, "PRAGMA integrity_check") == [("ok",)]


async def test_rewind_cut_details(two_files: tuple[Path, Path]) -> None:
    ws = await Workspace.open(two_files)
    try:
        cut_in_batch = await preview_rewind(ws, "s", 8)
        cut_after_call = await preview_rewind(ws, "s", 2)
    finally:
        await ws.close()
    # [q, c1, c2, r1] keeps c1's pair and drops c2, left without its result.
    assert cut_in_batch.truncated is not None
    assert cut_in_batch.truncated.run_id == "s-1"
    assert cut_in_batch.truncated.kept_entries == 3
    assert [c.call_id for c in cut_in_batch.truncated.dropped_calls] == ["c2"]
    assert cut_in_batch.truncated.loses_meta
    assert cut_in_batch.runs_deleted == ("s-2",)
    assert {c.call_id for c in cut_in_batch.side_effects} == {"c2"}
    # [q, c0]: the call is dropped, only the user message survives.
    assert (
        cut_after_call.truncated is not None
        and cut_after_call.truncated.kept_entries == 1
    )
    assert cut_after_call.entries_removed == 11
    # "crashed" is live and linked to nothing: it may be this session's.
    assert cut_in_batch.unknown_live_runs == ("crashed",)
    assert {c.call_id for c in cut_after_call.side_effects} == {"c0", "c1", "c2"}


async def test_rewind_web_deletes_inflight_and_clears_pointer(
    web_file: Path, scratch: Path
) -> None:
    (copy,) = copies(scratch, web_file)
    ws = await Workspace.open([web_file])
    try:
        with pytest.raises(ActionError, match="live"):
            await preview_rewind(ws, "chat", 4)
        preview = await preview_rewind(ws, "chat", 4, stale_after=0)
        await perform(ws, preview, reason="edit and resend")
    finally:
        await ws.close()
    [inflight] = preview.checkpoints
    assert (inflight.run_id, inflight.web_pointer, inflight.appended) == (
        "inflight",
        "chat",
        False,
    )
    await SQLiteCheckpointer(copy, wal=True).delete("inflight")
    await ChatStore.sqlite(copy).clear_active_run_id("chat", expected="inflight")
    assert (
        await SQLiteSession(copy, wal=True).rewind("chat", keep_entries=4)
        == preview.entries_removed
    )
    assert rows(web_file) == rows(copy)


async def test_user_turn_start(two_files: tuple[Path, Path]) -> None:
    ws = await Workspace.open(two_files)
    try:
        assert await user_turn_start(ws, "s", 0) == 0
        assert await user_turn_start(ws, "s", 3) == 0
        assert await user_turn_start(ws, "s", 7) == 4
        assert await user_turn_start(ws, "s", 11) == 10
    finally:
        await ws.close()


async def test_trim_equals_lovia(two_files: tuple[Path, Path], scratch: Path) -> None:
    sessions, runs = two_files
    (copy,) = copies(scratch, sessions)
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_trim(ws, "s", keep_chars=20, keep_runs=1)
        result = await perform(ws, preview)
        again = await preview_trim(ws, "s", keep_chars=20, keep_runs=1)
    finally:
        await ws.close()
    trimmed = await SQLiteSession(copy, wal=True).trim_tool_results(
        "s", keep_chars=20, keep_runs=1
    )
    assert preview.results_trimmed == trimmed == result.counts["results_trimmed"] == 1
    [cut] = preview.cuts
    assert (cut.run_id, cut.call_id, cut.tool, cut.archived) == (
        "s-1",
        "c2",
        "dump",
        False,
    )
    [stored] = sqlite3.connect(sessions).execute(
        "SELECT length(CAST(entries_json AS BLOB)) FROM session_runs WHERE run_id = 's-1'"
    )
    assert preview.runs[0].bytes_after == stored[0]
    assert rows(sessions) == rows(copy)
    assert again.noop  # idempotent, like lovia's


async def test_trim_sees_archived_outputs(scratch: Path) -> None:
    """An output offloaded with its digest (in carried context state) is archived."""
    path = scratch / "s.db"
    big = "x" * 2000
    session = SQLiteSession(path, wal=True)
    offloaded = {
        "o1": {"preview": big[:10], "chars": len(big), "digest": result_digest(big)}
    }
    meta = {"context_state": {"context": {"version": 3, "offloaded": offloaded}}}
    for n, call_id in enumerate(["o1", "o2"]):
        await session.append(
            "s",
            [ToolCallEntry(call_id, "dump", "{}"), ToolResultEntry(call_id, big)],
            run_id=f"r{n}",
            meta=meta if n else None,
        )
    ws = await Workspace.open([path])
    try:
        preview = await preview_trim(ws, "s", keep_chars=5, keep_runs=0)
    finally:
        await ws.close()
    assert {c.call_id: c.archived for c in preview.cuts} == {"o1": True, "o2": False}
    assert preview.lost_for_good == 1


async def test_delete_runs_by_filter(
    two_files: tuple[Path, Path], scratch: Path
) -> None:
    sessions, runs = two_files
    (copy,) = copies(scratch, runs)
    ws = await Workspace.open([sessions, runs])
    try:
        completed = await preview_delete_runs(ws, status="completed", older_than_days=0)
        with pytest.raises(ActionError, match="live"):
            await preview_delete_runs(ws, ["crashed"])
        assert (await preview_delete_runs(ws, status="stale")).noop
        stale = await preview_delete_runs(ws, status="stale", stale_after=0)
        await perform(ws, completed)
        await perform(ws, stale)
    finally:
        await ws.close()
    assert sorted(c.run_id for c in completed.checkpoints) == ["s-0", "s-1", "s-2"]
    assert all(c.appended and c.session_id == "s" for c in completed.checkpoints)
    assert [(c.run_id, c.appended) for c in stale.checkpoints] == [("crashed", False)]
    for run_id in ("s-0", "s-1", "s-2", "crashed"):
        await SQLiteCheckpointer(copy, wal=True).delete(run_id)
    assert rows(runs) == rows(copy)
    assert rows(runs)["snapshot_heads"] == []


async def test_keep_partial_stores_all_a_web_run_saved(
    web_file: Path, scratch: Path
) -> None:
    """Keep-partial persists every saved entry minus dangling calls, through the
    calls lovia web's server settles a stopped run with."""
    (copy,) = copies(scratch, web_file)
    ws = await Workspace.open([web_file])
    try:
        with pytest.raises(ActionError, match="live"):
            await preview_finalize(ws, "inflight", keep_partial=True)
        preview = await preview_finalize(
            ws, "inflight", keep_partial=True, stale_after=0
        )
        result = await perform(ws, preview)
    finally:
        await ws.close()
    assert (preview.session_id, preview.session_source, preview.web_record) == (
        "chat",
        "web",
        "running",
    )
    assert preview.checkpoint.web_pointer == "chat"
    checkpointer = SQLiteCheckpointer(copy, wal=True)
    snapshot = await checkpointer.load("inflight")
    assert snapshot is not None
    entries = drop_dangling_tool_calls(snapshot.entries)
    timing = {"started_at": snapshot.started_at, "finished_at": snapshot.updated_at}
    assert preview.timing == timing
    assert result.counts["entries_appended"] == len(entries) == preview.entries_appended
    assert {c.call_id for c in preview.dropped_calls} == {"k1", "k2"}
    await web_wind_down(copy, "chat", "inflight", entries, timing)
    assert settled_rows(web_file) == settled_rows(copy)
    assert rows(copy)["chat_runs"][0][4] == "'cancelled'"
    assert raw(web_file, "PRAGMA integrity_check") == [("ok",)]


async def test_finalize_needs_a_session(
    two_files: tuple[Path, Path], scratch: Path
) -> None:
    sessions, runs = two_files
    copy_sessions, copy_runs = copies(scratch, sessions, runs)
    ws = await Workspace.open([sessions, runs])
    try:
        with pytest.raises(ActionError, match="linked to no session"):
            await preview_finalize(ws, "crashed", stale_after=0)
        with pytest.raises(ActionError, match="belongs to session 's'"):
            await preview_finalize(ws, "s-0", "other")
        appended = await preview_finalize(ws, "s-0")
        given = await preview_finalize(ws, "crashed", "s", stale_after=0)
        await perform(ws, appended)
        await perform(ws, given)
    finally:
        await ws.close()
    assert appended.already_appended and appended.entries_appended == 0
    assert (given.session_source, given.file, given.entries_appended) == (
        "given",
        sessions,
        1,
    )
    checkpointer = SQLiteCheckpointer(copy_runs, wal=True)
    snapshot = await checkpointer.load("crashed")
    assert snapshot is not None
    await SQLiteSession(copy_sessions, wal=True).append(
        "s",
        drop_dangling_tool_calls(snapshot.entries),
        run_id="crashed",
        meta={
            "timing": {
                "started_at": snapshot.started_at,
                "finished_at": snapshot.updated_at,
            }
        },
    )
    await checkpointer.delete("s-0")
    await checkpointer.delete("crashed")
    assert rows(runs) == rows(copy_runs)
    ours, theirs = rows(sessions)["session_runs"], rows(copy_sessions)["session_runs"]
    assert [r[:5] for r in ours] == [r[:5] for r in theirs]


async def test_clear_equals_lovia(two_files: tuple[Path, Path], scratch: Path) -> None:
    sessions, runs = two_files
    copy_sessions, copy_runs = copies(scratch, sessions, runs)
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_clear(ws, "s")
        await perform(ws, preview)
    finally:
        await ws.close()
    assert (preview.segments, preview.entries) == (3, 12)
    assert sorted(c.run_id for c in preview.checkpoints) == ["s-0", "s-1", "s-2"]
    for run_id in ("s-0", "s-1", "s-2"):
        await SQLiteCheckpointer(copy_runs, wal=True).delete(run_id)
    await SQLiteSession(copy_sessions, wal=True).clear("s")
    assert rows(sessions) == rows(copy_sessions)
    assert rows(runs) == rows(copy_runs)


async def test_readonly_previews_and_changes_nothing(
    two_files: tuple[Path, Path],
) -> None:
    before = [rows(path) for path in two_files]
    ws = await Workspace.open(two_files, readonly=True)
    try:
        for attempt in (
            preview_rewind(ws, "s", 1),
            preview_trim(ws, "s"),
            preview_clear(ws, "s"),
            preview_delete_runs(ws, ["s-0"]),
            preview_finalize(ws, "s-0"),
        ):
            preview = await attempt  # read: what it would do
            with pytest.raises(ActionError, match="read-only"):
                await perform(ws, preview)
        fork = await preview_fork(ws, "s", 1)
        with pytest.raises(ActionError, match="read-only"):
            await perform_fork(ws, fork)
    finally:
        await ws.close()
    assert [rows(path) for path in two_files] == before


async def test_change_after_preview_is_refused(two_files: tuple[Path, Path]) -> None:
    sessions, runs = two_files
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_rewind(ws, "s", 4)
        await append_entries(sessions, "s", 1)
        before = rows(sessions)
        with pytest.raises(ActionError, match="changed since the preview"):
            await perform(ws, preview)
    finally:
        await ws.close()
    assert rows(sessions) == before


async def test_no_store_is_created_on_a_file_without_it(
    two_files: tuple[Path, Path],
) -> None:
    """Actions construct lovia stores only on the file holding that store's tables."""
    sessions, runs = two_files
    ws = await Workspace.open([sessions, runs])
    try:
        await perform(ws, await preview_rewind(ws, "s", 4))
        await perform(ws, await preview_finalize(ws, "crashed", "s", stale_after=0))
    finally:
        await ws.close()
    assert "snapshot_heads" not in rows(sessions)
    assert "session_runs" not in rows(runs)


# --- random transcripts: previews equal lovia's own results -------------------

_OUTPUT = st.text(alphabet="ab\n€", max_size=60).map(lambda s: s * 20)
_CALL_IDS = st.sampled_from(["call_0", "call_1", "c2", "c3"])  # providers reuse ids


@st.composite
def _segment(draw: st.DrawFn) -> list:
    entries: list = [InputEntry(role="user", content=draw(st.text(max_size=5)))]
    for kind in draw(
        st.lists(
            st.sampled_from(["pair", "batch", "text", "dangling", "reason"]), max_size=4
        )
    ):
        if kind == "text":
            entries.append(AssistantTextEntry(content="ok"))
        elif kind == "reason":
            entries.append(ReasoningEntry(content="hm"))
        elif kind == "dangling":
            entries.append(ToolCallEntry(draw(_CALL_IDS), "echo", "{}"))
        else:
            ids = draw(
                st.lists(
                    _CALL_IDS,
                    min_size=1,
                    max_size=1 if kind == "pair" else 3,
                    unique=True,
                )
            )
            entries += [ToolCallEntry(i, "echo", "{}") for i in ids]
            entries += [
                ToolResultEntry(i, draw(_OUTPUT)) for i in draw(st.permutations(ids))
            ]
    return entries


@settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    segments=st.lists(st.one_of(_segment(), st.just([])), min_size=1, max_size=4),
    cut=st.integers(min_value=0, max_value=40),
    keep_chars=st.integers(min_value=0, max_value=300),
    keep_runs=st.integers(min_value=0, max_value=3),
)
def test_previews_match_lovia_on_random_transcripts(
    segments: list, cut: int, keep_chars: int, keep_runs: int
) -> None:
    asyncio.run(_check_random(segments, cut, keep_chars, keep_runs))


async def _check_random(
    segments: list, cut: int, keep_chars: int, keep_runs: int
) -> None:
    with scratch_directory() as tmp:
        path = tmp / "s.db"
        session = SQLiteSession(path, wal=True)
        for n, entries in enumerate(segments):
            await session.append("s", entries, run_id=f"r{n}", meta={"n": n})
        ws = await Workspace.open([path])
        try:
            rewind = await preview_rewind(ws, "s", cut)
            trim = await preview_trim(ws, "s", keep_chars, keep_runs)
        finally:
            await ws.close()
        trim_copy = copy_db(path, tmp / "t.db")
        trimmed = await SQLiteSession(trim_copy, wal=True).trim_tool_results(
            "s", keep_chars=keep_chars, keep_runs=keep_runs
        )
        assert trim.results_trimmed == trimmed
        removed = await session.rewind("s", keep_entries=cut)
        assert rewind.entries_removed == removed
        after = await session.segments("s")
        kept = [
            f"r{n}" for n in range(len(segments)) if f"r{n}" not in rewind.runs_deleted
        ]
        assert [s.run_id for s in after] == kept
        if rewind.truncated is not None:
            assert after[-1].run_id == rewind.truncated.run_id
            assert len(after[-1].entries) == rewind.truncated.kept_entries
            assert after[-1].meta is None


# --- a concurrent writer -------------------------------------------------------


async def test_actions_while_another_process_appends(
    two_files: tuple[Path, Path],
) -> None:
    """Rewind, undo and trim on one session while a lovia process keeps appending
    to another in the same file: both succeed, nothing is locked out or lost."""
    from lovia_tui.core.actions.perform import undo

    sessions, runs = two_files
    stop = sessions.with_name("stop")
    factory = Path(__file__).parents[1] / "support" / "lovia_factory.py"
    writer = subprocess.Popen(
        [
            sys.executable,
            str(factory),
            "append-loop",
            str(sessions),
            "busy",
            str(stop),
            "5000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == READY
        ws = await Workspace.open([sessions, runs])
        try:
            for _ in range(5):
                rewound = await perform(ws, await preview_rewind(ws, "s", 4))
                assert rewound.journal_id is not None
                await undo(ws, rewound.journal_id)
                await perform(ws, await preview_trim(ws, "s", keep_chars=10))
            assert writer.poll() is None, "the writer stopped before the actions ended"
        finally:
            await ws.close()
            stop.touch()
        out, err = writer.communicate(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, err
    done, written = out.split()
    assert done == DONE
    busy = [r for r in rows(sessions)["session_runs"] if r[1] == "'busy'"]
    assert len(busy) == int(written)


async def test_a_count_differing_from_the_preview_is_reported_not_failed(
    two_files: tuple[Path, Path], scratch: Path
) -> None:
    """A preview that got lovia's count wrong: done, both numbers said, rows journaled."""
    import dataclasses

    from lovia_tui.core.actions.perform import undo

    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_rewind(ws, "s", 4)
        wrong = dataclasses.replace(
            preview, entries_removed=preview.entries_removed - 1
        )
        result = await perform(ws, wrong)
        [warning] = result.warnings
        assert "BUG (please report): entries removed: lovia 8, the preview 7" in warning
        assert result.counts["entries_removed"] == 8
        assert len(rows(sessions)["session_runs"]) == 1  # it is done
        await undo(ws, result.journal_id)  # and the journal held every row
    finally:
        await ws.close()
    assert (rows(sessions), rows(runs)) == before


async def test_a_journal_that_cannot_record_the_end_leaves_it_undoable(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed, then the journal fails: done with a warning, and undo still works."""
    from lovia_tui.core.actions.journal import Journal
    from lovia_tui.core.actions.journal_file import JournalError
    from lovia_tui.core.actions.perform import undo

    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    finish = Journal.finish_sync

    def failing(self, entry_id, status, *args, **kwargs):
        if status == "done" and self is not undoing:
            raise JournalError(f"the undo journal {self.path}: disk I/O error")
        return finish(self, entry_id, status, *args, **kwargs)

    monkeypatch.setattr(Journal, "finish_sync", failing)
    undoing = Journal()
    ws = await Workspace.open([sessions, runs])
    try:
        result = await perform(ws, await preview_clear(ws, "s"))
        [warning] = result.warnings
        assert "stays pending" in warning and "disk I/O error" in warning
        entry = await undoing.get(result.journal_id)
        assert (entry.status, entry.unfinished) == ("pending", True)
        undone = await undo(ws, result.journal_id, undoing)
        linked = [
            r
            for table in ("snapshot_heads", "snapshot_turns")
            for r in before[1][table]
            if r[0].startswith("'s-")
        ]  # the checkpoints of s-0..s-2, deleted with the session
        assert undone.rows_restored == len(before[0]["session_runs"]) + len(linked)
    finally:
        await ws.close()
    assert (rows(sessions), rows(runs)) == before


async def test_a_session_preview_beside_a_fleet_reads_its_runs_not_every_head(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker fleet's file holds a head per run, a million of them: a
    session's preview reads the heads that may belong to it (lovia's index,
    lovia web's records) and the running ones (by status, in SQL), never every
    head (beside 1M heads a rewind's preview took 38 s and 1.9 GB)."""
    from lovia_tui.core.store import checkpoint_reads, head_reads

    sessions, runs = two_files
    copied = "INSERT INTO snapshot_heads (run_id, head_json, updated_at) SELECT ?, head_json, updated_at FROM snapshot_heads WHERE run_id = ?"
    with contextlib.closing(sqlite3.connect(runs)) as conn, conn:
        conn.executemany(copied, [(f"fleet-{n}", "s-0") for n in range(500)])
        conn.execute(copied, ("fleet-live", "crashed"))  # running, of no known session
    read: list[str] = []
    real = checkpoint_reads.run_info

    def counted(db, row):
        read.append(row[0])
        return real(db, row)

    monkeypatch.setattr(checkpoint_reads, "run_info", counted)
    monkeypatch.setattr(head_reads, "run_info", counted)
    ws = await Workspace.open([sessions, runs])
    try:
        rewind = await preview_rewind(ws, "s", 4, stale_after=3600)
        clear = await preview_clear(ws, "s", stale_after=3600)
    finally:
        await ws.close()
    assert sorted(set(read)) == ["crashed", "fleet-live", "s-0", "s-1", "s-2"]
    assert {c.run_id for c in rewind.checkpoints} == LATER
    assert {c.run_id for c in clear.checkpoints} == ALL
    for preview in (rewind, clear):
        assert set(preview.unknown_live_runs) == {"crashed", "fleet-live"}
