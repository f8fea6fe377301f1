"""``lovia-tui resume`` and ``replay``: preflight by default, JSON lines, exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import resume as support_resume
from support.resume import (
    JOBS_ENV,
    RUN,
    SESSION,
    copy_workspace,
    head_status,
    session_rows,
)

from lovia_tui.cli import main
from lovia_tui.core.actions.journal import Journal

TESTS_DIR = Path(__file__).parents[1]
TIMEOUT = 60  # bounded


crashed_template = support_resume.crashed_template  # a fixture


@pytest.fixture
def ws_dir(
    crashed_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv(JOBS_ENV, str(tmp_path / "jobs.log"))
    return copy_workspace(crashed_template, tmp_path / "ws")


def _resume_args(
    ws_dir: Path, *extra: str, agent: str = "support.resume:assistant"
) -> list[str]:
    return [
        "resume", str(ws_dir), RUN, "--agent", agent, "--deps", "support.resume:jobs",
        "--session", SESSION, "--stale-after", "0", *extra,
    ]  # fmt: skip


def _state(ws_dir: Path) -> tuple[list, str | None]:
    return session_rows(ws_dir / "sessions.db"), head_status(ws_dir / "runs.db", RUN)


def test_preflight_without_yes_changes_nothing(
    ws_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(ws_dir)
    assert main(_resume_args(ws_dir)) == 0
    out = capsys.readouterr().out
    assert "runs again  run_job" in out
    assert "nothing done: add --yes to resume it" in out
    assert _state(ws_dir) == before
    assert not (ws_dir.parent / "jobs.log").exists()


def test_yes_json_streams_json_lines_ending_with_completed(ws_dir: Path) -> None:
    """A real process, importing the agent from its current directory as
    ``lovia web --app`` does; the journal keeps the run with its reason."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lovia_tui",
            *_resume_args(
                ws_dir, "--yes", "--json", "--reason", "ticket 4711: the export stopped"
            ),
        ],
        cwd=TESTS_DIR,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert (
        lines[0]["kind"] == "preflight"
        and lines[0]["data"]["dangling"][0]["name"] == "run_job"
    )
    assert lines[-1]["kind"] == "run_completed"
    assert lines[-1]["data"]["status"] == "completed"
    assert (ws_dir.parent / "jobs.log").read_text() == "nightly-export\n"
    assert _state(ws_dir)[1] == "completed"
    [journaled] = [
        line["data"]["journal_id"] for line in lines if "journal_id" in line["data"]
    ]
    entry = asyncio.run(Journal().get(journaled))
    assert (entry.action, entry.reason) == ("resume", "ticket 4711: the export stopped")


def test_run_ending_failed_exits_1(
    ws_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(_resume_args(ws_dir, "--yes", "--json", agent="support.resume:mute")) == 1
    )
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert last["kind"] == "run_failed" and last["data"]["status"] == "failed"


def test_refusal_exits_2_with_one_line(
    ws_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(ws_dir)
    assert (
        main(
            ["resume", str(ws_dir), RUN, "--agent", "support.resume:assistant", "--yes"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(
        "lovia-tui: cannot resume run run-crashed: it is running and saved"
    )
    assert err.count("\n") == 1
    assert _state(ws_dir) == before


@pytest.mark.parametrize(
    "spec",
    [
        "support.resume",
        "nope_xyz:agent",
        "support.resume:missing",
        "support.resume:not_an_agent",
    ],
)
def test_bad_agent_spec_exits_2_with_one_line(
    ws_dir: Path, spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_resume_args(ws_dir, agent=spec)) == 2
    err = capsys.readouterr().err
    assert err.startswith("lovia-tui: --agent ") and spec in err
    assert err.count("\n") == 1


def test_replay(ws_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(ws_dir), RUN, "--session", SESSION, "--yes"]) == 2
    assert "not completed: resume it instead" in capsys.readouterr().err

    assert main(_resume_args(ws_dir, "--yes", "--json")) == 0
    capsys.readouterr()
    rows = session_rows(ws_dir / "sessions.db")
    assert main(["replay", str(ws_dir), RUN, "--yes"]) == 0
    out = capsys.readouterr().out
    assert "already stored in session 'sess-export'" in out
    assert "completed: Resumed: the export is done." in out
    assert session_rows(ws_dir / "sessions.db") == rows
