"""Opening an entry in the user's $PAGER, with the app suspended meanwhile.

The pager writes to the terminal (``less -R`` passes escape sequences
through): it gets the entry's printable lines, like every other view.
"""

from __future__ import annotations

import os
import shlex
import subprocess

from textual.app import App, SuspendNotSupported

from lovia_tui.view.rows import Row
from lovia_tui.widgets.transcript_rows import detail_lines, raw_json


def pager_text(row: Row) -> str:
    """What the pager shows for an entry row: all of it, printable."""
    assert row.entry is not None
    lines = detail_lines(row, raw=False, full=True, clip=False)
    return "\n".join(line.plain for line in lines) or raw_json(row.entry.data)


def open_in_pager(app: App, row: Row) -> None:
    if row.entry is None:
        return
    body = pager_text(row)
    command = shlex.split(os.environ.get("PAGER") or "less -R")
    try:
        with app.suspend():
            subprocess.run(command, input=body.encode("utf-8"), check=False)
    except (OSError, SuspendNotSupported) as exc:
        app.notify(f"cannot open the pager: {exc}", severity="error")
