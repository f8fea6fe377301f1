"""Resume and replay from the inspector: preflight dialog, then the console.

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`, kept apart
because it is its own concept: everything that starts a run lives here.
The core's run modules are imported on first use, not for the first frame.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from textual import work

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.run_console import RunConsole

if TYPE_CHECKING:
    from lovia_tui.core.runs.agents import AgentSpec, DepsSpec
    from lovia_tui.core.runs.preflight import Preflight
    from lovia_tui.screens.preflight import PreflightChoice

NO_AGENT = "resume needs an agent: start lovia-tui with --agent MODULE:ATTR (an Agent or a factory)"


class RunFlows(InspectorBase):
    """Resume (R), replay (P), the console (c) and cancelling a run (K)."""

    _agent: AgentSpec | None = None
    _deps: DepsSpec | None = None

    async def console(self) -> RunConsole:
        """The console, mounted above the footer on first use: not in the first frame."""
        if self.run_console is None:
            self.run_console = RunConsole(id="console", classes="hidden")
            await self.mount(self.run_console, before=self.query_one(KeyBar))
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

    def action_resume(self) -> None:
        run = self.selection.run
        if run is not None:
            self.preflight_flow("resume", run.run_id)

    def action_replay(self) -> None:
        run = self.selection.run
        if run is not None:
            self.preflight_flow("replay", run.run_id)

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

    @work(exclusive=True, group=Group.PREFLIGHT)
    async def preflight_flow(
        self, mode: str, run_id: str, *, delete_on_success: bool = False
    ) -> None:
        """Check, show, re-check with the user's options, and start only when clear.

        ``delete_on_success`` is the first default: a doctor fix deletes the
        checkpoint once the run is stored, or it would leave the next finding."""
        from lovia_tui.core.runs.resume import replay, resume
        from lovia_tui.screens.preflight import PreflightScreen

        if self.run_going:
            self.notify(
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
                sessions = list(self.sessions.keys)
                live = pf.run.is_live(time.time(), self.stale_after)
                choice = await self.app.push_screen_wait(
                    PreflightScreen(pf, sessions, live=live)
                )
                if choice is None:
                    return
        except LoviaTuiError as exc:
            self.notify(str(exc), severity="error")
            return
        (await self.console()).start(pf, resume if mode == "resume" else replay)

    async def action_toggle_console(self) -> None:
        (await self.console()).toggle_class("hidden")

    def action_cancel_run(self) -> None:
        if self.run_console is not None:
            self.run_console.cancel()

    def on_run_console_finished(self, message: RunConsole.Finished) -> None:
        self.notify(f"run {message.run_id}: {message.status}")
        self.action_refresh()
