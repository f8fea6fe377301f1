"""The action subcommands: nothing changes without --yes, errors are one line."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from lovia import SQLiteSession
from support.lovia_factory import copy_db, raw, rows

from lovia_tui.cli import main
from lovia_tui.cli.command import split_paths_and_ids
from lovia_tui.core.errors import LoviaTuiError

pytestmark = pytest.mark.usefixtures("private_journal")


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def files_bytes(*paths: Path) -> list[bytes]:
    """The databases' bytes, and their write-ahead logs' (an empty log holds nothing)."""
    logs = [p.with_name(p.name + "-wal") for p in paths]
    return [p.read_bytes() for p in paths] + [
        w.read_bytes() for w in logs if w.exists() and w.stat().st_size
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["rewind", "s", "--keep", "4"],
        ["trim", "s", "--keep-chars", "10"],
        ["delete-run", "s-0", "s-1"],
        ["finalize", "crashed", "--session", "s", "--stale-after", "0"],
        ["clear", "s"],
    ],
)
def test_preview_changes_nothing(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path], command: list[str]
) -> None:
    sessions, runs = two_files
    before = files_bytes(sessions, runs)
    code, out, err = run(capsys, command[0], sessions, runs, *command[1:])
    assert (code, err) == (0, "")
    assert "nothing changed: add --yes to do it" in out
    assert files_bytes(sessions, runs) == before


def test_rewind_yes_json_matches_lovia(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path], scratch: Path
) -> None:
    sessions, runs = two_files
    copy = copy_db(sessions, scratch / "copy.db")
    code, out, _ = run(
        capsys,
        "rewind",
        sessions,
        runs,
        "s",
        "--keep",
        "6",
        "--yes",
        "--json",
        "--reason",
        "retry",
    )
    data = json.loads(out)
    removed = asyncio.run(SQLiteSession(copy, wal=True).rewind("s", keep_entries=6))
    assert code == 0
    assert (
        data["preview"]["entries_removed"]
        == data["result"]["counts"]["entries_removed"]
        == removed
    )
    # s-1's segment is only truncated: its completed checkpoint stays.
    assert [c["run_id"] for c in data["preview"]["checkpoints"]] == ["s-2"]
    assert data["preview"]["kept_checkpoints"] == ["s-1"]
    assert rows(sessions) == rows(copy)


def test_readonly_previews_only(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    """docs/cli.md: "Actions with --readonly preview only" (they refused)."""
    sessions, runs = two_files
    before = files_bytes(sessions, runs)
    code, out, err = run(capsys, "rewind", sessions, runs, "s", "--keep", "4")
    assert code == 0 and err == ""
    assert run(capsys, "rewind", sessions, runs, "s", "--keep", "4", "--readonly") == (
        0,
        out.replace("add --yes to do it", "--readonly previews only"),
        "",
    )
    code, out, err = run(
        capsys, "rewind", sessions, runs, "s", "--keep", "4", "--yes", "--readonly"
    )
    assert (code, out) == (2, "")
    assert err.startswith("lovia-tui: rewind: argument ") and "not allowed" in err
    assert files_bytes(sessions, runs) == before


def test_live_run_refused_without_force(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    sessions, runs = two_files
    code, out, err = run(capsys, "delete-run", sessions, runs, "crashed", "--yes")
    assert (code, out) == (2, "")
    assert "run crashed is live" in err and err.count("\n") == 1
    code, _, err = run(
        capsys, "finalize", sessions, runs, "crashed", "--session", "s", "--yes"
    )
    assert code == 2 and "live" in err
    code, out, _ = run(
        capsys, "delete-run", sessions, runs, "crashed", "--yes", "--force"
    )
    assert code == 0 and "done: 1 checkpoint deleted" in out
    assert [r[0] for r in rows(runs)["snapshot_heads"]] == ["'s-0'", "'s-1'", "'s-2'"]


def test_delete_run_by_status(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    sessions, runs = two_files
    code, out, _ = run(
        capsys, "delete-run", sessions, runs, "--status", "completed", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["result"] is None
    assert sorted(c["run_id"] for c in data["preview"]["checkpoints"]) == [
        "s-0",
        "s-1",
        "s-2",
    ]


def test_journal_and_undo(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    sessions, runs = two_files
    before = rows(sessions)
    assert (
        run(capsys, "clear", sessions, runs, "s", "--yes", "--reason", "start over")[0]
        == 0
    )
    code, out, _ = run(capsys, "journal", sessions, "--json")
    [entry] = json.loads(out)["entries"]
    assert (code, entry["action"], entry["reason"], entry["undoable"]) == (
        0,
        "clear",
        "start over",
        True,
    )
    code, out, _ = run(capsys, "undo", sessions, runs)
    assert code == 0 and f"undo journal entry {entry['id']}: clear of session s" in out
    assert rows(sessions)["session_runs"] == []
    code, out, _ = run(capsys, "undo", sessions, runs, "--yes")
    assert code == 0 and "done:" in out
    assert rows(sessions) == before
    code, _, err = run(capsys, "undo", sessions, runs, str(entry["id"]), "--yes")
    assert code == 2 and "already undone" in err
    code, out, _ = run(capsys, "journal", sessions)
    assert code == 0 and "undone by" in out


def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    sessions, runs = two_files
    for argv in (
        ["rewind", sessions, runs, "nope", "--keep", "1"],
        ["finalize", sessions, runs, "missing"],
        ["undo", sessions, "x"],
        ["trim", sessions, "s", "--keep-chars", "-1"],
    ):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "")
        assert err.startswith("lovia-tui: ") and err.count("\n") == 1


def test_split_paths_and_ids(tmp_path: Path) -> None:
    (tmp_path / "a.db").touch()
    assert split_paths_and_ids(
        [str(tmp_path / "a.db"), str(tmp_path), "r1", "r2"], "RUN_ID..."
    ) == (
        [str(tmp_path / "a.db"), str(tmp_path)],
        ["r1", "r2"],
    )
    assert split_paths_and_ids([str(tmp_path)], "RUN_ID...") == ([str(tmp_path)], [])
    with pytest.raises(LoviaTuiError, match="'r1' is not a file or directory"):
        split_paths_and_ids(["r1"], "RUN_ID...")


def test_finalize_json(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    sessions, runs = two_files
    code, out, _ = run(
        capsys,
        "finalize",
        sessions,
        runs,
        "crashed",
        "--session",
        "s",
        "--stale-after",
        "0",
        "--yes",
        "--json",
    )
    data = json.loads(out)
    assert code == 0
    assert data["preview"]["session_source"] == "given"
    assert data["preview"]["new_session"] is False
    assert data["result"]["counts"] == {"entries_appended": 1, "checkpoints_deleted": 1}
    assert "'crashed'" in {r[2] for r in rows(sessions)["session_runs"]}
    assert "'crashed'" not in {r[0] for r in rows(runs)["snapshot_heads"]}


def test_finalize_into_a_session_no_file_holds_warns_that_it_starts_one(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    """A typo in --session would start a session: the preview says so."""
    sessions, runs = two_files
    argv = ["finalize", sessions, runs, "crashed", "--stale-after", "0"]
    code, out, _ = run(capsys, *argv, "--session", "s-typo")
    assert code == 0
    assert "WARNING: no session 's-typo' exists yet: this run starts it" in out
    code, out, _ = run(capsys, *argv, "--session", "s")
    assert code == 0 and "exists yet" not in out


@pytest.mark.parametrize(
    ("command", "mode", "appended", "record"),
    [
        ("finalize", "stop", 0, "'interrupted'"),
        ("keep-partial", "keep-partial", 1, "'cancelled'"),
    ],
)
def test_a_web_chat_run_stops_or_keeps_its_partial_turn(
    capsys: pytest.CaptureFixture[str],
    web_file: Path,
    command: str,
    mode: str,
    appended: int,
    record: str,
) -> None:
    """On a web chat, finalize is lovia web's Stop of a stranded run (nothing
    appended, the record interrupted as lovia web's restart leaves it);
    keep-partial stores what it saved and closes the record cancelled."""
    code, out, _ = run(
        capsys, command, web_file, "inflight", "--stale-after", "0", "--yes", "--json"
    )
    data = json.loads(out)
    assert code == 0
    assert data["preview"]["mode"] == mode
    assert data["result"]["counts"] == {
        "entries_appended": appended,
        "checkpoints_deleted": 1,
    }
    assert [r[4] for r in rows(web_file)["chat_runs"]] == [record]
    assert raw(web_file, "PRAGMA integrity_check") == [("ok",)]


def test_trim_says_why_it_has_nothing_to_trim(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    """ "nothing to trim" said only which runs it kept. It names why: no run
    before the kept ones, no tool result in them, or the threshold (characters
    kept plus lovia's marker) with the largest result found, and how many
    results were trimmed already."""
    sessions, runs = two_files
    trim = ["trim", sessions, runs, "s", "--stale-after", "0"]

    def why(*options: str) -> str:
        code, out, err = run(capsys, *trim, *options)
        assert (code, err) == (0, ""), err
        [line] = [line for line in out.splitlines() if "nothing to trim" in line]
        return line

    assert why("--keep-runs", "3") == (
        "trim s: nothing to trim: it keeps the last 3 runs, and the session has "
        "no run before them"
    )
    # s-0 holds one result, "one": 3 characters.
    line = why("--keep-runs", "2")
    assert re.fullmatch(
        "trim s: nothing to trim: no tool result in the 1 run before the last "
        "2 runs \\(kept\\) is over the threshold of 400 characters kept plus "
        "lovia's marker: the largest has 3 characters, cut only past 5[0-9][0-9]",
        line,
    ), line
    # s-1's dump (60 lines) is the largest; kept whole under 5,000.
    code, out, _ = run(capsys, *trim, "--keep-chars", "5000", "--json")
    preview = json.loads(out)["preview"]
    assert (preview["results_trimmed"], preview["older_runs"]) == (0, 2)
    assert preview["older_results"] == 3 and preview["already_trimmed"] == 0
    largest = preview["largest_result"]
    assert 1_000 < largest < 5_000 < preview["largest_cut_above"]
    assert f"the largest has {largest:,} characters" in why("--keep-chars", "5000")
    # Trimmed once, the dump is counted as such.
    assert run(capsys, *trim, "--yes")[0] == 0
    line = why()
    assert "the largest has 3 characters" in line, line
    assert line.endswith("(1 trimmed already)"), line
    asyncio.run(_text_runs(sessions))  # a session of two runs without a tool
    code, out, err = run(capsys, "trim", sessions, runs, "quiet")
    assert (code, err) == (0, "")
    assert (
        "trim quiet: nothing to trim: no tool result in the 1 run before the "
        "last 1 run (kept)"
    ) in out, out


async def _text_runs(path: Path) -> None:
    from lovia.transcript import AssistantTextEntry, InputEntry

    session = SQLiteSession(path)
    for n in range(2):
        await session.append(
            "quiet",
            [InputEntry(role="user", content="hi"), AssistantTextEntry(content="ok")],
            run_id=f"q{n}",
        )


def test_an_undo_of_an_undo_says_what_it_does_in_the_actions_units(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path]
) -> None:
    """The undo of a rewind restores its entries; undoing that undo (a redo)
    said "N rows removed", the undo's own row count read backwards, though it
    wrote rows back too. It says what the rewind did, redone; undoing the
    redo, what the undo did, again."""
    sessions, runs = two_files
    files = [sessions, runs]
    rewound = rows(sessions)
    code, out, _ = run(capsys, "rewind", *files, "s", "--keep", "3", "--yes", "--json")
    rewind = json.loads(out)["result"]
    removed = rewind["counts"]["entries_removed"]
    assert code == 0 and removed > 1 and rewind["counts"]["checkpoints_deleted"] == 2
    checkpoints = "2 checkpoints deleted"
    rewound = rows(sessions)
    code, out, _ = run(capsys, "undo", *files, "--yes", "--json")
    undo_id = json.loads(out)["result"]["undo_entry_id"]
    redone = f"the rewind again, {removed} entries removed, {checkpoints}"
    again = (
        f"the rewind's undo again, {removed} entries restored, 2 checkpoints restored"
    )

    def undoing(entry_id: int) -> tuple[str, str]:
        code, preview, _ = run(capsys, "undo", *files, str(entry_id))
        assert code == 0
        code, done, _ = run(capsys, "undo", *files, str(entry_id), "--yes")
        assert code == 0
        return preview, done

    preview, done = undoing(undo_id)
    assert f"sessions.db: {redone}\n" in preview, preview
    assert f"\ndone: {redone} (" in done, done
    assert "rows removed (" not in done and "restored" not in preview
    assert rows(sessions) == rewound
    code, out, _ = run(capsys, "journal", *files, "--json")
    redo_id = json.loads(out)["entries"][0]["id"]
    preview, done = undoing(redo_id)
    assert f": {again}\n" in preview and f"\ndone: {again} (" in done, done
