"""Approvals in a resume, on a run lovia really left waiting for one (SIGKILLed child).

Compared with what lovia's own resume stores on a copy of the same file when
the agent's ``approval_handler`` allows the call.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lovia import CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from support import approvals
from support.approvals import (
    ARGUMENTS,
    CALL,
    FINAL,
    RUN,
    SESSION,
    approval_entries,
    integrity,
)
from support.resume import head_status, session_rows

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.runs.agents import load_agent
from lovia_tui.core.runs.approvals import (
    NEEDS_APPROVAL,
    UNATTENDED,
    Rule,
    agent_answers,
    nested_denials,
)
from lovia_tui.core.runs.console import ConsoleEvent
from lovia_tui.core.runs.preflight import Preflight, preflight
from lovia_tui.core.runs.resume import RunControl, resume
from lovia_tui.core.store.workspace import Workspace

TIMEOUT = 20
waiting_template, desk = approvals.waiting_template, approvals.desk  # fixtures


async def _preflight(db: Path, agent: str = "refund_desk") -> Preflight:
    ws = await Workspace.open([db])
    try:
        return await preflight(
            ws,
            RUN,
            agent=load_agent(f"support.approvals:{agent}"),
            session_id=SESSION,
            stale_after=0,
        )
    finally:
        await ws.close()


async def _resume(
    pf: Preflight, control: RunControl, answer=None
) -> list[ConsoleEvent]:
    seen = []
    async with asyncio.timeout(TIMEOUT):
        async for event in resume(pf, control):
            seen.append(event)
            if answer is not None and event.kind == "approval_required":
                answer(event)
    return seen


async def _lovias_own_resume(db: Path) -> None:
    """lovia's own resume with the agent's approval handler (it allows the call)."""
    from support.approvals import trusting_desk

    handle = Runner.stream(
        trusting_desk(),
        [],
        session=SQLiteSession(db, wal=True),
        session_id=SESSION,
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(db, wal=True), RUN, if_run_exists="resume_only"
        ),
    )
    async for _ in handle:
        pass


def _stored_result(db: Path) -> dict:
    import orjson

    [(_, _, entries)] = session_rows(db)
    return next(
        e
        for e in orjson.loads(entries)
        if e["type"] == "tool_result" and e["call_id"] == CALL
    )


async def test_the_preflight_names_the_call_that_will_ask(desk: Path) -> None:
    pf = await _preflight(desk)
    assert pf.ok, pf.problems
    [gated] = pf.approvals.gated
    assert (gated.call.call_id, gated.call.name, gated.why) == (
        CALL,
        "refund",
        NEEDS_APPROVAL,
    )
    assert not pf.approvals.agent_answers and pf.approvals.tools == ("refund",)
    assert (await _preflight(desk, "trusting_desk")).approvals.agent_answers


def test_only_the_asking_agents_own_handler_answers() -> None:
    """lovia asks the handler of the agent whose tool asks: an entry agent's
    handler does not answer for the agent it hands off to (that call would
    be denied unanswered), so the resume must answer it or refuse."""
    from lovia import Agent
    from support.approvals import refund_desk, trusting_desk

    allow = lambda call, ctx: True  # noqa: E731
    front = Agent(name="front", handoffs=[refund_desk()], approval_handler=allow)
    assert not agent_answers(front)
    assert agent_answers(front.clone(handoffs=[trusting_desk()]))
    assert agent_answers(Agent(name="front", handoffs=[trusting_desk()]))


def test_a_tool_asking_inside_an_agent_run_as_a_tool_is_named() -> None:
    """lovia runs an agent's ``as_tool()`` with ``Runner.run``: a tool of it
    that asks is denied there unless that agent has its own handler, and no
    answer of a resume reaches it. The preflight names it, not "no tool asks"."""
    from lovia import Agent
    from support.approvals import refund_desk, trusting_desk

    front = Agent(name="front", tools=[refund_desk().as_tool(name="ask_desk")])
    assert nested_denials(front) == ("refund (agent refund-desk, run by ask_desk)",)
    outer = Agent(name="outer", tools=[front.as_tool(name="ask_front")])
    assert nested_denials(outer) == ("refund (agent refund-desk, run by ask_desk)",)
    assert nested_denials(Agent(name="front", tools=[trusting_desk().as_tool()])) == ()


async def test_approving_stores_what_lovias_own_resume_stores(
    desk: Path, tmp_path: Path
) -> None:
    theirs = Path(shutil.copy(desk, tmp_path / "theirs.db"))
    await _lovias_own_resume(theirs)

    journal = Journal()
    control = RunControl(answering="ask", journal=journal)
    pf = await _preflight(desk)
    seen = await _resume(
        pf, control, lambda e: control.approve(e.data["call_id"], "customer verified")
    )

    asking = next(e for e in seen if e.kind == "approval_required")
    assert (
        asking.data["asking"]
        and asking.data["arguments"] == '{"order": "A-17", "amount": 42}'
    )
    assert seen[-1].kind == "run_completed" and seen[-1].data["output"] == FINAL
    ours = _stored_result(desk)
    assert ours == _stored_result(theirs)
    assert ours["output"] == f"refunded {ARGUMENTS['amount']} on order A-17"
    decided = next(e for e in seen if e.kind == "approval_decided")
    [entry] = await approval_entries(journal)
    assert entry.id == decided.data["journal_entry"]
    assert (entry.action, entry.reason, entry.status) == (
        "approval",
        "customer verified",
        "done",
    )
    assert entry.params["approved"] is True and entry.params["tool"] == "refund"
    assert integrity(desk) == ["ok"]


async def test_denying_stores_lovias_denial_and_journals_the_reason(desk: Path) -> None:
    journal = Journal()
    control = RunControl(answering="ask", journal=journal)
    seen = await _resume(
        await _preflight(desk),
        control,
        lambda e: control.reject(e.data["call_id"], "amount too high"),
    )
    assert seen[-1].kind == "run_completed"
    result = _stored_result(desk)
    assert result["is_error"] and result["output"] == "Tool refund was not approved."
    [entry] = await approval_entries(journal)
    assert entry.reason == "amount too high" and entry.params["approved"] is False
    assert integrity(desk) == ["ok"]


@pytest.mark.parametrize(
    ("rule", "approved", "reason"),
    [
        (Rule(frozenset({"refund"})), True, "refund is in --approve"),
        (Rule(frozenset({"lookup"})), False, "refund is not in --approve (lookup)"),
        (Rule(), False, "--deny-all: every approval is denied"),
        (
            UNATTENDED,
            False,
            "no terminal, no --approve/--deny-all, no approval_handler",
        ),
    ],
)
async def test_a_rule_answers_at_once_and_says_why(
    desk: Path, rule: Rule, approved: bool, reason: str
) -> None:
    seen = await _resume(
        await _preflight(desk), RunControl(answering=rule, journal=Journal())
    )
    decided = next(e for e in seen if e.kind == "approval_decided")
    assert (decided.data["approved"], decided.data["reason"]) == (approved, reason)
    assert _stored_result(desk)["is_error"] is not approved
    [entry] = await approval_entries()
    assert entry.reason == reason


async def test_the_agents_own_handler_answers_when_left_to_it(desk: Path) -> None:
    seen = await _resume(await _preflight(desk, "trusting_desk"), RunControl())
    assert not any(e.kind == "approval_decided" for e in seen)
    assert not _stored_result(desk)["is_error"]
    assert await approval_entries() == []


async def test_cancel_while_waiting_leaves_the_run_interrupted_and_asking_again(
    desk: Path,
) -> None:
    control = RunControl(answering="ask", journal=Journal())
    seen = await _resume(await _preflight(desk), control, lambda e: control.cancel())

    assert seen[-1].kind == "run_failed" and seen[-1].data["status"] == "interrupted"
    assert "waited for approval" in seen[-1].text
    assert head_status(desk, RUN) == "interrupted"
    assert session_rows(desk) == []
    again = await _preflight(desk)
    assert [g.call.call_id for g in again.approvals.gated] == [
        CALL
    ]  # no denial was stored
    assert await approval_entries() == []

    control = RunControl(answering="ask", journal=Journal())
    seen = await _resume(again, control, lambda e: control.approve(e.data["call_id"]))
    assert seen[-1].kind == "run_completed"
    assert not _stored_result(desk)["is_error"]
    assert integrity(desk) == ["ok"]


async def test_every_call_that_asks_is_answered_in_turn(desk: Path) -> None:
    """The crashed call, then one the model makes after the resume."""
    control = RunControl(answering="ask", journal=Journal())
    answers = iter([("approve", "first is fine"), ("reject", "one refund is enough")])

    def answer(event: ConsoleEvent) -> None:
        verb, reason = next(answers)
        getattr(control, verb)(event.data["call_id"], reason)

    seen = await _resume(await _preflight(desk, "asking_twice"), control, answer)
    decided = [
        (e.data["call_id"], e.data["approved"])
        for e in seen
        if e.kind == "approval_decided"
    ]
    assert decided == [(CALL, True), ("call_refund_2", False)]
    entries = await approval_entries()
    assert [e.reason for e in entries] == ["first is fine", "one refund is enough"]
    assert seen[-1].kind == "run_completed"
    assert integrity(desk) == ["ok"]
