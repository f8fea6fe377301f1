"""The help screen: every key and command, generated from the command list."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from lovia_tui.commands import INSPECTOR_COMMANDS, CommandDef, key_label
from lovia_tui.widgets.transcript import Transcript

MOVING = [
    # One short key a row: the key column is as wide as its widest key, and
    # on a narrow terminal a long one left the descriptions a few cells.
    ("↑ ↓ j k", "Move in a list or the transcript"),
    ("PgUp PgDn", "A page up or down"),
    ("Home End", "The first or the last row"),
    ("enter", "Open a session, jump from a run to its session, fold/unfold an entry"),
    (
        "ctrl+p",
        "Command palette: every command, go to session or run by id, filter runs",
    ),
]


class HelpScreen(ModalScreen):
    """Lists every binding; Esc or ? closes it."""

    BINDINGS = [
        Binding("escape,question_mark,q", "dismiss", "Close", tooltip="Close help")
    ]

    def compose(self) -> ComposeResult:
        table = Table(title="lovia-tui keys", expand=True, show_header=False, box=None)
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, what in MOVING:
            table.add_row(key, what)
        for binding in Transcript.BINDINGS:
            if isinstance(binding, Binding) and binding.show:
                table.add_row(
                    key_label(binding.key), f"{binding.description}: {binding.tooltip}"
                )
        groups: dict[str, list[CommandDef]] = {}
        for command in INSPECTOR_COMMANDS:
            groups.setdefault(command.group, []).append(command)
        for group, commands in groups.items():
            table.add_row("", "")
            table.add_row(f"[u]{group}[/u]", "")
            for command in commands:
                table.add_row(
                    key_label(command.key), f"{command.title}: {command.help}"
                )
        with VerticalScroll(id="help-box"):
            yield Static(table)
