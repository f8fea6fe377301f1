"""The line above the panes: each open file's stores, mode and watch."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from lovia_tui.core.formatting import printable
from lovia_tui.core.store.workspace import Workspace


class StatusLine(Static):
    """What is open and how; a file's notice (why it opened read-only…) is
    said once, as a notification."""

    def __init__(self, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)
        self._noticed = False

    def describe(self, workspace: Workspace, watch_modes: dict[Path, str]) -> None:
        parts = []
        for db in workspace.databases:
            stores = "+".join(
                name
                for name, has in (
                    ("sessions", db.stores.session),
                    ("checkpoints", db.stores.checkpoint),
                    ("web", db.stores.chat),
                )
                if has
            )
            mode = "read-only" if db.readonly else db.journal_mode.upper()
            live = watch_modes.get(db.path, "watching")
            parts.append(f"{db.name} [{stores}, {mode}, {live}]")
            if db.notice and not self._noticed:
                self.notify(f"{db.name}: {db.notice}", severity="warning", timeout=8)
        self.update(printable(" · ".join(parts)))
        self._noticed = True
