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

DEFAULT_PAGER = "less -R"


def pager_text(row: Row) -> str:
    """What the pager shows for an entry row: all of it, printable."""
    assert row.entry is not None
    lines = detail_lines(row, raw=False, full=True, clip=False)
    return "\n".join(line.plain for line in lines) or raw_json(row.entry.data)


def open_in_pager(app: App, row: Row) -> None:
    if row.entry is None:
        return
    body = pager_text(row)
    try:
        command = shlex.split(os.environ.get("PAGER") or DEFAULT_PAGER)
    except ValueError as exc:  # an unbalanced quote
        app.notify(f"cannot open the pager: $PAGER: {exc}", severity="error")
        return
    try:
        with app.suspend():
            failure = _run_pager(command or shlex.split(DEFAULT_PAGER), body)
    except SuspendNotSupported as exc:
        failure = str(exc)
    if failure:
        app.notify(f"cannot open the pager: {failure}", severity="error")


def _run_pager(command: list[str], body: str) -> str:
    """Run the pager; what went wrong, if anything. Nothing may be raised out
    of ``App.suspend``: an exception skips its resume, and the app stays
    blank and deaf (a $PAGER naming no installed program did that)."""
    try:
        subprocess.run(command, input=body.encode("utf-8"), check=False)
    except OSError as exc:
        return str(exc)
    return ""
