"""The resume / replay preflight: what will happen, what blocks it, the options.

Nothing runs from here: the dialog returns the user's choices, and the
inspector re-checks them with the core preflight before anything starts.
Starting is deliberate: the focus opens in the first field, never on the
button that starts the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select

from lovia_tui.core.formatting import plural, printable
from lovia_tui.core.runs.preflight import Preflight
from lovia_tui.core.runs.redact import error_line
from lovia_tui.screens.dialog_frame import dialog_head
from lovia_tui.widgets.focus import focus_now
from lovia_tui.widgets.run_detail import dangling_panel

WRONG_SESSION = (
    "lovia does not check this link: a wrong session feeds the agent the wrong "
    "history and appends the run there."
)
SOURCES = {
    "segment": "the run is already stored in it",
    "web": "the web UI's records link it",
    "given": "your choice",
}
NO_SESSION = "(no session)"


@dataclass(frozen=True)
class PreflightChoice:
    """What the user chose: go ahead, or check again with other options."""

    go: bool
    session_id: str | None
    no_session: bool
    max_turns: int | None
    delete_on_success: bool
    force: bool


FIRST_LOOK = PreflightChoice(
    go=False,
    session_id=None,
    no_session=False,
    max_turns=None,
    delete_on_success=False,
    force=False,
)
"""The options of a first preflight, before the user chose any: the core's defaults."""

IN_THE_APP = {
    "(--session SID)": "(below)",
    "(--no-session)": f"(choose {NO_SESSION})",
    "(--force overrides)": "(typing the run's id below overrides)",
    "(if its process is gone, a shorter --stale-after says so; --force overrides)": (
        "(if its process is gone, typing the run's id below overrides)"
    ),
}
"""The core's problems name the command line's flags; here, what the dialog offers."""


def in_the_app(text: str) -> str:
    for flag, here in IN_THE_APP.items():
        text = text.replace(flag, here)
    return text


def fact_text(text: object, style: str = "") -> Text:
    """A fact of the preflight: one line whatever ids, names or reasons it
    quotes (a stored newline shows as ␊, never as a line of its own)."""
    return Text(printable(text), style=style)


def describe(pf: Preflight) -> RenderableType:
    run = pf.run
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    status = run.status + (f" (not live: {pf.stale_reason})" if pf.stale_reason else "")
    table.add_row(
        "run",
        fact_text(f"{run.run_id} · {run.agent_name} · {plural(run.turns, 'turn')}"),
    )
    table.add_row("status", fact_text(status))
    if run.error:
        table.add_row(
            "error",
            fact_text(error_line(run.error), "red"),
        )
    if pf.mode == "resume":
        entry = (
            pf.agent.spec
            if pf.agent
            else "none (start lovia-tui with --agent MODULE:ATTR)"
        )
        reach = {True: "reaches", False: "does NOT reach", None: "—"}[pf.reachable]
        table.add_row("agent", fact_text(f"{entry} · {reach} {run.agent_name!r}"))
    if pf.session_id:
        how = SOURCES.get(pf.session_source or "", "")
        table.add_row("session", fact_text(f"{pf.session_id} ({how})"))
        if pf.session_source == "given":
            table.add_row("", Text(WRONG_SESSION, style="yellow"))
    else:
        table.add_row(
            "session",
            Text(
                "none chosen: no record says which session this run belongs to",
                style="italic",
            ),
        )
    if pf.already_in_session:
        table.add_row("", "already stored in that session: the append is a no-op")
    parts: list[RenderableType] = [table, Text("")]
    # What blocks or asks comes first after the facts: what the run leaves
    # and the calls, which can fill the dialog, come after it.
    for problem in pf.problems:
        parts.append(fact_text(f"✗ {in_the_app(problem)}", "bold red"))
    for gated in pf.approvals.gated:
        call = gated.call
        parts.append(
            fact_text(
                f"⚠ {call.name} [{call.call_id}] asks for approval when it runs again "
                f"({gated.why}): you answer in the console: A approves, V denies, E types a reason",
                "yellow",
            )
        )
    for warning in pf.warnings:
        parts.append(fact_text(f"⚠ {in_the_app(warning)}", "yellow"))
    left = Table.grid(padding=(0, 1))
    left.add_column(style="bold", no_wrap=True)
    left.add_column()
    for line in pf.afterwards:
        left.add_row("afterwards", fact_text(line))
    parts += [Text(""), left]
    if pf.mode == "resume":
        parts.append(dangling_panel(list(pf.dangling)))
    return Group(*parts)


class PreflightScreen(ModalScreen[PreflightChoice | None]):
    """Shows a :class:`Preflight`; its button runs only when nothing blocks."""

    @property
    def AUTO_FOCUS(self) -> str:  # type: ignore[override]  # Textual reads it per screen
        """A resume opens in its first field, never on its button: Enter at
        once would re-run dangling tool calls; Enter there moves on to the
        button. A replay that nothing blocks opens on Replay (it runs no
        model and re-appends idempotently), a blocked one on Cancel: Check
        again re-opened the same dialog, so Enter seemed to do nothing."""
        if self.pf.mode == "resume" or self.pf.session_source in (None, "given"):
            return "Input, Select"
        return "#go" if self.pf.ok else "#cancel"

    BINDINGS = [
        Binding(
            "escape", "dismiss(None)", "Cancel", tooltip="Close without doing anything"
        )
    ]

    def __init__(
        self, pf: Preflight, sessions: list[tuple[str, str]], *, live: bool
    ) -> None:
        super().__init__()
        self.pf = pf
        self.sessions = sessions
        """(file, session_id) of every session open: listed with their file,
        as ids alone did not say which layout (web or two-file) they are in."""
        self.live = live

    def compose(self) -> ComposeResult:
        pf = self.pf
        with Vertical(id="dialog", classes="dialog"):
            yield from dialog_head(
                f"{pf.mode.capitalize()} run {pf.run.run_id}", describe(pf)
            )
            with VerticalScroll(classes="dialog-form"):
                yield from self._form()
            with Horizontal(classes="dialog-buttons"):
                yield Button(
                    pf.mode.capitalize(),
                    id="go",
                    variant="warning",
                    disabled=not pf.ok,
                    compact=True,
                )
                yield Button("Check again", id="recheck", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def _form(self) -> ComposeResult:
        pf = self.pf
        if pf.session_source in (None, "given"):
            yield Label("Session (your choice; " + WRONG_SESSION + ")")
            options = self.session_options()
            ids = {sid for _, sid in self.sessions}
            current = pf.session_id if pf.session_id in ids else Select.NULL
            yield Select(
                options,
                value=current,
                id="session",
                prompt="choose the run's session",
                compact=True,
            )
        if pf.mode == "resume":
            yield Label("Max turns (turns carry over into a resume)")
            yield Input(str(pf.max_turns), id="max-turns", type="integer", compact=True)
        yield Checkbox(
            "Delete the checkpoint once the run is stored",
            pf.delete_on_success,
            id="delete",
            compact=True,
        )
        if self.live:
            yield Label(
                printable(
                    f"This run looks live. To resume it anyway, type its id ({pf.run.run_id}):"
                ),
                markup=False,
            )
            yield Input(id="typed", placeholder=printable(pf.run.run_id), compact=True)

    def session_options(self) -> list[tuple[str | Text, str]]:
        """(label, session id) for the session picker: each with its file."""
        return [
            (NO_SESSION, NO_SESSION),
            *[
                (Text(printable(f"{sid}  ({Path(file).name})")), sid)
                for file, sid in self.sessions
            ],
        ]

    @on(Input.Submitted)
    def _next(self, event: Input.Submitted) -> None:
        """Enter in a field moves on; it never starts the run by itself."""
        event.stop()
        fields = list(self.query("Input, Select"))
        later = fields[fields.index(event.input) + 1 :] if event.input in fields else []
        go = self.query_one("#go", Button)
        focus_now(
            later[0] if later else go if not go.disabled else self.query_one("#recheck")
        )

    def _choice(self, go: bool) -> PreflightChoice:
        session_id, no_session = self.pf.session_id, False
        if self.query("#session"):
            value = self.query_one("#session", Select).value
            no_session = value == NO_SESSION
            session_id = None if no_session or value is Select.NULL else str(value)
        max_turns = None
        if self.query("#max-turns"):
            text = self.query_one("#max-turns", Input).value.strip()
            max_turns = int(text) if text.lstrip("-").isdigit() else None
        force = bool(self.query("#typed")) and self.query_one(
            "#typed", Input
        ).value.strip() in {self.pf.run.run_id, printable(self.pf.run.run_id)}
        return PreflightChoice(
            go,
            session_id,
            no_session,
            max_turns,
            self.query_one("#delete", Checkbox).value,
            force,
        )

    @on(Button.Pressed, "#go")
    def _go(self) -> None:
        self.dismiss(self._choice(True))

    @on(Button.Pressed, "#recheck")
    def _recheck(self) -> None:
        self.dismiss(self._choice(False))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)
