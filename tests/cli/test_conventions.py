"""The CLI's conventions (docs/cli.md), held over every subcommand.

From the parsers themselves: help on every option, every numeric option
validated under the name it was typed with, the one duration syntax,
``--readonly`` wherever a command can read only. From one table of runs on
one copy of the demo: every ``--json`` output an object, and the exit codes.
A real SIGINT to a resume stuck in a tool: 130, no traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.lovia_factory import (
    append_entries,
    copy_files,
    integrity,
    raw,
    write_heads,
)
from support.resume import JOBS_ENV, RUN, SESSION, build_crashed

from lovia_tui.cli import SUBCOMMANDS, _app_parser, command_parser, load_command
from lovia_tui.cli import main as cli_main

TESTS_DIR = Path(__file__).parents[1]
APP = "(app)"
NAMES = [APP, *SUBCOMMANDS]
NO_READ_ONLY_USE = {"demo", "resume", "replay"}
"""They exist to write: a new demo, a run continued or re-appended by lovia."""
PLAIN_UNIT = {"--stale-after": 1, "--wait": 1, "--older-than": 86_400}
"""What a plain number meant before durations had units, kept."""


def _parser(name: str) -> argparse.ArgumentParser:
    return _app_parser() if name == APP else command_parser(load_command(name))


def _options(name: str) -> list[argparse.Action]:
    return [
        action
        for action in _parser(name)._actions
        if not isinstance(action, argparse._HelpAction | argparse._VersionAction)
    ]


def _validated(action: argparse.Action) -> bool:
    return getattr(action.type, "__module__", "") == "lovia_tui.cli.option_types"


@pytest.mark.parametrize("name", NAMES)
def test_every_option_and_argument_has_help(name: str) -> None:
    missing = [a.dest for a in _options(name) if not (a.help or "").strip()]
    assert missing == []


@pytest.mark.parametrize("name", NAMES)
def test_numbers_are_checked_by_our_types_and_refused_under_their_own_name(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = _options(name)
    assert [a.dest for a in options if a.type in (int, float)] == []
    for action in filter(_validated, options):
        option = max(action.option_strings, key=len)
        # A count past SQLite's integers too: it reached SQLite as an OverflowError.
        past = ["9223372036854775808"] if "count" in action.type.__qualname__ else []
        for value in ["-1", *past]:
            argv = [option, value] if name == APP else [name, option, value]
            code = cli_main(argv)
            err = capsys.readouterr().err
            where = "" if name == APP else f"{name}: "
            assert code == 2, argv
            assert err.startswith(f"lovia-tui: {where}argument {option}: "), err
            assert err.count("\n") == 1 and f"'{value}'" in err
            assert "Traceback" not in err


def test_a_port_past_65535_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """It was a traceback (OverflowError from bind) and exit 1."""
    assert cli_main(["serve", "--port", "65536"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lovia-tui: serve: argument --port: ") and "65535" in err


@pytest.mark.parametrize("name", NAMES)
def test_durations_take_one_syntax_and_plain_numbers_keep_their_unit(
    name: str,
) -> None:
    for action in filter(_validated, _options(name)):
        if action.dest == "since":
            now = time.time()
            assert abs(action.type("2h") - (now - 7_200)) < 5
            assert abs(action.type("90") - (now - 90)) < 5
            continue
        if not action.type.__qualname__.startswith("duration."):
            continue
        option = max(action.option_strings, key=len)
        assert (action.type("30s"), action.type("5m")) == (30, 300)
        assert (action.type("2h"), action.type("7d")) == (7_200, 604_800)
        assert action.type("3") == 3 * PLAIN_UNIT[option], option


@pytest.mark.parametrize("name", NAMES)
def test_readonly_wherever_a_command_can_only_read(name: str) -> None:
    has = any("--readonly" in a.option_strings for a in _options(name))
    assert has == (name not in NO_READ_ONLY_USE)


@pytest.mark.parametrize(
    "name", ["rewind", "trim", "delete-run", "finalize", "keep-partial", "clear"]
)
def test_every_action_takes_the_same_safety_options(name: str) -> None:
    flags = {flag for a in _options(name) for flag in a.option_strings}
    assert {"--yes", "--reason", "--json", "--readonly", "--force"} <= flags
    assert "--stale-after" in flags


# ------------------------------------------------ runs on one copy of the demo


@pytest.fixture(scope="module")
def demo(demo_dir: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = tmp_path_factory.mktemp("conventions") / "demo"
    for path in demo_dir.files:
        copy_files(path, directory)
    return dataclasses.replace(demo_dir, directory=directory)


def cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = cli_main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


JSON_COMMANDS = [
    "sessions", "show", "runs", "rewind", "trim", "delete-run", "finalize", "keep-partial", "clear",
    "fork", "journal", "undo", "doctor", "search", "index", "resume", "replay",
]  # fmt: skip


def _json_runs(d: Any) -> dict[str, tuple[list[Any], int, set[str]]]:
    """Each subcommand with ``--json``: its arguments, exit code, top-level keys."""
    age = ["--stale-after", "0"]
    actions = {"preview", "result"}
    return {
        "sessions": ([d.directory], 0, {"sessions"}),
        "show": ([d.directory, d.trip_session], 0, {"session_id", "segments"}),
        "runs": ([d.directory], 0, {"runs"}),
        "rewind": ([d.directory, d.cli_session, "--keep", "2", *age], 0, actions),
        "trim": ([d.directory, d.trimmed_session, *age], 0, actions),
        "delete-run": ([d.directory, d.orphan_run, *age], 0, actions),
        "finalize": ([d.directory, d.cli_crashed_run, "--session", d.cli_session, *age], 0, actions),
        "keep-partial": ([d.directory, d.cli_crashed_run, "--session", d.cli_session, *age], 0, actions),
        "clear": ([d.directory, d.cli_session, *age], 0, actions),
        "fork": ([d.directory, d.cli_session, "--keep", "2"], 0, actions),
        "journal": ([d.directory], 0, {"entries"}),
        "undo": ([d.directory], 0, actions),  # nothing journaled: nothing to do
        "doctor": ([d.directory], 1, {"findings"}),
        "search": ([d.directory, "Kinkaku"], 0, {"query", "results"}),
        "index": ([d.directory, "--status"], 0, {"files"}),
        "resume": ([d.directory, d.cli_crashed_run, "--session", d.cli_session, *age], 2, {"error"}),  # refused (no --agent): the error object
        "replay": ([d.directory, d.crash_window_run], 0, {"kind"}),
    }  # fmt: skip


def test_the_json_table_covers_every_command_with_json(demo: Any) -> None:
    with_json = {
        name
        for name in SUBCOMMANDS
        if any("--json" in a.option_strings for a in _options(name))
    }
    assert with_json == set(_json_runs(demo)) == set(JSON_COMMANDS)


@pytest.mark.parametrize("name", JSON_COMMANDS)
def test_json_is_an_object_and_the_exit_code_as_documented(
    name: str, demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, expected, keys = _json_runs(demo)[name]
    code, out, err = cli(capsys, name, *argv, "--json")
    assert code == expected, err
    if name in ("resume", "replay"):  # one object per line, the preflight first
        objects = [json.loads(line) for line in out.splitlines()]
    else:
        objects = [json.loads(out)] if out else []
    assert all(isinstance(o, dict) for o in objects)
    assert (objects[0].keys() & keys if objects else set()) == keys
    if name == "doctor":
        assert objects[0]["findings"]
        assert all(
            Path(f["file"]).parent == demo.directory for f in objects[0]["findings"]
        )
    if code == 2:
        assert err.startswith("lovia-tui: ") and err.count("\n") == 1
        assert objects == [{"error": _error("refused", err)}]


def _error(kind: str, err: str, code: int = 2) -> dict[str, Any]:
    """The JSON error object of a failure whose stderr line is ``err``."""
    message = err.removeprefix("lovia-tui: ").removesuffix("\n")
    return {"kind": kind, "message": message, "exit": code}


@pytest.mark.parametrize("name", JSON_COMMANDS)
def test_with_json_a_usage_error_is_a_json_object_too(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script reading stdout got nothing when a command failed: with
    ``--json`` the failure is an object there too, ``{"error": {...}}``, the
    same words as the line on stderr, with the same exit code."""
    code, out, err = cli(capsys, name, "--json", "--no-such-option")
    assert code == 2 and err.startswith("lovia-tui: ") and err.count("\n") == 1
    assert json.loads(out) == {"error": _error("usage", err)}
    if name in ("resume", "replay"):  # one object per line: one line
        assert out.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "lines"),
    [
        (["runs", "{d}/nope.db", "--json"], False),
        (["runs", "{d}/nope.db", "--jsonl"], True),
        (["rewind", "{d}", "no-such-session", "--keep", "1", "--json"], False),
        (["undo", "{d}", "9223372036854775808", "--json"], False),
        (["replay", "{d}", "no-such-run", "--json"], True),
    ],
)
def test_with_json_a_refusal_is_a_json_object_on_stdout(
    argv: list[str], lines: bool, demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The human line stays on stderr; stdout holds the error object (one
    compact line where the output is one object per line)."""
    code, out, err = cli(capsys, *(a.format(d=demo.directory) for a in argv))
    assert code == 2 and err.startswith("lovia-tui: ") and err.count("\n") == 1
    assert json.loads(out) == {"error": _error("refused", err)}
    assert (out.count("\n") == 1) is lines, out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--agent", "nosuch:agent"], "--agent nosuch:agent: no module named 'nosuch'"),
        (["resume", "{d}", "run-cli-crashed", "--agent", "nosuch:agent"], "no module"),
        (["rewind", "{d}", "no-such-session", "--keep", "1"], "no-such-session"),
        (["export", "{d}", "chat-kyoto", "-o", "{d}/sessions.db"], "database"),
        # Bytes that are not UTF-8, as a shell passes them (surrogate-escaped).
        (
            ["rewind", "{d}", "\udced\udca0", "--keep", "1"],
            "SESSION_ID '\ufffd\ufffd' is not valid UTF-8",
        ),
        (["show", "{d}", "chat-\udcff"], "not valid UTF-8"),
        (["delete-run", "{d}", "run-\udcff"], "RUN_ID"),
        (
            ["rewind", "{d}", "chat-kyoto", "--keep", "1", "--reason", "\udcff"],
            "reason",
        ),
        (["sessions", "{d}", "--search", "\udcff"], "search"),
        (
            ["undo", "{d}", "9223372036854775808"],
            "no journal entry 9223372036854775808",
        ),
        (["undo", "{d}", "²"], "one journal entry id"),
    ],
)
def test_refusals_are_one_line_and_exit_2(
    argv: list[str], said: str, demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, *(a.format(d=demo.directory) for a in argv))
    assert (code, out) == (2, "")
    assert err.startswith("lovia-tui: ") and err.count("\n") == 1 and said in err


def test_trim_refuses_a_live_run_of_its_session_unless_forced(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """As its siblings: the demo's crashed run of chat-export, saved within a
    day, may be live; ``--force`` previews anyway, ``--stale-after`` decides."""
    argv = ["trim", demo.directory, demo.crashed_session]
    code, out, err = cli(capsys, *argv, "--stale-after", "1d")
    assert (code, out) == (2, "")
    assert f"run {demo.crashed_run} is live" in err and "trimming session" in err
    assert cli(capsys, *argv, "--stale-after", "1d", "--force")[0] == 0
    assert cli(capsys, *argv, "--stale-after", "0")[0] == 0


def test_keep_past_the_end_does_nothing_in_rewind_and_fork_alike(
    demo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    before = raw(demo.sessions_db, "SELECT session_id, run_id FROM session_runs")
    for command in ("rewind", "fork"):
        code, out, _ = cli(
            capsys, command, demo.directory, demo.cli_session, "--keep", "99", "--yes"
        )
        assert code == 0
        assert (
            f"{command} {demo.cli_session}: nothing to do: keeping 99 is past its end (9 entries"
            in out
        )
    assert (
        raw(demo.sessions_db, "SELECT session_id, run_id FROM session_runs") == before
    )


def test_wording_counts_in_entries_and_agrees_in_number(
    demo: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An empty journal says so (read with --readonly, it is not created);
    rewind and its undo count entries; one checkpoint is "1 checkpoint";
    export onto a file names --force."""
    journal = Path(os.environ["LOVIA_TUI_JOURNAL"])
    code, out, _ = cli(capsys, "journal", demo.directory, "--readonly")
    assert code == 0 and out.startswith("no actions journaled on these files")
    assert not journal.exists()  # --readonly creates no journal
    code, _, err = cli(capsys, "journal", "--prune", "--readonly")
    assert code == 2 and "--prune writes the journal" in err
    argv = [demo.directory, demo.cli_session, "--keep", "2", "--stale-after", "0"]
    code, out, _ = cli(capsys, "rewind", *argv, "--yes")
    assert code == 0 and "done: 8 entries removed;" in out
    code, out, _ = cli(capsys, "undo", demo.directory, "--yes")
    assert code == 0 and "done: 8 entries restored (2 rows restored;" in out
    argv = [demo.directory, demo.orphan_run, "--stale-after", "0", "--yes"]
    code, out, _ = cli(capsys, "delete-run", *argv)
    assert code == 0 and "done: 1 checkpoint deleted;" in out
    code, out, _ = cli(capsys, "undo", demo.directory, "--yes")
    assert code == 0 and "done: 1 checkpoint restored (3 rows restored;" in out
    code, out, _ = cli(capsys, "journal", demo.directory, "--readonly")
    assert "1 checkpoint deleted" in out and "8 entries removed" in out
    for path in demo.files:
        assert integrity(path) == "ok"

    target = tmp_path / "out.md"
    assert (
        cli(capsys, "export", demo.directory, demo.trip_session, "-o", target)[0] == 0
    )
    code, _, err = cli(
        capsys, "export", demo.directory, demo.trip_session, "-o", target
    )
    assert (
        code == 2 and err == f"lovia-tui: {target} exists: add --force to replace it\n"
    )


def test_piped_tables_keep_ids_whole(
    demo: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns and piped (not a terminal), each row is one line with its
    ids whole: a lovia web id of 32 hex digits beside a title included."""
    monkeypatch.setenv("COLUMNS", "80")
    for command, id_key in (("runs", "run_id"), ("sessions", "session_id")):
        listed = json.loads(cli(capsys, command, demo.directory, "--json")[1])
        ids = [record[id_key] for record in listed[command]]
        code, out, _ = cli(capsys, command, demo.directory)
        assert code == 0
        rows = [line for line in out.splitlines() if line.startswith("│")]
        assert len(rows) == len(ids)  # one line per row
        for row, each in zip(rows, ids, strict=True):
            assert f" {each} " in row
        assert max(map(len, rows)) > 80
    assert any(len(each) == 32 for each in ids)


def test_piped_show_keeps_each_runs_line_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's line in ``show`` (its id, its time, who ran it, its error) is
    cut to a terminal's width only at a terminal: piped, it goes out whole."""
    from lovia import SQLiteSession
    from lovia.transcript import InputEntry

    monkeypatch.setenv("COLUMNS", "80")
    run_id = "run-" + "0123456789" * 9 + "-END"
    db = tmp_path / "long.db"
    asyncio.run(
        SQLiteSession(db).append("s", [InputEntry("user", "hi")], run_id=run_id)
    )
    code, out, _ = cli(capsys, "show", db, "s")
    assert code == 0
    [line] = [line for line in out.splitlines() if "── run " in line]
    assert f" {run_id} · " in line and line.endswith("──")


# ------------------------------------------------------------------ Ctrl+C


def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    """A resume whose tool never finishes, interrupted by a real SIGINT (a
    second one if lovia's safe point does not come): 130, and the files sound."""
    workspace = tmp_path / "ws"
    build_crashed(workspace)
    log = tmp_path / "jobs.log"
    resume = subprocess.Popen(
        [
            sys.executable, "-m", "lovia_tui", "resume", str(workspace), RUN,
            "--agent", "support.resume:assistant", "--deps", "support.resume:held_jobs",
            "--session", SESSION, "--stale-after", "0", "--yes",
        ],
        cwd=TESTS_DIR, env={**os.environ, JOBS_ENV: str(log)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text()) and resume.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)  # bounded by the deadline above
    resume.send_signal(signal.SIGINT)
    try:
        _, err = resume.communicate(timeout=3)
    except subprocess.TimeoutExpired:  # lovia's safe point waits for the tool
        resume.send_signal(signal.SIGINT)
        _, err = resume.communicate(timeout=60)
    assert resume.returncode == 130, err
    assert "Traceback" not in err
    for path in workspace.glob("*.db"):
        assert integrity(path) == "ok"


def test_an_error_naming_a_huge_stored_id_stays_readable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Its start and its end (where a refusal says what happened) are kept."""
    from lovia_tui.cli.command import fail
    from lovia_tui.core.formatting import MESSAGE_CHARS as ERROR_CHARS

    assert fail(f"run r belongs to session '{'I' * 100_000}'; nothing was done") == 2
    err = capsys.readouterr().err
    assert err.startswith("lovia-tui: run r belongs to session 'III")
    assert err.endswith("III'; nothing was done\n") and err.count("\n") == 1
    assert len(err) < ERROR_CHARS + 100 and "(98,0" in err


async def test_a_notification_naming_a_huge_stored_id_stays_readable(
    demo: Any,
) -> None:
    """The app's toasts keep the same start and end as the CLI's errors."""
    from lovia_tui.app import make_app
    from lovia_tui.core.formatting import MESSAGE_CHARS

    app = make_app([demo.directory], readonly=True)
    async with app.run_test() as pilot:
        app.notify(f"no session '{'I' * 100_000}'; nothing was done")
        await pilot.pause()
        toast = next(n for n in app._notifications if "no session" in n.message)
    assert toast.message.startswith("no session 'III")
    assert toast.message.endswith("III'; nothing was done")
    assert len(toast.message) < MESSAGE_CHARS + 100


def read_one_byte_and_leave(*argv: str) -> tuple[int, bytes]:
    """``lovia-tui ARGV | head -c1``: (exit status, stderr)."""
    command = subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert command.stdout is not None and command.stdout.read(1)
    command.stdout.close()
    _, err = command.communicate(timeout=60)
    return command.returncode, err


def test_text_output_to_a_reader_that_went_away_exits_0(tmp_path: Path) -> None:
    """`show ... | head -c1`: Rich called the broken pipe exit 1, which broke
    `set -o pipefail` scripts; every output stops quietly with 0."""
    path = tmp_path / "long.db"
    asyncio.run(append_entries(path, "long", 1_500))  # ~100 KB: past a pipe's buffer
    assert read_one_byte_and_leave("show", str(path), "long") == (0, b"")


def test_the_doctor_to_a_reader_that_went_away_keeps_its_status(
    tmp_path: Path,
) -> None:
    """`doctor | head`: the findings are known before the first line, so the
    status says them (1) even when the reader goes away; it exited 0."""
    path = tmp_path / "fleet.db"
    asyncio.run(write_heads(path, 400, time.time()))  # ~78 KB: past a pipe's buffer
    for output in ([], ["--json"]):
        assert read_one_byte_and_leave("doctor", str(path), *output) == (1, b"")


def test_output_options_that_contradict_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runs --json --jsonl` printed lines (cli.md: --json is one object);
    `index --drop --readonly` deleted the index files."""
    path = tmp_path / "s.db"
    asyncio.run(append_entries(path, "s", 1))
    assert cli_main(["runs", str(path), "--json", "--jsonl"]) == 2
    assert "not allowed with" in capsys.readouterr().err
    assert cli_main(["index", str(path), "--drop", "--readonly"]) == 2
    assert "--readonly" in capsys.readouterr().err


def test_counts_agree_in_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cli.md's wording: "1 run", never "1 runs" (trim, the Markdown export)."""
    path = tmp_path / "one.db"
    asyncio.run(append_entries(path, "s", 1))
    assert cli_main(["trim", str(path), "s", "--keep-runs", "1"]) == 0
    assert "it keeps the last 1 run, and" in capsys.readouterr().out
    assert cli_main(["export", str(path), "s", "-o", str(tmp_path / "s.md")]) == 0
    assert "_1 run, from " in (tmp_path / "s.md").read_text()


def test_export_to_dash_is_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """`-o -` wrote a file named "-"; `-o ''` blamed the directory."""
    path = tmp_path / "one.db"
    asyncio.run(append_entries(path, "s", 1))
    monkeypatch.chdir(tmp_path)
    assert cli_main(["export", str(path), "s", "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("# Session `s`")
    assert not (tmp_path / "-").exists()
    assert cli_main(["export", str(path), "s", "-o", ""]) == 2
    assert "expected a file name, or - for stdout" in capsys.readouterr().err


def test_an_id_with_a_newline_or_a_tab_stays_on_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sessions | cat` split a row whose id held a newline, and a tab came
    out as spaces; `fork --as` printed its new id over two lines."""
    path = tmp_path / "odd.db"
    asyncio.run(append_entries(path, "nl\nline2", 1))
    asyncio.run(append_entries(path, "tab\there", 1, prefix="t"))
    assert cli_main(["sessions", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nl␊line2" in out and "tab␉here" in out
    assert not any(line.startswith("line2") for line in out.splitlines())
    argv = ["fork", str(path), "tab\there", "--keep", "1", "--as", "a\nb", "--yes"]
    assert cli_main(argv) == 0
    assert "done: new session a␊b; undo with" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "{d}"],
        ["undo", "{d}", "abc"],
        ["journal", "--json"],
        ["fork", "{d}", "cli-daily", "--keep", "1", "--as", ""],  # was a fresh id
    ],
)
def test_positionals_the_parser_cannot_judge_are_usage_errors_too(
    demo: Any, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Said as argparse's own: the command named, and where its help is."""
    code = cli_main([a.format(d=demo.directory) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"lovia-tui: {argv[0]}: ") and "expected" in err
    assert err.endswith(f"(see lovia-tui {argv[0]} --help)\n")


def test_commands_of_files_alone_read_dot_lovia_as_the_app_does(
    demo: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No PATH: ./.lovia/*.db, as bare `lovia-tui` opens; none there, one line
    saying so (it said only that PATH is required)."""
    taking_paths = [
        name
        for name in SUBCOMMANDS
        if any(a.dest == "paths" and a.metavar == "PATH" for a in _options(name))
    ]
    assert {"sessions", "runs", "doctor"} <= set(taking_paths)
    (tmp_path / ".lovia").mkdir()
    copy_files(demo.web_db, tmp_path / ".lovia")
    monkeypatch.chdir(tmp_path)
    for name in ("sessions", "runs", "doctor"):
        assert cli_main([name, "--readonly", "--json"]) in (0, 1), name
        assert json.loads(capsys.readouterr().out), name
    monkeypatch.chdir(tmp_path / ".lovia")
    assert cli_main(["sessions"]) == 2
    assert "no ./.lovia/*.db here" in capsys.readouterr().err
