"""An entry's attachments: what each one is, and an image drawn where it can be.

The facts (name, type, size, URL) show at once; each image stored in the
file is decoded and scaled off the UI thread, then drawn in half blocks
(:mod:`lovia_tui.widgets.half_blocks`). One that cannot be drawn says why in
its place. Its base64 never reaches the screen.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from lovia_tui.core.attachments import image_bytes, part_label
from lovia_tui.core.formatting import printable
from lovia_tui.core.image_pixels import scaled
from lovia_tui.screens.dialog_frame import dialog_head
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.half_blocks import HalfBlocks

MAX_COLUMNS, MAX_LINES = 100, 30
"""The most cells an image takes: 100 columns, 30 lines (60 pixel rows)."""


class AttachmentsScreen(ModalScreen[None]):
    """Lists ``parts`` (an entry's attachments); Esc closes it."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", tooltip="Close")]

    def __init__(self, title: str, parts: list[dict[str, Any]]) -> None:
        super().__init__()
        self.title_text = title
        self.parts = parts

    def compose(self) -> ComposeResult:
        summary = Text(
            f"{len(self.parts)} attached. Each image stored in the file is drawn "
            "below, scaled down; an image stored as a URL is never fetched."
        )
        with Vertical(classes="dialog attachments"):
            yield from dialog_head(self.title_text, summary)
            with VerticalScroll(id="attachment-images"):
                for number, part in enumerate(self.parts):
                    yield Static(
                        Text(printable(part_label(part)), style="bold"),
                        classes="attachment-label",
                    )
                    yield Static(
                        Text("decoding…", style="italic"),
                        id=f"attachment-{number}",
                        classes="attachment-image",
                    )

    def on_mount(self) -> None:
        width = max(8, min(MAX_COLUMNS, self.app.size.width - 8))
        lines = max(4, min(MAX_LINES, self.app.size.height - 12))
        self._draw(width, lines * 2)

    @work(thread=True, group=Group.ATTACHMENTS, exclusive=True)
    def _draw(self, width: int, height: int) -> None:
        for number, part in enumerate(self.parts):
            found = image_bytes(part)
            shown = found if isinstance(found, str) else scaled(found, width, height)
            if isinstance(shown, str):
                drawn: Text | HalfBlocks = Text(f"not drawn: {shown}", style="italic")
            else:
                drawn = HalfBlocks(shown)
            self.app.call_from_thread(self._show, number, drawn)

    def _show(self, number: int, drawn: Text | HalfBlocks) -> None:
        self.query_one(f"#attachment-{number}", Static).update(drawn)
