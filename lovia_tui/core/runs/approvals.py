"""Who answers a resumed run's approvals, which calls will ask, and the record of each answer.

lovia resolves an ``ApprovalRequired`` from the stream's consumer first, then
the agent's ``approval_handler``, and denies it when neither answers, so a run
never hangs. lovia-tui is that consumer: it asks a person (the app's console,
a terminal), applies a scripted :class:`Rule` (``--approve`` / ``--deny-all``),
or leaves the call to the agent's own handler. Whatever it decides is
journaled with its reason, so a denial is never silent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lovia_tui.core.actions.journal import APPROVAL
from lovia_tui.core.models import DanglingCall, RunInfo

if TYPE_CHECKING:
    from lovia import Agent

    from lovia_tui.core.actions.journal import Journal

NEEDS_APPROVAL = "its tool is marked needs_approval"
CHECKED = "its tool's approval check decides from the arguments (it may ask)"


@dataclass(frozen=True)
class Decision:
    """One answer to an approval: ``by`` says who gave it (you, ``--approve``…)."""

    approved: bool
    reason: str
    by: str

    @property
    def verb(self) -> str:
        return "approved" if self.approved else "denied"


@dataclass(frozen=True)
class Rule:
    """A scripted answer for runs nobody watches: approve these tools, deny the rest.

    ``unattended``: no flag chose it; nobody (no terminal, no handler) can
    answer, so every call is denied, saying so.
    """

    approve: frozenset[str] = frozenset()
    unattended: bool = False

    @property
    def flag(self) -> str:
        if self.unattended:
            return "lovia-tui (nobody could answer)"
        return "--approve" if self.approve else "--deny-all"

    def decide(self, tool: str) -> Decision:
        if tool in self.approve:
            return Decision(True, f"{tool} is in --approve", self.flag)
        if self.unattended:
            reason = "no terminal, no --approve/--deny-all, no approval_handler"
            return Decision(False, reason, self.flag)
        if not self.approve:
            return Decision(False, "--deny-all: every approval is denied", self.flag)
        named = ", ".join(sorted(self.approve))
        return Decision(False, f"{tool} is not in --approve ({named})", self.flag)


UNATTENDED = Rule(unattended=True)


@dataclass(frozen=True)
class GatedCall:
    """A dangling call that asks for approval when the resume runs it again."""

    call: DanglingCall
    why: str


def _reachable(entry: Agent) -> list[Agent]:
    from lovia.exceptions import UserError

    from lovia_tui.core.lovia_private import reachable_agents

    try:
        return list(reachable_agents(entry).values())
    except UserError:  # the preflight reports a broken graph on its own
        return [entry]


def _tools(agent: Agent) -> Iterable[Any]:
    """The tools lovia offers ``agent`` that are known before a run starts
    (a workspace's tools and those a plugin builds at set-up are not)."""
    yield from agent.tools
    for plugin in agent.plugins:
        yield from getattr(plugin, "tools", ())


def _why(tool: Any) -> str | None:
    gate = getattr(tool, "needs_approval", False)
    if not gate:
        return None
    return CHECKED if callable(gate) else NEEDS_APPROVAL


def approval_reasons(entry: Agent) -> dict[str, str]:
    """Why each tool reachable from ``entry`` needs approval, by tool name."""
    reasons: dict[str, str] = {}
    for agent in _reachable(entry):
        for tool in _tools(agent):
            if why := _why(tool):
                reasons.setdefault(tool.name, why)
    return reasons


def _run_as_tools(entry: Agent) -> Iterator[tuple[str, Agent]]:
    """(tool name, agent) of each agent that a tool of the run runs
    (``Agent.as_tool``), and the agents those reach, nested ones too."""
    from lovia_tui.core.lovia_private import agent_run_as_tool

    seen: set[int] = set()
    todo: list[tuple[str | None, Agent]] = [(None, a) for a in _reachable(entry)]
    while todo:
        via, agent = todo.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if via is not None:
            yield via, agent
        for tool in _tools(agent):
            if (inner := agent_run_as_tool(tool)) is not None:
                todo.extend((tool.name, a) for a in _reachable(inner))


def nested_denials(entry: Agent) -> tuple[str, ...]:
    """Tools that may ask inside an agent run as a tool, where that agent has
    no ``approval_handler``: lovia denies them there (a nested run has no
    consumer), and no answer of lovia-tui's reaches them."""
    return tuple(
        sorted(
            {
                f"{tool.name} (agent {agent.name}, run by {via})"
                for via, agent in _run_as_tools(entry)
                if agent.approval_handler is None
                for tool in _tools(agent)
                if _why(tool)
            }
        )
    )


def nested_note(nested: Iterable[str]) -> str:
    """What the preflight says of :func:`nested_denials`."""
    return (
        f"{', '.join(nested)}: may ask for approval inside an agent run as a tool, "
        "where lovia denies it (that agent has no approval_handler); no answer "
        "here reaches it (--approve included)"
    )


def agent_answers(entry: Agent) -> bool:
    """Whether each agent reachable from ``entry`` whose tools may ask has its
    own ``approval_handler``: lovia asks the handler of the agent whose tool
    asks, never another's (an entry agent's handler does not answer for the
    agent it hands off to), and denies the call where there is none."""
    asking = [a for a in _reachable(entry) if any(_why(t) for t in _tools(a))]
    return bool(asking) and all(a.approval_handler is not None for a in asking)


def gated_calls(
    entry: Agent, run: RunInfo, dangling: Iterable[DanglingCall]
) -> tuple[GatedCall, ...]:
    """The dangling calls whose tool, on the run's active agent, asks for approval."""
    active = {agent.name: agent for agent in _reachable(entry)}.get(run.agent_name)
    if active is None:
        return ()
    reasons = {tool.name: why for tool in _tools(active) if (why := _why(tool))}
    return tuple(GatedCall(c, reasons[c.name]) for c in dangling if c.name in reasons)


@dataclass(frozen=True)
class Approvals:
    """What the preflight knows of a resume's approvals before it starts."""

    gated: tuple[GatedCall, ...] = ()
    """The dangling calls that ask for approval when they run again."""
    agent_answers: bool = False
    """Each agent of the run whose tools may ask has its own ``approval_handler``."""
    tools: tuple[str, ...] = ()
    """Every tool of the run's agents that may ask (later calls included)."""
    nested: tuple[str, ...] = ()
    """Tools lovia will deny unanswered inside an agent run as a tool."""


def approvals_of(
    entry: Agent, run: RunInfo, dangling: Iterable[DanglingCall]
) -> Approvals:
    return Approvals(
        gated_calls(entry, run, dangling),
        agent_answers(entry),
        tuple(sorted(approval_reasons(entry))),
        nested_denials(entry),
    )


async def journal_decision(
    journal: Journal, run: RunInfo, call: Mapping[str, Any], decision: Decision
) -> int:
    """Record one answer in the journal, its reason in the reason field.

    It changes no rows, so the entry has nothing to undo; it is there so that
    who allowed or refused which call, and why, can be read later.
    """
    params = {
        "run_id": run.run_id,
        "file": str(run.file),
        "call_id": call["call_id"],
        "tool": call["name"],
        "arguments": call["arguments"],
        "approved": decision.approved,
        "by": decision.by,
    }
    subject = f"{call['name']} in run {run.run_id}: {decision.verb}"
    entry_id = await journal.begin(
        APPROVAL, params, decision.reason, (), subject=subject, files=(run.file,)
    )
    await journal.finish(entry_id, "done", {decision.verb: 1})
    return entry_id
