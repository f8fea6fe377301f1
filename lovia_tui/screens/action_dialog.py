"""Dialogs for destructive actions: the exact preview, options, a confirmation.

Nothing is changed from here: the dialog returns the user's answer and the
inspector performs the previewed action through lovia.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from lovia_tui.core.formatting import printable


@dataclass(frozen=True)
class FormField:
    """An option the user may change before previewing again."""

    name: str
    label: str
    value: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActionAnswer:
    """Confirm (with a reason), or preview again with these option values."""

    confirm: bool
    values: dict[str, str] = field(default_factory=dict)
    reason: str | None = None


def preview_text(lines: list[str]) -> Text:
    text = Text()
    for number, line in enumerate(lines):
        style = (
            "bold"
            if number == 0
            else ("bold red" if line.startswith("WARNING") else "")
        )
        text.append(printable(line, multiline=True) + "\n", style=style)
    return text


class ActionScreen(ModalScreen[ActionAnswer | None]):
    """Shows what an action will remove; Confirm is the only way to do it."""

    BINDINGS = [
        Binding(
            "escape",
            "dismiss(None)",
            "Cancel",
            tooltip="Close without changing anything",
        )
    ]

    def __init__(
        self,
        title: str,
        lines: list[str],
        *,
        noop: bool,
        fields: list[FormField] = (),
        ask_reason: bool = True,
    ) -> None:
        super().__init__()
        self.ask_reason = ask_reason and not noop
        self.title_text = title
        self.lines = lines
        self.noop = noop
        self.fields = list(fields)

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog"):
            yield Label(
                printable(self.title_text), classes="dialog-title", markup=False
            )
            yield Static(preview_text(self.lines), id="preview")
            for spec in self.fields:
                yield Label(spec.label, markup=False)
                if spec.choices:
                    options = [(Text(printable(c)), c) for c in spec.choices]
                    value = spec.value if spec.value in spec.choices else Select.NULL
                    yield Select(
                        options, value=value, id=f"field-{spec.name}", prompt=spec.label
                    )
                else:
                    yield Input(spec.value, id=f"field-{spec.name}")
            if self.ask_reason:
                yield Label("Reason (kept in the journal, optional)")
                yield Input(id="reason", placeholder="why")
                yield Label(
                    "The rows are journaled first: u (undo) restores them exactly.",
                    classes="dim",
                )
            with Horizontal(classes="dialog-buttons"):
                if not self.noop:
                    yield Button("Confirm", id="confirm", variant="error")
                if self.fields:
                    yield Button("Preview again", id="again")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel" if self.noop else "#confirm", Button).focus()

    def _values(self) -> dict[str, str]:
        values = {}
        for spec in self.fields:
            widget = self.query_one(f"#field-{spec.name}")
            value = widget.value
            values[spec.name] = "" if value is Select.NULL else str(value)
        return values

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        reason = (
            self.query_one("#reason", Input).value.strip() or None
            if self.ask_reason
            else None
        )
        self.dismiss(ActionAnswer(True, self._values(), reason))

    @on(Button.Pressed, "#again")
    def _again(self) -> None:
        self.dismiss(ActionAnswer(False, self._values()))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class ForceScreen(ModalScreen[bool]):
    """A refusal for a live run, overridable only by typing the run's id."""

    BINDINGS = [
        Binding("escape", "dismiss(False)", "Cancel", tooltip="Keep the refusal")
    ]

    def __init__(self, message: str, token: str) -> None:
        super().__init__()
        self.message = message
        self.token = token

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog"):
            yield Label("Refused: a run looks live", classes="dialog-title")
            yield Static(
                Text(printable(self.message, multiline=True), style="bold red")
            )
            yield Label(
                printable(
                    f"If its process is really gone, type {self.token} to force:"
                ),
                markup=False,
            )
            yield Input(id="typed", placeholder=printable(self.token))
            with Horizontal(classes="dialog-buttons"):
                yield Button("Force", id="force", variant="error", disabled=True)
                yield Button("Cancel", id="cancel")

    @on(Input.Changed, "#typed")
    def _typed(self, event: Input.Changed) -> None:
        # The id as shown will do: the control characters it may hold cannot be typed.
        typed = event.value.strip()
        self.query_one("#force", Button).disabled = typed not in {
            self.token,
            printable(self.token),
        }

    @on(Button.Pressed, "#force")
    def _force(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(False)
