"""One handler for every worker failure of a screen or a pane: a clear line,
not a crash.

Reads fail for reasons outside the app: another process holds a lock past
the busy timeout, a page of the file is damaged. Those reach the user as one
notification (a damaged file: one banner, the status line) and every view
stays usable (Ctrl+R tries again). Any other
exception is a bug and still ends the app with its traceback, as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.worker import Worker, WorkerState

from lovia_tui.core.errors import DamagedError, LoviaTuiError
from lovia_tui.core.store.database import Database
from lovia_tui.messages import FileTrouble
from lovia_tui.view.kinds import Group

EXPECTED = (LoviaTuiError, sqlite3.Error)
"""Failures caused by the files or other processes, not by the app."""

if TYPE_CHECKING:
    from textual.widget import Widget

    from lovia_tui.app import LoviaTui

    class _Node(Widget):
        app: LoviaTui  # mixed into lovia-tui's screens and panes only
else:
    # A plain mixin at run time: Textual takes a widget's CSS, type names and
    # component classes along its *first* DOM base, which must stay the
    # Screen, container or Input this is mixed into.
    _Node = object


class WorkerErrors(_Node):
    """A screen or pane whose workers report failures here instead of exiting
    the app (mixed in before ``Screen`` or a container: a worker's state
    change goes to the node that runs it, it does not bubble)."""

    def run_worker(self, *args: Any, **kwargs: Any) -> Worker[Any]:
        # Every worker of the node, @work ones included, fails into
        # on_worker_state_changed below rather than straight out of the app.
        kwargs["exit_on_error"] = False
        return super().run_worker(*args, **kwargs)

    def say_damaged(self, databases: Iterable[Database]) -> None:
        """Files a read left out as damaged (it raised nothing) get their banner."""
        for db in databases:
            if db.damage:
                self.post_message(FileTrouble(db.path))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        error = event.worker.error
        if event.state != WorkerState.ERROR or error is None:
            return
        if isinstance(error, DamagedError):
            # One banner for the file (the status line), not a toast a read.
            self.post_message(FileTrouble(Path(str(error.path))))
            return
        if isinstance(error, EXPECTED):
            text = (
                str(error)
                if isinstance(error, LoviaTuiError)
                else f"SQLite error: {error}"
            )
            self.app.say_failure(" ".join(text.split()))
            return
        if str(event.worker.group).startswith(Group.LIVE.of("")):
            # The live tail never ended the app; it stops and says why.
            self.notify(
                f"live updates stopped: {type(error).__name__}: {error}",
                severity="error",
            )
            return
        raise error
