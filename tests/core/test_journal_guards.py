"""Files that fight back, and a journal in trouble: nothing outside the preview changes.

A file with its own triggers on lovia's tables is refused (naming them) by
actions and undo alike; a garbage journal is named, and never keeps the
doctor from auditing the lovia file; a journal or a fork that runs out of
room (a real process with a file-size limit, as a full disk fails its
writes) says which file and why, and leaves no partial copy; the journal is
pruned only of settled entries past the cut; a large journal says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry
from support.journal_faults import perform_then_die
from support.lovia_factory import integrity, rows

from lovia_tui.cli import main
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.journal_file import JOURNAL_FORMAT
from lovia_tui.core.actions.journal_prune import prune
from lovia_tui.core.actions.session_plans import preview_rewind
from lovia_tui.core.store.workspace import Workspace

pytestmark = pytest.mark.usefixtures("private_journal")

TRIGGER = (
    "CREATE TRIGGER sweep AFTER DELETE ON session_runs "
    "BEGIN DELETE FROM session_runs WHERE session_id = 'other'; END"
)


async def _build(db: Path, segments: int = 12, size: int = 100) -> None:
    """Session "s" of ``segments`` runs (answers of ``size`` chars) and "other" of 3."""
    session = SQLiteSession(db, wal=True)
    for sid, count in (("s", segments), ("other", 3)):
        for n in range(count):
            await session.append(
                sid,
                [
                    InputEntry(role="user", content=f"q{n}"),
                    AssistantTextEntry(content="a" * size),
                ],
                run_id=f"{sid}-{n}",
            )


def _write(db: Path, sql: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql)


@pytest.mark.parametrize("table", ["session_runs", "Session_RUNS"])
def test_a_file_with_triggers_is_refused_by_actions_and_undo(
    table: str, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """However the trigger spells the table: SQLite fires it all the same."""
    db = scratch / "t.db"
    asyncio.run(_build(db))
    _write(db, TRIGGER.replace("ON session_runs", f"ON {table}"))
    before = rows(db)
    assert main(["rewind", str(db), "s", "--keep", "4", "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"has triggers of its own ('sweep' on {table})" in err
    assert "nothing changed" in err and len(err.strip().splitlines()) == 1
    assert rows(db) == before and integrity(db) == "ok"
    [entry] = asyncio.run(Journal().entries([db]))
    assert entry.status == "rolled back"

    # A trigger added after the action keeps its undo from running too.
    _write(db, "DROP TRIGGER sweep")
    assert main(["rewind", str(db), "s", "--keep", "4", "--yes"]) == 0
    rewound = rows(db)
    _write(db, TRIGGER.replace("ON session_runs", f"ON {table}"))
    assert main(["undo", str(db), "--yes"]) == 2
    assert f"'sweep' on {table}" in capsys.readouterr().err
    assert rows(db) == rewound
    _write(db, "DROP TRIGGER sweep")
    assert main(["undo", str(db), "--yes"]) == 0
    assert rows(db) == before and integrity(db) == "ok"


def test_a_garbage_journal_is_named_and_never_blocks_the_doctor(
    scratch: Path, private_journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = scratch / "g.db"
    asyncio.run(_build(db))
    _write(
        db,
        "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
        "VALUES ('broken', 'b-0', '{', 0)",
    )
    before = rows(db)
    private_journal.parent.mkdir()
    private_journal.write_bytes(
        b"not a journal at all\n" * 100
    )  # our own file, not SQLite's

    assert main(["sessions", str(db)]) == 0  # reads never need the journal
    capsys.readouterr()
    main(["doctor", str(db), "--json"])
    report = json.loads(capsys.readouterr().out)
    [finding] = [f for f in report["findings"] if f["kind"] == "journal-unreadable"]
    assert str(private_journal) in finding["message"]
    assert "not a SQLite database" in finding["message"]
    # ... and the lovia file itself was audited: its broken row is found.
    [broken] = [f for f in report["findings"] if f["kind"] == "unreadable-row"]
    assert broken["session_id"] == "broken"

    assert main(["rewind", str(db), "s", "--keep", "4", "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"the undo journal {private_journal}: it is not a SQLite database" in err
    assert rows(db) == before and integrity(db) == "ok"


def test_a_journal_a_newer_lovia_tui_wrote_is_refused_whole(
    scratch: Path, private_journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its entries may hold what this copy would not put back: no action
    journals into it and no undo reads from it; the lovia file is untouched."""
    db = scratch / "n.db"
    asyncio.run(_build(db))
    assert main(["rewind", str(db), "s", "--keep", "6", "--yes"]) == 0
    with contextlib.closing(sqlite3.connect(private_journal)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (JOURNAL_FORMAT,)
        conn.execute(f"PRAGMA user_version = {JOURNAL_FORMAT + 1}")
    capsys.readouterr()
    before = rows(db)
    for argv in (
        ["rewind", str(db), "s", "--keep", "4", "--yes"],
        ["undo", str(db), "--yes"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert (
            f"the undo journal {private_journal} was written by a newer lovia-tui"
            in err
        )
        assert f"(format {JOURNAL_FORMAT + 1}; this one knows {JOURNAL_FORMAT})" in err
    assert rows(db) == before and integrity(db) == "ok"


def _limited(limit: int, *argv: object) -> subprocess.CompletedProcess[str]:
    """``lovia-tui ARGV`` in a process that cannot write past ``limit`` bytes of any file."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "lovia_tui", *map(str, argv)],
        capture_output=True, text=True, timeout=120, preexec_fn=cap,
    )  # fmt: skip


def test_a_journal_that_cannot_grow_names_itself_and_changes_nothing(
    scratch: Path, private_journal: Path
) -> None:
    db = scratch / "f.db"
    asyncio.run(_build(db, segments=30, size=4000))
    before = rows(db)
    done = _limited(65_536, "rewind", db, "s", "--keep", "0", "--yes")
    assert done.returncode == 2
    assert f"the undo journal {private_journal}: " in done.stderr
    assert "is the disk full?" in done.stderr
    assert "cannot rollback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert rows(db) == before and integrity(db) == "ok"


def test_a_fork_that_cannot_be_written_leaves_no_partial_copy(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = scratch / "f.db"
    asyncio.run(_build(db, segments=30, size=4000))
    before = rows(db)
    done = _limited(65_536, "fork", db, "s", "--keep", "60", "--as", "copy", "--yes")
    assert done.returncode == 2, done.stderr
    assert f"fork failed and was rolled back, nothing changed: {db}: " in done.stderr
    assert rows(db) == before and integrity(db) == "ok"  # not one segment of "copy"
    [entry] = asyncio.run(Journal().entries([db]))
    assert entry.status == "rolled back"
    assert main(["undo", str(db), "--yes"]) == 0  # nothing to do
    assert "nothing to undo" in capsys.readouterr().out


async def _rewind_then_die(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = await Workspace.open([db])
    try:
        preview = await preview_rewind(ws, "s", 4)
        await perform_then_die(ws, preview, monkeypatch)
    finally:
        await ws.close()


def test_prune_keeps_what_an_undo_still_needs(
    scratch: Path, private_journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settled entries past the cut go; a pending one (the only copy of rows an
    interrupted action may have removed) stays and can still be undone."""
    db = scratch / "p.db"
    asyncio.run(_build(db, segments=30, size=4000))
    before = rows(db)
    assert main(["rewind", str(db), "s", "--keep", "10", "--yes"]) == 0
    assert main(["undo", str(db), "--yes"]) == 0
    asyncio.run(_rewind_then_die(db, monkeypatch))
    rewound = rows(db)
    with sqlite3.connect(private_journal) as conn:  # forty days pass
        conn.execute("UPDATE entries SET created_at = created_at - 40 * 86400")
    size = os.stat(private_journal).st_size

    journal = Journal()
    assert asyncio.run(prune(journal, 60, None, apply=False)) == []
    listed = asyncio.run(prune(journal, 30, [db], apply=False))
    assert [(e.action, e.status) for e in listed] == [
        ("rewind", "done"),
        ("undo", "done"),
    ]
    removed = asyncio.run(prune(journal, 30, [db], apply=True))
    assert [e.id for e in removed] == [e.id for e in listed]
    [left] = asyncio.run(journal.entries([db]))
    assert (left.action, left.status) == ("rewind", "pending")
    assert os.stat(private_journal).st_size < size  # given back to the disk
    with sqlite3.connect(private_journal) as conn:
        kept = conn.execute("SELECT DISTINCT entry_id FROM cells").fetchall()
    assert kept == [(left.id,)]
    assert rows(db) == rewound
    assert main(["undo", str(db), "--yes"]) == 0
    assert rows(db) == before and integrity(db) == "ok"


def test_prune_from_the_command_line_previews_then_removes(
    scratch: Path, private_journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = scratch / "c.db"
    asyncio.run(_build(db))
    assert main(["rewind", str(db), "s", "--keep", "4", "--yes"]) == 0
    with sqlite3.connect(private_journal) as conn:
        conn.execute("UPDATE entries SET created_at = ?", (time.time() - 40 * 86400,))
    capsys.readouterr()
    assert main(["journal", "--prune"]) == 0
    out = capsys.readouterr().out
    assert "1 settled entry in the journal older than 30d" in out
    assert "add --yes to remove them" in out
    assert len(asyncio.run(Journal().entries([db]))) == 1
    assert main(["journal", "--prune", "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] is True
    assert asyncio.run(Journal().entries([db])) == []


def test_a_large_journal_says_how_to_prune_it(
    scratch: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = scratch / "n.db"
    asyncio.run(_build(db))
    monkeypatch.setenv("LOVIA_TUI_JOURNAL_NOTE_MB", "0.01")
    assert main(["rewind", str(db), "s", "--keep", "4", "--yes"]) == 0
    assert "lovia-tui journal --prune --older-than 30" in capsys.readouterr().out
    assert main(["journal", str(db)]) == 0
    assert "lovia-tui journal --prune" in capsys.readouterr().out


def test_undo_in_any_order_the_rows_allow_and_a_refusal_names_what_is_in_the_way(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = scratch / "o.db"
    asyncio.run(_build(db))
    before = rows(db)
    assert main(["rewind", str(db), "s", "--keep", "20", "--yes"]) == 0  # entry 1
    assert main(["rewind", str(db), "s", "--keep", "9", "--yes"]) == 0  # entry 2
    capsys.readouterr()
    assert main(["undo", str(db), "1", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "undoing would lose that change" in err
    assert "changed since by journal entry 2 (rewind): undo that first" in err
    assert main(["undo", str(db), "2", "--yes"]) == 0
    assert main(["undo", str(db), "1", "--yes"]) == 0
    assert rows(db) == before and integrity(db) == "ok"


def _remade(
    db: Path, *, column: str = "session_id TEXT NOT NULL", tail: str = ""
) -> None:
    """session_runs made again as lovia never makes it, holding the same rows."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.executescript(
            "ALTER TABLE session_runs RENAME TO old_runs;"
            f"CREATE TABLE session_runs (id INTEGER PRIMARY KEY, {column}, "
            "run_id TEXT NOT NULL, entries_json TEXT NOT NULL, meta_json TEXT, "
            f"created_at REAL NOT NULL, UNIQUE(session_id, run_id)){tail};"
            "INSERT INTO session_runs SELECT * FROM old_runs; DROP TABLE old_runs;"
        )


@pytest.mark.parametrize(
    ("remake", "said"),
    [
        ({"column": "session_id TEXT NOT NULL COLLATE NOCASE"}, "declares a collation"),
        ({"tail": ""}, "has a column named 'rowid'"),
    ],
)
def test_a_table_lovia_never_makes_is_refused_by_name(
    remake: dict[str, str], said: str, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A collation makes lovia's ``session_id = 's'`` match 'S' too; a column
    named rowid hides the rowid every row is journaled by: the action is
    refused saying so, never "changed since the preview" for ever."""
    db = scratch / "odd.db"
    asyncio.run(_build(db))
    _remade(db, **remake)
    if "rowid" in said:
        _write(db, "ALTER TABLE session_runs ADD COLUMN rowid TEXT")
    before = rows(db)
    for yes in ([], ["--yes"]):
        code = main(["clear", str(db), "other", *yes])
        err = capsys.readouterr().err
        assert (
            code == 2 and f"session_runs {said}" in err and "lovia never makes" in err
        )
    assert rows(db) == before and integrity(db) == "ok"


def test_a_without_rowid_table_is_named_not_read_as_empty(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = scratch / "norowid.db"
    asyncio.run(_build(db))
    _remade(db, tail=" WITHOUT ROWID")
    assert main(["sessions", str(db), "--readonly"]) == 2
    err = capsys.readouterr().err
    assert "table session_runs is a WITHOUT ROWID table, which lovia never makes" in err


def test_an_undo_says_which_runs_stored_since_stay(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chat answered after a rewind: the undo puts the rewound runs back
    and keeps the new one after them, history spliced; its preview says so
    (a real lovia web round found it said nothing)."""
    db = scratch / "since.db"
    asyncio.run(_build(db))
    assert main(["rewind", str(db), "s", "--keep", "4", "--yes"]) == 0
    later = [InputEntry(role="user", content="and now?")]
    asyncio.run(SQLiteSession(db, wal=True).append("s", later, run_id="s-late"))
    capsys.readouterr()
    assert main(["undo", str(db)]) == 0  # the preview
    said = "1 run stored in session 's' since stays, after the runs put back"
    assert said in capsys.readouterr().out
    assert main(["undo", str(db), "--yes"]) == 0
    runs = [r for r in rows(db)["session_runs"] if "'s'" in r[1]]
    assert len(runs) == 13 and "'s-late'" in runs[-1][2]
    assert integrity(db) == "ok"
