"""Dialogs for destructive actions: the exact preview, options, a confirmation.

Nothing is changed from here: the dialog returns the user's answer and the
inspector performs the previewed action through lovia.

Confirming is a deliberate act: the focus starts in the Reason (so what the
user types at once is kept; option fields are above it, shift+tab), Enter in
a field moves on to the next one and then to Confirm, and an action that removes more than one run
or checkpoint, or a whole session, is confirmed only once its count or the
session's id is typed (:func:`confirm_token`): the line above the field says
so, and Enter there before it matches marks that line instead of moving on.
The layout (preview on top, in a scroll of its own) is :mod:`dialog_frame`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

if TYPE_CHECKING:
    from lovia_tui.core.actions.fork import ForkPreview
    from lovia_tui.core.actions.previews import Preview
from lovia_tui.core.actions.actor import serving
from lovia_tui.core.formatting import printable
from lovia_tui.screens.dialog_frame import dialog_head
from lovia_tui.widgets.focus import focus_now


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
    alternative: bool = False
    """The dialog's other choice instead (a rewind's: fork)."""


def confirm_token(preview: Preview | ForkPreview) -> tuple[str, str] | None:
    """What the user types to confirm a wide removal, and why it is asked:
    the count of runs and checkpoints removed when above one, the session's
    id for a clear. None: Confirm alone will do."""
    from lovia_tui.core.actions.previews import (
        ClearPreview,
        DeleteRunsPreview,
        RewindPreview,
    )

    if isinstance(preview, ClearPreview):
        return preview.session_id, "this removes the whole session"
    removed = 0
    if isinstance(preview, RewindPreview):
        removed = len(preview.runs_deleted) + len(preview.checkpoints)
    elif isinstance(preview, DeleteRunsPreview):
        removed = len(preview.checkpoints)
    if removed > 1:
        return str(removed), f"this removes {removed} runs and checkpoints"
    return None


def preview_text(lines: list[str]) -> Text:
    """An action's preview: each line one line, whatever ids, titles or
    reasons it quotes (a stored newline shows as ␊, as in the CLI)."""
    text = Text()
    for number, line in enumerate(lines):
        style = (
            "bold"
            if number == 0
            else ("bold red" if line.startswith("WARNING") else "")
        )
        text.append(printable(line) + "\n", style=style)
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
        fields: Sequence[FormField] = (),
        ask_reason: bool = True,
        token: tuple[str, str] | None = None,
        alternative: str | None = None,
    ) -> None:
        super().__init__()
        self.token = None if noop else token
        self.alternative = alternative
        self.ask_reason = ask_reason and not noop
        self.title_text = title
        self.lines = lines
        self.noop = noop
        self.fields = list(fields)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield from dialog_head(self.title_text, preview_text(self.lines))
            with VerticalScroll(classes="dialog-form"):
                yield from self._form()
            with Horizontal(classes="dialog-buttons"):
                if not self.noop:
                    yield Button(
                        "Confirm",
                        id="confirm",
                        variant="error",
                        disabled=self.token is not None,
                        compact=True,
                    )
                if self.alternative:
                    yield Button(
                        self.alternative,
                        id="alternative",
                        variant="success",
                        compact=True,
                    )
                if self.fields:
                    yield Button("Preview again", id="again", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def _form(self) -> ComposeResult:
        for spec in self.fields:
            yield Label(spec.label, markup=False)
            if spec.choices:
                options = [(Text(printable(c)), c) for c in spec.choices]
                value = spec.value if spec.value in spec.choices else Select.NULL
                yield Select(
                    options,
                    value=value,
                    id=f"field-{spec.name}",
                    prompt="choose one",  # its label is just above
                    compact=True,
                )
            else:
                yield Input(spec.value, id=f"field-{spec.name}", compact=True)
        if self.ask_reason:
            need = "required through serve" if serving() else "optional"
            yield Label(
                f"Reason ({need}; kept in the journal u (undo) restores from)",
                id="reason-why",
            )
            yield Input(id="reason", placeholder="why", compact=True)
        if self.token:
            value, why = self.token
            yield Label(
                printable(
                    f"{why.capitalize()}: type {value} below to confirm"
                    " (Confirm stays off until it matches)"
                ),
                id="typed-why",
                markup=False,
            )
            yield Input(id="typed", placeholder=printable(value), compact=True)

    @property
    def AUTO_FOCUS(self) -> str:  # type: ignore[override]  # Textual reads it per screen
        """The Reason first, even above option fields (shift+tab reaches
        them): a reason typed at once is kept, not typed into an option.
        Textual focuses it as the dialog is composed, so no later focus of the
        dialog's own takes back where a fast user has already moved."""
        if self.ask_reason:
            return "#reason"
        if self.fields or self.token:
            return "Input, Select"
        return "#cancel" if self.noop else "#confirm"

    @on(Input.Submitted)
    def _next(self, event: Input.Submitted) -> None:
        """Enter in a field moves on (to the next field, then Confirm): it
        never confirms by itself, nor leaves the confirmation mistyped."""
        event.stop()
        confirm = self.query("#confirm").results(Button)
        if event.input.id == "typed" and any(button.disabled for button in confirm):
            self.query_one("#typed-why", Label).add_class("needed")
            return
        # The widget after this field, focused before the next key: a fast
        # second Enter lands on Confirm, never one button further (Fork).
        chain = self.focus_chain
        if event.input in chain[:-1]:
            focus_now(chain[chain.index(event.input) + 1])

    @on(Input.Changed, "#typed")
    def _typed(self, event: Input.Changed) -> None:
        # The dialog may be closing already (its widgets gone): nothing to do.
        for button in self.query("#confirm").results(Button):
            button.disabled = not self.token or event.value.strip() != self.token[0]

    def _values(self) -> dict[str, str]:
        values = {}
        for spec in self.fields:
            widget = self.query_one(f"#field-{spec.name}")
            assert isinstance(widget, Input | Select)
            value = widget.value
            values[spec.name] = "" if value is Select.NULL else str(value)
        return values

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        if (
            self.token
            and self.query_one("#typed", Input).value.strip() != self.token[0]
        ):
            return
        reason = (
            self.query_one("#reason", Input).value.strip() or None
            if self.ask_reason
            else None
        )
        if reason is None and self.ask_reason and serving():
            # Every action through serve says why: ask here, the dialog kept.
            # The field has the focus before the words asking for it show.
            focus_now(self.query_one("#reason", Input))
            why = self.query_one("#reason-why", Label)
            why.update("A reason is required through serve: type it here, then Confirm")
            why.add_class("needed")
            return
        self.dismiss(ActionAnswer(True, self._values(), reason))

    @on(Button.Pressed, "#alternative")
    def _alternative(self) -> None:
        self.dismiss(ActionAnswer(False, self._values(), alternative=True))

    @on(Button.Pressed, "#again")
    def _again(self) -> None:
        self.dismiss(ActionAnswer(False, self._values()))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class ForceScreen(ModalScreen[bool]):
    """A refusal for a live run, overridable only by typing the run's id."""

    AUTO_FOCUS = "#typed"

    BINDINGS = [
        Binding("escape", "dismiss(False)", "Cancel", tooltip="Keep the refusal")
    ]

    def __init__(self, message: str, token: str) -> None:
        super().__init__()
        self.message = message
        self.token = token

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield from dialog_head(
                "Refused: a run looks live",
                Text(printable(self.message), style="bold red"),
            )
            with VerticalScroll(classes="dialog-form"):
                yield Label(
                    printable(
                        f"If its process is really gone, type {self.token} to force:"
                    ),
                    markup=False,
                )
                yield Input(id="typed", placeholder=printable(self.token), compact=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button(
                    "Force", id="force", variant="error", disabled=True, compact=True
                )
                yield Button("Cancel", id="cancel", compact=True)

    @on(Input.Changed, "#typed")
    def _typed(self, event: Input.Changed) -> None:
        # The id as shown will do: the control characters it may hold cannot be typed.
        typed = event.value.strip()
        self.query_one("#force", Button).disabled = typed not in {
            self.token,
            printable(self.token),
        }

    @on(Input.Submitted)
    def _next(self, event: Input.Submitted) -> None:
        event.stop()
        self.focus_next()

    @on(Button.Pressed, "#force")
    def _force(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(False)
