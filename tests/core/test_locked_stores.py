"""The one place lovia-tui reaches into lovia: fails loudly if lovia's store plumbing moves.

``core/actions/locked_stores.py`` runs lovia's own store methods on a connection
lovia-tui holds inside ``BEGIN IMMEDIATE``. These tests pin what that relies
on — the names and signatures of ``SQLiteStore._connect/_release/_conn/_tx/_run``,
that lovia's methods reach the database only through them, and that
``ChatStore`` keeps its metadata store in ``_meta`` — and show that lovia's
method really ran on the held connection, inside its transaction.
"""

from __future__ import annotations

import inspect
import sqlite3
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.stores._sqlite import SQLiteStore
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
)
from lovia.web.store import ChatStore
from support.lovia_factory import rows

from lovia_tui.core.actions.locked_stores import (
    _PLUMBING,
    LockedCheckpointer,
    LockedSession,
    Stores,
    check_lovia_shape,
)
from lovia_tui.core.actions.write_lock import held_write
from lovia_tui.core.errors import ActionError


def test_lovia_plumbing_has_the_shape_we_override() -> None:
    for name, params in _PLUMBING.items():
        assert list(inspect.signature(getattr(SQLiteStore, name)).parameters) == params
    tx, conn = inspect.getsource(SQLiteStore._tx), inspect.getsource(SQLiteStore._conn)
    for source in (tx, conn):
        assert "self._connect()" in source and "self._release(conn)" in source
    assert "conn.commit()" in tx and "conn.rollback()" in tx
    assert "self._meta = " in inspect.getsource(ChatStore.__init__)
    for method in ("clear_active_run_id", "finish_run"):
        assert "self._write(" in inspect.getsource(getattr(ChatStore, method))
    assert "self._meta._tx()" in inspect.getsource(ChatStore._write)
    check_lovia_shape()


def test_a_changed_shape_refuses_to_act(monkeypatch: pytest.MonkeyPatch) -> None:
    def _connect(self, readonly):  # a lovia that grew a parameter
        raise AssertionError("never called")

    original = SQLiteStore._connect
    check_lovia_shape.cache_clear()
    monkeypatch.setattr(SQLiteStore, "_connect", _connect)
    try:
        with pytest.raises(ActionError, match="SQLiteStore._connect is not what"):
            check_lovia_shape()
    finally:
        monkeypatch.setattr(SQLiteStore, "_connect", original)
        check_lovia_shape.cache_clear()


async def test_lovia_runs_on_the_held_connection(two_files: tuple[Path, Path]) -> None:
    """lovia's rewind and delete run inside our transaction: unseen outside until commit."""
    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    with held_write([sessions, runs]) as held:
        stores = Stores(held)
        removed = await stores.session(sessions).rewind("s", keep_entries=4)
        await stores.checkpointer(runs).delete("s-1")
        assert removed == 8
        assert (rows(sessions), rows(runs)) == before  # not committed yet
        other = sqlite3.connect(sessions, timeout=0)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")  # nobody else may write meanwhile
        other.close()
        session_conn, runs_conn = stores.connection(sessions), stores.connection(runs)
        assert (session_conn.lovia_commits, runs_conn.lovia_commits) == (1, 1)
        assert session_conn.in_transaction and runs_conn.in_transaction
        assert isinstance(stores.session(sessions), LockedSession)
        assert isinstance(stores.checkpointer(runs), LockedCheckpointer)
    assert len(rows(sessions)["session_runs"]) == 1
    assert not any(r[0] == "'s-1'" for r in rows(runs)["snapshot_heads"])


async def test_an_exception_rolls_back_every_lovia_call(
    two_files: tuple[Path, Path],
) -> None:
    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    with (
        pytest.raises(RuntimeError, match="after lovia"),
        held_write([sessions, runs]) as held,
    ):
        await Stores(held).checkpointer(runs).delete("s-1")
        await Stores(held).session(sessions).clear("s")
        raise RuntimeError("after lovia")
    assert (rows(sessions), rows(runs)) == before


async def test_web_chat_store_on_the_held_connection(web_file: Path) -> None:
    with held_write([web_file]) as held:
        chat = Stores(held).chat(web_file)
        await chat.clear_active_run_id("chat", expected="inflight")
        await chat.finish_run("inflight", status="cancelled", error="cancelled")
        assert Stores(held).connection(web_file).lovia_commits == 2
    conn = sqlite3.connect(web_file)
    try:
        assert conn.execute(
            "SELECT active_run_id FROM chat_sessions WHERE id = 'chat'"
        ).fetchone() == (None,)
        assert conn.execute(
            "SELECT status FROM chat_runs WHERE id = 'inflight'"
        ).fetchone() == ("cancelled",)
    finally:
        conn.close()


def test_lovia_rewind_reads_as_the_narrowed_read_expects() -> None:
    """``LockedSession.rewind_from`` serves lovia's rewind only the segments
    from the cut on; this fails if lovia's rewind reads or writes otherwise."""
    from lovia_tui.core.actions.lovia_served import reads_as_known

    assert reads_as_known("rewind") and reads_as_known("trim_tool_results")


async def test_a_rewind_reading_from_the_cut_leaves_what_lovias_whole_read_leaves(
    scratch: Path,
) -> None:
    """lovia's rewind served the segments from the cut on (a 2,000-run
    session's last turn: the lock held 90–116 ms, 39–54 ms so) leaves every
    row as lovia's rewind over the whole session does, wherever the cut
    lands: between runs, inside one, after a call left dangling, at 0; and
    what the action reads back from the cut on (for the journal and its
    undo) is the session as a read of all its rows finds it."""
    import random
    import shutil

    from lovia_tui.core.actions import locked_stores
    from lovia_tui.core.actions import perform as performing
    from lovia_tui.core.actions.lovia_served import REWIND_READ
    from lovia_tui.core.actions.perform import perform
    from lovia_tui.core.actions.session_plans import preview_rewind
    from lovia_tui.core.store.rows import capture_sync
    from lovia_tui.core.store.workspace import Workspace

    seed = random.randrange(1 << 30)
    print("seed", seed)  # LOVIA_TUI_SEED is not read here: every seed must pass
    rng = random.Random(seed)
    path = scratch / "s.db"
    session = SQLiteSession(path, wal=True)
    for run in range(8):
        entries: list = [InputEntry(role="user", content=f"q{run} é")]
        for call in range(rng.randrange(3)):
            entries += [
                ToolCallEntry(call_id=f"c{run}-{call}", name="t", arguments="{}"),
                ToolResultEntry(call_id=f"c{run}-{call}", output=f"out {call}"),
            ]
        entries.append(AssistantTextEntry(content=f"a{run}"))
        await session.append("s", entries, run_id=f"r{run}", meta={"n": run})
    await session.append("other", [InputEntry(role="user", content="x")], run_id="o")
    total = len(await session.load("s"))
    served: list[tuple] = []
    execute = locked_stores.HeldConnection.execute

    def spied(self, sql, parameters=(), /):
        if sql == REWIND_READ:
            served.append((self.rewind_from, dict(self.served)))
        return execute(self, sql, parameters)

    read_back = performing._read_back
    after: list = []

    def recorded(*args):
        after[:] = read_back(*args)
        return after

    for keep in sorted({0, 1, total - 1, *rng.sample(range(total), 5)}):
        copy = scratch / f"copy-{keep}.db"
        shutil.copy(path, copy)
        expected = scratch / f"expected-{keep}.db"
        shutil.copy(path, expected)
        removed = await SQLiteSession(expected, wal=True).rewind("s", keep_entries=keep)
        ws = await Workspace.open([copy])
        try:
            preview = await preview_rewind(ws, "s", keep)
            served.clear()
            locked_stores.HeldConnection.execute = spied
            performing._read_back = recorded
            try:
                result = await perform(ws, preview)
            finally:
                locked_stores.HeldConnection.execute = execute
                performing._read_back = read_back
        finally:
            await ws.close()
        # Narrowed to the cut, and served the rows captured before the lock.
        assert served and all(n is not None and rows for n, rows in served), keep
        assert result.counts["entries_removed"] == removed, keep
        assert rows(copy) == rows(expected), keep
        conn = sqlite3.connect(copy)
        assert after, keep
        for captured in after:
            whole = capture_sync(conn, captured.group)
            assert (captured.rows, captured.rowids) == (whole.rows, whole.rowids), keep
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()


async def test_segments_parsed_before_the_lock_are_served_where_their_text_holds(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lovia's rewind, served the segments ``parse_segments`` parsed before
    the lock, parses none of them again (half a 2,000-run session: ~25 ms
    of the lock); a segment whose text changed since is parsed by lovia, and
    either way the file ends as lovia's own rewind leaves it."""
    import json
    import shutil

    import lovia.stores.session

    from lovia_tui.core.actions.lovia_served import (
        REWIND_READ,
        Prepared,
        parse_segments,
    )

    path = scratch / "s.db"
    session = SQLiteSession(path, wal=True)
    for run in range(6):
        entries = [
            InputEntry(role="user", content="same"),  # two rows share a text
            AssistantTextEntry(content="same" if run < 2 else f"a{run}"),
        ]
        await session.append("s", entries, run_id=f"r{run}")
    conn = sqlite3.connect(path)
    first, texts = conn.execute(
        "SELECT min(id), json_group_array(entries_json) FROM "
        "(SELECT id, entries_json FROM session_runs WHERE id >= 2 ORDER BY id)"
    ).fetchone()
    conn.close()
    parsed = parse_segments(json.loads(texts))
    assert sum(len(rows) for rows in parsed.values()) == 5
    prepared = Prepared(REWIND_READ, None, parsed)  # read again under the lock
    expected = scratch / "expected.db"
    shutil.copy(path, expected)
    await SQLiteSession(expected, wal=True).rewind("s", keep_entries=3)
    changed = scratch / "changed.db"
    shutil.copy(path, changed)
    conn = sqlite3.connect(changed)  # a row rewritten since the parse
    conn.execute(
        "UPDATE session_runs SET entries_json = ? WHERE id = 6",
        ('[{"type": "input", "role": "user", "content": "other"}]',),
    )
    conn.commit()
    conn.close()
    parses: list[object] = []
    entry_from_dict = lovia.stores.session.entry_from_dict

    def counted(data):
        parses.append(data)
        return entry_from_dict(data)

    # lovia's rewind parses with its module's own name for it.
    monkeypatch.setattr(lovia.stores.session, "entry_from_dict", counted)
    for file, lovia_parses in ((path, 0), (changed, 1)):
        parses.clear()
        with held_write([file]) as held:
            removed = (
                await Stores(held)
                .session(file)
                .rewind_from(
                    "s", keep_entries=3, row_id=first, before=2, prepared=prepared
                )
            )
        assert removed == (9 if file == path else 8)
        assert len(parses) == lovia_parses
    assert rows(path) == rows(expected)
    monkeypatch.setattr(lovia.stores.session, "entry_from_dict", entry_from_dict)
    changed_expected = scratch / "changed-expected.db"
    shutil.copy(changed, changed_expected)  # rewound already: lovia's agrees
    assert (
        await SQLiteSession(changed_expected, wal=True).rewind("s", keep_entries=3) == 0
    )


async def test_a_trim_served_what_was_computed_before_the_lock_leaves_lovias_result(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lovia's trim, served the read, parses, trims and texts prepared before
    the lock (a trim of 1,000 runs did them under it: 170-210 ms), computes
    none of them again, and leaves every row as lovia's own trim does."""
    import shutil

    import lovia.stores.session as lovia_session

    from lovia_tui.core.actions.lovia_served import prepare_trim
    from lovia_tui.core.store.rows import RowGroup, capture_sync

    path = scratch / "t.db"
    session = SQLiteSession(path, wal=True)
    for run in range(6):
        entries = [
            InputEntry(role="user", content=f"q{run} é"),
            ToolCallEntry(call_id=f"c{run}", name="dump", arguments="{}"),
            ToolResultEntry(call_id=f"c{run}", output="línea\n" * (50 + run)),
            AssistantTextEntry(content="same"),
        ]
        await session.append("s", entries, run_id=f"r{run}")
    expected = scratch / "expected.db"
    shutil.copy(path, expected)
    trimmed = await SQLiteSession(expected, wal=True).trim_tool_results(
        "s", keep_chars=40, keep_runs=2
    )
    conn = sqlite3.connect(path)
    captured = capture_sync(conn, RowGroup(path, "session_runs", "s"))
    conn.close()
    text = captured.columns.index("entries_json")
    prepared = prepare_trim(
        [
            (rowid, row[text])
            for rowid, row in zip(captured.rowids, captured.rows, strict=True)
        ],
        keep_chars=40,
        keep_runs=2,
    )
    calls: list[str] = []
    for name in ("entry_from_dict", "entry_to_dict", "_trim_entries"):
        original = getattr(lovia_session, name)

        def counted(*args, _name=name, _original=original):
            calls.append(_name)
            return _original(*args)

        monkeypatch.setattr(lovia_session, name, counted)
    with held_write([path]) as held:
        done = (
            await Stores(held)
            .session(path)
            .trim("s", keep_chars=40, keep_runs=2, prepared=prepared)
        )
    assert (done, calls) == (trimmed, []) and trimmed == 4
    assert rows(path) == rows(expected)


def test_collection_pauses_while_a_file_is_held_and_resumes_after_the_last(
    scratch: Path,
) -> None:
    """Two threads' overlapping held files: the collector stays paused until
    the later one ends, and comes back on."""
    import gc
    import threading

    paths = [scratch / "a.db", scratch / "b.db"]
    for path in paths:
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.close()
    entered, release = threading.Barrier(2), threading.Event()
    seen: list[bool] = []

    def hold(path: Path, last: bool) -> None:
        with held_write([path]):
            entered.wait(5)
            if last:
                release.wait(5)
            seen.append(gc.isenabled())
        if not last:
            release.set()

    assert gc.isenabled()
    threads = [
        threading.Thread(target=hold, args=(path, n == 1))
        for n, path in enumerate(paths)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == [False, False]
    assert gc.isenabled()


def test_rows_are_unchanged_only_as_captured_and_where_they_were(scratch: Path) -> None:
    """The check under the lock, compared inside SQLite: the same cells under
    the same rowids. A value of another storage class or another value (a
    float in its 16th digit, a byte after a NUL), a row moved to a new rowid
    with its content, a row added or gone, a column added, another group's
    key spelled in another case: each is a change but the last (a table with
    a collation of its own, which would call them the same, is refused
    before any check: tests/core/test_journal_guards.py).
    Whatever the connection's row factory (lovia's is ``sqlite3.Row``, and the
    held connection keeps it), and the file is never written."""
    from lovia_tui.core.store.row_check import stage, unchanged
    from lovia_tui.core.store.rows import RowGroup, capture_sync

    path = scratch / "r.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TABLE session_runs (id INTEGER PRIMARY KEY, "
        "session_id TEXT, run_id TEXT, entries_json TEXT, created_at REAL)"
    )
    conn.executemany(
        "INSERT INTO session_runs VALUES (?, 's', ?, ?, 0.1)",
        [(1, "a", "[]"), (2, "b", "[1]\x00x"), (3, None, None)],
    )
    group = RowGroup(path, "session_runs", "s")
    captured = [
        capture_sync(conn, group),
        capture_sync(conn, RowGroup(path, "session_runs", "gone")),
    ]
    other = sqlite3.connect(path)  # sees every commit to the file
    for factory in (None, sqlite3.Row):
        conn.row_factory = factory
        version = other.execute("PRAGMA data_version").fetchone()
        stage(lambda _: conn, captured)
        assert other.execute("PRAGMA data_version").fetchone() == version
        assert unchanged(lambda _: conn, captured)
        for change, undo in (
            ("UPDATE session_runs SET entries_json = CAST('[]' AS BLOB) WHERE id = 1",
             "UPDATE session_runs SET entries_json = '[]' WHERE id = 1"),
            ("UPDATE session_runs SET entries_json = '[2]' WHERE id = 2",
             "UPDATE session_runs SET entries_json = '[1]' || char(0) || 'x' WHERE id = 2"),
            ("UPDATE session_runs SET entries_json = '[1]' || char(0) || 'y' WHERE id = 2",
             "UPDATE session_runs SET entries_json = '[1]' || char(0) || 'x' WHERE id = 2"),
            ("UPDATE session_runs SET created_at = 0.1 + 1e-16 * 2 WHERE id = 1",
             "UPDATE session_runs SET created_at = 0.1 WHERE id = 1"),
            ("UPDATE session_runs SET run_id = 'c' WHERE id = 3",
             "UPDATE session_runs SET run_id = NULL WHERE id = 3"),
            ("UPDATE session_runs SET id = 4 WHERE id = 2",
             "UPDATE session_runs SET id = 2 WHERE id = 4"),
            ("INSERT INTO session_runs VALUES (5, 's', 'c', '[]', 0.1)",
             "DELETE FROM session_runs WHERE id = 5"),
            ("DELETE FROM session_runs WHERE id = 1",
             "INSERT INTO session_runs VALUES (1, 's', 'a', '[]', 0.1)"),
            ("INSERT INTO session_runs VALUES (6, 'gone', 'c', '[]', 0.1)",
             "DELETE FROM session_runs WHERE id = 6"),
        ):  # fmt: skip
            conn.execute(change)
            assert not unchanged(lambda _: conn, captured), change
            conn.execute(undo)
            assert unchanged(lambda _: conn, captured), undo
        conn.execute("INSERT INTO session_runs VALUES (7, 'S', 'c', '[]', 0.1)")
        assert unchanged(lambda _: conn, captured)  # group 'S', not 's'
        conn.execute("DELETE FROM session_runs WHERE id = 7")
    conn.execute("ALTER TABLE session_runs ADD COLUMN meta_json TEXT")
    assert not unchanged(lambda _: conn, captured)
    conn.close()
    other.close()


def test_texts_lovia_cannot_parse_are_left_for_lovia() -> None:
    """Whatever a hostile row holds, parsing before the lock never raises:
    the row is left out, and lovia's own parse meets it under the lock."""
    from lovia_tui.core.actions.lovia_served import parse_segments

    good = '[{"type": "input", "role": "user", "content": "hi"}]'
    hostile = [
        "5",
        '{"a": 1}',
        "[" * 100_000 + "]" * 100_000,
        '[{"type": "nope"}]',
        "[",
    ]
    parsed = parse_segments([*hostile, good])
    assert list(parsed) == [good] and len(parsed[good][0]) == 1


def test_the_read_served_to_lovias_rewind_is_what_sqlite3_returns(
    scratch: Path,
) -> None:
    """The rewind's read prepared before the lock (from the captured cells)
    is, value for value and type for type, what ``sqlite3`` returns for
    lovia's read: whatever a row's cells hold (text with a NUL, a blob, an
    integer, NULL, a real); with a text that is not UTF-8 nothing is served,
    and lovia's own read fails on it under the lock."""
    from lovia_tui.core.actions.lovia_served import REWIND_READ, prepare_rewind
    from lovia_tui.core.store.rows import RowGroup, capture_sync

    conn = sqlite3.connect(scratch / "s.db", isolation_level=None)
    conn.execute(
        "CREATE TABLE session_runs (id INTEGER PRIMARY KEY, session_id TEXT, "
        "run_id TEXT, entries_json TEXT, meta_json TEXT, created_at REAL)"
    )
    conn.executemany(
        "INSERT INTO session_runs (session_id, run_id, entries_json) VALUES ('s', ?, ?)",
        [
            ("r1", '[{"type": "input", "role": "user", "content": "é"}]'),
            ("r\x002", "plain \x00 text"),
            (None, b"[]"),
            (7, 1.5),
            ("r5", None),
        ],
    )
    group = RowGroup(scratch / "s.db", "session_runs", "s")

    def prepared() -> object:
        captured = capture_sync(conn, group)
        run, text = (captured.columns.index(c) for c in ("run_id", "entries_json"))
        return prepare_rewind(
            (rowid, row[run], row[text])
            for rowid, row in zip(captured.rowids, captured.rows, strict=True)
        )

    read = prepared()
    expected = conn.execute(REWIND_READ, ("s",)).fetchall()
    assert read.rows == expected
    assert [[type(v) for v in r] for r in read.rows] == [
        [type(v) for v in r] for r in expected
    ]
    assert list(read.parsed) == [expected[0][2]]
    conn.execute("UPDATE session_runs SET run_id = CAST(x'ff' AS TEXT) WHERE id = 2")
    assert prepared().rows is None
    with pytest.raises(sqlite3.OperationalError):
        conn.execute(REWIND_READ, ("s",)).fetchall()
    conn.close()


def _wal_file(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE session_runs (x)")
    conn.execute("INSERT INTO session_runs VALUES (1)")
    conn.close()


def _rows_in(held) -> list:
    (conn,) = held.values()
    return [tuple(r) for r in conn.execute("SELECT x FROM session_runs")]


def test_a_check_on_a_quiet_file_runs_once_and_its_read_becomes_the_lock(
    scratch: Path,
) -> None:
    """Nobody wrote between the check's read and the lock: the check ran
    once, and the block holds the write lock on what it read."""
    path = scratch / "q.db"
    _wal_file(path)
    seen: list[list] = []
    with held_write([path], lambda held: seen.append(_rows_in(held))):
        other = sqlite3.connect(path, isolation_level=None, timeout=0)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("INSERT INTO session_runs VALUES (2)")
        other.close()
    assert seen == [[(1,)]]


def test_a_commit_after_the_checks_read_makes_it_read_again(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process committed after the check read: SQLite refuses the
    read its upgrade, and the check reads again, seeing the commit. That
    read becomes the lock when nobody committed during it (no wait for the
    lock the plain way); a check refusing then refuses before any lock."""
    from lovia_tui.core.actions.locked_stores import HeldConnection

    path = scratch / "c.db"
    _wal_file(path)
    seen: list[list] = []
    statements: list[str] = []
    execute = HeldConnection.execute

    def recorded(self, sql, *params):
        statements.append(sql)
        return execute(self, sql, *params)

    monkeypatch.setattr(HeldConnection, "execute", recorded)

    class Refused(Exception):
        pass

    def check(held, refuse=False) -> None:
        seen.append(_rows_in(held))
        if len(seen) == 1:  # a writer commits right after the first read
            writer = sqlite3.connect(path, isolation_level=None)
            writer.execute("INSERT INTO session_runs VALUES (2)")
            writer.close()
        elif refuse:
            raise Refused

    with held_write([path], check) as held:
        assert _rows_in(held) == [(1,), (2,)]
    assert seen == [[(1,)], [(1,), (2,)]]
    assert "BEGIN IMMEDIATE" not in statements
    seen.clear()
    with pytest.raises(Refused), held_write([path], lambda held: check(held, True)):
        raise AssertionError("the block ran")
    assert seen == [[(1,), (2,)], [(1,), (2,), (2,)]]
    assert "BEGIN IMMEDIATE" not in statements


def test_a_check_beside_a_held_lock_waits_for_it_and_runs_again_under_its_own(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holds the write lock past the time the check may
    keep reading (here none): the check reads beside it (no wait), the upgrade
    is refused at once, and the lock is then waited for the plain way and the
    check run under it."""
    import threading

    from lovia_tui.core.actions import write_lock

    monkeypatch.setattr(write_lock, "UPGRADE_SECONDS", 0)

    path = scratch / "h.db"
    _wal_file(path)
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO session_runs VALUES (2)")
    seen: list[list] = []

    def check(held) -> None:
        seen.append(_rows_in(held))
        if len(seen) == 1:
            threading.Timer(0.3, lambda: writer.execute("COMMIT")).start()

    with held_write([path], check) as held:
        assert _rows_in(held) == [(1,), (2,)]
    assert seen == [[(1,)], [(1,), (2,)]]
    writer.close()


def test_a_write_connection_never_creates_a_file_and_zeroes_only_for_free(
    scratch: Path,
) -> None:
    from lovia_tui.core.store.connect import write_connection

    with pytest.raises(sqlite3.OperationalError):
        write_connection(scratch / "absent.db")
    assert not (scratch / "absent.db").exists()
    sqlite3.connect(scratch / "there.db").close()
    conn = write_connection(scratch / "there.db")
    assert conn.execute("PRAGMA secure_delete").fetchone() == (2,)  # FAST
    conn.close()


def test_rows_go_back_under_their_rowids_or_new_ones_when_taken(scratch: Path) -> None:
    """A journaled rowid a newer row took gets a new rowid; so does one that
    SQLite handed, a row earlier, to a row put back without its own."""
    from lovia_tui.core.store.rows import Captured, RowGroup, insert_rows

    path = scratch / "r.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE snapshot_turns (run_id TEXT, seq INTEGER)")
    conn.execute(
        "INSERT INTO snapshot_turns (rowid, run_id, seq) VALUES (5, 'newer', 0)"
    )
    group = RowGroup(path, "snapshot_turns", "r")

    def row(seq: int) -> tuple:
        return (("text", b"r"), ("integer", seq))

    journaled = Captured(group, ("run_id", "seq"), (row(1), row(2), row(3)), (3, 5, 6))
    assert insert_rows(conn, journaled, [0, 1, 2]) == [3, 6, 7]
    assert conn.execute(
        "SELECT rowid, run_id, seq FROM snapshot_turns ORDER BY rowid"
    ).fetchall() == [(3, "r", 1), (5, "newer", 0), (6, "r", 2), (7, "r", 3)]
    conn.close()


def test_an_undo_puts_rows_back_from_its_staged_copy_and_reads_only_their_order(
    scratch: Path,
) -> None:
    """``put_back`` inserts the staged rows in one statement, a row whose rowid
    a newer row took under a new one, and checks each reads back as staged;
    ``read_order`` and ``changed`` (the rows after the undo, the rest known
    from the check) are what a whole read of the group finds, in its order (a
    checkpoint's turns by seq, not by rowid); a row it cannot account for
    raises. A value the table would store otherwise is refused."""
    import random

    from lovia_tui.core.store.row_check import BACK, put_back, stage
    from lovia_tui.core.store.rows import (
        Captured,
        RowGroup,
        capture_sync,
        changed,
        read_order,
    )

    seed = random.randrange(1 << 30)
    print("seed", seed)  # every seed must pass
    rng = random.Random(seed)
    path = scratch / "r.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE snapshot_turns (run_id TEXT, seq INTEGER, payload)")
    seqs = rng.sample(range(1000), 40)
    conn.executemany(
        "INSERT INTO snapshot_turns VALUES (?, ?, ?)",
        [
            (rng.choice("rs"), seq, rng.choice([None, 1.5, b"x", "t\x00"]))
            for seq in seqs
        ],
    )
    group = RowGroup(path, "snapshot_turns", "r")
    for _ in range(5):
        before = capture_sync(conn, group)
        removed = set(rng.sample(before.rowids, len(before.rowids) // 3))
        chosen = [at for at, rowid in enumerate(before.rowids) if rowid in removed]
        chosen = sorted(rng.sample(chosen, len(chosen) // 2 + 1))
        back = Captured(
            group,
            before.columns,
            tuple(before.rows[at] for at in chosen),
            tuple(before.rowids[at] for at in chosen),
        )
        stage(lambda _: conn, [back], BACK)
        conn.execute("BEGIN IMMEDIATE")
        for rowid in removed:
            conn.execute("DELETE FROM snapshot_turns WHERE rowid = ?", (rowid,))
        newer = (("text", b"r"), ("integer", 5000), ("null", None))
        conn.execute(  # a newer row takes the first one's rowid
            "INSERT INTO snapshot_turns (rowid, run_id, seq) VALUES (?, 'r', 5000)",
            (back.rowids[0],),
        )
        [rowids] = put_back(lambda _: conn, [back]) or [None]
        assert rowids is not None and rowids[0] != back.rowids[0]
        assert rowids[1:] == list(back.rowids[1:])
        added = {back.rowids[0]: newer, **dict(zip(rowids, back.rows, strict=True))}
        [order] = read_order(lambda _: conn, [group])
        now = changed(before, order, removed, added)
        assert now == capture_sync(conn, group)
        conn.execute("COMMIT")
    before = capture_sync(conn, group)
    conn.execute("INSERT INTO snapshot_turns VALUES ('r', 5, NULL)")  # unaccounted
    with pytest.raises(KeyError):
        changed(before, *read_order(lambda _: conn, [group]), set(), {})
    back = Captured(
        group,
        before.columns,
        ((("text", b"r"), ("text", b"12"), ("null", None)),),
        (9999,),
    )
    stage(lambda _: conn, [back], BACK)
    assert (
        put_back(lambda _: conn, [back]) is None
    )  # seq would be stored as 12, a number
    conn.close()


def test_an_undo_that_leaves_a_row_nobody_journaled_is_refused(scratch: Path) -> None:
    """The rows after an undo are checked by rowid under the lock: the kept
    ones and those put back, nothing else (a trigger that adds a row to the
    group on the way is caught), in the journaled order; then made into
    rows once the lock is let go."""
    from lovia_tui.core.actions.row_undo import apply_groups, plan_group, put_back_rows
    from lovia_tui.core.store.row_check import BACK, stage
    from lovia_tui.core.store.rows import RowGroup, capture_sync

    path = scratch / "t.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE snapshot_turns (run_id TEXT, seq INTEGER, payload)")
    conn.executemany(
        "INSERT INTO snapshot_turns VALUES (?, ?, 'x')",
        [("r", 0), ("other", 0), ("r", 1), ("r", 2)],
    )
    group = RowGroup(path, "snapshot_turns", "r")
    journaled = capture_sync(conn, group)
    conn.execute("DELETE FROM snapshot_turns WHERE run_id = 'r' AND seq > 0")
    current = capture_sync(conn, group)
    plan = plan_group(journaled, current, None, (), "entry 1")
    assert plan.put_back == (1, 2) and plan.kept == current.rowids
    back = put_back_rows(plan)
    stage(lambda _: conn, [back], BACK)
    conn.execute(
        "CREATE TEMP TRIGGER extra AFTER INSERT ON snapshot_turns WHEN NEW.seq = 2 "
        "BEGIN INSERT INTO snapshot_turns VALUES ('r', 9, 'y'); END"
    )
    conn.execute("BEGIN IMMEDIATE")
    with pytest.raises(ActionError, match="did not reproduce"):
        apply_groups(lambda _: conn, [plan], [back], [current], "entry 1")
    conn.execute("ROLLBACK")
    conn.execute("DROP TRIGGER extra")
    conn.execute("BEGIN IMMEDIATE")
    applied = apply_groups(lambda _: conn, [plan], [back], [current], "entry 1")
    conn.execute("COMMIT")
    assert applied.after() == [capture_sync(conn, group)]
    assert capture_sync(conn, group).rows == journaled.rows
    conn.close()
