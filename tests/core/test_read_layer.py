"""The read layer reports lovia's stores honestly, and readonly mode writes nothing.

Every test works on copies of the shared demo (built by real lovia runs); the
only raw writes are the hostile rows and files, made on copies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from support.lovia_factory import copy_files, raw

from lovia_tui.core.actions.plans import session_runs_and_links
from lovia_tui.core.entries import UnreadableError, dangling_calls, drop_dangling
from lovia_tui.core.errors import LoviaTuiError, OpenError
from lovia_tui.core.export import export_session
from lovia_tui.core.models import DanglingCall, SessionLink, SessionSummary
from lovia_tui.core.search import substring
from lovia_tui.core.store import (
    checkpoint_reads,
    connect,
    segment_reads,
    session_reads,
)
from lovia_tui.core.store.connect import wal_path
from lovia_tui.core.store.database import Database, open_database, sqlite_uri
from lovia_tui.core.store.head_reads import stream_runs
from lovia_tui.core.store.schema import Stores
from lovia_tui.core.store.workspace import Workspace, resolve_paths

# ---------------------------------------------------------------- helpers

DEMO_WEB_CHATS = 16
"""The demo's web chats: its chats, a subagent task chat, two schedule fires, a fork."""


def write(path: Path, sql: str, *params: Any) -> None:
    """The only raw write: hostile input, into a copy."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(sql, params)
        conn.commit()


@contextlib.asynccontextmanager
async def opened(path: Path, *, readonly: bool = True) -> AsyncIterator[Database]:
    db = await open_database(path, readonly=readonly)
    try:
        yield db
    finally:
        await db.close()


async def newest_summaries(db: Database, limit: int) -> list[SessionSummary]:
    """The summaries of the newest sessions, in order, as ``lovia-tui sessions`` lists them."""
    newest = await session_reads.recent_sessions(db, limit)
    return await session_reads.summaries_in_order(db, [sid for sid, _ in newest])


async def every_run(db: Database) -> list:
    """Every checkpoint in the file, as ``runs --json`` lists them."""
    return [run async for chunk in stream_runs(db) for run in chunk]


async def runs_for_session(ws: Workspace, session_id: str) -> list:
    """The checkpoints linked to a session, as the session actions find them."""
    runs, links = await session_runs_and_links(ws, session_id)
    return [
        (run, links[run.run_id])
        for run in runs
        if run.run_id in links and links[run.run_id].session_id == session_id
    ]


def one_line(message: str, path: Path) -> None:
    assert "\n" not in message
    assert str(path) in message


def strings(value: Any) -> Iterator[str]:
    """Every string inside decoded JSON."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.fixture
def demo(demo_dir: Any, tmp_path: Path) -> Any:
    """A private copy of the demo: free to open in default (WAL-switching) mode."""
    directory = tmp_path / "demo"
    for path in demo_dir.files:
        copy_files(path, directory)
    return dataclasses.replace(demo_dir, directory=directory)


# ------------------------------------------------------- store detection


@pytest.mark.parametrize("readonly", [True, False], ids=["readonly", "default"])
async def test_store_detection_on_each_demo_file(demo: Any, readonly: bool) -> None:
    expected = {
        demo.web_db: Stores(session=True, checkpoint=True, chat=True),
        demo.sessions_db: Stores(session=True, checkpoint=False, chat=False),
        demo.runs_db: Stores(session=False, checkpoint=True, chat=False),
    }
    for path, stores in expected.items():
        async with opened(path, readonly=readonly) as db:
            assert db.stores == stores, path.name
            assert db.readonly is readonly


async def test_tables_not_created_yet_read_as_empty(demo: Any) -> None:
    async with opened(demo.sessions_db) as db:
        assert await every_run(db) == []
        assert await checkpoint_reads.runs(db, [demo.cli_crashed_run]) == []
        assert await checkpoint_reads.snapshot_entries(db, demo.cli_crashed_run) == (
            [],
            [],
        )
    async with opened(demo.runs_db) as db:
        assert await segment_reads.segments(db, demo.cli_session) == []
        assert await newest_summaries(db, 50) == []
        assert await session_reads.recent_sessions(db, 50) == []
        assert (
            await session_reads.session_summary(db, demo.cli_completed_session) is None
        )
        assert await session_reads.session_title(db, demo.cli_completed_session) == ""
        assert [hit async for hit in substring.search_segments(db, "report")] == []
        assert [part async for part in session_reads.session_index(db)] == []


# ------------------------------------------------------------- sessions


async def test_web_sessions_include_chats_with_no_segment_yet(demo: Any) -> None:
    chats = dict(raw(demo.web_db, "SELECT id, title FROM chat_sessions"))
    counts = {
        sid: (count, last)
        for sid, count, last in raw(
            demo.web_db,
            "SELECT session_id, COUNT(*), MAX(id) FROM session_runs GROUP BY session_id",
        )
    }
    async with opened(demo.web_db) as db:
        summaries = await newest_summaries(db, 50)
        by_id = {s.session_id: s for s in summaries}
        # Every chat is listed, the batch and failed chats too: their only run
        # never finished, so they have no segment, but they exist and have a title.
        assert set(by_id) == set(chats)
        for sid in (demo.batch_session, demo.failed_session):
            assert sid not in counts
            assert (by_id[sid].runs, by_id[sid].last_id) == (0, 0)
            assert by_id[sid].last_activity is not None
        assert by_id[demo.batch_session].title == "Parallel jobs (cancelled)"
        for sid, summary in by_id.items():
            assert summary.title == chats[sid]
            assert summary.file == demo.web_db
            if sid in counts:
                assert (summary.runs, summary.last_id) == counts[sid]
        activity = [s.last_activity for s in summaries]
        assert activity == sorted(activity, reverse=True)

        # A limit keeps the newest, in the same order, whatever its size.
        order = [s.session_id for s in summaries]
        for limit in range(1, len(order) + 1):
            assert [
                s for s, _ in await session_reads.recent_sessions(db, limit)
            ] == order[:limit]
            assert [s.session_id for s in await newest_summaries(db, limit)] == order[
                :limit
            ]

        assert (
            await session_reads.session_summary(db, demo.batch_session)
            == by_id[demo.batch_session]
        )
        assert await session_reads.session_summary(db, "no-such-session") is None


async def test_a_touched_chat_ranks_as_lovia_web_ranks_it(demo: Any) -> None:
    from lovia.web.store import ChatStore

    # What the web UI writes when messages are sent: a new chat, then an old chat
    # bumped by a new run starting there (updated_at now, no new segment yet).
    store = ChatStore.sqlite(demo.web_db)
    await store.upsert("chat-fresh", agent="assistant", title="Fresh chat")
    await store.upsert(demo.trip_session)
    async with opened(demo.web_db) as db:
        full = await newest_summaries(db, 100)
        order = [s.session_id for s in full]
        # The touched chat ranks by its updated_at, as lovia web's sidebar,
        # on every page size.
        assert order[:2] == [demo.trip_session, "chat-fresh"]
        # lovia web lists a subagent task chat under its parent, not among its chats.
        tasks = {chat.id for chat in await store.list_children(demo.launch_session)}
        assert [sid for sid in order if sid not in tasks] == [
            chat.id for chat in await store.list()
        ]
        for limit in range(1, 5):
            assert [
                s for s, _ in await session_reads.recent_sessions(db, limit)
            ] == order[:limit]
            assert await newest_summaries(db, limit) == full[:limit]


async def test_two_file_titles_come_from_the_first_user_message(demo: Any) -> None:
    async with opened(demo.sessions_db) as db:
        summaries = await newest_summaries(db, 50)
        assert [(s.session_id, s.runs, s.title) for s in summaries] == [
            # A message with attachments is titled by its text part (whole:
            # the list cuts it at its column's edge).
            (demo.attachments_session, 1,
             "Here is the error chart and the incident log. What stands out?"),
            (demo.compacted_session, 3, "Why do the API and the worker fail?"),
            (demo.cli_completed_session, 1, "Write the daily report."),
            (demo.cli_session, 2, "What's on today? 今日の予定は?"),
        ]  # fmt: skip
        [(created,)] = raw(
            demo.sessions_db,
            "SELECT created_at FROM session_runs WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            demo.cli_session,
        )
        assert summaries[3].last_activity == created
        assert await session_reads.session_summary(db, demo.trip_session) is None


@pytest.mark.parametrize("layout", ["web", "two-file"])
async def test_flat_indices_match_lovia_load(
    demo: Any, tmp_path: Path, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lovia import SQLiteSession
    from lovia.transcript import entry_to_dict

    path = demo.web_db if layout == "web" else demo.sessions_db
    # lovia's store may write (schema check, journal mode): give it its own copy.
    store = SQLiteSession(copy_files(path, tmp_path / "lovia-copy"))
    session_ids = [
        sid for (sid,) in raw(path, "SELECT DISTINCT session_id FROM session_runs")
    ]
    assert len(session_ids) >= 2
    monkeypatch.setattr(segment_reads, "SEGMENT_CHUNK", 2)  # chunked reads agree too
    async with opened(path) as db:
        for sid in session_ids:
            segments = await segment_reads.segments(db, sid)
            lovia_segments = await store.segments(sid)
            assert [s.run_id for s in segments] == [s.run_id for s in lovia_segments]
            flat = []
            for segment, lovia_segment in zip(segments, lovia_segments, strict=True):
                assert segment.unreadable is None
                assert segment.first_index == len(flat)
                assert segment.entry_count == len(lovia_segment.entries)
                assert segment.stored_bytes > 0
                timing = (lovia_segment.meta or {}).get("timing", {})
                assert segment.started_at == timing.get("started_at")
                assert segment.finished_at == timing.get("finished_at")
                entries = await segment_reads.segment_entries(db, segment)
                assert len(entries) == segment.entry_count
                flat.extend(entries)
            # What the transcript reads: the newest batch, then indices counted apart.
            assert await segment_reads.flat_starts(db, sid) == {
                s.row_id: s.first_index for s in segments
            }
            newest, older = await segment_reads.newest_segments(db, sid, 2)
            assert [s.row_id for s in newest] == [s.row_id for s in segments[-2:]]
            assert [s.entry_count for s in newest] == [
                s.entry_count for s in segments[-2:]
            ]
            assert older == max(0, len(segments) - 2)
            if older:
                below, rest = await segment_reads.newest_segments(
                    db, sid, 1, newest[0].row_id
                )
                assert [s.row_id for s in below] == [
                    segments[-3].row_id
                ] and rest == older - 1
            expected = [entry_to_dict(entry) for entry in await store.load(sid)]
            assert [entry.index for entry in flat] == list(range(len(expected)))
            assert [entry.data for entry in flat] == expected


async def test_session_index_counts_every_session(
    demo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in (demo.web_db, demo.sessions_db):
        expected = {
            sid: (count, last)
            for sid, count, last in raw(
                path,
                "SELECT session_id, COUNT(*), MAX(id) FROM session_runs GROUP BY session_id",
            )
        }
        async with opened(path) as db:
            for chunk in (substring.SCAN_CHUNK, 4):
                monkeypatch.setattr(session_reads, "INDEX_CHUNK", chunk)
                merged: dict[str, tuple[int, int]] = {}
                fractions = []
                async for part, fraction in session_reads.session_index(db):
                    for sid, (count, last) in part.items():
                        old_count, old_last = merged.get(sid, (0, 0))
                        merged[sid] = (old_count + count, max(old_last, last))
                    fractions.append(fraction)
                assert merged == expected, (path.name, chunk)
                assert fractions == sorted(fractions) and fractions[-1] == 1.0
            for sid, (count, _) in expected.items():
                assert (await session_reads.session_summary(db, sid)).runs == count


# ------------------------------------------------------------------ runs


async def test_runs_report_every_head_field(
    demo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    heads = {
        run_id: json.loads(head)
        for run_id, head in raw(
            demo.web_db, "SELECT run_id, head_json FROM snapshot_heads"
        )
    }
    batches: dict[str, list[tuple[int, list[Any]]]] = {}
    for run_id, seq, text in raw(
        demo.web_db, "SELECT run_id, seq, entries_json FROM snapshot_turns"
    ):
        batches.setdefault(run_id, []).append((seq, json.loads(text)))
    async with opened(demo.web_db) as db:
        found = await every_run(db)
        assert {run.run_id for run in found} == set(heads) == set(demo.web_runs)
        saved = [run.updated_at for run in found]
        assert saved == sorted(saved, reverse=True)
        for run in found:
            head = heads[run.run_id]
            assert run.unreadable is None
            assert run.head == head
            assert run.file == demo.web_db
            assert (run.status, run.agent_name, run.turns) == (
                head["status"], head["agent_name"], head["turns"],
            )  # fmt: skip
            assert run.usage == head["usage"]
            assert run.output == head["output"]
            assert run.error == head["error"]
            assert run.last_input_tokens == head["last_input_tokens"]
            assert run.context_state == head["context_state"]
            assert run.pending_handoff == head["pending_handoff"]
            assert (run.started_at, run.updated_at) == (
                head["started_at"],
                head["updated_at"],
            )
            assert run.entries == sum(
                len(entries) for _, entries in batches[run.run_id]
            )
            assert run.last_seq == max(seq for seq, _ in batches[run.run_id])
            assert await checkpoint_reads.runs(db, [run.run_id]) == [run]
        by_id = {run.run_id: run for run in found}
        assert by_id[demo.crashed_run].status == "running"
        assert by_id[demo.interrupted_run].status == "interrupted"
        failed = by_id[demo.failed_run]
        assert (failed.status, failed.agent_name) == ("failed", "researcher")
        assert failed.error and failed.error["type"]
        window = by_id[demo.crash_window_run]
        assert window.status == "completed" and "Weekly summary" in window.output
        assert await checkpoint_reads.runs(db, ["no-such-run"]) == []
        monkeypatch.setattr(
            checkpoint_reads, "RUNS_CHUNK", 2
        )  # read a few at a time: the same
        by_ids = await checkpoint_reads.runs(db, [run.run_id for run in found])
        assert sorted(by_ids, key=lambda run: run.run_id) == sorted(
            found, key=lambda run: run.run_id
        )


def test_staleness_only_for_running_runs() -> None:
    run = dataclasses.replace(_fake_run(), status="running", updated_at=1000.0)
    assert run.is_stale(now=1300.0, stale_after=300) and not run.is_live(1300.0, 300)
    assert run.is_live(now=1299.0, stale_after=300) and not run.is_stale(1299.0, 300)
    for status in ("interrupted", "completed", "failed", "unreadable"):
        done = dataclasses.replace(run, status=status)
        assert not done.is_stale(10_000.0, 0) and not done.is_live(10_000.0, 0)


def _fake_run() -> Any:
    from lovia_tui.core.models import RunInfo

    return RunInfo(
        file=Path("x.db"), run_id="r", agent_name="a", status="running", turns=0,
        usage={}, output=None, error=None, last_input_tokens=None, context_state={},
        pending_handoff=None, updated_at=0.0, started_at=None, entries=0,
        last_seq=None, head={},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("where", "run", "call_id", "arguments"),
    [
        ("web_db", "crashed_run", "call_run-crashed_job", '{"job": "nightly-export"}'),
        (
            "runs_db",
            "cli_crashed_run",
            "call_run-cli-crashed_job",
            '{"job": "nightly-export"}',
        ),
        ("web_db", "batch_run", "call_jobs_2", '{"job": "export"}'),
    ],
)
async def test_snapshot_entries_and_the_dangling_run_job_call(
    demo: Any, where: str, run: str, call_id: str, arguments: str
) -> None:
    path, run_id = getattr(demo, where), getattr(demo, run)
    stored = [
        entry
        for (text,) in raw(
            path,
            "SELECT entries_json FROM snapshot_turns WHERE run_id = ? ORDER BY seq",
            run_id,
        )
        for entry in json.loads(text)
    ]
    async with opened(path) as db:
        entries, problems = await checkpoint_reads.snapshot_entries(db, run_id)
    assert problems == []
    # A checkpoint's own entries are not in the session yet: no flat index.
    assert all(entry.index is None for entry in entries)
    assert [entry.data for entry in entries] == stored
    assert entries[0].data["type"] == "input" and entries[0].data["role"] == "user"
    assert dangling_calls([entry.data for entry in entries]) == [
        DanglingCall(call_id=call_id, name="run_job", arguments=arguments)
    ]


async def test_finished_runs_have_no_dangling_calls(demo: Any) -> None:
    async with opened(demo.runs_db) as db:
        entries, _ = await checkpoint_reads.snapshot_entries(db, demo.cli_completed_run)
    assert len(entries) == 2
    assert dangling_calls([entry.data for entry in entries]) == []


def _call(call_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"type": "tool_call", "call_id": call_id, "name": name, "arguments": "{}"}


def _result(call_id: str) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "call_id": call_id,
        "output": "ok",
        "is_error": False,
        "raw": None,
    }


def test_dangling_calls_pair_a_repeated_call_id_by_occurrence() -> None:
    from lovia.transcript import (
        drop_dangling_tool_calls,
        entry_from_dict,
        entry_to_dict,
    )

    # The provider reused c1: its first call was answered, the second never was.
    entries = [_call("c1"), _result("c1"), _call("c1", "run_job"), _call("c2")]
    assert dangling_calls(entries) == [
        DanglingCall("c1", "run_job", "{}"),
        DanglingCall("c2", "lookup", "{}"),
    ]
    assert (
        dangling_calls([_call("c1"), _call("c1"), _result("c1"), _result("c1")]) == []
    )
    assert dangling_calls([_call("c1"), _call("c1"), _result("c1")]) == [
        DanglingCall("c1", "lookup", "{}")
    ]
    assert dangling_calls([_result("c9")]) == []  # an orphan result dangles nothing
    # drop_dangling mirrors lovia's set-membership rule exactly (it keeps the
    # second c1): that is what a finalize or rewind really stores.
    lovia_kept = drop_dangling_tool_calls([entry_from_dict(e) for e in entries])
    assert drop_dangling(entries) == [entry_to_dict(e) for e in lovia_kept]
    assert drop_dangling(entries) == entries[:3]


# ----------------------------------------------------------------- links


async def test_links_name_the_session_only_on_evidence(demo: Any) -> None:
    ws = await Workspace.open([demo.directory], readonly=True)
    try:
        wanted = [
            demo.crash_window_run, demo.cli_completed_run, demo.cli_crashed_run,
            demo.crashed_run, demo.orphan_run, "no-such-run",
        ]  # fmt: skip
        links = await ws.links(wanted)
        # Completed, but its append was lost: only the web UI's bookkeeping knows.
        assert links[demo.crash_window_run] == SessionLink(
            demo.web_db, demo.crash_window_session, "web"
        )
        # Completed and appended: a session_runs row in the other file.
        assert links[demo.cli_completed_run] == SessionLink(
            demo.sessions_db, demo.cli_completed_session, "segment"
        )
        assert links[demo.crashed_run] == SessionLink(
            demo.web_db, demo.crashed_session, "web"
        )
        # Nothing stores the CLI crash's session: unknown, never guessed.
        assert set(links) == {
            demo.crash_window_run,
            demo.cli_completed_run,
            demo.crashed_run,
        }

        linked = await runs_for_session(ws, demo.crashed_session)
        assert [(run.run_id, link.kind) for run, link in linked] == [
            (demo.crashed_run, "web")
        ]
        assert await runs_for_session(ws, demo.cli_session) == []
        assert (await ws.find_run(demo.cli_crashed_run)).file == demo.runs_db
        assert await ws.find_session(demo.cli_session) == ws.database(demo.sessions_db)
        assert await ws.find_session(demo.batch_session) == ws.database(demo.web_db)
        assert await ws.find_session("no-such-session") is None
    finally:
        await ws.close()


# ---------------------------------------------------------------- search


async def _search(
    db: Database, needle: str
) -> tuple[list[tuple[str, int]], list[float]]:
    hits: list[tuple[str, int]] = []
    fractions: list[float] = []
    async for matches, fraction in substring.search_segments(db, needle):
        hits.extend(matches)
        fractions.append(fraction)
    return hits, fractions


def _expected_hits(path: Path, needle: str) -> list[tuple[str, int]]:
    rows = raw(
        path, "SELECT session_id, id, entries_json FROM session_runs ORDER BY id DESC"
    )
    return [
        (sid, row_id)
        for sid, row_id, text in rows
        if any(needle in value for value in strings(json.loads(text)))
    ]


@pytest.mark.parametrize(
    ("needle", "web", "cli"),
    [
        ("金閣寺", {"chat-kyoto"}, {"cli-daily"}),
        ('{"topic": "weather"}', {"chat-kyoto"}, {"cli-daily"}),  # quotes, escaped
        ("What's on today", set(), {"cli-daily"}),
        (
            "done in 0 ms\n2024-05-02",
            {"chat-api-logs", "chat-gateway-logs"},
            set(),
        ),  # newline
        ("%", set(), set()),  # literal, not a LIKE wildcard
    ],
)
@pytest.mark.parametrize("chunk", [20_000, 3])
async def test_search_segments(
    demo: Any,
    monkeypatch: pytest.MonkeyPatch,
    needle: str,
    web: set[str],
    cli: set[str],
    chunk: int,
) -> None:
    monkeypatch.setattr(substring, "SCAN_CHUNK", chunk)
    for path, sessions in ((demo.web_db, web), (demo.sessions_db, cli)):
        expected = _expected_hits(path, needle)
        assert {sid for sid, _ in expected} == sessions
        async with opened(path) as db:
            hits, fractions = await _search(db, needle)
            assert hits == expected  # every matching segment, newest first
            assert fractions[-1] == 1.0 and fractions == sorted(fractions)
            assert await _search(db, "") == ([], [])


# ------------------------------------------------------ readonly guarantee


def _digests(directory: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in directory.iterdir()
        if path.is_file()
    }


def assert_untouched(directory: Path, before: dict[str, str]) -> None:
    """Every file byte-identical; new files only SQLite's companions, -wal empty."""
    after = _digests(directory)
    for name, digest in before.items():
        assert after.get(name) == digest, f"{name} changed"
    for name in set(after) - set(before):
        base, _, suffix = name.rpartition("-")
        assert suffix in ("wal", "shm") and base in before, f"new file {name}"
        if suffix == "wal":
            assert (directory / name).stat().st_size == 0, f"{name} holds frames"


async def _exercise_everything(ws: Workspace) -> dict[str, int]:
    """Every read query, as the app and the CLI use them; returns what it saw."""
    seen = {
        "sessions": 0,
        "entries": 0,
        "runs": 0,
        "snapshot": 0,
        "hits": 0,
        "exported": 0,
    }
    for db in ws.session_dbs:
        await db.data_version()
        summaries = await newest_summaries(db, 100)
        assert [s for s, _ in await session_reads.recent_sessions(db, 100)] == [
            s.session_id for s in summaries
        ]
        for summary in summaries:
            seen["sessions"] += 1
            assert await ws.find_session(summary.session_id) is db
            assert (
                await session_reads.session_title(db, summary.session_id)
                == summary.title
            )
            for segment in await segment_reads.segments(db, summary.session_id):
                seen["entries"] += len(await segment_reads.segment_entries(db, segment))
            for fmt in ("md", "json"):
                buffer = io.StringIO()
                seen["exported"] += await export_session(
                    db, summary.session_id, fmt, buffer
                )
                assert buffer.getvalue()
        async for part, _ in session_reads.session_index(db):
            assert part
        for needle in ("金閣寺", '"topic"', "nightly"):
            hits, _ = await _search(db, needle)
            seen["hits"] += len(hits)
    all_runs = [run for db in ws.checkpoint_dbs for run in await every_run(db)]
    links = await ws.links(run.run_id for run in all_runs)
    for run in all_runs:
        seen["runs"] += 1
        entries, problems = await checkpoint_reads.snapshot_entries(
            ws.database(run.file), run.run_id
        )
        assert problems == []
        seen["snapshot"] += len(entries)
        assert await ws.find_run(run.run_id) == run
        if run.run_id in links:
            await runs_for_session(ws, links[run.run_id].session_id)
    return seen


LAYOUTS = {
    "web-wal": ("assistant.db",),
    "two-file-rollback": ("sessions.db", "runs.db"),
}


@pytest.mark.parametrize("names", LAYOUTS.values(), ids=LAYOUTS.keys())
async def test_readonly_writes_nothing(
    demo_dir: Any, tmp_path: Path, names: tuple[str, ...]
) -> None:
    for name in names:
        copy_files(demo_dir.directory / name, tmp_path)
    before = _digests(tmp_path)
    modes = {name: raw(tmp_path / name, "PRAGMA journal_mode")[0][0] for name in names}
    assert set(modes.values()) == (
        {"wal"} if names == ("assistant.db",) else {"delete"}
    )
    ws = await Workspace.open([tmp_path], readonly=True)
    try:
        assert ws.readonly
        assert {db.name: db.journal_mode for db in ws.databases} == modes
        seen = await _exercise_everything(ws)
    finally:
        await ws.close()
    assert all(
        seen[key] > 0 for key in ("sessions", "entries", "runs", "snapshot", "exported")
    )
    assert_untouched(tmp_path, before)


async def test_readonly_falls_back_to_immutable(demo_dir: Any, tmp_path: Path) -> None:
    # The real case is a WAL database in a read-only directory with no -shm.
    # Tests run as root, which ignores directory modes (chmod 0o555 does not
    # stop SQLite creating -shm), so occupy the -wal name with a directory
    # instead: a mode=ro open then fails just the same and only immutable=1 reads.
    path = copy_files(demo_dir.web_db, tmp_path)
    # Another test may have the shared demo open, so its -wal came along:
    # fold it in (closing the last connection removes -wal and -shm).
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (tmp_path / "assistant.db-wal").mkdir()
    before = _digests(tmp_path)
    async with opened(path) as db:
        assert db.notice is not None and "immutable" in db.notice
        assert (
            len(await newest_summaries(db, 100))
            == len(_chat_ids(path))
            == DEMO_WEB_CHATS
        )
        assert len(await every_run(db)) == len(demo_dir.web_runs)
    assert_untouched(tmp_path, before)
    # The default mode has no such fallback: it must be able to write.
    with pytest.raises(OpenError) as info:
        await open_database(path)
    one_line(str(info.value), path)
    assert_untouched(tmp_path, before)


def _chat_ids(path: Path) -> list[str]:
    with contextlib.closing(
        sqlite3.connect(sqlite_uri(path, "ro", immutable=True), uri=True)
    ) as conn:
        return [sid for (sid,) in conn.execute("SELECT id FROM chat_sessions")]


def test_sqlite_uri_quotes_the_path_and_never_creates(tmp_path: Path) -> None:
    odd = tmp_path / "my db #1?.db"
    assert sqlite_uri(odd, "ro") == f"file:{quote(str(odd))}?mode=ro"
    assert sqlite_uri(odd, "rw") == f"file:{quote(str(odd))}?mode=rw"
    assert (
        sqlite_uri(odd, "ro", immutable=True)
        == f"file:{quote(str(odd))}?mode=ro&immutable=1"
    )
    assert sqlite_uri(odd, "ro").count("?") == 1 and "#" not in sqlite_uri(odd, "ro")
    for mode in ("ro", "rw"):
        with pytest.raises(sqlite3.OperationalError):
            sqlite3.connect(sqlite_uri(odd, mode), uri=True).execute(
                "SELECT 1 FROM sqlite_master"
            )
    assert list(tmp_path.iterdir()) == []


async def test_odd_file_names_open(demo_dir: Any, tmp_path: Path) -> None:
    path = copy_files(demo_dir.sessions_db, tmp_path, "my db #1?.db")
    async with opened(path) as db:
        assert db.stores.session
        assert len(await newest_summaries(db, 10)) == 4


# ------------------------------------------------------------ default mode


async def test_default_mode_switches_rollback_journal_to_wal(demo: Any) -> None:
    assert raw(demo.sessions_db, "PRAGMA journal_mode") == [("delete",)]
    async with opened(demo.sessions_db, readonly=False) as db:
        assert (db.journal_mode, db.notice) == ("wal", None)
        assert len(await newest_summaries(db, 10)) == 4
    assert raw(demo.sessions_db, "PRAGMA journal_mode") == [("wal",)]  # sticky
    async with opened(demo.sessions_db) as db:
        assert db.journal_mode == "wal"


@pytest.mark.parametrize("readonly", [True, False], ids=["readonly", "default"])
async def test_a_missing_file_is_never_created(tmp_path: Path, readonly: bool) -> None:
    missing = tmp_path / "nope.db"
    with pytest.raises(OpenError) as info:
        await open_database(missing, readonly=readonly)
    one_line(str(info.value), missing)
    with pytest.raises(OpenError):
        await Workspace.open([missing], readonly=readonly)
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ hostile files


def _missing(directory: Path, demo: Any) -> Path:
    return directory / "missing.db"


def _zero_length(directory: Path, demo: Any) -> Path:
    path = directory / "zero.db"
    path.write_bytes(b"")
    return path


def _empty_beside_its_wal(directory: Path, demo: Any) -> Path:
    """A truncated copy: the main file empty, the -wal full of commits (SQLite
    would discard that -wal on connecting, even read-only)."""
    hold = sqlite3.connect(directory / "live.db")
    hold.execute("PRAGMA journal_mode=WAL")
    hold.execute("PRAGMA wal_autocheckpoint=0")
    hold.execute("CREATE TABLE session_runs (id INTEGER PRIMARY KEY, session_id TEXT)")
    hold.execute("INSERT INTO session_runs (session_id) VALUES ('precious')")
    hold.commit()
    path = directory / "truncated-copy.db"
    path.write_bytes(b"")
    wal_path(path).write_bytes(wal_path(directory / "live.db").read_bytes())
    hold.close()
    (directory / "live.db").unlink()
    return path


def _foreign_chat_tables(directory: Path, demo: Any) -> Path:
    path = directory / "other-app.db"
    write(path, "CREATE TABLE chat_sessions (id TEXT PRIMARY KEY, title TEXT)")
    write(path, "CREATE TABLE chat_runs (id TEXT PRIMARY KEY, session_id TEXT)")
    return path


def _text_file(directory: Path, demo: Any) -> Path:
    path = directory / "x.db"
    path.write_text("just some notes, not a database\n")
    return path


def _no_lovia_tables(directory: Path, demo: Any) -> Path:
    path = directory / "other.db"
    write(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    return path


def _wrong_columns(directory: Path, demo: Any) -> Path:
    path = directory / "impostor.db"
    write(path, "CREATE TABLE session_runs (id INTEGER PRIMARY KEY, session_id TEXT)")
    return path


def _newer_session_schema(directory: Path, demo: Any) -> Path:
    path = copy_files(demo.sessions_db, directory, "newer.db")
    write(path, "INSERT INTO lovia_schema (store, version) VALUES ('session', 99)")
    return path


def _truncated(directory: Path, demo: Any) -> Path:
    path = directory / "truncated.db"
    path.write_bytes(demo.web_db.read_bytes()[:8192])
    return path


HOSTILE_FILES = {
    "missing": (_missing, "no such file"),
    "zero-length": (_zero_length, "empty file"),
    "empty-beside-its-wal": (_empty_beside_its_wal, "beside a"),
    "foreign-chat-tables": (_foreign_chat_tables, "lacks lovia's columns"),
    "text": (_text_file, "not a SQLite database"),
    "no-lovia-tables": (_no_lovia_tables, "not a lovia database"),
    "wrong-columns": (_wrong_columns, "lacks lovia's columns"),
    "newer-session": (_newer_session_schema, "newer"),
    "truncated": (_truncated, "malformed"),
}


@pytest.mark.parametrize("readonly", [True, False], ids=["readonly", "default"])
@pytest.mark.parametrize("kind", HOSTILE_FILES)
async def test_hostile_file_is_one_line_and_the_rest_still_opens(
    demo: Any, tmp_path: Path, kind: str, readonly: bool
) -> None:
    build, fragment = HOSTILE_FILES[kind]
    (tmp_path / "bad").mkdir()
    bad = build(tmp_path / "bad", demo)
    before = bad.read_bytes() if bad.exists() else None
    digests = _digests(bad.parent)
    with pytest.raises(OpenError) as info:
        await open_database(bad, readonly=readonly)
    one_line(str(info.value), bad)
    assert fragment in str(info.value)
    # Refused files are left exactly as they were: not created, not switched to WAL.
    assert (bad.read_bytes() if bad.exists() else None) == before
    assert_untouched(bad.parent, digests)
    with pytest.raises(OpenError, match=re.escape(str(bad))):
        await Workspace.open([demo.web_db, bad], readonly=readonly)
    ws = await Workspace.open([demo.directory], readonly=readonly)
    try:
        assert sum([len(await every_run(db)) for db in ws.checkpoint_dbs]) == len(
            demo.web_runs + demo.cli_runs
        )
        assert (
            len(await newest_summaries(ws.database(demo.web_db), 100)) == DEMO_WEB_CHATS
        )
    finally:
        await ws.close()


async def test_another_programs_chat_tables_leave_the_sessions_shown(
    demo: Any, tmp_path: Path
) -> None:
    """Tables named as lovia web's but not its own are refused as lovia's own
    tables are, with a note; the file's session store still reads."""
    path = copy_files(demo.sessions_db, tmp_path, "mixed.db")
    write(path, "CREATE TABLE chat_sessions (id TEXT PRIMARY KEY, title TEXT)")
    write(path, "CREATE TABLE chat_runs (id TEXT PRIMARY KEY, session_id TEXT)")
    async with opened(path) as db:
        assert db.stores.session and not db.stores.chat
        assert "chat_runs lacks lovia's columns" in (db.notice or "")
        assert await newest_summaries(db, 100)


async def test_an_empty_directory_is_an_open_error(tmp_path: Path) -> None:
    with pytest.raises(OpenError, match=r"holds no \*\.db") as info:
        await Workspace.open([tmp_path])
    one_line(str(info.value), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_no_path_uses_dot_lovia(
    demo_dir: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OpenError, match="lovia-tui demo"):
        resolve_paths([])
    (tmp_path / ".lovia").mkdir()
    with pytest.raises(OpenError, match="lovia-tui demo"):
        resolve_paths([])
    copy_files(demo_dir.web_db, tmp_path / ".lovia")
    assert resolve_paths([]) == [Path(".lovia/assistant.db")]


# ------------------------------------------------------------- hostile rows


@pytest.fixture
def hostile(demo: Any) -> Any:
    """The demo's web file with malformed rows beside the real ones (a copy)."""
    path, now = demo.web_db, time.time()
    good = json.dumps(
        [
            {"type": "input", "role": "user", "content": "hostile question"},
            {"type": "assistant_text", "content": "an answer", "id": None},
        ]
    )
    insert = (
        "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, created_at) "
        "VALUES (?, ?, {entries}, ?, ?)"
    )
    for run_id, entries in (("h1", good), ("h2", '[{"type": "input", '), ("h3", good)):
        write(path, insert.format(entries="?"), "hostile", run_id, entries, None, now)
    write(
        path,
        insert.format(entries="?"),
        "mystery",
        "m1",
        '[{"type": "mystery"}]',
        None,
        now,
    )
    # A content of b"\xff latte": invalid UTF-8 stored as TEXT.
    utf8 = '[{"type":"input","role":"user","content":"\xff latte"}]'.encode(
        "latin-1"
    ).hex()
    write(
        path,
        insert.format(entries=f"CAST(X'{utf8}' AS TEXT)"),
        "bad-utf8",
        "u1",
        None,
        now,
    )
    write(path, insert.format(entries="?"), "bad-meta", "bm", good, "{oops", now)
    heads = (
        "INSERT INTO snapshot_heads (run_id, head_json, updated_at) VALUES (?, ?, ?)"
    )
    write(path, heads, "run-bad-json", '{"status": "running", ', now)
    write(
        path,
        heads,
        "run-bad-types",
        json.dumps({"status": "running", "agent_name": "a", "turns": "many"}),
        now,
    )
    write(path, heads, "run-no-status", json.dumps({"agent_name": "a"}), now)
    write(path, heads, "run-not-object", "[1, 2]", now)
    write(path, "INSERT INTO snapshot_turns (run_id, seq, entries_json) VALUES (?, ?, ?)",
          demo.crashed_run, 99, "[oops")  # fmt: skip
    return demo


@pytest.mark.parametrize("chunk", [500, 1, 2])
async def test_a_corrupt_segment_is_reported_and_later_indices_unknown(
    hostile: Any, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(segment_reads, "SEGMENT_CHUNK", chunk)
    async with opened(hostile.web_db) as db:
        first, broken, after = await segment_reads.segments(db, "hostile")
        assert (first.entry_count, first.first_index, first.unreadable) == (2, 0, None)
        assert (broken.entry_count, broken.first_index) == (None, 2)
        assert broken.unreadable is not None and "h2" in str(broken.unreadable)
        # After an unreadable segment the flat index is unknown: never guessed.
        assert (after.entry_count, after.first_index, after.unreadable) == (
            2,
            None,
            None,
        )
        assert list((await segment_reads.flat_starts(db, "hostile")).values()) == [
            0,
            2,
            None,
        ]
        assert [e.index for e in await segment_reads.segment_entries(db, first)] == [
            0,
            1,
        ]
        with pytest.raises(UnreadableError, match="invalid JSON"):
            await segment_reads.segment_entries(db, broken)
        assert [e.index for e in await segment_reads.segment_entries(db, after)] == [
            None,
            None,
        ]
        # Everything else in the file is untouched by it.
        kyoto = await segment_reads.segments(db, hostile.trip_session)
        assert [(s.first_index, s.entry_count, s.unreadable) for s in kyoto] == [
            (0, 5, None), (5, 4, None), (9, 6, None),
        ]  # fmt: skip
        summary = await session_reads.session_summary(db, "hostile")
        assert (summary.runs, summary.title) == (3, "hostile question")
        buffer = io.StringIO()
        assert await export_session(db, "hostile", "json", buffer) == 4
        exported = json.loads(buffer.getvalue())
        assert [len(s["entries"]) for s in exported["segments"]] == [2, 0, 2]
        assert "invalid JSON" in exported["segments"][1]["unreadable"]


async def test_unknown_entry_type_and_bad_meta(hostile: Any) -> None:
    async with opened(hostile.web_db) as db:
        [segment] = await segment_reads.segments(db, "mystery")
        assert segment.entry_count == 1
        # A type the installed lovia does not know (a newer lovia's): shown as stored.
        [entry] = await segment_reads.segment_entries(db, segment)
        assert entry.data == {"type": "mystery"}
        [segment] = await segment_reads.segments(db, "bad-meta")
        assert segment.unreadable is not None and "meta" in str(segment.unreadable)
        assert (segment.entry_count, segment.started_at) == (2, None)
        assert len(await segment_reads.segment_entries(db, segment)) == 2


async def test_invalid_utf8_does_not_crash(hostile: Any) -> None:
    async with opened(hostile.web_db) as db:
        [segment] = await segment_reads.segments(db, "bad-utf8")
        [entry] = await segment_reads.segment_entries(db, segment)
        assert entry.data["content"] == "\ufffd latte"  # replaced, not raised
        assert (
            await session_reads.session_summary(db, "bad-utf8")
        ).title == "\ufffd latte"
        hits, _ = await _search(db, "latte")
        assert hits == [("bad-utf8", segment.row_id)]
        buffer = io.StringIO()
        assert await export_session(db, "bad-utf8", "md", buffer) == 1
        assert "bad-utf8" in {s.session_id for s in await newest_summaries(db, 100)}


async def test_corrupt_heads_are_unreadable_and_other_runs_fine(hostile: Any) -> None:
    async with opened(hostile.web_db) as db:
        by_id = {run.run_id: run for run in await every_run(db)}
        broken = ("run-bad-json", "run-bad-types", "run-no-status", "run-not-object")
        for run_id in broken:
            run = by_id[run_id]
            assert run.status == "unreadable", run_id
            assert run.unreadable is not None and run_id in str(run.unreadable)
            assert not run.is_stale(time.time() + 10_000, 0)
        assert "invalid JSON" in by_id["run-bad-json"].unreadable.reason
        assert "status" in by_id["run-no-status"].unreadable.reason
        readable = {r for r in by_id if r not in broken}
        assert all(by_id[r].unreadable is None for r in readable)
        assert by_id[hostile.crashed_run].status == "running"
        assert len(readable) == len(hostile.web_runs)
        # An unreadable batch is reported; the run's other batches still read.
        entries, problems = await checkpoint_reads.snapshot_entries(
            db, hostile.crashed_run
        )
        assert len(entries) == 4
        [problem] = problems
        assert "seq 99" in problem.where


# --------------------------------------------------------------- locking


async def test_exclusive_lock_on_a_rollback_file(
    demo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "BUSY_TIMEOUT_MS", 100)
    path = demo.sessions_db
    reader = await open_database(path, readonly=True)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        for readonly in (True, False):
            started = time.monotonic()
            # Refused as one line, never read as immutable past the writer's lock.
            with pytest.raises(OpenError, match="locked") as info:
                await open_database(path, readonly=readonly)
            one_line(str(info.value), path)
            assert time.monotonic() - started < 2
        with pytest.raises(LoviaTuiError, match="locked") as read_info:
            await newest_summaries(reader, 10)
        one_line(str(read_info.value), path)
        holder.execute("ROLLBACK")
        assert len(await newest_summaries(reader, 10)) == 4  # usable again
    finally:
        holder.close()
        await reader.close()


async def test_exclusive_lock_on_a_wal_file_does_not_block_readers(
    demo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "BUSY_TIMEOUT_MS", 100)
    holder = sqlite3.connect(demo.web_db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        for readonly in (True, False):
            async with opened(demo.web_db, readonly=readonly) as db:
                assert db.journal_mode == "wal" and db.notice is None
                assert len(await newest_summaries(db, 100)) == DEMO_WEB_CHATS
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_wal_switch_refused_while_a_writer_holds_a_lock(
    demo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "BUSY_TIMEOUT_MS", 100)
    holder = sqlite3.connect(demo.sessions_db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        async with opened(demo.sessions_db, readonly=False) as db:
            # Carries on in the current mode and says so.
            assert db.journal_mode == "delete"
            assert db.notice is not None and "WAL" in db.notice
            assert len(await newest_summaries(db, 10)) == 4
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert raw(demo.sessions_db, "PRAGMA journal_mode") == [("delete",)]


async def test_a_read_sees_every_commit_made_before_it(tmp_path: Path) -> None:
    """Reads share one connection with everything else the app reads at the
    same time; a statement of one still open when another starts pins both to
    its older snapshot (the doctor re-ran after a delete and still listed the
    deleted checkpoint). A read issued after another connection's commit sees
    it, however busy the connection is."""
    import asyncio

    from support.lovia_factory import write_heads

    path = tmp_path / "runs.db"
    written = await write_heads(path, 200, time.time())
    everyone = "SELECT run_id FROM snapshot_heads ORDER BY run_id"
    async with opened(path, readonly=False) as db:
        stop = asyncio.Event()
        rounds = 0

        async def busy() -> None:  # the app's other views reading meanwhile
            nonlocal rounds
            while not stop.is_set():
                await db.fetchone(everyone)  # the first of many rows
                await db.fetchall(everyone)
                rounds += 1

        others = [asyncio.create_task(busy()) for _ in range(8)]
        try:
            for gone, _, _ in written[:5]:
                begun, deadline = rounds, time.monotonic() + 30
                while rounds < begun + len(others):  # bounded: they are mid-read now
                    assert time.monotonic() < deadline, "the other readers stopped"
                    await asyncio.sleep(0)  # bounded by the deadline above
                # Another connection's commit, made while their statements
                # run (synchronously: nothing of ours moves meanwhile).
                write(path, "DELETE FROM snapshot_heads WHERE run_id = ?", gone)
                found = await db.fetchall(
                    "SELECT run_id FROM snapshot_heads WHERE run_id = ?", (gone,)
                )
                assert found == [], f"a read after the commit still saw {gone}"
        finally:
            stop.set()
            await asyncio.gather(*others)


async def test_reads_that_can_wait_give_way_to_an_opening_session(
    scratch: Path,
) -> None:
    """While a session is being opened (``foreground``), the list's titles wait
    for it, at most ``FOREGROUND_WAIT``; with none under way they never wait."""
    import asyncio

    from support.lovia_factory import SCRIPTS, write_session

    path = scratch / "s.db"
    await write_session(path, "s", SCRIPTS[:1])
    db = await open_database(path)
    try:
        started = time.perf_counter()
        await db.after_foreground()
        assert time.perf_counter() - started < 0.05
        order: list[str] = []

        asking = asyncio.Event()

        async def titles() -> None:
            asking.set()  # this task runs on into the wait before it yields
            await db.after_foreground()
            order.append("titles")

        with db.foreground():
            waiting = asyncio.ensure_future(titles())
            await asking.wait()
            assert not waiting.done()
            order.append("session")
        await waiting
        assert order == ["session", "titles"]
        with db.foreground():
            started = time.perf_counter()
            await db.after_foreground(most=0.1)  # never starved
            assert 0.09 <= time.perf_counter() - started < 1.0
    finally:
        await db.close()


@pytest.mark.parametrize(
    "said",
    ["ä" * 5000, "x" * 3990 + "ä" * 10, "a\n" * 3000],
    ids=["escapes", "cut-in-an-escape", "lines"],
)
async def test_a_first_message_longer_than_the_start_read_is_still_the_title(
    tmp_path: Path, said: str
) -> None:
    """Titles are read from the first 4,000 characters of a segment's JSON; a
    message running past them (cut anywhere, even inside an escape) is
    titled by its start, not left untitled."""
    from lovia import SQLiteSession
    from lovia.transcript import InputEntry

    db_path = tmp_path / "long.db"
    await SQLiteSession(db_path, wal=True).append(
        "long", [InputEntry(role="user", content=said)], run_id="r1"
    )
    async with opened(db_path) as db:
        [summary] = await newest_summaries(db, 5)
        title = await session_reads.session_title(db, "long")
    assert summary.title == title
    shown = " ".join(said.split())  # a title is one line
    assert len(title) > 100 and shown.startswith(title.rstrip("…")), title[:80]
