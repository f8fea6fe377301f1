"""The script-facing subcommands (sessions, show, runs, export) and their errors.

All in-process through ``lovia_tui.cli.main`` on copies of the demo, except
one subprocess check that ``python -m lovia_tui`` starts at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.lovia_factory import copy_files, raw

from lovia_tui.app import make_app
from lovia_tui.cli import main
from lovia_tui.cli import runs as runs_cli
from lovia_tui.core.run_status import list_rank
from lovia_tui.core.store.workspace import Workspace, resolve_paths
from lovia_tui.pilot import settle

RUN_KEYS = {
    "run_id", "status", "agent", "turns", "usage", "started_at", "updated_at",
    "last_input_tokens", "output", "error", "pending_handoff", "context_state",
    "age_s", "stale", "stale_reason", "web_record", "entries", "dangling",
    "session_id", "session_link", "file",
}  # fmt: skip
SESSION_KEYS = {
    "session_id", "title", "pinned", "parent_id", "runs", "last_activity", "file",
}  # fmt: skip


@pytest.fixture
def demo(demo_dir: Any, tmp_path: Path) -> Any:
    """A private copy: the default mode switches rollback-journal files to WAL."""
    directory = tmp_path / "demo"
    for path in demo_dir.files:
        copy_files(path, directory)
    return dataclasses.replace(demo_dir, directory=directory)


def cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: Any) -> Any:
    code, out, err = cli(capsys, *argv)
    assert (code, err) == (0, "")
    return json.loads(out)


def assert_one_line_error(code: int, out: str, err: str) -> None:
    assert code == 2
    assert out == ""
    assert err.startswith("lovia-tui: ")
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "Traceback" not in err


# ------------------------------------------------------------------ runs


def test_runs_json_reports_every_checkpoint(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    before = time.time()
    records = cli_json(capsys, "runs", demo.directory, "--json", "--stale-after", "0")[
        "runs"
    ]
    assert all(set(record) == RUN_KEYS for record in records)
    by_id = {record["run_id"]: record for record in records}
    assert set(by_id) == {*demo.web_runs, *demo.cli_runs}
    # The Runs pane's order: by status (running first), newest first in each
    # group; completed runs file by file.
    ranks = [list_rank(record["status"]) for record in records]
    assert ranks == sorted(ranks) and ranks[0] == 0
    for rank in set(ranks):
        for file in {record["file"] for record in records}:
            saved = [
                r["updated_at"]
                for r in records
                if list_rank(r["status"]) == rank
                and (r["file"] == file or r["status"] != "completed")
            ]
            assert saved == sorted(saved, reverse=True)
    for record in records:
        # With --stale-after 0 every running run is stale, and only those.
        assert record["stale"] is (record["status"] == "running")
        assert record["age_s"] >= before - record["updated_at"] - 1

    crashed = by_id[demo.crashed_run]
    assert (crashed["status"], crashed["stale"]) == ("running", True)
    assert crashed["dangling"] == [
        {
            "call_id": "call_run-crashed_job",
            "name": "run_job",
            "arguments": '{"job": "nightly-export"}',
        }
    ]
    assert (crashed["session_id"], crashed["session_link"]) == (
        demo.crashed_session,
        "web",
    )
    assert crashed["file"] == str(demo.web_db)
    assert crashed["entries"] == 4 and crashed["agent"] == "assistant"

    cli_crashed = by_id[demo.cli_crashed_run]
    assert (cli_crashed["stale"], cli_crashed["session_id"], cli_crashed["session_link"]) == (
        True, None, None,
    )  # fmt: skip
    assert [d["name"] for d in cli_crashed["dangling"]] == ["run_job"]
    assert cli_crashed["file"] == str(demo.runs_db)

    report = by_id[demo.cli_completed_run]
    assert (report["status"], report["stale"], report["dangling"]) == (
        "completed",
        False,
        [],
    )
    assert (report["session_id"], report["session_link"]) == (
        demo.cli_completed_session,
        "segment",
    )
    window = by_id[demo.crash_window_run]
    assert (window["session_id"], window["session_link"]) == (
        demo.crash_window_session,
        "web",
    )
    assert by_id[demo.orphan_run]["session_id"] is None
    assert by_id[demo.failed_run]["agent"] == "researcher"
    assert by_id[demo.batch_run]["dangling"] == [
        {"call_id": "call_jobs_2", "name": "run_job", "arguments": '{"job": "export"}'}
    ]


@pytest.mark.parametrize("form", ["--json", "--jsonl"])
def test_runs_json_carries_every_head_field_as_lovia_loads_it(
    demo: Any, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    import asyncio

    from lovia import SQLiteCheckpointer

    code, out, err = cli(capsys, "runs", demo.directory, form, "--readonly")
    assert (code, err) == (0, "")
    records = (
        json.loads(out)["runs"]
        if form == "--json"
        else [json.loads(line) for line in out.splitlines()]
    )
    fields = ("usage", "last_input_tokens", "output", "error", "pending_handoff",
              "context_state", "turns", "status", "started_at")  # fmt: skip
    for record in records:
        checkpointer = SQLiteCheckpointer(Path(record["file"]))
        head = asyncio.run(checkpointer.load(record["run_id"])).head.to_dict()
        assert {f: record[f] for f in fields} == {f: head[f] for f in fields}
        assert record["agent"] == head["agent_name"]
        assert set(record["usage"]) == {
            "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
        }  # fmt: skip
    by_id = {record["run_id"]: record for record in records}
    report = by_id[demo.cli_completed_run]
    assert report["usage"]["cache_read_tokens"] == 900
    assert report["usage"]["cache_write_tokens"] == 300
    assert report["output"] == "Report ready: 3 services, 0 incidents. 🟢"
    assert by_id[demo.failed_run]["error"]["message"]
    assert by_id[demo.failed_run]["output"] is None


@pytest.mark.parametrize(
    ("status", "stale_after", "expected"),
    [
        ("stale", "0", {"crashed_run", "cli_crashed_run", "approval_run"}),
        ("stale", "1e9", set()),  # saved too recently to call crashed
        ("running", "1e9", {"crashed_run", "cli_crashed_run", "approval_run"}),
        ("interrupted", "0", {"interrupted_run", "batch_run", "orphan_run"}),
        ("failed", "0", {"failed_run"}),
        ("completed", "0", {"crash_window_run", "cli_completed_run"}),
    ],
)
def test_runs_status_filter(
    demo: Any,
    capsys: pytest.CaptureFixture[str],
    status: str,
    stale_after: str,
    expected: set[str],
) -> None:
    records = cli_json(
        capsys,
        "runs",
        demo.directory,
        "--json",
        "--stale-after",
        stale_after,
        "--status",
        status,
    )["runs"]
    assert {record["run_id"] for record in records} == {
        getattr(demo, name) for name in expected
    }


def test_runs_of_one_file_and_as_a_table(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    records = cli_json(capsys, "runs", demo.runs_db, "--json")["runs"]
    # Without sessions.db open, the appended run's segment is not visible: no link.
    assert {(r["run_id"], r["session_id"]) for r in records} == {
        (demo.cli_crashed_run, None), (demo.cli_completed_run, None),
    }  # fmt: skip
    code, out, err = cli(capsys, "runs", demo.runs_db, "--stale-after", "0")
    assert (code, err) == (0, "")
    assert "run_job" in out and "unlinked" in out


def test_the_runs_table_shows_the_first_and_says_there_are_more(
    demo: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table is laid out whole (minutes for 200,000 runs): it shows the
    first ``TABLE_ROWS`` (running first) and says how to see the rest;
    ``--json`` has all."""
    monkeypatch.setattr(runs_cli, "TABLE_ROWS", 1)
    [first, second] = cli_json(capsys, "runs", demo.runs_db, "--json")["runs"]
    code, out, err = cli(capsys, "runs", demo.runs_db)
    assert code == 0 and first["run_id"] in out and second["run_id"] not in out
    assert err.startswith(
        "lovia-tui: note: the first 1 run only (running first); more exist"
    )
    code, out, err = cli(capsys, "runs", demo.runs_db, "--limit", "1")
    assert code == 0 and second["run_id"] not in out
    assert err.startswith(
        "lovia-tui: note: the first 1 run only (running first); more exist"
    )
    code, out, err = cli(capsys, "runs", demo.runs_db, "--limit", "2")
    assert (code, err) == (0, "") and second["run_id"] in out


# -------------------------------------------------------------- sessions


def test_sessions_says_when_the_limit_cut_the_list(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """50 of 4,000 printed with no word that more exist (nor in --json)."""
    shown = cli_json(capsys, "sessions", demo.directory, "--limit", "3", "--json")
    assert (len(shown["sessions"]), shown["more"]) == (3, True)
    code, out, err = cli(capsys, "sessions", demo.directory, "--limit", "3")
    assert code == 0 and "more exist (--limit N shows more)" in err
    everything = cli_json(capsys, "sessions", demo.directory, "--json")
    assert everything["more"] is False
    code, out, err = cli(capsys, "sessions", demo.directory)
    assert (code, err) == (0, "")


def test_sessions_json(demo: Any, capsys: pytest.CaptureFixture[str]) -> None:
    sessions = cli_json(capsys, "sessions", demo.directory, "--json")["sessions"]
    assert all(set(s) == SESSION_KEYS for s in sessions)
    chats = dict(raw(demo.web_db, "SELECT id, title FROM chat_sessions"))
    by_id = {s["session_id"]: s for s in sessions}
    assert set(by_id) == set(chats) | {
        demo.cli_session, demo.cli_completed_session,
        demo.compacted_session, demo.attachments_session,
    }  # fmt: skip
    assert (by_id[demo.batch_session]["runs"], by_id[demo.batch_session]["title"]) == (
        0, "Parallel jobs (cancelled)",
    )  # fmt: skip
    assert by_id[demo.cli_session]["title"] == "What's on today? 今日の予定は?"
    assert by_id[demo.cli_session]["file"] == str(demo.sessions_db)
    assert by_id[demo.trip_session]["runs"] == 3
    activity = [s["last_activity"] for s in sessions]
    assert activity == sorted(activity, reverse=True)

    limited = cli_json(capsys, "sessions", demo.directory, "--json", "--limit", "3")[
        "sessions"
    ]
    assert limited == sessions[:3]


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("金閣寺", {"trip_session", "cli_session"}),
        ('{"topic": "weather"}', {"trip_session", "cli_session"}),
        ("Report ready", {"cli_completed_session"}),
        ("no such text anywhere ✗", set()),
    ],
)
def test_sessions_search(
    demo: Any, capsys: pytest.CaptureFixture[str], needle: str, expected: set[str]
) -> None:
    found = cli_json(capsys, "sessions", demo.directory, "--json", "--search", needle)[
        "sessions"
    ]
    assert {s["session_id"] for s in found} == {
        getattr(demo, name) for name in expected
    }
    assert all(s["runs"] > 0 for s in found)


def test_sessions_search_limit(demo: Any, capsys: pytest.CaptureFixture[str]) -> None:
    found = cli_json(
        capsys, "sessions", demo.web_db, "--json", "--search", "lookup", "--limit", "2"
    )["sessions"]
    assert len(found) == 2


# ------------------------------------------------------------------ show


@pytest.mark.parametrize(
    ("files", "session", "segments"),
    [(("web_db",), "trip_session", 3), (("sessions_db", "runs_db"), "cli_session", 2)],
)
def test_show_json_indices_are_flat_positions(
    demo: Any,
    capsys: pytest.CaptureFixture[str],
    files: tuple[str, ...],
    session: str,
    segments: int,
) -> None:
    paths = [getattr(demo, name) for name in files]
    sid = getattr(demo, session)
    shown = cli_json(capsys, "show", *paths, sid, "--json")
    assert (shown["session_id"], shown["file"]) == (sid, str(paths[0]))
    assert len(shown["segments"]) == segments
    stored = raw(
        paths[0],
        "SELECT run_id, entries_json FROM session_runs WHERE session_id = ? ORDER BY id",
        sid,
    )
    flat = []
    for segment, (run_id, text) in zip(shown["segments"], stored, strict=True):
        assert segment["run_id"] == run_id
        assert segment["first_index"] == len(flat)
        assert segment["entry_count"] == len(segment["entries"])
        assert segment["started_at"] <= segment["finished_at"]
        assert [
            {k: v for k, v in e.items() if k != "index"} for e in segment["entries"]
        ] == (json.loads(text))
        flat.extend(segment["entries"])
    assert [entry["index"] for entry in flat] == list(range(len(flat)))

    code, out, err = cli(capsys, "show", *paths, sid)
    assert (code, err) == (0, "")
    assert f"{len(flat) - 1:>5}  assistant_text" in out


def test_show_a_chat_with_no_segment_yet(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = cli_json(capsys, "show", demo.directory, demo.batch_session, "--json")
    flight = shown.pop("in_flight")
    # lovia web's record of the run: its checkpoint, not a segment, holds it.
    assert shown.pop("chat")["title"] == "Parallel jobs (cancelled)"
    assert [
        (r["run_id"], r["status"], r["in_transcript"]) for r in shown.pop("runs")
    ] == [(demo.batch_run, "interrupted", False)]
    assert shown == {
        "session_id": demo.batch_session,
        "file": str(demo.web_db),
        "segments": [],
        "in_flight_more": [],
    }
    # Its only run, cancelled mid-batch: what lovia web's page shows of it.
    assert (flight["run_id"], flight["status"]) == (demo.batch_run, "interrupted")
    assert [e["index"] for e in flight["entries"]] == list(
        range(len(flight["entries"]))
    )
    assert flight["entries"][0]["role"] == "user"
    # What it spent before it was cancelled, cache tokens included.
    assert set(flight["usage"]) >= {"input_tokens", "cache_read_tokens"}
    assert flight["last_input_tokens"] is not None
    code, out, _ = cli(capsys, "show", demo.directory, demo.batch_session)
    seam = next(line for line in out.splitlines() if "not yet in the session" in line)
    assert "tokens " in seam and "cache read" in seam, seam


def test_corrupt_rows_are_reported_not_fatal(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Hostile input on the copy: a segment and a head that do not parse.
    with contextlib.closing(sqlite3.connect(demo.web_db)) as conn:
        [(first_id,)] = conn.execute(
            "SELECT MIN(id) FROM session_runs WHERE session_id = ?",
            (demo.trip_session,),
        ).fetchall()
        conn.execute(
            "UPDATE session_runs SET entries_json = '[{' WHERE id = ?", (first_id,)
        )
        conn.execute(
            "INSERT INTO snapshot_heads (run_id, head_json, updated_at) VALUES ('run-bad', '{', ?)",
            (time.time(),),
        )
        conn.commit()
    shown = cli_json(capsys, "show", demo.directory, demo.trip_session, "--json")
    broken, *rest = shown["segments"]
    assert "invalid JSON" in broken["unreadable"] and "entries" not in broken
    assert broken["entry_count"] is None
    # The later segments still print, with their flat index unknown.
    assert [len(s["entries"]) for s in rest] == [4, 6]
    assert all(e["index"] is None for s in rest for e in s["entries"])
    assert all(s["first_index"] is None for s in rest)
    code, out, err = cli(capsys, "show", demo.directory, demo.trip_session)
    assert (code, err) == (0, "") and "unreadable" in out
    assert "    ?  user           And the weather?" in out  # unknown index, not a crash

    runs = {
        r["run_id"]: r
        for r in cli_json(capsys, "runs", demo.directory, "--json")["runs"]
    }
    assert runs["run-bad"]["status"] == "unreadable"
    assert runs[demo.crashed_run]["status"] == "running"


# ---------------------------------------------------------------- export


def test_export_markdown_and_json(
    demo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, markdown, err = cli(capsys, "export", demo.directory, demo.trip_session)
    assert (code, err) == (0, "")
    assert markdown.startswith(f"# Session `{demo.trip_session}`\n")
    assert "**#0 user**\n\nPlan two days in Kyoto for me." in markdown
    assert "**#14 assistant**" in markdown and "金閣寺" in markdown
    assert markdown.count("## Run `") == 3

    exported = cli_json(
        capsys, "export", demo.directory, demo.trip_session, "--format", "json"
    )
    assert exported["session_id"] == demo.trip_session
    entries = [e for s in exported["segments"] for e in s["entries"]]
    assert [e["index"] for e in entries] == list(range(15))

    target = tmp_path / "kyoto.md"
    code, out, err = cli(
        capsys, "export", demo.directory, demo.trip_session, "-o", target
    )
    assert (code, out) == (0, "")
    assert err == f"wrote 15 entries to {target}\n"
    assert target.read_text(encoding="utf-8") == markdown

    target = tmp_path / "daily.json"
    code, _, err = cli(
        capsys,
        "export",
        demo.sessions_db,
        demo.cli_session,
        "--format",
        "json",
        "-o",
        target,
    )
    assert code == 0 and err == f"wrote 9 entries to {target}\n"
    assert len(json.loads(target.read_text(encoding="utf-8"))["segments"]) == 2


def test_readonly_flag_leaves_the_files_alone(
    demo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def digests() -> dict[str, str]:
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in demo.directory.iterdir()
        }

    before = digests()
    for argv in (
        ["sessions", demo.directory, "--json", "--readonly"],
        ["sessions", demo.directory, "--json", "--readonly", "--search", "金閣寺"],
        ["show", demo.directory, demo.cli_session, "--json", "--readonly"],
        ["runs", demo.directory, "--json", "--readonly"],
        [
            "export",
            demo.directory,
            demo.trip_session,
            "--readonly",
            "-o",
            tmp_path / "x.md",
        ],
    ):
        code, _, _ = cli(capsys, *argv)
        assert code == 0, argv
    after = digests()
    assert {name: after[name] for name in before} == before
    for name in set(after) - set(before):
        assert name in ("assistant.db-wal", "assistant.db-shm")
        assert not name.endswith("-wal") or (demo.directory / name).stat().st_size == 0
    assert raw(demo.sessions_db, "PRAGMA journal_mode") == [("delete",)]


# ---------------------------------------------------------------- errors


def _missing(demo: Any, tmp_path: Path) -> list[Any]:
    return ["runs", tmp_path / "nope.db", "--json"]


def _not_lovia(demo: Any, tmp_path: Path) -> list[Any]:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n")
    return ["sessions", path]


def _no_lovia_tables(demo: Any, tmp_path: Path) -> list[Any]:
    path = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    return ["runs", demo.web_db, path]


def _empty_dir(demo: Any, tmp_path: Path) -> list[Any]:
    (tmp_path / "empty").mkdir()
    return ["sessions", tmp_path / "empty"]


def _unknown_session(demo: Any, tmp_path: Path) -> list[Any]:
    return ["show", demo.directory, "no-such-session", "--json"]


def _unknown_export(demo: Any, tmp_path: Path) -> list[Any]:
    return ["export", demo.directory, "no-such-session"]


def _no_session_id(demo: Any, tmp_path: Path) -> list[Any]:
    return ["show", demo.directory]


ERRORS = {
    "missing-path": (_missing, "no such file"),
    "not-sqlite": (_not_lovia, "not a SQLite database"),
    "not-lovia": (_no_lovia_tables, "not a lovia database"),
    "empty-dir": (_empty_dir, "no *.db"),
    "unknown-session": (_unknown_session, "no session 'no-such-session'"),
    "unknown-export": (_unknown_export, "no session 'no-such-session'"),
    "no-session-id": (_no_session_id, "SESSION_ID"),
}


@pytest.mark.parametrize("kind", ERRORS)
def test_errors_are_one_line_exit_2(
    demo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    build, fragment = ERRORS[kind]
    argv = build(demo, tmp_path)
    code, out, err = cli(capsys, *argv)
    if "--json" in argv:  # the same error as an object on stdout
        message = err.removeprefix("lovia-tui: ").removesuffix("\n")
        assert json.loads(out) == {
            "error": {"kind": "refused", "message": message, "exit": 2}
        }
        out = ""
    assert_one_line_error(code, out, err)
    assert fragment in err


def test_a_directory_skips_what_is_no_lovia_database_and_says_so(
    demo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another program's ``*.db`` beside lovia's (or an empty file) is left
    out with a note on stderr; named alone, or alone in its directory, it is
    the command's one-line error as before."""
    directory = tmp_path / "dot-lovia"
    copy_files(demo.web_db, directory)
    [other] = _no_lovia_tables(demo, directory)[2:]
    (directory / "empty.db").touch()
    code, out, err = cli(capsys, "sessions", directory, "--json")
    assert code == 0 and json.loads(out)["sessions"]
    notes = err.splitlines()
    assert len(notes) == 2 and all(
        n.startswith("lovia-tui: note: skipped ") for n in notes
    )
    assert f"{other}: not a lovia database" in err and "empty.db: empty file" in err
    assert_one_line_error(*cli(capsys, "sessions", other))
    (directory / demo.web_db.name).unlink()
    (directory / "empty.db").unlink()
    code, out, err = cli(capsys, "runs", directory)
    assert_one_line_error(code, out, err)
    assert "no lovia database among the files found" in err


async def test_the_app_says_which_files_of_a_directory_it_skipped(
    demo: Any, tmp_path: Path
) -> None:
    directory = tmp_path / "dot-lovia"
    copy_files(demo.web_db, directory)
    [other] = _no_lovia_tables(demo, directory)[2:]
    app = make_app([directory], stale_after=1e9)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        said = [n.message for n in app._notifications]
        assert f"skipped {other}: not a lovia database" in " ".join(said)
        assert app.screen.sessions.keys  # the lovia file's sessions show


def test_no_path_and_no_dot_lovia_suggests_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys)  # the app: fails before taking the screen
    assert_one_line_error(code, out, err)
    assert "lovia-tui demo" in err
    assert list(tmp_path.iterdir()) == []


async def test_dot_lovia_is_the_default(
    demo_dir: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_files(demo_dir.web_db, tmp_path / ".lovia")
    monkeypatch.chdir(tmp_path)
    assert resolve_paths([]) == [Path(".lovia") / "assistant.db"]
    ws = await Workspace.open([], readonly=True)
    try:
        assert [db.path for db in ws.databases] == [Path(".lovia") / "assistant.db"]
        assert await ws.find_run(demo_dir.crashed_run)
    finally:
        await ws.close()


def test_module_help_runs_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lovia_tui", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: lovia-tui")
    for name in ("sessions", "show", "runs", "export"):
        assert f"  {name} " in done.stdout
