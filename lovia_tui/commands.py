"""Every inspector command, defined once: key bindings, footer, help screen
and command palette are all generated from this list.

Each command also says which panes' selection it acts on and what it needs
from it (:mod:`lovia_tui.view.selection`): the inspector's ``check_action``, the
key bar and the one-line "why not" of a key that does not apply all read
that declaration, so none of them can disagree with another.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType

from lovia_tui.view.kinds import Pane
from lovia_tui.view.selection import (
    APPROVAL_WAITING,
    ATTACHED,
    ENTRY,
    FOLLOWABLE,
    RAW,
    REPLAYABLE,
    RESUMABLE,
    ROW_ENTRY,
    RUN,
    RUN_GOING,
    SESSION,
    TEXT_RUN,
    TEXT_SESSION,
    UNDER_CURSOR,
    WRITABLE,
    Need,
    Selection,
)

SESSIONS, TRANSCRIPT, RUNS = Pane.SESSIONS, Pane.TRANSCRIPT, Pane.RUNS


def key_label(key: str) -> str:
    """A binding's key as a person reads it (``slash`` is ``/``)."""
    return {"slash": "/", "question_mark": "?", "escape": "esc"}.get(key, key)


@dataclass(frozen=True)
class CommandDef:
    """One command: the action it runs, its key, how it is described, the
    panes whose selection it acts on (none: it acts from anywhere) and what
    it needs from that selection."""

    action: str
    key: str
    title: str
    help: str
    show: bool = True
    group: str = "Browse"
    panes: tuple[Pane, ...] = ()
    needs: tuple[Need, ...] = ()
    footer: tuple[Pane, ...] | None = None
    """The panes whose key bar shows it (None: wherever it acts)."""
    urgent: bool = False
    """On the key bar only while it applies, and then in every pane."""
    typed_after: bool = False
    """It opens a text box that the keys typed after it fill: its binding has
    priority, so it runs as its key arrives, before the keys behind it go to
    the view that had the focus (as commands); never while a text box has
    the focus, where its key is text."""
    moves_focus: bool = False
    """It moves the focus to a pane: its binding has priority too, so that
    the keys typed right behind it (``3 R``) reach that pane. Otherwise they
    are already on their way through the old one, whose "go there first"
    answers them before the focus moves."""

    @property
    def priority(self) -> bool:
        """Whether its binding runs as its key arrives (see the two above)."""
        return self.typed_after or self.moves_focus

    @property
    def name(self) -> str:
        """The action's method name, without its parameters."""
        return self.action.split("(")[0]

    @property
    def key_label(self) -> str:
        return key_label(self.key)

    def why_not(self, selection: Selection) -> str | None:
        """Why the command does not apply to ``selection`` (None: it does)."""
        if self.panes and selection.pane not in self.panes:
            where = " or ".join(f"{pane.label} ({pane.number})" for pane in self.panes)
            return f"{self.key_label} {self.title.lower()} acts in the {where} pane: go there first"
        for need in self.needs:
            if not need.holds(selection):
                return f"{self.title}: {need.why(selection)}"
        return None

    def on_key_bar(self, pane: Pane | None) -> bool:
        """Whether the key bar shows this command while ``pane`` has the focus."""
        panes = self.panes if self.footer is None else self.footer
        return self.show and (not panes or pane in panes)

    def state(self, selection: Selection) -> bool | None:
        """For ``check_action``: True enabled, None shown disabled, False not
        shown (the command belongs to another pane)."""
        if self.panes and selection.pane not in self.panes:
            return False
        return None if self.why_not(selection) else True


INSPECTOR_COMMANDS: list[CommandDef] = [
    # Moving between panes.
    CommandDef("cycle_pane(1)", "tab", "Next pane", "Move to the next pane (one pane at a time when narrow)", show=False, moves_focus=True),
    CommandDef("cycle_pane(-1)", "shift+tab", "Previous pane", "Move to the previous pane", show=False, moves_focus=True),
    CommandDef("focus_pane('sessions')", "1", "Sessions", "Focus the sessions list", show=False, moves_focus=True),
    CommandDef("focus_pane('transcript')", "2", "Transcript", "Focus the transcript", show=False, moves_focus=True),
    CommandDef("focus_pane('runs')", "3", "Runs", "Focus the runs list", show=False, moves_focus=True),
    CommandDef("back", "escape", "Back", "Close the filter, cancel a search, or go back a pane", show=False),
    # What a pane's selection is acted on by: first, so the key bar shows them first.
    CommandDef("filter_sessions", "slash", "Filter", "Filter sessions by id and title as you type (from any pane)", footer=(SESSIONS,), typed_after=True),
    CommandDef("search_content", "s", "Search", "Search message text across all sessions (Esc cancels; from any pane)", footer=(SESSIONS,), typed_after=True),
    CommandDef("next_hit(1)", "n", "Next hit", "Move the transcript cursor to the search's next hit, on to the next session found", show=False, panes=(SESSIONS, TRANSCRIPT)),
    CommandDef("next_hit(-1)", "N", "Previous hit", "Move the transcript cursor to the search's previous hit, back to the previous session found", show=False, panes=(SESSIONS, TRANSCRIPT)),
    CommandDef("toggle_raw", "r", "Raw", "Raw JSON of the entry, run head or run meta under the cursor", panes=(TRANSCRIPT, RUNS), needs=(RAW,)),
    CommandDef("copy_id", "y", "Copy id", "Copy the whole id under the cursor (session, run or tool call) to the clipboard", needs=(UNDER_CURSOR,), footer=(RUNS,)),
    CommandDef("attachments", "i", "Attachments", "The images and files attached to the entry under the cursor: what each is, and each stored image drawn", panes=(TRANSCRIPT,), needs=(ATTACHED,), urgent=True),
    CommandDef("pager", "o", "Pager", "Open the entry under the cursor in $PAGER", show=False, panes=(TRANSCRIPT,), needs=(ROW_ENTRY,)),
    CommandDef("rewind_here", "w", "Rewind here", "Rewind the session to before the entry under the cursor", group="Actions", panes=(TRANSCRIPT,), needs=(WRITABLE, TEXT_SESSION, ENTRY)),
    CommandDef("rewind_turn", "W", "Rewind turn", "Rewind to before the user turn holding the cursor (edit and resend)", group="Actions", panes=(TRANSCRIPT,), needs=(WRITABLE, TEXT_SESSION, ENTRY)),
    CommandDef("fork_here", "b", "Fork here", "Copy the session up to the cursor into a new session (nothing is removed; a web chat forks before the user turn, as lovia web does)", show=False, group="Actions", panes=(TRANSCRIPT,), needs=(WRITABLE, TEXT_SESSION, ENTRY)),
    CommandDef("export('md')", "x", "Export", "Export the session's transcript to Markdown", panes=(SESSIONS, TRANSCRIPT), needs=(SESSION, TEXT_SESSION)),
    CommandDef("export('json')", "X", "Export JSON", "Export the session's transcript to JSON", show=False, panes=(SESSIONS, TRANSCRIPT), needs=(SESSION, TEXT_SESSION)),
    CommandDef("trim", "t", "Trim", "Trim old tool outputs of the session (keep_chars, keep_runs)", group="Actions", panes=(SESSIONS, TRANSCRIPT), needs=(WRITABLE, SESSION, TEXT_SESSION)),
    CommandDef("clear_session", "C", "Clear", "Delete every run of the session (lovia clear)", group="Actions", panes=(SESSIONS, TRANSCRIPT), needs=(WRITABLE, SESSION, TEXT_SESSION)),
    CommandDef("jump_to_session", "J", "Jump to session", "Show the selected run in its session (Enter does too)", show=False, group="Runs", panes=(RUNS,), needs=(RUN,)),
    CommandDef("resume", "R", "Resume", "Resume the selected run through lovia (preflight first)", group="Runs", panes=(RUNS,), needs=(WRITABLE, RUN, TEXT_RUN, RESUMABLE)),
    CommandDef("replay", "P", "Replay", "Replay the selected completed run (heals a lost session append)", group="Runs", panes=(RUNS,), needs=(WRITABLE, RUN, TEXT_RUN, REPLAYABLE)),
    CommandDef("delete_run", "d", "Delete", "Delete the selected run's checkpoint", group="Actions", panes=(RUNS,), needs=(WRITABLE, RUN, TEXT_RUN)),
    CommandDef("delete_runs_by_filter", "D", "Delete…", "Delete checkpoints by status and age", group="Actions", panes=(RUNS,), needs=(WRITABLE,)),
    CommandDef("finalize", "F", "Finalize", "Settle an abandoned run: a web chat's as lovia web's Stop does (whole turns only), any other's appended to its session", group="Actions", panes=(RUNS,), needs=(WRITABLE, RUN, TEXT_RUN)),
    CommandDef("keep_partial", "p", "Keep partial", "Append everything an abandoned run saved to its session, its unfinished turn included, and drop its checkpoint", show=False, group="Actions", panes=(RUNS,), needs=(WRITABLE, RUN, TEXT_RUN)),
    CommandDef("runs_filter('all')", "a", "All runs", "Show every checkpoint again (the palette filters by status)", show=False, group="Runs", panes=(RUNS,)),
    # From anywhere.
    CommandDef("doctor", "!", "Doctor", "Audit the files for inconsistencies, each finding with a one-key fix", group="Actions", footer=(SESSIONS, RUNS)),
    CommandDef("follow", "f", "Follow", "Tail a running run's new entries as they are saved (in Runs, the selected run)", group="Live", needs=(FOLLOWABLE,), footer=(TRANSCRIPT, RUNS)),
    CommandDef("toggle_console", "c", "Console", "Show or hide the live event console", group="Runs", footer=(RUNS,)),
    CommandDef("approval('approve')", "A", "Approve", "Approve the tool call waiting in the console (with the reason typed there, if any)", group="Runs", needs=(APPROVAL_WAITING,), urgent=True),
    CommandDef("approval('deny')", "V", "Deny", "Deny the tool call waiting in the console (with the reason typed there, if any)", group="Runs", needs=(APPROVAL_WAITING,), urgent=True),
    CommandDef("approval('reason')", "E", "Reason", "Type a reason for your answer to the waiting call (Enter keeps it; then A or V)", group="Runs", needs=(APPROVAL_WAITING,), urgent=True, typed_after=True),
    CommandDef("cancel_run", "K", "Cancel run", "Cancel the run in the console at lovia's next safe point", group="Runs", needs=(RUN_GOING,), footer=(RUNS,)),
    CommandDef("undo", "u", "Undo", "Undo the last action from the journal (rows restored exactly)", group="Actions", needs=(WRITABLE,)),
    CommandDef("refresh", "ctrl+r", "Reload", "Re-read every pane from the databases", show=False),
    CommandDef("help", "question_mark", "Help", "List every key and command"),
    CommandDef("quit", "q", "Quit", "Leave lovia-tui"),
]  # fmt: skip

COMMANDS = {command.name: command for command in INSPECTOR_COMMANDS}
"""By action name, as ``check_action`` asks (``export('md')`` and
``export('json')`` share their panes and needs)."""
BY_ACTION = {command.action: command for command in INSPECTOR_COMMANDS}
"""By the whole action string, as a binding names it."""
PINNED = ("help", "quit")
"""Kept at the right end of the key bar: visible at any width."""


def bindings(commands: list[CommandDef]) -> list[BindingType]:
    """The screen's BINDINGS: one per command, its id the action."""
    return [
        Binding(
            c.key,
            c.action,
            c.title,
            show=c.show,
            tooltip=c.help,
            id=c.action,
            priority=c.priority,
        )
        for c in commands
    ]
