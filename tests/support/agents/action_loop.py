"""One operator: lovia-tui commands on one session, chosen at random, for a while.

Usage: ``python action_loop.py DB SESSION SEED SECONDS LOG``. Until SECONDS
have passed (and at least :data:`MIN_COMMANDS` times) it runs, in this process, a random choice of ``rewind``,
``trim``, ``fork`` and ``undo`` (the newest, or a random recent action by
id), each with ``--yes``, and appends one JSON line per command to LOG:
``{"argv", "code", "out", "err"}``. Two of these beside a lovia writer are
two support staff on one host. Repeatable by SEED (up to timing).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sqlite3
import sys
import time
from pathlib import Path

from lovia_tui.cli import main

MIN_COMMANDS = 6
"""Run at least this many, however long they take (a loaded machine)."""


def _recent_actions(journal: Path, db: Path) -> list[int]:
    """Ids of the latest journaled actions (not undos) on ``db``, read-only."""
    if not journal.exists():
        return []
    with contextlib.closing(
        sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    ) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT id FROM entries WHERE action != 'undo' AND id IN "
                "(SELECT entry_id FROM groups WHERE database = ?) ORDER BY id DESC LIMIT 6",
                (str(db.resolve()),),
            )
        ]


def _command(
    rng: random.Random, db: Path, session: str, n: int, tag: str, journal: Path
) -> list[str]:
    choice = rng.choice(["rewind", "trim", "fork", "undo", "undo-id"])
    if choice == "rewind":
        return ["rewind", str(db), session, "--keep", str(rng.randrange(2, 12))]
    if choice == "trim":
        return ["trim", str(db), session, "--keep-chars", "10"]
    if choice == "fork":
        return [
            "fork",
            str(db),
            session,
            "--keep",
            str(rng.randrange(2, 12)),
            "--as",
            f"fork-{tag}-{n}",
        ]
    recent = _recent_actions(journal, db)
    if choice == "undo-id" and recent:
        return ["undo", str(db), str(rng.choice(recent)), "--wait", "2"]
    return ["undo", str(db), "--wait", "2"]


def run(
    db: Path, session: str, seed: int, seconds: float, log: Path, journal: Path
) -> None:
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    n = 0
    with log.open("a") as out:
        while time.monotonic() < deadline or n < MIN_COMMANDS:  # bounded by both
            argv = [
                *_command(rng, db, session, n, str(seed), journal),
                "--yes",
                "--json",
            ]
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(argv)
            out.write(
                json.dumps(
                    {
                        "argv": argv,
                        "code": code,
                        "out": stdout.getvalue(),
                        "err": stderr.getvalue(),
                    }
                )
                + "\n"
            )
            out.flush()
            n += 1


if __name__ == "__main__":
    import os

    db_arg, session_arg, seed_arg, seconds_arg, log_arg = sys.argv[1:]
    run(
        Path(db_arg), session_arg, int(seed_arg), float(seconds_arg), Path(log_arg),
        Path(os.environ["LOVIA_TUI_JOURNAL"]),
    )  # fmt: skip
    print("DONE", flush=True)
