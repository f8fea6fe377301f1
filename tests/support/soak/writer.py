"""One soak writer: a real lovia agent appending runs until told to stop.

Usage: ``python writer.py DB WRITER LOG STOP PACE [SESSION]``. Runs ScriptedProvider
agents through ``Runner.run`` with ``SQLiteSession`` and ``SQLiteCheckpointer``
(both ``wal=True``) into DB, one run after another, PACE seconds apart, until
the file STOP exists. After each commit it appends to LOG (JSON lines) what it
wrote: a segment (session, run id, sha256 of the stored entries_json and
meta_json), a checkpoint batch (run id, seq, sha256), a head (run id, sha256),
computed exactly as lovia serialises them. Any "database is locked" (an
exception, or lovia's own retry warning) counts as a lock error. Prints
``READY`` after its first run and a JSON summary line at the end. With
SESSION every run goes to that one session (the one the actions target),
else they rotate over three sessions of the writer's own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
import traceback
from pathlib import Path
from typing import Any


def sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


class LockWatch(logging.Handler):
    """Counts lovia's log records about a locked database (it retries, then warns)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "locked" in message:
            self.seen.append(message)


async def main(
    db: str, writer: str, log_path: str, stop: str, pace: float, target: str | None
) -> dict[str, Any]:
    from lovia import (
        Agent,
        CheckpointOptions,
        Runner,
        SQLiteCheckpointer,
        SQLiteSession,
        tool,
    )
    from lovia.testing import ScriptedProvider, batch, call, text
    from lovia.transcript import entry_to_dict

    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 (open for the whole run)

    def record(kind: str, **fields: Any) -> None:
        log.write(json.dumps({"kind": kind, **fields}) + "\n")
        log.flush()

    def entries_json(entries: list) -> str:
        return json.dumps([entry_to_dict(e) for e in entries], ensure_ascii=False)

    class RecordingSession(SQLiteSession):
        async def append(self, session_id, entries, *, run_id=None, meta=None):  # type: ignore[override]
            # Serialised before the await, as lovia does; recorded once committed.
            stored = entries_json(entries)
            meta_json = (
                json.dumps(meta, ensure_ascii=False) if meta is not None else None
            )
            rid = await super().append(session_id, entries, run_id=run_id, meta=meta)
            record(
                "segment",
                session_id=session_id,
                run_id=rid,
                entries=sha(stored),
                meta=sha(meta_json),
            )
            return rid

    class RecordingCheckpointer(SQLiteCheckpointer):
        seqs: dict[str, int] = {}

        async def append(self, run_id, entries, head):  # type: ignore[override]
            stored = entries_json(entries) if entries else None
            head_json = head.to_json()
            await super().append(run_id, entries, head)
            if stored is not None:
                self.seqs[run_id] = self.seqs.get(run_id, -1) + 1
                record("turn", run_id=run_id, seq=self.seqs[run_id], sha=sha(stored))
            record("head", run_id=run_id, sha=sha(head_json))

    @tool
    def echo(message: str) -> str:
        """Say ``message`` back."""
        return message

    @tool
    def dump(lines: int) -> str:
        """Return ``lines`` lines of log text."""
        return "\n".join(
            f"{writer} line {n:05d}: all systems nominal" for n in range(lines)
        )

    @tool
    async def pause(seconds: float) -> str:
        """Work for a while (the run is "running" meanwhile)."""
        await asyncio.sleep(seconds)
        return "paused"

    def script(n: int) -> list:
        kind = n % 4
        if kind == 0:
            return [
                call("echo", {"message": f"hello {writer} {n}"}),
                text(f"Echoed {n}."),
            ]
        if kind == 1:
            return [
                batch(
                    ("echo", {"message": f"a{n}"}, f"c{n}a"),
                    ("dump", {"lines": 40}, f"c{n}b"),
                ),
                text("Both."),
            ]
        if kind == 2:
            return [text(f"Plain answer {n}: 金閣寺 🗾")]
        return [
            call("pause", {"seconds": 0.3}),
            call("dump", {"lines": 150}),
            text(f"Slow {n} done."),
        ]

    locks = LockWatch()
    logging.getLogger("lovia").addHandler(locks)
    session = RecordingSession(db, wal=True)
    checkpointer = RecordingCheckpointer(db, wal=True)
    runs = failures = lock_errors = 0
    while not Path(stop).exists():  # bounded by the stop file
        agent = Agent(
            name=f"writer-{writer}",
            instructions="Do as asked.",
            model=ScriptedProvider(script(runs)),
            tools=[echo, dump, pause],
        )
        try:
            await Runner.run(
                agent,
                f"Request {runs} from {writer}.",
                session=session,
                session_id=target or f"{writer}-s{runs % 3}",
                checkpoint=CheckpointOptions(checkpointer, f"{writer}-r{runs}"),
            )
        except Exception as exc:  # counted and reported: the soak fails on any
            if "locked" in str(exc):
                lock_errors += 1
            else:
                failures += 1
                traceback.print_exc()
        runs += 1
        if runs == 1:
            print("READY", flush=True)
        await asyncio.sleep(pace)
    log.close()
    return {
        "writer": writer,
        "runs": runs,
        "failures": failures,
        "lock_errors": lock_errors + len(locks.seen),
    }


if __name__ == "__main__":
    db, writer, log_path, stop, pace = sys.argv[1:6]
    target = sys.argv[6] if len(sys.argv) > 6 else None
    summary = asyncio.run(main(db, writer, log_path, stop, float(pace), target))
    print(json.dumps(summary), flush=True)
