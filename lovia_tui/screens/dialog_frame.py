"""The frame every dialog shares: its title, then what it will do, then its fields, then its buttons.

The preview scrolls on its own, above the fields: focusing a field never
scrolls it out of sight, and the buttons stay on screen down to 60x15
(the sizes are in ``lovia_tui.tcss``: ``.dialog-preview``, ``.dialog-form``).
"""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lovia_tui.core.formatting import printable


def dialog_head(title: str, preview: RenderableType) -> ComposeResult:
    """The title and the preview (wrapped, scrollable, kept at the top);
    call inside the dialog's ``Vertical(classes="dialog")``."""
    yield Label(printable(title), classes="dialog-title", markup=False)
    with VerticalScroll(classes="dialog-preview"):
        yield Static(preview, id="preview")
