"""Agents, deps and a really crashed run for the resume tests.

The agents are loadable as ``support.resume:ATTR`` (pytest puts ``tests/`` on
the import path; the CLI adds the current directory). They match the demo
crash helper's agent: entry agent "assistant" with a ``run_job`` tool, so they
can resume its runs; here ``run_job`` records each call in the :class:`Jobs`
passed as deps instead of sleeping, so tests can count re-executions.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from lovia import Agent, RunContext, Runner, SQLiteSession, tool
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, call, text

from lovia_tui.demo.crash import crash_run

JOBS_ENV = "LOVIA_TUI_TEST_JOB_LOG"
SESSION = "sess-export"
RUN = "run-crashed"
FINAL = "Resumed: the export is done."


@dataclass
class Jobs:
    """Where ``run_job`` records its calls; ``release``, when set, holds it
    until set (only the job named ``hold``, when given)."""

    log: Path
    release: asyncio.Event | None = None
    hold: str | None = None

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def jobs() -> Jobs:
    """Deps factory for the CLI (``--deps support.resume:jobs``)."""
    return Jobs(Path(os.environ[JOBS_ENV]))


def held_jobs() -> Jobs:
    """Deps whose ``run_job`` never finishes: a resume that runs until Ctrl+C."""
    return Jobs(Path(os.environ[JOBS_ENV]), release=asyncio.Event())


def held_second() -> Jobs:
    """Deps whose job "second" never finishes: a resume that saved a batch, then hangs."""
    return Jobs(Path(os.environ[JOBS_ENV]), release=asyncio.Event(), hold="second")


@tool
async def run_job(ctx: RunContext[Jobs], job: str) -> str:
    """Run a named batch job."""
    with ctx.deps.log.open("a") as log:
        log.write(job + "\n")
    if ctx.deps.release is not None and ctx.deps.hold in (None, job):
        await ctx.deps.release.wait()
    return f"job {job!r} finished"


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy to a target (needs approval)."""
    return f"deployed to {target}"


def make_assistant(script: list[AssistantTurn]) -> Agent:
    researcher = Agent(name="researcher", model=ScriptedProvider([]))
    return Agent(
        name="assistant",
        model=ScriptedProvider(script),
        tools=[run_job, deploy],
        handoffs=[researcher],
    )


def assistant() -> Agent:
    """Finishes any run of the crash helper's agent with :data:`FINAL`."""
    return make_assistant([text(FINAL)])


def deploying_assistant() -> Agent:
    """Asks to deploy (an approval) before finishing."""
    return make_assistant(
        [call("deploy", {"target": "prod"}, call_id="call_deploy"), text(FINAL)]
    )


def two_jobs() -> Agent:
    """Runs job "second" after the crashed call, then finishes."""
    return make_assistant([call("run_job", {"job": "second"}), text(FINAL)])


def mute() -> Agent:
    """Has no answer left after the crashed call: the resumed run fails."""
    return make_assistant([])


def front_desk() -> Agent:
    """An entry agent that reaches "assistant" only through a handoff."""
    return Agent(
        name="front-desk", model=ScriptedProvider([text(FINAL)]), handoffs=[assistant()]
    )


def stranger() -> Agent:
    """An entry agent from which "assistant" is unreachable."""
    return Agent(name="stranger", model=ScriptedProvider([text("Who?")]))


def broken() -> Agent:
    raise RuntimeError("no API key configured")


def not_an_agent_factory() -> str:
    return "assistant"


not_an_agent = 42


def build_crashed(directory: Path) -> None:
    """A two-file workspace whose run ``RUN`` was SIGKILLed inside ``run_job``.

    Session ``SESSION`` holds one earlier completed run; nothing links ``RUN``
    to it (the two-file layout has no web records). The WAL is folded in so
    copies of the directory are self-contained.
    """
    directory.mkdir(parents=True, exist_ok=True)
    sessions, runs = directory / "sessions.db", directory / "runs.db"
    asyncio.run(
        Runner.run(
            make_assistant([text("Hello! Ready when you are.")]),
            "Hi there.",
            session=SQLiteSession(sessions, wal=True),
            session_id=SESSION,
        )
    )
    crash_run(sessions, runs, SESSION, RUN)
    for path in (sessions, runs):
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()


def copy_workspace(template: Path, destination: Path) -> Path:
    shutil.copytree(template, destination)
    return destination


@pytest.fixture(scope="module")
def crashed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`build_crashed` once per test module (copy it: :func:`ws_dir`)."""
    directory = tmp_path_factory.mktemp("crashed") / "ws"
    build_crashed(directory)
    return directory


@pytest.fixture
def ws_dir(crashed_template: Path, tmp_path: Path) -> Path:
    """A private copy of :func:`crashed_template`, free to resume."""
    return copy_workspace(crashed_template, tmp_path / "ws")


def session_rows(path: Path) -> list[tuple[str, str, str]]:
    """Every stored segment as (session_id, run_id, entries_json), in order."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT session_id, run_id, entries_json FROM session_runs ORDER BY id"
        ).fetchall()
    conn.close()
    return rows


def head_status(path: Path, run_id: str) -> str | None:
    """The run's checkpoint status, or None once deleted."""
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT json_extract(head_json, '$.status') FROM snapshot_heads WHERE run_id = ?",
            (run_id,),
        ).fetchone()
    conn.close()
    return row[0] if row else None
