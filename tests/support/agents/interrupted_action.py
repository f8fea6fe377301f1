"""Run one lovia-tui command and stop dead part-way, for a test to SIGKILL it.

Usage: ``python interrupted_action.py STAGE COMMAND ARGS...``, where STAGE is

- ``inside``: at lovia's 100th DELETE inside the held write transaction
  (SQLite must roll the whole action back when the process dies);
- ``committed``: right after the commit, before the journal records the
  outcome (the change is in, the journal entry still pending);
- ``undo-journaled``, ``undo-inside``, ``undo-committed``: the same three
  steps of an ``undo`` (see :data:`UNDO_STAGES`);
- ``undo-between``: an undo across two files, after the first file's commit.

It prints STAGE and waits to be killed; the action itself is the real one.
"""

from __future__ import annotations

import sys
import threading

from lovia_tui.core.actions import journal, locked_stores, undo

STAGE, ARGV = sys.argv[1], sys.argv[2:]
DELETES_BEFORE_HALT = 100
UNDO_STAGES = ("undo-journaled", "undo-inside", "undo-committed")
"""The steps of an undo's own protocol: its entry written (the rows untouched),
its rows changed inside the transaction, its transaction committed (the
journal not yet told)."""


def halt() -> None:
    print(STAGE, flush=True)
    threading.Event().wait(120)  # bounded: the test SIGKILLs this process
    raise SystemExit("was not killed")


if STAGE == "inside":
    deletes = 0
    execute = locked_stores.HeldConnection.execute

    def counting(self, sql, *params):
        global deletes
        if sql.lstrip().upper().startswith("DELETE") and not sql.endswith("WHERE 0"):
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
elif STAGE == "undo-journaled":
    begin = journal.Journal.begin_sync

    def begun(self, action, *args, **kwargs):
        entry_id = begin(self, action, *args, **kwargs)
        if action == "undo":
            halt()
        return entry_id

    journal.Journal.begin_sync = begun
elif STAGE == "undo-inside":
    apply_groups = undo.apply_groups

    def applying(*args):
        after = apply_groups(*args)
        halt()
        return after

    undo.apply_groups = applying
elif STAGE == "undo-committed":
    finish_undo = journal.Journal.finish_sync

    def recording(self, entry_id, status, *args, undoes=None, **kwargs):
        if status == "done" and undoes is not None:
            halt()
        return finish_undo(self, entry_id, status, *args, undoes=undoes, **kwargs)

    journal.Journal.finish_sync = recording
elif STAGE == "undo-between":
    execute = locked_stores.HeldConnection.execute
    commits = 0

    def committing(self, sql, *params):
        global commits
        if sql == "COMMIT":
            commits += 1
            if commits == 2:  # the first file's commit is in
                halt()
        return execute(self, sql, *params)

    locked_stores.HeldConnection.execute = committing
else:
    raise SystemExit(f"unknown stage {STAGE!r}")

if __name__ == "__main__":
    from lovia_tui.cli import main

    sys.exit(main(ARGV))
