"""Values of any SQLite storage class where lovia writes TEXT ids, REAL times
and its own head statuses (tests/support/any_type_db.py): every CLI command
and every view shows them as what they are, never a traceback; every action
on a non-text id is refused in one line; the text id ``'42'`` and the integer
``42`` are never taken for each other; the file stays ``integrity_check`` ok.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.any_type_db import (
    BAD_TIME_RUN,
    BAD_TIME_SESSION,
    GOOD_ENTRIES,
    KEYS,
    ODD_CELLS_SESSION,
    ODD_STATUSES,
    ODD_TIMES,
    TEXT_TWIN,
    build_any_type_db,
    head,
)
from support.app import watched_app
from support.lovia_factory import copy_db, integrity, raw, rows, scratch_directory
from support.reliability import (
    detail_text,
    until,
    visit_runs,
    visit_transcript,
)

from lovia_tui.app import make_app
from lovia_tui.cli import main
from lovia_tui.core.run_status import OTHER, UNREADABLE, status_group, status_text
from lovia_tui.core.store.checkpoint_reads import runs
from lovia_tui.core.store.database import open_database
from lovia_tui.core.stored import (
    UNREADABLE_SHOWN,
    NonTextKey,
    decode_text,
    stored_key,
)
from lovia_tui.pilot import settle
from lovia_tui.screens.doctor import DoctorScreen
from lovia_tui.screens.inspector import InspectorScreen
from lovia_tui.widgets.pane_title import PaneTitle

SHOWN = {name: str(stored_key(value)) for name, value in KEYS.items()}
"""How each non-text key is shown: ``⚠ integer 42``, ``⚠ blob x'00ff6b'``..."""


@pytest.fixture(scope="module")
def any_type_template() -> Iterator[Path]:
    with scratch_directory() as directory:
        yield asyncio.run(build_any_type_db(directory))


@pytest.fixture
def any_type(any_type_template: Path, scratch: Path) -> Path:
    (scratch / "db").mkdir()
    return copy_db(any_type_template, scratch / "db" / any_type_template.name)


@pytest.fixture(scope="module")
def lovia_tables_template() -> Iterator[Path]:
    with scratch_directory() as directory:
        yield asyncio.run(build_any_type_db(directory, typeless=False))


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (argv, err)
    return code, out, err


# ------------------------------------------------------------------ the core


async def test_a_non_text_key_reads_its_own_rows_and_equals_no_text(
    any_type: Path,
) -> None:
    integer = stored_key(42)
    assert isinstance(integer, NonTextKey) and str(integer) == "⚠ integer 42"
    assert integer != TEXT_TWIN and integer != TEXT_TWIN and integer != "⚠ integer 42"
    assert integer == stored_key(42) and integer != stored_key(42.0)
    assert len({integer, stored_key(42), TEXT_TWIN, "⚠ integer 42"}) == 3
    assert stored_key(TEXT_TWIN) is TEXT_TWIN  # text stays a plain str
    db = await open_database(any_type, readonly=True)
    try:
        for key in (*KEYS.values(), TEXT_TWIN):
            found = await runs(db, [stored_key(key)])
            if key is None:  # SQL's IN never matches NULL: no row, not another's
                assert found == []
                continue
            [run] = found
            assert run.run_id == stored_key(key)
            assert raw(any_type, "SELECT typeof(run_id) FROM snapshot_heads WHERE "
                       "run_id IS ?", key)[0][0] == ("null" if key is None else
                       {int: "integer", float: "real", bytes: "blob", str: "text"}[
                           type(key)])  # fmt: skip
    finally:
        await db.close()
    assert [status_text(s) for s in ODD_STATUSES.values()] == [
        "bogus", "paused", '{"a":1}', "7"
    ]  # fmt: skip
    assert {status_group(status_text(s)) for s in ODD_STATUSES.values()} == {OTHER}
    assert status_text(None) == UNREADABLE


# ------------------------------------------------------------------ the CLI


def test_every_cli_command_shows_any_type_and_exits_as_documented(
    any_type: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "sessions", any_type, "--json")
    assert code == 0
    listed = {s["session_id"]: s for s in json.loads(out)["sessions"]}
    assert {SHOWN["integer"], SHOWN["real"], SHOWN["blob"], TEXT_TWIN} <= set(listed)
    assert SHOWN["null"] in listed  # the chat row of a NULL id
    assert listed[BAD_TIME_SESSION]["last_activity"] is None
    code, out, _ = cli(capsys, "sessions", any_type)
    assert code == 0 and "⚠ integer 42" in out and UNREADABLE_SHOWN in out

    code, out, _ = cli(capsys, "runs", any_type, "--json")
    assert code == 0
    found = {r["run_id"]: r for r in json.loads(out)["runs"]}
    assert {found[run_id]["status"] for run_id in ODD_STATUSES} == {
        "bogus", "paused", '{"a":1}', "7"
    }  # fmt: skip
    for name in ODD_TIMES:
        soon = found[f"{BAD_TIME_RUN}-{name}"]
        assert (soon["updated_at"], soon["age_s"], soon["stale"]) == (None, None, False)
    assert found[SHOWN["integer"]]["session_id"] == SHOWN["integer"]
    assert found[TEXT_TWIN]["session_id"] == TEXT_TWIN

    code, out, _ = cli(capsys, "show", any_type, BAD_TIME_SESSION, "--json")
    assert code == 0
    assert [s["created_at"] for s in json.loads(out)["segments"]] == [None] * 3
    # The text id '42' shows its own segment and run, never the integer's.
    code, out, _ = cli(capsys, "show", any_type, TEXT_TWIN, "--json")
    assert code == 0
    assert [s["run_id"] for s in json.loads(out)["segments"]] == [TEXT_TWIN]

    for argv, expected in [
        (["sessions", any_type, "--search", "stored here"], 0),
        (["search", any_type, "stored"], 0),
        (["runs", any_type], 0),
        (["runs", any_type, "--status", "stale"], 0),
        (["show", any_type, ODD_CELLS_SESSION], 0),
        (["show", any_type, "chat"], 0),
        (["export", any_type, TEXT_TWIN, "-o", scratch / "twin.md"], 0),
        (["export", any_type, ODD_CELLS_SESSION, "--format", "json"], 0),
        (["doctor", any_type], 1),
        (["journal", any_type], 0),
        (["show", any_type, "no-such-session"], 2),
    ]:
        code, out, err = cli(capsys, *argv)
        assert code == expected, (argv, err)
    code, out, _ = cli(capsys, "doctor", any_type, "--json")
    assert code == 1
    on_non_text = [
        finding
        for finding in json.loads(out)["findings"]
        if {finding["run_id"], finding["session_id"]} & set(SHOWN.values())
    ]
    assert on_non_text and all(finding["fix"] is None for finding in on_non_text)
    assert any("no fix: the run id" in finding["message"] for finding in on_non_text)
    assert integrity(any_type) == "ok"


def test_lovia_own_tables_holding_blob_and_null_ids_read_everywhere(
    lovia_tables_template: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In lovia's own tables a TEXT column keeps a BLOB as it is, and
    ``snapshot_heads`` and ``chat_sessions`` take a NULL id."""
    path = copy_db(lovia_tables_template, scratch / "lovia.db")
    stored = raw(path, "SELECT DISTINCT typeof(run_id) FROM snapshot_heads")
    assert {kind for (kind,) in stored} == {"text", "blob", "null"}
    code, out, _ = cli(capsys, "sessions", path, "--json")
    assert code == 0 and SHOWN["blob"] in {
        s["session_id"] for s in json.loads(out)["sessions"]
    }
    code, out, _ = cli(capsys, "runs", path, "--json")
    assert code == 0
    assert {SHOWN["blob"], SHOWN["null"]} <= {
        r["run_id"] for r in json.loads(out)["runs"]
    }
    for argv, expected in [
        (["runs", path], 0),
        (["sessions", path, "--search", "stored here"], 0),
        (["search", path, "stored"], 0),
        (["show", path, ODD_CELLS_SESSION], 0),
        (["doctor", path], 1),
        (["delete-run", path, "--status", "stale", "--yes"], 2),
    ]:
        code, out, err = cli(capsys, *argv)
        assert code == expected, (argv, err)
    assert "is not text" in err
    assert integrity(path) == "ok"


def test_actions_refuse_non_text_ids_and_act_on_text_twins_alone(
    any_type: Path, private_journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = rows(any_type)
    # A selection that takes in the non-text runs is refused whole, in one line.
    code, out, err = cli(capsys, "delete-run", any_type, "--status", "stale", "--yes")
    assert code == 2 and err.count("\n") == 1 and "is not text" in err, err
    assert rows(any_type) == before
    # The text ids '42' are acted on; the integer 42's rows stay as they were.
    assert cli(capsys, "delete-run", any_type, TEXT_TWIN, "--yes")[0] == 0
    assert cli(capsys, "rewind", any_type, TEXT_TWIN, "--keep", "0", "--yes")[0] == 0
    for table in ("session_runs", "snapshot_heads"):
        kinds = raw(any_type, f"SELECT typeof(run_id) FROM {table} WHERE run_id = 42")
        assert kinds == [("integer",)], table
    assert integrity(any_type) == "ok"
    # Both undone: the file is as it was.
    assert cli(capsys, "undo", any_type, "--yes")[0] == 0
    assert cli(capsys, "undo", any_type, "--yes")[0] == 0
    assert rows(any_type) == before


def test_a_fork_refuses_to_copy_a_run_whose_id_is_not_text(
    any_type: Path, private_journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The copy keeps each run's id, given to lovia's append, which takes text."""
    with contextlib.closing(sqlite3.connect(any_type)) as conn, conn:
        conn.execute(
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
            "VALUES ('text-session', X'00', ?, 1e9)",
            (GOOD_ENTRIES,),
        )
    before = rows(any_type)
    for yes in ([], ["--yes"]):
        argv = ["fork", any_type, "text-session", "--keep", "1", "--as", "copy"]
        code, out, err = cli(capsys, *argv, *yes)
        assert (code, out) == (2, "")
        assert "run id ⚠ blob x'00' is not text" in err and err.count("\n") == 1
    assert rows(any_type) == before and integrity(any_type) == "ok"


NOT_UTF8 = b"\xffAbc"
"""A hostile writer's id: ``CAST(x'ff416263' AS TEXT)``, TEXT that is not UTF-8."""
REPLACED = NOT_UTF8.decode("utf-8", errors="replace")
"""The text id spelled as that one reads with U+FFFD: never taken for it."""


@pytest.fixture
def not_utf8_ids(lovia_tables_template: Path, scratch: Path) -> Path:
    """lovia's tables, plus a session, its run and a stale head whose ids are
    :data:`NOT_UTF8`, and a session and run spelled :data:`REPLACED`."""
    path = copy_db(lovia_tables_template, scratch / "lovia.db")
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for session_id in ("CAST(?1 AS TEXT)", "?2"):  # the bytes, then U+FFFD
            conn.execute(
                "INSERT INTO session_runs (session_id, run_id, entries_json, "
                f"created_at) VALUES ({session_id}, 'r-' || {session_id}, ?3, 1e9)",
                (NOT_UTF8, REPLACED, GOOD_ENTRIES),
            )
        conn.execute(  # a running run, not saved for an hour: stale
            "INSERT INTO snapshot_heads VALUES (CAST(? AS TEXT), ?, ?)",
            (NOT_UTF8, head("running"), time.time() - 3600),
        )
    return path


def test_text_ids_that_are_not_utf8_are_shown_reported_and_refused(
    not_utf8_ids: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Python program can bind such an id, lovia included: lovia-tui shows
    the run as what it is, refuses every action on it, and the doctor reports
    the session that no view can read, with SQL that finds its rows."""
    path = not_utf8_ids
    key = stored_key(decode_text(NOT_UTF8))
    assert isinstance(key, NonTextKey) and str(key) == "⚠ text not UTF-8 x'ff416263'"
    assert key != REPLACED and stored_key(decode_text(REPLACED.encode())) == REPLACED
    assert type(decode_text(REPLACED.encode())) is str
    before = rows(path)

    code, out, _ = cli(capsys, "runs", path, "--json")
    assert code == 0 and str(key) in {r["run_id"] for r in json.loads(out)["runs"]}
    # Not listed (nothing of it reads), and never left out unsaid.
    code, out, err = cli(capsys, "sessions", path, "--json")
    listed = [s["session_id"] for s in json.loads(out)["sessions"]]
    assert code == 0 and REPLACED in listed and str(key) not in listed
    assert f"not listed: the session id {key} is text that is not UTF-8" in err
    # The search index keeps the id as stored: a hit there is that session's.
    code, out, _ = cli(capsys, "search", path, "stored", "--json")
    found = [r["session_id"] for r in json.loads(out)["results"]]
    assert code == 0 and str(key) in found and REPLACED in found
    # The text twin reads its own segment, not the other's.
    code, out, _ = cli(capsys, "show", path, REPLACED, "--json")
    assert code == 0
    assert [s["run_id"] for s in json.loads(out)["segments"]] == ["r-" + REPLACED]

    code, out, _ = cli(capsys, "doctor", path, "--json")
    assert code == 1
    [finding] = [
        f for f in json.loads(out)["findings"] if f["kind"] == "non-text-session-id"
        and f["session_id"] == str(key)
    ]  # fmt: skip
    assert finding["severity"] == "error" and finding["fix"] is None
    sql = finding["message"].split("its rows: ")[1]
    assert raw(path, sql.replace("SELECT *", "SELECT hex(run_id)")) == [
        (b"r-".hex().upper() + NOT_UTF8.hex().upper(),)
    ]

    code, out, err = cli(
        capsys, "delete-run", path, "--status", "stale", "--force", "--yes"
    )
    assert code == 2 and "is text that is not UTF-8" in err and err.count("\n") == 1
    assert rows(path) == before and integrity(path) == "ok"


async def test_the_app_says_why_ids_not_utf8_are_not_read(
    not_utf8_ids: Path,
) -> None:
    """The session's transcript is "not read", with the reason, never an empty
    session; the run's detail says its entries did not read."""
    app = make_app([not_utf8_ids], stale_after=1e9)
    async with watched_app(app, (160, 45)) as (pilot, watch):
        screen = app.screen
        assert isinstance(screen, InspectorScreen)
        key = stored_key(decode_text(NOT_UTF8))
        [listed] = [k for k in screen.sessions.keys if k[1] == key]
        row = screen.sessions.list.render_row(screen.sessions.shown.index(listed), 80)
        assert "id not UTF-8: unreadable" in row.plain  # not "…", as if loading
        screen.go_to_session(listed)
        title = screen.transcript_pane.query_one(PaneTitle)
        await until(pilot, lambda: "not read" in str(title.content))
        assert any("is text that is not UTF-8" in text for _, text in watch.notes)
        # A content search lists it as found (it counts, so it shows).
        await pilot.press("1", "s", *"stored", "enter")
        await settle(pilot)
        assert {k[1] for k in screen.sessions.shown} >= {key, REPLACED}
        await pilot.press("escape")
        # Its run: the turns do not read, so no "no dangling calls" is claimed.
        await pilot.press("3")
        screen.runs.select_run(key)
        await until(pilot, lambda: "what did not read" in detail_text(app))
        assert "the sqlite3 shell can, as CAST(x'ff416263' AS TEXT)" in " ".join(
            detail_text(app).split()
        )


# ------------------------------------------------------------------ the app


async def test_a_tour_of_the_app_shows_any_type_and_refuses_acting_on_it(
    any_type: Path, private_journal: Path
) -> None:
    before = rows(any_type)
    app = make_app([any_type], stale_after=1e9)
    async with watched_app(app, (160, 45)) as (pilot, watch):
        screen = app.screen
        assert isinstance(screen, InspectorScreen)
        ids = [key[1] for key in screen.sessions.keys]
        assert {stored_key(v) for v in KEYS.values()} | {TEXT_TWIN} <= set(ids)

        # Every session's transcript, the cursor on its first rows.
        for key in list(screen.sessions.keys):
            screen.go_to_session(key)
            await settle(pilot)
            await visit_transcript(pilot, most=3)
        # The filter, typed: '42' finds both, each shown as what it is.
        await pilot.press("slash", "4", "2")
        await settle(pilot)
        assert {key[1] for key in screen.sessions.shown} >= {
            TEXT_TWIN, stored_key(42)
        }  # fmt: skip
        await pilot.press("escape")
        await settle(pilot)
        # Content search: the non-text sessions are found too.
        await pilot.press("s", *"stored", "enter")
        await settle(pilot)
        assert {key[1] for key in screen.sessions.shown} >= {
            stored_key(42), stored_key(b"\x00\xffk"), TEXT_TWIN
        }  # fmt: skip
        await pilot.press("escape")
        await settle(pilot)

        # Runs: counted, listed, each one's detail; odd statuses count as other.
        counts = screen.runs.source.counts()
        assert counts[OTHER] == len(ODD_STATUSES)
        assert await visit_runs(pilot, jump=False) == len(screen.runs.shown)
        screen.runs.select_run(stored_key(42))
        await settle(pilot)
        assert "⚠ integer 42" in detail_text(app)

        # Every action on a non-text id: one line, no dialog, nothing changed.
        for key in [key for key in screen.sessions.keys if key[1] in SHOWN.values()]:
            screen.go_to_session(key)
            await settle(pilot)
            for press in (("1", "t"), ("1", "C"), ("1", "x"), ("2", "W")):
                await pilot.press(*press)
                await settle(pilot)
                assert isinstance(app.screen, InspectorScreen), press
                assert "is not text" in watch.notes[-1][1], (key, press, watch.notes)
        for name in KEYS:
            await pilot.press("3")
            screen.runs.select_run(stored_key(KEYS[name]))
            await settle(pilot)
            for press in ("d", "F", "R", "P"):
                await pilot.press(press)
                await settle(pilot)
                assert isinstance(app.screen, InspectorScreen), press
                assert "is not text" in watch.notes[-1][1], (name, press, watch.notes)

        # The doctor's view: every finding listed, none offering a refused fix.
        await pilot.press("exclamation_mark")
        await until(pilot, lambda: isinstance(app.screen, DoctorScreen))
        doctor = app.screen
        await until(pilot, lambda: bool(doctor.findings) and doctor.busy is None)
        assert all(
            f.fix is None
            for f in doctor.findings
            if f.run_id in SHOWN.values() or f.session_id in SHOWN.values()
        )
        await pilot.press("escape")
        await settle(pilot)
        assert rows(any_type) == before

        # A foreign writer adds a segment and a head of other types: the live
        # tail shows both.
        with contextlib.closing(sqlite3.connect(any_type)) as conn, conn:
            conn.execute(
                "INSERT INTO session_runs (session_id, run_id, entries_json, "
                "created_at) VALUES (777, 777, '[]', 1.0)"
            )
            conn.execute(
                "INSERT INTO snapshot_heads VALUES (x'07', ?, 'later')",
                (json.dumps({"status": "weird", "agent_name": "w"}),),
            )
        await until(
            pilot, lambda: stored_key(777) in [key[1] for key in screen.sessions.keys]
        )
        await until(pilot, lambda: screen.runs.source.counts()[OTHER] == 5)
    watch.assert_healthy(app)
    assert watch.errors() == []
    with contextlib.closing(sqlite3.connect(any_type)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
