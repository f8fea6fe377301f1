"""Which session a resumed or replayed run continues in, and how that is known.

Part of the preflight (:mod:`lovia_tui.core.runs.preflight`): the run's own
segment, lovia web's records, or the user's choice, each with what it risks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lovia_tui.core.actions.previews import SessionSource
from lovia_tui.core.models import RunInfo
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import non_text

Mode = Literal["resume", "replay"]

HOW_LINKED = {
    "segment": "it is stored in that session",
    "web": "the web UI's records say so",
}


@dataclass
class Findings:
    """What the checks found: warnings to show, problems that block."""

    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def block(self, message: str, *, unless: bool = False) -> None:
        """A problem, or only a warning when the user forced it."""
        (self.warnings if unless else self.problems).append(message)


@dataclass(frozen=True)
class RunSession:
    session_id: str | None
    source: SessionSource | None
    file: Path | None
    already_in: bool


async def _session_file(
    ws: Workspace, run: RunInfo, session_id: str, found: Findings
) -> Path | None:
    """The file holding ``session_id``, or the one a new session belongs in."""
    holder = await ws.find_session(session_id)
    if holder is not None:
        return holder.path
    found.warnings.append(
        f"session {session_id!r} has no runs in the open files: the agent sees no history "
        "and the run becomes the session's first"
    )
    run_db = ws.database(run.file)
    if run_db.stores.session or run_db.stores.chat:
        return run.file
    stores = ws.session_dbs
    if len(stores) == 1:
        return stores[0].path
    where = "none of the open files holds" if not stores else "several open files hold"
    found.problems.append(
        f"{where} a session store: open the one session {session_id!r} belongs in"
    )
    return None


async def run_session(
    ws: Workspace,
    run: RunInfo,
    mode: Mode,
    session_id: str | None,
    no_session: bool,
    force: bool,
    found: Findings,
) -> RunSession:
    link = (await ws.links([run.run_id])).get(run.run_id)
    if no_session:
        if link is not None:
            found.block(
                f"the run belongs to session {link.session_id!r} ({HOW_LINKED[link.kind]}); "
                "without it the agent loses that history (--force overrides)",
                unless=force,
            )
        return RunSession(None, None, None, False)
    if session_id is None and link is None:
        found.problems.append(
            "it is linked to no session (not stored in one, no web UI record): "
            "choose its session (--session SID), or run it without one (--no-session)"
        )
        return RunSession(None, None, None, False)
    if link is not None and session_id in (None, link.session_id):
        session = RunSession(
            link.session_id, link.kind, link.file, link.kind == "segment"
        )
    else:
        assert session_id is not None
        if link is not None:
            found.block(
                f"the run belongs to session {link.session_id!r} ({HOW_LINKED[link.kind]}), "
                f"not {session_id!r}: it would be appended to the wrong conversation (--force overrides)",
                unless=force,
            )
        found.warnings.append(
            f"session {session_id!r} was chosen by you, and lovia cannot check it: a wrong "
            "session feeds the agent the wrong history and appends the run there"
        )
        session = RunSession(
            session_id, "given", await _session_file(ws, run, session_id, found), False
        )
    if reason := non_text("session", session.session_id):
        found.problems.append(reason)
    if session.already_in and mode == "resume":
        found.problems.append(
            f"it is already stored in session {session.session_id!r} (finalized, "
            "e.g. by the web UI's Stop): resuming would repeat its entries and not store the result"
        )
    return session
