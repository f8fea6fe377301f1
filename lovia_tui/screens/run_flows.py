"""Resume and replay: the preflight dialog, then the runs console — from the
inspector's keys and the doctor's fixes alike.

Everything that starts a run lives here (:class:`RunFlows`): it loads the
``--agent`` once, runs the preflight flow in a worker of its host screen and
mounts the console (:class:`~lovia_tui.widgets.run_console.RunConsole`)
above the host's key bar on first use. The console says
``RunConsole.Finished`` to the host when a run ends. The core's run modules
are imported on first use, not for the first frame.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.screen import Screen
from textual.worker import Worker

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.models import SessionKey
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.focus import focus_now
from lovia_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from lovia_tui.core.runs.agents import AgentSpec, DepsSpec
    from lovia_tui.core.runs.preflight import Preflight
    from lovia_tui.screens.preflight import PreflightChoice
    from lovia_tui.widgets.run_console import RunConsole

NO_AGENT = "resume needs an agent: start lovia-tui with --agent MODULE:ATTR (an Agent or a factory)"
QUIT_AGAIN = 4.0
"""Seconds in which a second `q` quits while a run is going in the console."""


class RunFlows:
    """Resume (R), replay (P), the console (c), answering an approval (A, V,
    a reason: E) and cancelling a run (K)."""

    def __init__(
        self,
        host: Screen,
        workspace: Workspace,
        stale_after: float,
        sessions: Callable[[], list[SessionKey]],
        *,
        agent_spec: str | None = None,
        deps_spec: str | None = None,
    ) -> None:
        self.host = host
        self.workspace = workspace
        self.stale_after = stale_after
        self.sessions = sessions
        """The sessions the preflight's picker offers."""
        self.agent_spec = agent_spec
        """--agent: the entry agent resume needs (MODULE:ATTR)."""
        self.deps_spec = deps_spec
        self.run_console: RunConsole | None = None
        """The console of resumes and replays, once mounted (on first use)."""
        self._agent: AgentSpec | None = None
        self._deps: DepsSpec | None = None
        self._quit_asked = -QUIT_AGAIN

    @property
    def running(self) -> bool:
        """Whether a resume or replay is running in the console."""
        return self.run_console is not None and self.run_console.running

    async def console(self) -> RunConsole:
        """The console, mounted above the footer on first use: not in the first frame."""
        if self.run_console is None:
            from lovia_tui.widgets.run_console import RunConsole

            self.run_console = RunConsole(id="console", classes="hidden")
            await self.host.mount(self.run_console, before=self.host.query_one(KeyBar))
        return self.run_console

    async def _load_agent(self) -> AgentSpec | None:
        """The --agent given on the command line, imported once (off the UI thread)."""
        from lovia_tui.core.runs.agents import load_agent, load_deps

        spec = self.agent_spec
        if spec and self._agent is None:
            self._agent = await asyncio.to_thread(load_agent, spec)
            if self.deps_spec:
                self._deps = await asyncio.to_thread(load_deps, self.deps_spec)
        return self._agent

    async def _preflight(
        self,
        mode: str,
        run_id: str,
        choice: PreflightChoice | None,
        delete_on_success: bool = False,
    ) -> Preflight:
        from lovia_tui.core.runs.preflight import preflight, preflight_replay
        from lovia_tui.screens.preflight import FIRST_LOOK

        agent = await self._load_agent()
        chosen = choice or FIRST_LOOK
        options: dict[str, Any] = {
            "session_id": chosen.session_id,
            "no_session": chosen.no_session,
            "delete_on_success": chosen.delete_on_success
            or (choice is None and delete_on_success),
            "force": chosen.force,
        }
        if mode == "replay":
            return await preflight_replay(
                self.workspace, run_id, agent=agent, **options
            )
        return await preflight(
            self.workspace,
            run_id,
            agent=agent,
            deps=self._deps,
            stale_after=self.stale_after,
            max_turns=chosen.max_turns,
            **options,
        )

    def preflight(
        self, mode: str, run_id: str, *, delete_on_success: bool = False
    ) -> Worker[None]:
        """Resume or replay ``run_id``: the preflight dialog, then the console."""
        return self.host.run_worker(
            partial(self._preflight_flow, mode, run_id, delete_on_success),
            group=Group.PREFLIGHT,
            exclusive=True,
        )

    async def _preflight_flow(
        self, mode: str, run_id: str, delete_on_success: bool
    ) -> None:
        """Check, show, re-check with the user's options, and start only when clear.

        ``delete_on_success`` is the first default: a doctor fix deletes the
        checkpoint once the run is stored, or it would leave the next finding."""
        from lovia_tui.core.runs.resume import replay, resume
        from lovia_tui.screens.preflight import PreflightScreen

        if self.running:
            self.host.notify(
                "a run is already going in the console (K cancels it)",
                severity="warning",
            )
            return
        choice: PreflightChoice | None = None
        try:
            while True:
                pf = await self._preflight(mode, run_id, choice, delete_on_success)
                if choice is not None and choice.go and pf.ok:
                    break
                sessions = list(self.sessions())
                live = pf.run.is_live(time.time(), self.stale_after)
                choice = await self.host.app.push_screen_wait(
                    PreflightScreen(pf, sessions, live=live)
                )
                if choice is None:
                    return
        except LoviaTuiError as exc:
            self.host.notify(str(exc), severity="error")
            return
        (await self.console()).start(pf, resume if mode == "resume" else replay)

    @property
    def approval_waiting(self) -> bool:
        """Whether the run in the console waits for the user's approval."""
        return self.run_console is not None and self.run_console.waiting is not None

    def approval(self, what: str) -> None:
        """``approve`` or ``deny`` the call waiting in the console, or type a ``reason``."""
        if self.run_console is None:
            return
        if what == "reason":
            focus_now(self.run_console.query_one("#approval-reason"))  # keys typed next
        else:
            self.run_console.answer(what == "approve")

    async def toggle_console(self) -> None:
        console = await self.console()
        console.toggle_class("hidden")
        if not console.has_class("hidden"):
            console.check_undone()  # undone elsewhere while it was hidden

    def check_undone(self) -> None:
        """Have the console say whether its run was undone since (a journal read)."""
        if self.run_console is not None:
            self.run_console.check_undone()

    def cancel(self) -> None:
        """Cancel the run going in the console."""
        if self.run_console is not None:
            self.run_console.cancel()

    def may_quit(self) -> bool:
        """`q` while a run is going in the console: the first says what quitting
        does to the run, a second within :data:`QUIT_AGAIN` seconds quits."""
        now = time.monotonic()
        if not self.running or now - self._quit_asked < QUIT_AGAIN:
            return True
        self._quit_asked = now
        self.host.notify(
            "a run is going in the console: quitting stops it where it is "
            "(lovia saves it interrupted, to resume later); q again quits, K cancels it",
            severity="warning",
            timeout=QUIT_AGAIN,
        )
        return False
