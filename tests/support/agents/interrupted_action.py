"""Run one lovia-tui command and stop dead part-way, for a test to SIGKILL it.

Usage: ``python interrupted_action.py STAGE COMMAND ARGS...``, where STAGE is

- ``inside``: at lovia's 100th DELETE inside the held write transaction
  (SQLite must roll the whole action back when the process dies);
- ``committed``: right after the commit, before the journal records the
  outcome (the change is in, the journal entry still pending).

It prints STAGE and waits to be killed; the action itself is the real one.
"""

from __future__ import annotations

import sys
import threading

from lovia_tui.core.actions import journal, locked_stores

STAGE, ARGV = sys.argv[1], sys.argv[2:]
DELETES_BEFORE_HALT = 100


def halt() -> None:
    print(STAGE, flush=True)
    threading.Event().wait(120)  # bounded: the test SIGKILLs this process
    raise SystemExit("was not killed")


if STAGE == "inside":
    deletes = 0
    execute = locked_stores.HeldConnection.execute

    def counting(self, sql, *params):
        global deletes
        if sql.lstrip().upper().startswith("DELETE"):
            deletes += 1
            if deletes == DELETES_BEFORE_HALT:
                halt()
        return execute(self, sql, *params)

    locked_stores.HeldConnection.execute = counting
elif STAGE == "committed":
    finish = journal.Journal.finish_sync

    def halting(self, entry_id, status, *args, **kwargs):
        if status == "done":
            halt()
        return finish(self, entry_id, status, *args, **kwargs)

    journal.Journal.finish_sync = halting
else:
    raise SystemExit(f"unknown stage {STAGE!r}")

if __name__ == "__main__":
    from lovia_tui.cli import main

    sys.exit(main(ARGV))
