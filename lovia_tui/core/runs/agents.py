"""The entry agent (and deps) a resume runs with, named ``MODULE:ATTR``.

Like ``lovia web --app``: the current directory is importable, and the target
is an ``Agent`` or a zero-argument factory returning one. A factory is called
afresh for every run, because scripted and stateful models are single-use; an
``Agent`` instance is shared by every run made in this process.
Deps follow the same rule: a callable (a class included) is called with no
arguments for each run; any other value is passed as is, so a deps object
that must itself be callable needs a factory around it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from lovia_tui.core.entries import shorten
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.models import RunInfo
from lovia_tui.core.runs.console import ERROR_WIDTH, one_line

if TYPE_CHECKING:
    from lovia import Agent


def _import_target(spec: str, option: str) -> Any:
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise LoviaTuiError(
            f"{option} must be MODULE:ATTR (e.g. myapp.agents:assistant), got {spec!r}"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            raise LoviaTuiError(
                f"{option} {spec}: no module named {exc.name!r}"
            ) from exc
        raise LoviaTuiError(
            f"{option} {spec}: importing {module_name!r} failed ({one_line(exc)})"
        ) from exc
    except Exception as exc:
        raise LoviaTuiError(
            f"{option} {spec}: importing {module_name!r} failed ({one_line(exc)})"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise LoviaTuiError(
            f"{option} {spec}: module {module_name!r} has no attribute {attr!r}"
        ) from exc


@dataclass(frozen=True)
class AgentSpec:
    """An entry agent named by ``MODULE:ATTR``; :meth:`build` gives one per run."""

    spec: str
    target: Any

    def build(self) -> Agent:
        from lovia import Agent

        if isinstance(self.target, Agent):
            return self.target
        try:
            agent = self.target()
        except Exception as exc:
            raise LoviaTuiError(
                f"--agent {self.spec}: the factory raised {one_line(exc)}"
            ) from exc
        if not isinstance(agent, Agent):
            raise LoviaTuiError(
                f"--agent {self.spec}: the factory returned {type(agent).__name__}, not a lovia Agent"
            )
        return agent


@dataclass(frozen=True)
class DepsSpec:
    """Run deps named by ``MODULE:ATTR``; :meth:`build` gives a value per run."""

    spec: str
    target: Any

    def build(self) -> Any:
        if not callable(self.target):
            return self.target
        try:
            return self.target()
        except Exception as exc:
            raise LoviaTuiError(
                f"--deps {self.spec}: the factory raised {one_line(exc)}"
            ) from exc


def load_agent(spec: str) -> AgentSpec:
    """Import ``spec`` and check it yields an Agent (a factory is called once to check)."""
    from lovia import Agent

    target = _import_target(spec, "--agent")
    if not isinstance(target, Agent) and not callable(target):
        raise LoviaTuiError(
            f"--agent {spec}: expected a lovia Agent or a zero-argument factory "
            f"returning one, got {type(target).__name__}"
        )
    agent_spec = AgentSpec(spec, target)
    agent_spec.build()
    return agent_spec


def load_deps(spec: str) -> DepsSpec:
    return DepsSpec(spec, _import_target(spec, "--deps"))


def unreachable_reason(entry: Agent, run: RunInfo) -> str | None:
    """Why lovia would refuse to continue ``run`` from ``entry``, else ``None``.

    Runs lovia's own handoff-graph walk and mirrors the UserErrors its resume
    raises: the recorded agent must be reachable, names must be unique, and a
    pending handoff must target one of the recorded agent's handoffs.
    """
    from lovia import Handoff, UserError

    from lovia_tui.core.lovia_private import reachable_agents

    try:
        agents = reachable_agents(entry)
    except UserError as exc:
        return shorten(str(exc), ERROR_WIDTH)
    active = agents.get(run.agent_name)
    if active is None:
        return (
            f"Snapshot {run.run_id!r} was last active on agent {run.agent_name!r}, which is "
            f"not reachable from the handoff graph of entry agent {entry.name!r}; resume it "
            f"with the entry agent it was started with (reachable: {', '.join(sorted(agents))})"
        )
    if run.pending_handoff is not None:
        targets = {
            (h.target if isinstance(h, Handoff) else h).name for h in active.handoffs
        }
        if run.pending_handoff not in targets:
            return (
                f"Snapshot {run.run_id!r} has a pending handoff to {run.pending_handoff!r}, "
                f"which is not among the handoffs of its active agent {active.name!r}"
            )
    return None


def placeholder_agent(name: str) -> Agent:
    """A model-less stand-in for replaying a completed run: replay never calls a model."""
    from lovia import Agent

    return Agent(name=name)
