"""The Rich console of the human output, in its own module: ``--json`` and the
app never import Rich's console for it."""

from __future__ import annotations

from typing import Any

from rich.align import AlignMethod
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.style import Style
from rich.table import Table
from rich.text import Text

from lovia_tui.core.formatting import as_drawn_text, printable


class DataConsole(Console):
    """A console for text that quotes stored data: strings are never read as
    markup and come out printable (table cells, rules, plain prints alike).
    Code that builds a :class:`~rich.text.Text` passes data through
    :func:`printable` itself."""

    def on_broken_pipe(self) -> None:
        """The reader went away (`| head`): Rich exits 1 here; the command's
        runner stops quietly with 0 instead, as for every other output."""
        self.quiet = True
        raise BrokenPipeError

    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = kwargs["emoji"] = False
        return super().render_str(printable(text, multiline=True), **kwargs)

    def rule(
        self,
        title: str | Text = "",
        *,
        characters: str = "─",
        style: str | Style = "rule.line",
        align: AlignMethod = "center",
    ) -> None:
        """At a terminal, as wide as it; piped, never narrower than its title,
        which goes out whole (a run's long id, its error, who ran it)."""
        fitted = self.width
        if not self.is_terminal:
            shown = title.plain if isinstance(title, Text) else printable(title)
            self.width = max(fitted, cell_len(shown) + RULE_ENDS)
        try:
            super().rule(title, characters=characters, style=style, align=align)
        finally:
            self.width = fitted

    def print_table(self, table: Table) -> None:
        """At a terminal, the table fits it; piped, it is printed at its natural
        width, one line per row, so that ids reach ``grep``/``awk`` whole."""
        if self.is_terminal:
            self.print(table)
            return
        fitted = self.width
        natural = Measurement.get(self, self.options.update(width=UNBOUNDED), table)
        self.width = max(fitted, natural.maximum)
        try:
            self.print(table)
        finally:
            self.width = fitted


class DataTable(Table):
    """A table of stored data: a string cell is one line, its newlines and
    tabs shown as symbols (an id holding a newline split its row in two),
    without the presentation selectors that shift a row's borders."""

    def add_row(self, *cells: Any, **kwargs: Any) -> None:
        lines = (
            as_drawn_text(printable(cell)) if isinstance(cell, str) else cell
            for cell in cells
        )
        super().add_row(*lines, **kwargs)


RULE_ENDS = 6
"""Cells of a rule around its title: two of the line and a space each side."""
UNBOUNDED = 1_000_000
"""A width no table reaches: measuring against it gives the natural width."""
