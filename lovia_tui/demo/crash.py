"""Real crashes on demand: run a demo agent in a child process and SIGKILL it.

A killed process is the only honest way to leave a run ``running`` with a
dangling tool call and a frozen ``updated_at``; the demo and the tests (live
tail, resume) share this helper.

Child usage: ``python -m lovia_tui.demo.crash --session-db S --checkpoint-db C
--session-id SID --run-id RID [--steps N] [--slow SECONDS] [--wal] [--refund]``.
It prints ``READY`` once the slow ``run_job`` tool has started (with
``--refund``: once ``refund`` asks for its approval, which nobody gives) and
``DONE`` if the run ever completes.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from lovia import CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.testing import call, text

from .agent import make_agent, slow_jobs

READY = "READY"
DONE = "DONE"
_TOPICS = ("export", "weather", "suppliers", "kyoto", "osaka")
REFUND = ("refund", {"order": "A-17", "amount": 42})
"""The call a ``--refund`` child leaves waiting for its approval: (tool, arguments)."""


class AgentProcess:
    """A demo run in a child process, started on construction; kill it when you like.

    The run first calls ``lookup`` ``steps`` times, then ``run_job``, which
    sleeps ``slow`` seconds after printing ``READY``, then answers with text.
    ``refund``: it calls :data:`REFUND` instead and waits ``slow`` seconds for
    the approval after printing ``READY``. Use as a context manager: leaving
    the block kills a child still alive.
    """

    def __init__(
        self,
        session_db: Path,
        checkpoint_db: Path,
        session_id: str,
        run_id: str,
        *,
        prompt: str = "Run the nightly export, please.",
        steps: int = 0,
        slow: float = 60.0,
        wal: bool = True,
        refund: bool = False,
    ) -> None:
        args = [
            sys.executable, "-m", "lovia_tui.demo.crash",
            "--session-db", str(session_db), "--checkpoint-db", str(checkpoint_db),
            "--session-id", session_id, "--run-id", run_id, "--prompt", prompt,
            "--steps", str(steps), "--slow", str(slow),
        ]  # fmt: skip
        if wal:
            args.append("--wal")
        if refund:
            args.append("--refund")
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH")) if p
        )
        # Lives as long as the child; closed by kill().
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self._proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        with self._proc.stdout:
            for line in self._proc.stdout:
                self._lines.put(line.strip())
        self._lines.put(None)

    def wait_for(self, marker: str = READY, timeout: float = 30.0) -> str:
        """Block until the child prints a line starting with ``marker``; return it."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                raise TimeoutError(f"child never printed {marker!r}") from None
            if line is None:
                self._proc.wait()
                self._stderr.seek(0)
                raise RuntimeError(
                    f"child exited ({self._proc.returncode}) before {marker!r}:\n"
                    + self._stderr.read()[-4000:]
                )
            if line.startswith(marker):
                return line

    def kill(self) -> None:
        """SIGKILL the child (no cleanup runs) and reap it."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._stderr.close()

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def crash_run(
    session_db: Path,
    checkpoint_db: Path,
    session_id: str,
    run_id: str,
    *,
    prompt: str = "Run the nightly export, please.",
    steps: int = 0,
    wal: bool = True,
    timeout: float = 30.0,
) -> None:
    """Start a checkpointed run in a child process and SIGKILL it inside ``run_job``.

    Leaves the head ``running`` with the ``run_job`` call dangling.
    """
    with AgentProcess(
        session_db, checkpoint_db, session_id, run_id,
        prompt=prompt, steps=steps, wal=wal,
    ) as child:  # fmt: skip
        child.wait_for(READY, timeout)


async def _child(args: argparse.Namespace) -> None:
    topics = itertools.cycle(_TOPICS)
    script = [
        call("lookup", {"topic": next(topics)}, call_id=f"call_{args.run_id}_{i}")
        for i in range(args.steps)
    ]
    if args.refund:
        last = call(*REFUND, call_id=f"call_{args.run_id}_refund")
    else:
        last = call(
            "run_job", {"job": "nightly-export"}, call_id=f"call_{args.run_id}_job"
        )
    script += [last, text("The nightly export finished. 导出完成 ✅")]
    handle = Runner.stream(
        make_agent(script),
        args.prompt,
        session=SQLiteSession(args.session_db, wal=args.wal),
        session_id=args.session_id,
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(args.checkpoint_db, wal=args.wal), args.run_id
        ),
    )
    async for event in handle:
        if type(event).__name__ == "ApprovalRequired":  # nobody answers
            print(READY, flush=True)
            await asyncio.sleep(args.slow)  # bounded: the parent kills us first
    await handle.result()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--session-db", type=Path, required=True)
    parser.add_argument("--checkpoint-db", type=Path, required=True)
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--prompt", default="Run the nightly export, please.")
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--slow", type=float, default=60.0)
    parser.add_argument("--wal", action="store_true")
    parser.add_argument("--refund", action="store_true")
    args = parser.parse_args(argv)
    with slow_jobs(args.slow, lambda: print(READY, flush=True)):
        asyncio.run(_child(args))
    print(DONE, flush=True)


if __name__ == "__main__":
    main()
