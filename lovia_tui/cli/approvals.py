"""Who answers a resume's approvals from the command line, and asking on the terminal.

On a terminal the person at it answers, y/n per call with an optional
reason; ``--approve TOOL`` / ``--deny-all`` answer for scripts; else the
agent's own ``approval_handler``. With none of these, a resume whose dangling
calls will ask is refused before it starts: never a silent denial.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping
from typing import Any

from lovia_tui.cli.command import console
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.formatting import printable
from lovia_tui.core.runs.approvals import UNATTENDED, Rule, nested_note
from lovia_tui.core.runs.preflight import Preflight
from lovia_tui.core.runs.resume import Answering, RunControl

FLAGS = "--approve TOOL (repeatable) or --deny-all"


def add_approval_flags(parser: argparse.ArgumentParser) -> None:
    answers = parser.add_mutually_exclusive_group()
    answers.add_argument(
        "--approve",
        action="append",
        metavar="TOOL",
        help="approve calls of TOOL without asking (repeatable, or TOOL,TOOL); "
        "deny the others, saying so",
    )
    answers.add_argument(
        "--deny-all",
        action="store_true",
        help="deny every approval without asking, saying so",
    )


def can_ask() -> bool:
    """A person is at a terminal to answer."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def answering(pf: Preflight, args: argparse.Namespace) -> Answering:
    """Who answers this run's approvals; raises when a call would ask and nobody can answer."""
    if pf.mode == "replay":
        return "agent"  # a replay runs no tool
    if args.deny_all:
        return Rule()
    if pf.approvals.nested:
        raise LoviaTuiError(
            f"cannot resume run {pf.run.run_id!r} here: "
            f"{nested_note(pf.approvals.nested)}; add --deny-all to resume with "
            "every approval denied"
        )
    if args.approve:
        tools = {t.strip() for given in args.approve for t in given.split(",")}
        return Rule(frozenset(t for t in tools if t))
    if can_ask():
        return "ask"
    if pf.approvals.agent_answers:
        return "agent"
    if pf.approvals.gated:
        calls = ", ".join(
            f"{g.call.name}({g.call.arguments}) [{g.call.call_id}]"
            for g in pf.approvals.gated
        )
        raise LoviaTuiError(
            f"cannot resume run {pf.run.run_id!r} here: {calls} will ask for approval, "
            f"and nobody can answer (no terminal, no approval_handler on the agent): add {FLAGS}"
        )
    return UNATTENDED


def describe(
    pf: Preflight, answer: Answering | None, refusal: str | None
) -> str | None:
    """For the preflight: who will answer (a replay runs no tool: None)."""
    if pf.mode == "replay":
        return None
    if answer is None:
        return refusal
    if not pf.approvals.tools and not pf.approvals.nested:
        return "no tool of the agent asks for approval"
    if answer == "ask":
        return "asked here, y/n per call"
    if answer == "agent":
        return "the agent's own approval_handler"
    assert isinstance(answer, Rule)
    if answer.unattended:
        return "denied, saying so: nobody can answer here (" + FLAGS + ")"
    if answer.approve:
        return f"approved for {', '.join(sorted(answer.approve))}; the others denied"
    return "every one denied (--deny-all)"


class TerminalAnswers:
    """Asks the person at the terminal; :meth:`stop` (Ctrl-C) abandons the question."""

    def __init__(self) -> None:
        self._asking: asyncio.Task[Any] | None = None

    def stop(self) -> None:
        if self._asking is not None:
            self._asking.cancel()

    async def answer(self, call: Mapping[str, Any], control: RunControl) -> None:
        """Ask about one call and pass the answer on; no answer (EOF, Ctrl-C) cancels the run."""
        self._asking = asyncio.ensure_future(self._ask(call))
        try:
            answer = await self._asking
        except asyncio.CancelledError:
            answer = None
        finally:
            self._asking = None
        if answer is None:
            control.cancel("no answer to an approval")
            return
        approved, reason = answer
        (control.approve if approved else control.reject)(call["call_id"], reason)

    async def _ask(self, call: Mapping[str, Any]) -> tuple[bool, str] | None:
        err = console(stderr=True)
        err.print(
            f"approval needed: {call['name']}({call['arguments']}) [{call['call_id']}]",
            style="bold yellow",
        )
        err.print(f"  why: {call['why']}")
        while True:
            line = await _read_line(f"approve {printable(call['name'])}? [y/n] ")
            if line is None:
                return None
            word = line.strip().lower()
            if word in ("y", "yes", "n", "no"):
                break
        reason = await _read_line("reason (optional, Enter to skip): ")
        return word.startswith("y"), (reason or "").strip()


async def _read_line(prompt: str) -> str | None:
    """One line from the terminal, read by the event loop (a cancel stops waiting);
    None at end of input. A terminal hands over one line per read."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    data = os.read(fd, 65536)
    return data.decode(errors="replace") if data else None
