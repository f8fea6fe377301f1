"""The line above the panes: each open file's stores, mode and watch."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from lovia_tui.core.formatting import printable
from lovia_tui.core.store.workspace import Workspace


class StatusLine(Static):
    """What is open and how; a file's notice (why it opened read-only…) is
    said once, as a notification; a damaged file turns it into a banner."""

    def __init__(self, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)
        self._noticed = False

    def describe(self, workspace: Workspace, watch_modes: dict[Path, str]) -> None:
        parts: list[str] = []
        damaged: list[str] = []
        replaced: list[str] = []
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
            if db.immutable:
                mode += ", immutable: later commits unseen"
            live = watch_modes.get(db.path, "watching")
            if db.damage:
                damaged.append(f"{db.name} is DAMAGED ({db.damage})")
            if db.replaced():
                replaced.append(
                    f"{db.name} was REPLACED on disk: showing the file it replaced "
                    "until you quit and open it again"
                )
            parts.append(f"{db.name} [{stores}, {mode}, {live}]")
            if db.notice and not self._noticed:
                self.notify(f"{db.name}: {db.notice}", severity="warning", timeout=8)
        for why in [] if self._noticed else workspace.skipped:
            self.notify(f"skipped {why}", severity="warning", timeout=8)
        # A damaged file is the banner: said first, in the error colour, until
        # Ctrl+R finds the file readable again; a replaced one until the app quits.
        if damaged:
            damaged.append(
                "no action changes it; `lovia-tui doctor --integrity` says which store"
            )
        banner = damaged + replaced
        self.set_class(bool(banner), "-damaged")
        if banner:
            parts = banner
        self.update(printable(" · ".join(parts)))
        self._noticed = True
