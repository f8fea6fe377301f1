"""A real lovia run, written slowly into one database, for live-tail tests.

Usage: ``python slow_writer.py DB RUN_IDS STEPS DELAY [SESSION_ID]``. It
creates the session and checkpoint tables (SQLiteSession + SQLiteCheckpointer,
WAL), prints ``READY`` and waits for a line on stdin, so the reader can open
the file and start tailing first. Each run (RUN_IDS is comma-separated; they
run one after another in the session) then calls the ``pause`` tool STEPS
times (each sleeps DELAY seconds, printing ``TOOL i`` as it starts) and
answers "Done.". After every checkpoint commit it prints
``SAVED <last seq> <status> <wall time>``, the time taken right after the
commit; ``DONE`` once the last run's session row is appended too. :class:`SlowWriter` drives
it from the parent (test or benchmark).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lovia import RunHead
    from lovia.transcript import TranscriptEntry


class SlowWriter:
    """This script in a child process, as seen from the test or benchmark."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []

    @classmethod
    async def start(
        cls, db: Path, run_ids: str, steps: int, delay: float, session_id: str = "live"
    ) -> SlowWriter:
        """Start the child and wait until its tables exist (it then waits for :meth:`go`)."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, str(db), run_ids, str(steps), str(delay), session_id,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        writer = cls(proc)
        await writer.expect("READY")
        return writer

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")

    async def expect(self, prefix: str, timeout: float = 10.0) -> str:
        """The child's next line starting with ``prefix`` (earlier lines are kept)."""
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.proc.stdout.readline()
                if not raw:
                    raise EOFError(
                        f"writer exited ({self.lines[-3:]}) before {prefix!r}"
                    )
                self.lines.append(raw.decode().strip())
                if self.lines[-1].startswith(prefix):
                    return self.lines[-1]

    async def close(self) -> None:
        """Kill the child if it still runs (SIGKILL: a real crash) and reap it."""
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()


async def main(
    db: str, run_ids: str, steps: int, delay: float, session_id: str
) -> None:
    """The child: lovia is imported here only, so the parent never pays for it."""
    from lovia import (
        Agent,
        CheckpointOptions,
        Runner,
        SQLiteCheckpointer,
        SQLiteSession,
        tool,
    )
    from lovia.testing import ScriptedProvider, call, text

    class TimedCheckpointer(SQLiteCheckpointer):
        """Announces each save as soon as its transaction has committed."""

        last_seq: dict[str, int] = {}

        async def append(
            self, run_id: str, entries: list[TranscriptEntry], head: RunHead
        ) -> None:
            await super().append(run_id, entries, head)
            seq = self.last_seq.get(run_id, -1) + bool(entries)
            self.last_seq[run_id] = seq
            print(f"SAVED {seq} {head.status} {time.time():.6f}", flush=True)

    @tool
    async def pause(step: int) -> str:
        """Work slowly on one step."""
        print(f"TOOL {step}", flush=True)
        await asyncio.sleep(delay)
        return f"step {step} done"

    session = SQLiteSession(db, wal=True)
    checkpointer = TimedCheckpointer(db, wal=True)
    await session.load(session_id)  # a store's tables appear on its first use
    await checkpointer.load(run_ids)  # any id: only the tables matter here
    print("READY", flush=True)
    await asyncio.to_thread(sys.stdin.readline)

    for run_id in run_ids.split(","):
        script = [call("pause", {"step": i}) for i in range(steps)] + [text("Done.")]
        agent = Agent(
            name="writer",
            instructions="Work through the steps.",
            model=ScriptedProvider(script),
            tools=[pause],
        )
        handle = Runner.stream(
            agent,
            "Write slowly.",
            session=session,
            session_id=session_id,
            checkpoint=CheckpointOptions(checkpointer, run_id),
            max_turns=steps + 2,
        )
        async for _ in handle:
            pass
        await handle.result()
    print("DONE", flush=True)


if __name__ == "__main__":
    db, run_ids, steps, delay = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        float(sys.argv[4]),
    )
    asyncio.run(
        main(db, run_ids, steps, delay, sys.argv[5] if len(sys.argv) > 5 else "live")
    )
