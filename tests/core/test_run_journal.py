"""A resume or replay is journaled: undo puts its rows back exactly, even after a SIGKILL.

The files are compared whole (every row of every table, as SQLite quotes
it) before the run and after its undo.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lovia import CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.testing import text
from lovia.transcript import AssistantTextEntry
from lovia.web.store import ChatStore
from support import resume as support_resume
from support.lovia_factory import integrity, rows
from support.resume import (
    JOBS_ENV,
    RUN,
    SESSION,
    Jobs,
    head_status,
    make_assistant,
    session_rows,
)

from lovia_tui.cli import main
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.journal_file import JournalError
from lovia_tui.core.actions.journal_undo import stored_since, undo
from lovia_tui.core.actions.run_undo import WRITTEN
from lovia_tui.core.errors import ActionError
from lovia_tui.core.runs.agents import DepsSpec, load_agent
from lovia_tui.core.runs.preflight import Preflight, preflight, preflight_replay
from lovia_tui.core.runs.resume import RunControl, replay, resume
from lovia_tui.core.runs.run_journal import RunJournal
from lovia_tui.core.store.workspace import Workspace

TESTS_DIR = Path(__file__).parents[1]
TIMEOUT = 60  # bounded: a run that hangs fails the test instead


crashed_template, ws_dir = (
    support_resume.crashed_template,
    support_resume.ws_dir,
)  # fixtures


def _dump(ws_dir: Path) -> dict[str, dict[str, list[tuple[str, ...]]]]:
    """Every row of both files, exactly; each file checked sound first."""
    files = ("sessions.db", "runs.db")
    assert [integrity(ws_dir / name) for name in files] == ["ok", "ok"]
    return {name: rows(ws_dir / name) for name in files}


async def _resume(ws_dir: Path, **options) -> list:
    ws = await Workspace.open([ws_dir])
    try:
        pf = await preflight(
            ws, RUN, agent=load_agent("support.resume:assistant"),
            session_id=SESSION, stale_after=0, **options,
        )  # fmt: skip
    finally:
        await ws.close()
    assert pf.ok, pf.problems
    async with asyncio.timeout(TIMEOUT):
        return [e async for e in resume(pf, RunControl(journal=Journal()))]


async def _replay(ws_dir: Path) -> list:
    ws = await Workspace.open([ws_dir])
    try:
        pf = await preflight_replay(ws, RUN, session_id=SESSION)
    finally:
        await ws.close()
    async with asyncio.timeout(TIMEOUT):
        return [e async for e in replay(pf, RunControl(journal=Journal()))]


async def _refused_as_moved_on(
    capsys: pytest.CaptureFixture[str], directory: Path, read: Callable[[], object]
) -> None:
    """A bare undo refuses, saying the run moved on, and changes nothing ``read`` sees."""
    kept = read()
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["undo", str(directory), "--yes"]) == 2
    assert "its run moved on since" in capsys.readouterr().err
    assert read() == kept


def _files(ws_dir: Path) -> list[Path]:
    return [ws_dir / "sessions.db", ws_dir / "runs.db"]


async def test_undo_of_a_resume_puts_every_row_back_and_keeps_later_runs(
    ws_dir: Path, tmp_path: Path
) -> None:
    before = _dump(ws_dir)
    seen = await _resume(
        ws_dir,
        deps=DepsSpec("jobs", Jobs(tmp_path / "jobs.log")),
        delete_on_success=True,
    )
    assert seen[-1].kind == "run_completed"
    [note] = [e for e in seen if "journal_id" in e.data]
    assert "1 segment removed" in note.text and "1 checkpoint restored" in note.text
    assert head_status(ws_dir / "runs.db", RUN) is None  # deleted on success
    # Another writer's run in the same session, after the resume.
    await Runner.run(
        make_assistant([text("Later.")]), "And now?",
        session=SQLiteSession(ws_dir / "sessions.db", wal=True), session_id=SESSION,
    )  # fmt: skip
    later = session_rows(ws_dir / "sessions.db")[-1]

    result = await undo(Journal(), note.data["journal_id"], _files(ws_dir))

    assert result.rows_removed == 1  # the resumed run's segment
    after = _dump(ws_dir)
    segments = after["sessions.db"].pop("session_runs")
    assert segments[:-1] == before["sessions.db"].pop("session_runs")
    assert session_rows(ws_dir / "sessions.db")[-1] == later  # kept
    assert after == before


async def test_replay_of_a_lost_append_is_undone_too(
    ws_dir: Path, tmp_path: Path
) -> None:
    await _resume(ws_dir, deps=DepsSpec("jobs", Jobs(tmp_path / "jobs.log")))
    with sqlite3.connect(ws_dir / "sessions.db") as conn:  # the append was lost
        conn.execute("DELETE FROM session_runs WHERE run_id = ?", (RUN,))
    conn.close()
    before = _dump(ws_dir)
    seen = await _replay(ws_dir)
    [note] = [e for e in seen if "journal_id" in e.data]
    assert RUN in [row[1] for row in session_rows(ws_dir / "sessions.db")]

    await undo(Journal(), note.data["journal_id"], _files(ws_dir))

    assert _dump(ws_dir) == before


def _resume_in_a_process(ws_dir: Path, jobs: Path) -> subprocess.Popen:
    """``lovia-tui resume --yes`` of the crashed run in its own process, its
    job "second" held: wait for it with :func:`_in_second_job`."""
    return subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", "resume", str(ws_dir), RUN,
         "--agent", "support.resume:two_jobs", "--deps", "support.resume:held_second",
         "--session", SESSION, "--stale-after", "0", "--yes", "--json"],
        cwd=TESTS_DIR, env={**os.environ, JOBS_ENV: str(jobs), "PYTHONPATH": ""},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def _in_second_job(proc: subprocess.Popen, jobs: Path) -> None:
    deadline = time.monotonic() + TIMEOUT
    while "second" not in (jobs.read_text() if jobs.exists() else ""):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the resume never reached its second job"
        time.sleep(0.05)


def _killed_in_second_job(ws_dir: Path, jobs: Path) -> None:
    """lovia-tui SIGKILLed while the resumed run waits in its second job."""
    proc = _resume_in_a_process(ws_dir, jobs)
    try:
        _in_second_job(proc, jobs)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(TIMEOUT)


def test_a_resume_killed_part_way_is_undone_with_the_batches_it_saved(
    ws_dir: Path, tmp_path: Path
) -> None:
    """The batches lovia saved until the kill were named in the journal before
    each was written (lovia numbers them ``MAX(seq) + 1``: this fails if it stops)."""
    before = _dump(ws_dir)
    _killed_in_second_job(ws_dir, tmp_path / "jobs.log")
    killed = _dump(ws_dir)
    assert len(killed["runs.db"]["snapshot_turns"]) > len(
        before["runs.db"]["snapshot_turns"]
    )

    assert main(["undo", str(ws_dir), "--yes"]) == 0

    assert _dump(ws_dir) == before


@pytest.mark.parametrize("delete_on_success", [False, True])
async def test_a_killed_resume_that_lovia_went_on_with_is_not_undone_over_it(
    ws_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    delete_on_success: bool,
) -> None:
    """lovia itself finished the run after the kill (deleting its checkpoint,
    as lovia web's reconnect does, or not): the batches and the segment it
    stored were never named by the entry, so putting the journaled rows back
    would lose its run. Refused, and recorded so: the next undo passes over it."""
    jobs = tmp_path / "jobs.log"
    await asyncio.to_thread(_killed_in_second_job, ws_dir, jobs)
    result = await Runner.run(
        make_assistant([text("Finished by lovia.")]), [], deps=Jobs(jobs),
        session=SQLiteSession(ws_dir / "sessions.db", wal=True), session_id=SESSION,
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(ws_dir / "runs.db", wal=True), RUN,
            if_run_exists="resume_only", delete_on_success=delete_on_success,
        ),
    )  # fmt: skip
    assert result.output == "Finished by lovia."
    finished = _dump(ws_dir)

    await _refused_as_moved_on(capsys, ws_dir, lambda: _dump(ws_dir))

    assert await asyncio.to_thread(main, ["undo", str(ws_dir), "--yes"]) == 0
    assert "nothing to undo" in capsys.readouterr().out
    assert _dump(ws_dir) == finished


def test_an_undo_waits_for_a_resume_of_its_run_going_elsewhere(
    ws_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rows it would put back are the ones that resume is saving over."""
    jobs = tmp_path / "jobs.log"
    _killed_in_second_job(ws_dir, jobs)
    jobs.unlink()
    going = _resume_in_a_process(ws_dir, jobs)
    try:
        _in_second_job(going, jobs)
        capsys.readouterr()
        assert main(["undo", str(ws_dir), "1", "--yes", "--wait", "0.2"]) == 2
        assert "a resume or replay of run 'run-crashed' is running in pid" in (
            capsys.readouterr().err
        )
    finally:
        going.kill()
        going.wait(TIMEOUT)


def test_a_run_is_resumed_by_one_lovia_tui_at_a_time(
    ws_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second resume of a run being resumed is refused (its calls would run
    twice and lovia mix both runs' batches); once the first is killed, a
    resume that finishes is journaled after it, and the killed one's undo
    waits for that one's (and for a redo of it to be undone)."""
    jobs = tmp_path / "jobs.log"
    monkeypatch.setenv(JOBS_ENV, str(jobs))
    before = _dump(ws_dir)
    first = _resume_in_a_process(ws_dir, jobs)
    try:
        _in_second_job(first, jobs)
        again = main(_resume_args(ws_dir))
        assert again == 2
        assert "a resume or replay of run 'run-crashed' is running in pid" in (
            capsys.readouterr().err
        )
        os.kill(first.pid, signal.SIGKILL)
    finally:
        first.kill()
        first.wait(TIMEOUT)
    assert main(_resume_args(ws_dir)) == 0  # finishes it
    killed_id, finished_id = (e.id for e in reversed(asyncio.run(Journal().entries())))
    capsys.readouterr()

    assert main(["undo", str(ws_dir), str(killed_id), "--yes"]) == 2
    assert f"journal entry {finished_id} (resume) changed its rows since" in (
        capsys.readouterr().err
    )
    assert main(["undo", str(ws_dir), "--yes"]) == 0  # the finished resume
    undone = finished_id + 1
    assert main(["undo", str(ws_dir), str(undone), "--yes"]) == 0  # redo it
    capsys.readouterr()
    assert main(["undo", str(ws_dir), str(killed_id), "--yes"]) == 2
    assert f"journal entry {undone + 1} (undo) changed its rows since" in (
        capsys.readouterr().err
    )
    assert main(["undo", str(ws_dir), str(undone + 1), "--yes"]) == 0  # no redo
    capsys.readouterr()
    code = main(["undo", str(ws_dir), "--yes"])  # then the killed one
    assert code == 0, capsys.readouterr()
    assert _dump(ws_dir) == before


def _resume_args(ws_dir: Path) -> list[str]:
    return [
        "resume", str(ws_dir), RUN, "--agent", "support.resume:two_jobs",
        "--deps", "support.resume:jobs", "--session", SESSION,
        "--stale-after", "0", "--yes",
    ]  # fmt: skip


async def test_a_replay_that_changes_nothing_is_passed_over_by_undo(
    ws_dir: Path, tmp_path: Path
) -> None:
    """A replay of a run stored already (its segment exists, its checkpoint is
    kept): lovia writes nothing, and a bare undo means the resume before it."""
    seen = await _resume(ws_dir, deps=DepsSpec("jobs", Jobs(tmp_path / "jobs.log")))
    [resumed] = [e.data["journal_id"] for e in seen if "journal_id" in e.data]
    before = _dump(ws_dir)
    seen = await _replay(ws_dir)

    assert _dump(ws_dir) == before
    [note] = [e for e in seen if "journal_id" in e.data]
    assert note.text.endswith("the run changed no rows")
    assert (await Journal().last_undoable(_files(ws_dir))).id == resumed
    # The session's earlier run is no run "stored since": nothing is put back
    # before it (the tmux round's undo preview said "2 runs ... stay").
    assert stored_since(Journal(), Journal().get_sync(resumed)) == []


@pytest.mark.parametrize("since", ["renamed", "another run"])
async def test_an_interrupted_resume_leaves_a_chat_changed_since_alone(
    demo_dir, tmp_path: Path, capsys: pytest.CaptureFixture[str], since: str
) -> None:
    """After a resume of its run was interrupted, lovia web's user renamed the
    chat, or lovia web started another run in it: the undo would put the old
    title or the old run's pointer back, so it is refused."""
    directory = Path(shutil.copytree(demo_dir.directory, tmp_path / "demo"))
    web = directory / "assistant.db"
    ws = await Workspace.open([directory])
    try:
        pf = await preflight(
            ws, "run-crashed", agent=load_agent("lovia_tui.demo:agent"), stale_after=0
        )
    finally:
        await ws.close()
    assert pf.ok and pf.web_chat == "chat-export"
    interrupted = await RunJournal.begin(Journal(), pf)
    interrupted.release()  # as a SIGKILL leaves it: pending, and nobody holds it
    store = ChatStore.sqlite(web)
    if since == "renamed":
        await store.set_title("chat-export", "Renamed since")
    else:
        await store.set_active_run_id("chat-export", "run-web-new")
    await _refused_as_moved_on(capsys, directory, lambda: rows(web))


async def test_a_journal_too_busy_to_name_a_batch_does_not_fail_the_run(
    ws_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the journal's lock past its busy timeout: the
    run goes on (its calls have run; failing it would lose their results),
    and its end records every batch it saved, so undo still puts all back."""

    async def busy(*_: object) -> None:
        raise JournalError("the journal is locked by another process")

    monkeypatch.setattr(Journal, "adding", busy)
    before = _dump(ws_dir)
    seen = await _resume(ws_dir, deps=DepsSpec("jobs", Jobs(tmp_path / "jobs.log")))

    assert seen[-1].kind == "run_completed"
    [note] = [e for e in seen if "journal_id" in e.data]
    assert "could not be named in it beforehand (the journal is locked" in note.text
    await undo(Journal(), note.data["journal_id"], _files(ws_dir))
    assert _dump(ws_dir) == before


async def test_batches_another_process_saved_meanwhile_are_not_claimed(
    ws_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A lovia-tui with another journal resuming the run too (its lock is not
    ours): the batches this run did not name are not taken for its own; the
    entry stays unfinished, and its undo refuses rather than guess."""

    async def named_elsewhere(*_: object) -> None:
        return None  # as if another process had saved every batch

    monkeypatch.setattr(RunJournal, "_name", named_elsewhere)
    seen = await _resume(ws_dir, deps=DepsSpec("jobs", Jobs(tmp_path / "jobs.log")))
    [note] = [e for e in seen if "journal_id" in e.data]
    assert note.text.endswith(
        "another process changed this run's checkpoint meanwhile; it cannot be undone"
    )
    await _refused_as_moved_on(capsys, ws_dir, lambda: _dump(ws_dir))


async def test_a_checkpoint_deleted_under_the_run_is_not_taken_for_its_own(
    ws_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another operator (another journal) deletes the checkpoint while the
    resume runs a tool: lovia numbers the run's next batches from 0 again,
    as the old ones were. The entry is not recorded done (its undo said it
    removed one batch and overwrote six rows): it stays unfinished, and its
    undo refuses."""
    seen = await _meanwhile(
        ws_dir, tmp_path, SQLiteCheckpointer(ws_dir / "runs.db", wal=True).delete(RUN)
    )
    [note] = [e for e in seen if "journal_id" in e.data]
    assert "another process changed this run's checkpoint meanwhile" in note.text
    await _refused_as_moved_on(capsys, ws_dir, lambda: _dump(ws_dir))


async def test_a_batch_seq_of_another_type_does_not_stop_the_resume(
    ws_dir: Path, tmp_path: Path
) -> None:
    """A file lovia did not write alone: a batch whose seq is text. The run
    goes; its entry never claims batches it cannot name."""
    with sqlite3.connect(ws_dir / "runs.db") as conn:
        conn.execute(
            "UPDATE snapshot_turns SET seq = 'zero' WHERE run_id = ? AND seq = 0",
            (RUN,),
        )
    conn.close()
    seen = await _resume(ws_dir, deps=DepsSpec("jobs", Jobs(tmp_path / "jobs.log")))
    assert seen[-1].kind in ("run_completed", "run_failed")
    assert [e for e in seen if "journal_id" in e.data]
    assert [integrity(ws_dir / name) for name in ("sessions.db", "runs.db")] == [
        "ok",
        "ok",
    ]


async def test_an_action_on_a_run_being_resumed_is_refused(
    ws_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """delete-run, even with --force, while the run is being resumed: lovia
    would save the run's next batches into a checkpoint without its start
    (an attacker's finding). Refused under the write lock, nothing changed;
    once the run ended, its undo puts everything back."""
    before = _dump(ws_dir)

    async def refused() -> None:
        during = _dump(ws_dir)
        for action in (["delete-run"], ["finalize", "--session", SESSION]):
            command = [*action, str(ws_dir), RUN, "--force", "--yes"]
            assert await asyncio.to_thread(main, command) == 2
            assert (
                f"a resume or replay of run {RUN!r} is running in this lovia-tui"
                in capsys.readouterr().err
            )
        assert _dump(ws_dir) == during

    await _meanwhile(ws_dir, tmp_path, refused())
    assert [e.action for e in await Journal().entries()][-1] == "resume"

    assert await asyncio.to_thread(main, ["undo", str(ws_dir), "--yes"]) == 0
    assert _dump(ws_dir) == before


async def _meanwhile(
    ws_dir: Path, tmp_path: Path, meanwhile: Awaitable[object], **options: Any
) -> list:
    """The crashed run resumed (journaled) until it runs its job "second",
    ``meanwhile`` then, and the run let go to its end: its console events."""
    jobs = Jobs(tmp_path / "jobs.log", release=asyncio.Event(), hold="second")
    ws = await Workspace.open([ws_dir])
    try:
        pf = await preflight(
            ws, RUN, agent=load_agent("support.resume:two_jobs"),
            deps=DepsSpec("jobs", jobs), session_id=SESSION, stale_after=0,
            **options,
        )  # fmt: skip
    finally:
        await ws.close()

    async def resumed() -> list:
        return [e async for e in resume(pf, RunControl(journal=Journal()))]

    async with asyncio.timeout(TIMEOUT):
        going = asyncio.create_task(resumed())
        while "second" not in jobs.calls():
            await asyncio.sleep(0.02)  # bounded by the timeout
        await meanwhile
        jobs.release.set()
        return await going


async def _journaled_then_killed(ws_dir: Path, **options: Any) -> RunJournal:
    """A resume's entry begun, left as a SIGKILL leaves it (pending, unlocked)
    by the caller's ``release()``; nothing of lovia's run happens here."""
    ws = await Workspace.open([ws_dir])
    try:
        pf = await preflight(
            ws, RUN, agent=load_agent("support.resume:assistant"), stale_after=0,
            **options,
        )  # fmt: skip
    finally:
        await ws.close()
    assert pf.ok, pf.problems
    return await RunJournal.begin(Journal(), pf)


async def test_a_run_killed_once_it_deleted_its_checkpoint_is_undone(
    ws_dir: Path,
) -> None:
    """--no-session --delete-on-success, killed once lovia deleted the
    checkpoint: no segment tells it was the run's own doing, the entry does
    (said before the delete), and the undo puts the checkpoint back."""
    before = _dump(ws_dir)
    run = await _journaled_then_killed(ws_dir, no_session=True, delete_on_success=True)
    await run.before_delete()
    await SQLiteCheckpointer(ws_dir / "runs.db", wal=True).delete(RUN)
    run.release()

    assert await asyncio.to_thread(main, ["undo", str(ws_dir), "--yes"]) == 0

    assert _dump(ws_dir) == before


async def test_a_batch_named_but_never_written_is_not_taken_for_the_runs_own(
    ws_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed after naming its next batch, before lovia wrote it; lovia then
    went on with the run itself and saved a batch of that number. The batch
    was never marked written by the entry: refused, lovia's batch kept."""

    async def killed() -> None:
        raise asyncio.CancelledError  # the process dies before lovia writes

    run = await _journaled_then_killed(ws_dir, session_id=SESSION)
    with pytest.raises(asyncio.CancelledError):
        await run.save_batch(killed)
    run.release()
    with pytest.raises(Exception, match="."):  # no script left: the model fails
        await Runner.run(
            make_assistant([]), [], deps=Jobs(tmp_path / "jobs.log"),
            checkpoint=CheckpointOptions(
                SQLiteCheckpointer(ws_dir / "runs.db", wal=True), RUN,
                if_run_exists="resume_only",
            ),
        )  # fmt: skip
    await _refused_as_moved_on(capsys, ws_dir, lambda: _dump(ws_dir))


async def test_a_run_killed_between_lovias_write_and_the_mark_is_undone(
    ws_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lovia saved the batch, the process died before the entry said so: the
    checkpoint was saved last right when the batch was named, so it is the
    run's own, and the undo puts everything back (a batch another writer
    saves later carries a later time: see the test above)."""
    before = _dump(ws_dir)
    run = await _journaled_then_killed(ws_dir, session_id=SESSION)
    named = run._name

    async def dies_at_the_mark(at: int, *names: str) -> None:
        if names[0].startswith(WRITTEN):
            raise asyncio.CancelledError  # SIGKILL: the mark is never journaled
        await named(at, *names)

    monkeypatch.setattr(run, "_name", dies_at_the_mark)
    lovias = SQLiteCheckpointer(ws_dir / "runs.db", wal=True)
    snapshot = await lovias.load(RUN)
    head = dataclasses.replace(snapshot.head, updated_at=time.time())
    saved = AssistantTextEntry(content="saved before the kill")
    with pytest.raises(asyncio.CancelledError):
        await run.save_batch(lambda: lovias.append(RUN, [saved], head))
    run.release()

    assert await asyncio.to_thread(main, ["undo", str(ws_dir), "--yes"]) == 0

    assert _dump(ws_dir) == before


SWEEP = (
    "CREATE TRIGGER sweep AFTER INSERT ON {table} "
    "BEGIN DELETE FROM {table} WHERE {key} != NEW.{key}; END"
)


@pytest.mark.parametrize(
    ("file", "table", "key"),
    [
        ("sessions.db", "session_runs", "session_id"),
        ("runs.db", "snapshot_heads", "run_id"),
    ],
)
async def test_a_file_with_triggers_is_refused_by_resume(
    ws_dir: Path, file: str, table: str, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trigger fires inside lovia's writes, on rows no entry journals (an
    attacker's sweep emptied another chat for good): the preflight lists it
    as a problem, and one added after the preflight stops the run before
    anything is written or journaled."""
    ws = await Workspace.open([ws_dir])
    try:
        pf = await preflight(
            ws, RUN, agent=load_agent("support.resume:assistant"),
            session_id=SESSION, stale_after=0,
        )  # fmt: skip
    finally:
        await ws.close()
    with sqlite3.connect(ws_dir / file) as conn:
        conn.execute(SWEEP.format(table=table, key=key))
    before = _dump(ws_dir)

    with pytest.raises(ActionError, match="has triggers of its own .'sweep' on"):
        [e async for e in resume(pf, RunControl(journal=Journal()))]
    assert await asyncio.to_thread(main, _resume_args(ws_dir)) == 2
    assert "has triggers of its own ('sweep' on" in capsys.readouterr().err
    assert _dump(ws_dir) == before
    assert await Journal().entries() == []


async def test_a_resume_starts_from_what_an_action_under_way_leaves(
    ws_dir: Path,
) -> None:
    """An action that found the run free holds its file's write lock until it
    commits (core.actions.entry_locks.refuse_runs_in_use): a resume that
    takes the run's lock meanwhile waits for that commit before it journals
    the run, so the rows it journals are the ones lovia will load."""
    holder = sqlite3.connect(ws_dir / "runs.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    seqs = [q for (q,) in holder.execute("SELECT seq FROM snapshot_turns ORDER BY seq")]
    holder.execute("DELETE FROM snapshot_turns WHERE seq = ?", (seqs[-1],))
    starting = asyncio.create_task(_journaled_then_killed(ws_dir, session_id=SESSION))
    await asyncio.sleep(0.3)
    assert not starting.done()
    holder.execute("COMMIT")
    holder.close()
    async with asyncio.timeout(TIMEOUT):
        run = await starting
    run.release()
    turns = next(c for c in run.before if c.group.table == "snapshot_turns")
    assert sorted(turns.column("seq")) == seqs[:-1]


async def test_a_segment_stored_by_another_process_meanwhile_keeps_the_checkpoint(
    ws_dir: Path, tmp_path: Path
) -> None:
    """Another operator (another journal: no lock between them) stores the
    run's entries in its session while the resume goes, as keep-partial does.
    lovia then keeps that segment and ignores the run's own append: the
    run's result is only in its checkpoint, which is kept, not deleted on
    success; its undo leaves the other process's segment alone."""
    before = _dump(ws_dir)
    partial = [AssistantTextEntry(content="kept by another operator")]
    stored: dict[str, list[tuple[str, ...]]] = {}

    async def keep_partial() -> None:
        session = SQLiteSession(ws_dir / "sessions.db", wal=True)
        await session.append(SESSION, partial, run_id=RUN)
        stored.update(_dump(ws_dir)["sessions.db"])  # as the other process left it

    seen = await _meanwhile(ws_dir, tmp_path, keep_partial(), delete_on_success=True)
    said = " ".join(e.text for e in seen)
    assert "another process stored a segment of this run" in said, said
    assert _dump(ws_dir)["sessions.db"] == stored  # lovia kept the other segment
    assert rows(ws_dir / "runs.db")["snapshot_heads"]  # the result's only copy

    assert await asyncio.to_thread(main, ["undo", str(ws_dir), "--yes"]) == 0
    assert _dump(ws_dir) == {**before, "sessions.db": stored}


async def test_a_second_resume_that_checked_before_the_first_started_is_refused(
    ws_dir: Path, tmp_path: Path
) -> None:
    """Two operators with journals of their own (no run lock between them)
    resume the crashed run: the first claims it as it starts (lovia saves its
    head again, stamped now, before the dangling call runs again), so the
    second, checked before that, finds it saved since and does not start;
    one checked after finds it live. Every call ran once; undo puts the
    claimed head back."""
    before = _dump(ws_dir)
    jobs = Jobs(tmp_path / "jobs.log", release=asyncio.Event())  # holds every job
    ws = await Workspace.open([ws_dir])
    try:
        options: dict[str, Any] = {
            "agent": load_agent("support.resume:two_jobs"),
            "deps": DepsSpec("jobs", jobs), "session_id": SESSION,
        }  # fmt: skip
        first = await preflight(ws, RUN, stale_after=0, **options)
        second = await preflight(ws, RUN, stale_after=0, **options)
    finally:
        await ws.close()

    async def resumed(pf: Preflight, journal: Journal) -> list:
        return [e async for e in resume(pf, RunControl(journal=journal))]

    async with asyncio.timeout(TIMEOUT):
        going = asyncio.create_task(resumed(first, Journal()))
        while not jobs.calls():  # the dangling call runs again, held
            await asyncio.sleep(0.02)  # bounded by the timeout
        other = Journal(tmp_path / "other" / "journal.db")
        with pytest.raises(ActionError, match="was saved since its preflight"):
            await resumed(second, other)
        ws = await Workspace.open([ws_dir])
        try:
            late = await preflight(ws, RUN, stale_after=60, **options)
        finally:
            await ws.close()
        assert any("it is running and saved" in p for p in late.problems)
        jobs.release.set()
        await going
    assert jobs.calls().count(jobs.calls()[0]) == 1

    assert await asyncio.to_thread(main, ["undo", str(ws_dir), "--yes"]) == 0
    assert _dump(ws_dir) == before
