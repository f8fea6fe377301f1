"""Actions on the very session a lovia agent is appending to, from another process.

A real writer (``writer_process``) appends runs to session S while the CLI
rewinds, trims, clears, deletes checkpoints or finalizes runs of S, over and
over. Afterwards every row the writer committed is in the database as it
wrote it, or was named in the preview of the action that removed it and is in
that action's journal entry; then undoing every action, newest first, leaves
exactly the writer's rows (and the seeded ones) — nothing lost, nothing extra.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.lovia_factory import CRASH, SCRIPTS, abandoned_run, write_session
from support.writer_process import db_rows, journaled, wait_for, writer

from lovia_tui.cli import main

pytestmark = pytest.mark.usefixtures("private_journal")

SESSION = "S"
ACTIONS_WANTED = 8
SECONDS = 5.0
"""How long the actions run beside the writer (they stop early once enough are done)."""
MAX_ATTEMPTS = 40
"""Past SECONDS, attempts go on until one action got through, at most this many
(the first rewind is a cold process: on a loaded machine it alone can take 5 s)."""
FINALIZE_TARGETS = 4

COMMANDS = {
    "rewind": lambda db, n: ["rewind", db, SESSION, "--keep", "4"],
    "trim": lambda db, n: ["trim", db, SESSION, "--keep-chars", "10"],
    "clear": lambda db, n: ["clear", db, SESSION],
    "delete-run": lambda db, n: ["delete-run", db, "--status", "completed"],
    "finalize": lambda db, n: [
        "finalize",
        db,
        f"crashed-{n}",
        "--session",
        SESSION,
        "--stale-after",
        "0",
    ],  # fmt: skip
}


def _named(action: str, preview: dict) -> set[str]:
    """The runs whose segment the preview says the action removes or rewrites."""
    if action == "rewind":
        truncated = preview["truncated"]
        return {*preview["runs_deleted"], *([truncated["run_id"]] if truncated else [])}
    if action == "trim":
        return {run["run_id"] for run in preview["runs"]}
    if action == "clear":
        return set(preview["run_ids"])
    return set()


def _named_checkpoints(preview: dict) -> set[str]:
    """The runs whose checkpoint the preview says the action deletes."""
    deleted = preview.get("checkpoints") or [preview.get("checkpoint")]
    return {c["run_id"] for c in deleted if c}


def _cli(
    capsys: pytest.CaptureFixture[str], argv: list, cold: bool = False
) -> tuple[int, str, str]:
    """The command in this process, or (``cold``) as a user runs it: a fresh process."""
    if cold:
        done = subprocess.run(
            [sys.executable, "-m", "lovia_tui", *map(str, argv)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return done.returncode, done.stdout, done.stderr
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


async def _seed(db: Path) -> list[tuple[str, str, str | None]]:
    await write_session(db, SESSION, SCRIPTS, checkpoint_path=db)
    for n in range(FINALIZE_TARGETS):
        await abandoned_run(
            db, f"crashed-{n}", CRASH, session_path=db, session_id=SESSION
        )
    return db_rows(db)[0]


@pytest.mark.parametrize("action", COMMANDS)
def test_actions_beside_a_writer_lose_nothing(
    capsys: pytest.CaptureFixture[str],
    scratch: Path,
    private_journal: Path,
    action: str,
) -> None:
    db = scratch / "live.db"
    seeded = asyncio.run(_seed(db))
    _, seeded_turns, seeded_heads = db_rows(db)
    done: list[tuple[int, dict]] = []
    refused = 0
    with writer(db, SESSION, scratch) as committed:
        deadline = time.monotonic() + SECONDS
        n = attempts = 0
        while len(done) < ACTIONS_WANTED and attempts < MAX_ATTEMPTS:  # bounded
            if time.monotonic() > deadline and done:
                break
            if action == "finalize" and n == FINALIZE_TARGETS:
                break
            seen = committed.commits_so_far()  # act only once the writer moved on
            wait_for(lambda seen=seen: committed.commits_so_far() > seen)
            # The first one as a user runs it: a fresh process.
            argv = [*COMMANDS[action](db, n), "--yes", "--json"]
            code, out, err = _cli(
                capsys, argv, cold=not attempts and action == "rewind"
            )
            attempts += 1
            if code == 0:
                data = json.loads(out)
                assert "failed" not in out
                if data["result"] and data["result"]["journal_id"] is not None:
                    done.append((data["result"]["journal_id"], data["preview"]))
                n += 1
            else:  # refused, untouched: the rows moved on, a clear left nothing
                # yet, or the writer's run was caught between its segment and
                # its completed head (stored, yet live: never changed under it)
                assert any(
                    why in err
                    for why in ("changed since the preview", "no session", "is live")
                ), err
                refused += 1
    with capsys.disabled():
        print(
            f"\n{action}: {len(done)} done, {refused} refused, {len(committed.segments)} runs written"
        )
    assert committed.summary["failures"] == committed.summary["lock_errors"] == 0
    assert done, "no action got through beside the writer"

    segments, turns, heads = db_rows(db)
    held = journaled(private_journal)
    in_db = set(segments)
    lost = []
    for segment in committed.segments:
        if segment in in_db:
            continue
        explained = any(
            segment[0] in _named(action, preview)
            and segment in held.get(entry_id, {}).get("session_runs", set())
            for entry_id, preview in done
        )
        if not explained:
            lost.append(segment[0])
    for table, rows_now, logged in (
        ("snapshot_turns", turns, committed.turns),
        ("snapshot_heads", set(heads.items()), committed.heads.items()),
    ):
        for run_id, digest in logged:
            if (run_id, digest) not in rows_now and not any(
                run_id in _named_checkpoints(preview)
                and (run_id, digest) in held.get(entry_id, {}).get(table, set())
                for entry_id, preview in done
            ):
                lost.append(f"{table} row of {run_id}")
    assert lost == [], (
        f"{len(lost)} committed rows removed without a preview naming them"
    )

    for entry_id, _ in reversed(done):
        code, out, err = _cli(capsys, ["undo", db, str(entry_id), "--yes"])
        assert code == 0, err
    segments, turns, heads = db_rows(db)
    assert segments == seeded + committed.segments
    assert turns == seeded_turns | set(committed.turns)
    assert heads == {**seeded_heads, **committed.heads}
