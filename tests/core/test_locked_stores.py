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
from lovia.stores._sqlite import SQLiteStore
from lovia.web.store import ChatStore
from support.lovia_factory import rows

from lovia_tui.core.actions.locked_stores import (
    _PLUMBING,
    LockedCheckpointer,
    LockedSession,
    Stores,
    check_lovia_shape,
    held_write,
)
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
