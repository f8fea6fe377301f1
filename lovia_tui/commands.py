"""Every inspector command, defined once: key bindings, footer, help screen
and command palette are all generated from this list."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class CommandDef:
    """One command: the action it runs, its key, and how it is described."""

    action: str
    key: str
    title: str
    help: str
    show: bool = True
    group: str = "Browse"


INSPECTOR_COMMANDS: list[CommandDef] = [
    CommandDef(
        "cycle_pane(1)",
        "tab",
        "Next pane",
        "Move to the next pane (one pane at a time when narrow)",
        show=False,
    ),
    CommandDef(
        "cycle_pane(-1)",
        "shift+tab",
        "Previous pane",
        "Move to the previous pane",
        show=False,
    ),
    CommandDef(
        "focus_pane('sessions')", "1", "Sessions", "Focus the sessions list", show=False
    ),
    CommandDef(
        "focus_pane('transcript')",
        "2",
        "Transcript",
        "Focus the transcript",
        show=False,
    ),
    CommandDef("focus_pane('runs')", "3", "Runs", "Focus the runs list", show=False),
    CommandDef(
        "filter_sessions",
        "slash",
        "Filter",
        "Filter sessions by id and title as you type",
    ),
    CommandDef(
        "search_content",
        "s",
        "Search",
        "Search message text across all sessions (Esc cancels)",
    ),
    CommandDef(
        "next_hit(1)",
        "n",
        "Next hit",
        "Move the transcript cursor to the search's next hit in this session",
        show=False,
    ),
    CommandDef(
        "next_hit(-1)",
        "N",
        "Previous hit",
        "Move the transcript cursor to the search's previous hit in this session",
        show=False,
    ),
    CommandDef(
        "back",
        "escape",
        "Back",
        "Close the filter, cancel a search, or go back a pane",
        show=False,
    ),
    CommandDef(
        "follow",
        "f",
        "Follow",
        "Follow the selected run: tail new entries as they are saved",
        group="Live",
    ),
    CommandDef(
        "toggle_raw",
        "r",
        "Raw",
        "Toggle raw JSON for the entry or run head under the cursor",
    ),
    CommandDef(
        "pager", "o", "Pager", "Open the entry under the cursor in $PAGER", show=False
    ),
    CommandDef(
        "export('md')", "x", "Export", "Export the session transcript to Markdown"
    ),
    CommandDef(
        "export('json')",
        "X",
        "Export JSON",
        "Export the session transcript to JSON",
        show=False,
    ),
    CommandDef(
        "jump_to_session",
        "J",
        "Jump to session",
        "Show the session of the selected run",
        show=False,
    ),
    CommandDef(
        "resume",
        "R",
        "Resume",
        "Resume the selected run through lovia (preflight first)",
        group="Runs",
    ),
    CommandDef(
        "replay",
        "P",
        "Replay",
        "Replay the selected completed run (heals a lost session append)",
        group="Runs",
    ),
    CommandDef(
        "toggle_console",
        "c",
        "Console",
        "Show or hide the live event console",
        show=False,
        group="Runs",
    ),
    CommandDef(
        "cancel_run",
        "K",
        "Cancel run",
        "Cancel the run in the console at lovia's next safe point",
        show=False,
        group="Runs",
    ),
    CommandDef(
        "rewind_here",
        "w",
        "Rewind here",
        "Rewind the session to before the entry under the cursor",
        group="Actions",
    ),
    CommandDef(
        "rewind_turn",
        "W",
        "Rewind turn",
        "Rewind to before the user turn holding the cursor (edit and resend)",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "trim",
        "t",
        "Trim",
        "Trim old tool outputs of the session (keep_chars, keep_runs)",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "clear_session",
        "C",
        "Clear session",
        "Delete every run of the session (lovia clear)",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "delete_run",
        "d",
        "Delete checkpoint",
        "Delete the selected run's checkpoint",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "delete_runs_by_filter",
        "D",
        "Delete checkpoints…",
        "Delete checkpoints by status and age",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "finalize",
        "F",
        "Finalize",
        "Append an abandoned run to its session and drop its checkpoint",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "undo",
        "u",
        "Undo",
        "Undo the last action from the journal (rows restored exactly)",
        group="Actions",
    ),
    CommandDef(
        "doctor",
        "!",
        "Doctor",
        "Audit the files for inconsistencies, each finding with a one-key fix",
        show=False,
        group="Actions",
    ),
    CommandDef(
        "runs_filter('all')",
        "a",
        "All runs",
        "Show every checkpoint again",
        show=False,
        group="Runs",
    ),
    CommandDef(
        "refresh",
        "ctrl+r",
        "Reload",
        "Re-read everything from the databases",
        show=False,
    ),
    CommandDef("help", "question_mark", "Help", "List every key and command"),
    CommandDef("quit", "q", "Quit", "Leave lovia-tui"),
]

RUN_STATUS_FILTERS = ["running", "stale", "interrupted", "failed", "completed"]


def bindings(commands: list[CommandDef]) -> list[Binding]:
    return [
        Binding(c.key, c.action, c.title, show=c.show, tooltip=c.help, id=c.action)
        for c in commands
    ]
