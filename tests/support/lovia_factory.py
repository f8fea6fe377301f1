"""Small fixture databases written by real lovia code, for any test to reuse.

Rows come from ``Runner`` on scripted models and from lovia's own stores and
``ChatStore``; nothing is inserted by hand. Also: an exact dump of every
row (for before/after comparisons) and a writer loop to run in a child process
(``python tests/support/lovia_factory.py append-loop DB SESSION_ID STOP_FILE MOST``).

Load the fixtures with ``pytest_plugins = ["support.lovia_factory"]`` in a test module
(which imports this module first, hence PYTEST_DONT_REWRITE: it asserts nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from lovia import (
    Agent,
    CheckpointOptions,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    events,
    tool,
)
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, Usage

from lovia_tui.core.store.database import sqlite_uri

READY, DONE = "READY", "DONE"


@tool
def echo(message: str) -> str:
    """Say ``message`` back."""
    return message


@tool
def dump(lines: int) -> str:
    """Return ``lines`` lines of log text: a large output worth trimming."""
    return "\n".join(f"line {n:05d}: all systems nominal" for n in range(lines))


def agent(script: Sequence[AssistantTurn]) -> Agent:
    """An agent named "worker" with ``echo`` and ``dump``, playing ``script``."""
    return Agent(
        name="worker",
        instructions="Do as asked.",
        model=ScriptedProvider(list(script)),
        tools=[echo, dump],
    )


async def write_session(
    path: Path,
    session_id: str,
    scripts: Sequence[Sequence[AssistantTurn]],
    *,
    prompts: Sequence[str] = (),
    checkpoint_path: Path | None = None,
) -> list[str]:
    """One completed run (segment) per script; returns their run ids in order.

    With ``checkpoint_path`` each run is also checkpointed (run id
    ``{session_id}-{n}``) and its completed checkpoint kept, as a script
    without ``delete_on_success`` leaves it.
    """
    session = SQLiteSession(path, wal=True)
    checkpointer = (
        SQLiteCheckpointer(checkpoint_path, wal=True) if checkpoint_path else None
    )
    for n, script in enumerate(scripts):
        prompt = prompts[n] if n < len(prompts) else f"Request {n + 1}."
        checkpoint = (
            CheckpointOptions(checkpointer, f"{session_id}-{n}")
            if checkpointer
            else None
        )
        await Runner.run(
            agent(script),
            prompt,
            session=session,
            session_id=session_id,
            checkpoint=checkpoint,
        )
    return [segment.run_id for segment in await session.segments(session_id)]


async def abandoned_run(
    checkpoint_path: Path,
    run_id: str,
    script: Sequence[AssistantTurn],
    *,
    session_path: Path | None = None,
    session_id: str | None = None,
    prompt: str = "Start the job.",
) -> None:
    """A run left ``running`` mid-tool, its calls dangling, as a crash leaves it.

    The stream is abandoned once the first tool starts (lovia saved the
    model's calls, not their results). Its ``updated_at`` is fresh: it looks
    live until ``stale_after`` passes.
    """
    handle = Runner.stream(
        agent(script),
        prompt,
        session=SQLiteSession(session_path, wal=True) if session_path else None,
        session_id=session_id,
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(checkpoint_path, wal=True), run_id
        ),
    )
    async for event in handle:
        if isinstance(event, events.ToolCallStarted):
            break


async def web_records(
    path: Path, session_id: str, run_id: str, title: str = "Chat"
) -> None:
    """What lovia's web UI writes as a run starts: chat row, active pointer, run record."""
    from lovia.web.store import ChatStore, RunRow

    store = ChatStore.sqlite(path)
    await store.upsert(session_id, agent="worker", title=title)
    await store.set_active_run_id(session_id, run_id)
    await store.start_run(
        RunRow(
            run_id,
            session_id,
            "worker",
            "user",
            "running",
            None,
            time.time(),
            None,
            None,
        )
    )


async def web_restart(path: Path) -> None:
    """What ``lovia web`` does at start-up: run records left running become interrupted."""
    from lovia.web.store import ChatStore

    await ChatStore.sqlite(path).sweep_stale_runs()


async def web_wind_down(
    path: Path, session_id: str, run_id: str, entries: Sequence[Any], timing: Any
) -> None:
    """What lovia web's server does as a stopped run's task winds down
    (``RunController._run``'s ``finally``): ``_persist_partial`` of
    ``entries``, the checkpoint deleted, the chat's pointer cleared, the
    record closed as cancelled with the run's usage."""
    from lovia.web.sse import usage_dict
    from lovia.web.store import ChatStore

    checkpointer = SQLiteCheckpointer(path, wal=True)
    snapshot = await checkpointer.load(run_id)
    assert snapshot is not None
    await SQLiteSession(path, wal=True).append(
        session_id, list(entries), run_id=run_id, meta={"timing": timing}
    )
    await checkpointer.delete(run_id)
    store = ChatStore.sqlite(path)
    await store.clear_active_run_id(session_id, expected=run_id)
    usage = usage_dict(snapshot.usage, last_input_tokens=snapshot.last_input_tokens)
    await store.finish_run(run_id, status="cancelled", error="cancelled", usage=usage)


def settled_rows(path: Path) -> dict[str, list[tuple[str, ...]]]:
    """:func:`rows`, less the moments written (a segment's ``created_at``, a
    record's ``finished_at``): two files settled apart compare equal."""
    dump = rows(path)
    dump["session_runs"] = [r[:5] for r in dump.get("session_runs", [])]
    dump["chat_runs"] = [r[:7] + r[8:] for r in dump.get("chat_runs", [])]
    return dump


async def append_entries(
    path: Path, session_id: str, count: int, prefix: str = "w"
) -> None:
    """Append ``count`` small segments through lovia, as another app would."""
    session = SQLiteSession(path, wal=True)
    for n in range(count):
        entries = [
            InputEntry(role="user", content=f"{prefix} {n}"),
            AssistantTextEntry(content="ok"),
        ]
        await session.append(session_id, entries, run_id=f"{prefix}-{n}")


def copy_db(source: Path, target: Path) -> Path:
    """A consistent copy of a live database (its WAL included), via SQLite's backup."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return target


def copy_files(src: Path, dest_dir: Path, name: str | None = None) -> Path:
    """Copy a database file byte for byte into ``dest_dir``, with whatever WAL
    companions it has (unlike :func:`copy_db`, the file exactly as left)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (name or src.name)
    shutil.copy(src, dest)
    for suffix in ("-wal", "-shm"):
        companion = src.with_name(src.name + suffix)
        if companion.exists():
            shutil.copy(companion, dest.with_name(dest.name + suffix))
    return dest


def raw(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """An independent read with plain sqlite3 (mode=ro: writes nothing)."""
    with contextlib.closing(sqlite3.connect(sqlite_uri(path, "ro"), uri=True)) as conn:
        return conn.execute(sql, params).fetchall()


def rows(path: Path) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table but SQLite's own, as ``quote()`` shows each value.

    ``quote()`` spells out the storage class and exact bytes (X'..' for blobs,
    full-precision reals), so equal dumps mean byte-identical rows.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda raw: raw.decode(
        "utf-8", "backslashreplace"
    )  # exact, even if invalid
    try:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        dump: dict[str, list[tuple[str, ...]]] = {}
        for table in tables:
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            quoted = ", ".join(f'quote("{c}")' for c in columns)
            dump[table] = conn.execute(
                f"SELECT {quoted} FROM {table} ORDER BY rowid"
            ).fetchall()
        return dump
    finally:
        conn.close()


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of the file, read-only: "ok" when it is sound."""
    return "; ".join(row[0] for row in raw(path, "PRAGMA integrity_check"))


# Session "s": 4 + 6 + 2 = 12 flat entries, a parallel batch in the middle run.
SCRIPTS = [
    [call("echo", {"message": "one"}, call_id="c0"), text("Echoed one.")],
    [
        batch(("echo", {"message": "a"}, "c1"), ("dump", {"lines": 60}, "c2")),
        text("Both done."),
    ],
    [text("Just text.")],
]
CRASH = [
    batch(("echo", {"message": "x"}, "k1"), ("dump", {"lines": 5}, "k2")),
    text("never"),
]


async def build_two_files(directory: Path) -> tuple[Path, Path]:
    """A script's layout: sessions.db holds session "s" (:data:`SCRIPTS`), whose
    completed checkpoints s-0..s-2 are kept in runs.db; runs.db also holds
    "crashed", a run abandoned mid-tool that nothing links to a session."""
    sessions, runs = directory / "sessions.db", directory / "runs.db"
    await write_session(sessions, "s", SCRIPTS, checkpoint_path=runs)
    await abandoned_run(runs, "crashed", CRASH, session_path=sessions, session_id="s")
    return sessions, runs


async def build_web_file(directory: Path) -> Path:
    """The web UI's one file: chat "chat" (:data:`SCRIPTS`) and its in-flight run
    "inflight", abandoned mid-tool with the chat's pointer and an open run record."""
    path = directory / "web.db"
    await write_session(path, "chat", SCRIPTS)
    await web_records(path, "chat", "inflight")
    await abandoned_run(path, "inflight", CRASH, session_path=path, session_id="chat")
    return path


COMPACTED, ATTACHED, CACHED_RUN = "compacted", "attached", "cached"


async def build_stored_extras(path: Path) -> Path:
    """What lovia stores beyond text, in one file (the demo's own runs): session
    :data:`COMPACTED`, compacted by lovia's Compaction policy (segment meta with
    context state and notices); session :data:`ATTACHED`, with image and file
    parts in its input and a tool result's parts, and encrypted reasoning; and
    the kept checkpoint :data:`CACHED_RUN`, whose usage has cache tokens."""
    from lovia_tui.demo.compaction import attachments_session, cached, compacted_session

    session = SQLiteSession(path)
    await compacted_session(session, COMPACTED)
    await attachments_session(session, ATTACHED)
    await Runner.run(
        agent([cached(text("Cached."), 900, 300)]),
        "Use the cache.",
        session=session,
        session_id="cached",
        checkpoint=CheckpointOptions(SQLiteCheckpointer(path), CACHED_RUN),
    )
    return path


@contextlib.contextmanager
def scratch_directory() -> Iterator[Path]:
    """A temporary directory, on tmpfs when there is one.

    lovia fsyncs every commit; on tmpfs that costs nothing, which keeps
    tests that write many small transactions fast.
    """
    tmpfs = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=tmpfs, prefix="lovia-tui-test-") as directory:
        yield Path(directory)


@pytest.fixture
def scratch() -> Iterator[Path]:
    with scratch_directory() as directory:
        yield directory


@pytest.fixture(scope="module")
def two_files_template() -> Iterator[tuple[Path, Path]]:
    # Module scope: the crashed run must still look live (saved < 300 s ago).
    with scratch_directory() as directory:
        yield asyncio.run(build_two_files(directory))


@pytest.fixture
def two_files(
    two_files_template: tuple[Path, Path], scratch: Path
) -> tuple[Path, Path]:
    """A private copy of :func:`build_two_files`' databases."""
    sessions, runs = two_files_template
    return copy_db(sessions, scratch / sessions.name), copy_db(
        runs, scratch / runs.name
    )


@pytest.fixture(scope="module")
def web_template() -> Iterator[Path]:
    with scratch_directory() as directory:
        yield asyncio.run(build_web_file(directory))


@pytest.fixture
def web_file(web_template: Path, scratch: Path) -> Path:
    """A private copy of :func:`build_web_file`'s database."""
    return copy_db(web_template, scratch / web_template.name)


@pytest.fixture
def private_journal(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Journal to a file of the test's own, never the user's."""
    path = scratch / "journal" / "journal.db"
    monkeypatch.setenv("LOVIA_TUI_JOURNAL", str(path))
    return path


def _append_loop(path: str, session_id: str, stop_file: str, most: str) -> None:
    """Append one segment at a time until ``stop_file`` exists (at most ``most``)."""

    async def loop() -> int:
        written = 0
        while written < int(most) and not Path(stop_file).exists():  # bounded
            await append_entries(Path(path), session_id, 1, prefix=f"loop-{written}")
            written += 1
            if written == 1:
                print(READY, flush=True)
        return written

    print(f"{DONE} {asyncio.run(loop())}", flush=True)


STATUSES = ["completed"] * 5 + ["running", "completed", "interrupted", "failed"]
"""The head statuses :func:`write_heads` cycles through (most runs completed)."""


async def write_heads(
    path: Path, count: int, now: float
) -> list[tuple[str, str, float]]:
    """(run_id, status, updated_at) of ``count`` heads saved by lovia, oldest first."""
    checkpointer = SQLiteCheckpointer(path)
    written = []
    for n in range(count):
        status = STATUSES[n % len(STATUSES)]
        updated = now - 10_000 + n * 100
        head = RunHead(
            agent_name="worker", usage=Usage(1, 1), turns=1, status=status,
            output="Done." if status == "completed" else None, error=None,
            last_input_tokens=1, updated_at=updated, started_at=updated - 1,
        )  # fmt: skip
        entries = [InputEntry("user", f"job {n}")]
        if status != "completed":
            entries.append(ToolCallEntry(f"c{n}", "step", "{}"))
        await checkpointer.append(f"run-{n:03}", entries, head)
        written.append((f"run-{n:03}", status, updated))
    return written


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command != "append-loop":
        raise SystemExit(f"unknown command {command!r}")
    _append_loop(*arguments)
