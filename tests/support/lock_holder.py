"""Another process holding a SQLite file's write lock, as a lovia writer does mid-transaction.

``held_write_lock(db)`` starts a child that opens ``db``, takes ``BEGIN
IMMEDIATE`` and keeps it until the block ends (then rolls back): every
lovia-tui action on the file waits for it, inside its own busy timeout.
"""

from __future__ import annotations

import contextlib
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_CHILD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("LOCKED", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@contextlib.contextmanager
def held_write_lock(db: Path) -> Iterator[None]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready and proc.stdout.readline().strip() == "LOCKED", proc.stderr.read()
        yield
    finally:
        proc.communicate("go\n", timeout=30)
    assert proc.returncode == 0
