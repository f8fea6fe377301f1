"""``resume`` and ``replay``: continue or re-emit a checkpointed run through lovia.

Both print the preflight and stop there unless ``--yes``; then they stream the
run's console events (``--json``: one JSON object per line, the preflight
first). Exit 0 when the run completed (or for the preflight alone), 1 when
it ended failed or interrupted, 2 on an error or a refusal (one line on
stderr), 130 when Ctrl+C stopped it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lovia_tui.cli.approvals import (
    TerminalAnswers,
    add_approval_flags,
    answering,
    describe,
)
from lovia_tui.cli.command import (
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Command,
    add_json,
    add_paths_and_id,
    add_stale_after,
    console,
    fail,
    open_workspace,
    split_paths_and_id,
)
from lovia_tui.cli.json_output import print_json_line
from lovia_tui.cli.option_types import count
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.formatting import plural, printable
from lovia_tui.core.runs.agents import load_agent, load_deps
from lovia_tui.core.runs.console import ConsoleEvent
from lovia_tui.core.runs.preflight import Preflight, preflight, preflight_replay
from lovia_tui.core.runs.redact import error_line
from lovia_tui.core.runs.resume import Answering, RunControl, replay, resume

_STYLES = {
    "info": "",
    "muted": "dim",
    "text": "",
    "reasoning": "dim italic",
    "tool": "cyan",
    "success": "green",
    "warning": "yellow",
    "error": "red",
}
_SOURCES = {
    "segment": "stored in it",
    "web": "web UI records",
    "given": "chosen by you",
}


def _configure_common(parser: argparse.ArgumentParser) -> None:
    add_paths_and_id(parser, "RUN_ID", "the run's id")
    session = parser.add_mutually_exclusive_group()
    session.add_argument(
        "--session",
        metavar="SID",
        help="the session the run belongs to, when nothing links it",
    )
    session.add_argument(
        "--no-session",
        action="store_true",
        help="run without a session (for runs started without one)",
    )
    parser.add_argument(
        "--delete-on-success",
        action="store_true",
        help="delete the checkpoint once the run is stored",
    )
    parser.add_argument(
        "--force", action="store_true", help="override a refusal that can be overridden"
    )
    parser.add_argument("--reason", metavar="TEXT", help="why, recorded in the journal")
    parser.add_argument(
        "--yes", action="store_true", help="do it (without: print the preflight only)"
    )
    add_json(parser)


def _configure_resume(parser: argparse.ArgumentParser) -> None:
    _configure_common(parser)
    parser.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="the entry Agent, or a zero-argument factory returning one",
    )
    parser.add_argument(
        "--deps",
        metavar="MODULE:ATTR",
        help="deps for the run (a callable is called for a fresh value)",
    )
    parser.add_argument(
        "--max-turns",
        type=count(1),
        metavar="N",
        help="turn limit, counting the turns already taken",
    )
    add_stale_after(parser)
    add_approval_flags(parser)


def _configure_replay(parser: argparse.ArgumentParser) -> None:
    _configure_common(parser)
    parser.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="entry agent to attribute the result to (no model is called)",
    )


async def _resume(args: argparse.Namespace) -> int:
    args.paths, run_id = split_paths_and_id(args.paths, "RUN_ID")
    agent = load_agent(args.agent) if args.agent else None
    deps = load_deps(args.deps) if args.deps else None
    ws = await open_workspace(args)
    try:
        pf = await preflight(
            ws,
            run_id,
            agent=agent,
            deps=deps,
            session_id=args.session,
            no_session=args.no_session,
            stale_after=args.stale_after,
            max_turns=args.max_turns,
            delete_on_success=args.delete_on_success,
            force=args.force,
        )
    finally:
        await ws.close()
    return await _carry_out(pf, args, resume)


async def _replay(args: argparse.Namespace) -> int:
    args.paths, run_id = split_paths_and_id(args.paths, "RUN_ID")
    agent = load_agent(args.agent) if args.agent else None
    ws = await open_workspace(args)
    try:
        pf = await preflight_replay(
            ws,
            run_id,
            agent=agent,
            session_id=args.session,
            no_session=args.no_session,
            delete_on_success=args.delete_on_success,
            force=args.force,
        )
    finally:
        await ws.close()
    return await _carry_out(pf, args, replay)


async def _carry_out(
    pf: Preflight,
    args: argparse.Namespace,
    start: Callable[[Preflight, RunControl], AsyncIterator[ConsoleEvent]],
) -> int:
    show = _print_json if args.json else _TextPrinter()
    try:
        answer: Answering | None = answering(pf, args)
        refusal = None
    except LoviaTuiError as exc:
        answer, refusal = None, str(exc)
    # A refusal is one line on stderr and nothing on stdout (docs/cli.md).
    if pf.problems:
        return fail(f"cannot {pf.mode} run {pf.run.run_id}: {'; '.join(pf.problems)}")
    if args.yes and answer is None:
        return fail(refusal or "nobody can answer this run's approvals")
    data = _preflight_data(pf, answer, refusal)
    show(ConsoleEvent("preflight", f"{pf.mode} run {pf.run.run_id}", "info", data))
    if not args.yes:
        if not args.json:
            console().print(f"nothing done: add --yes to {pf.mode} it")
        return EXIT_OK
    assert answer is not None
    control = RunControl(answering=answer, journal=Journal(), reason=args.reason)
    asker = TerminalAnswers() if answer == "ask" else None
    last: ConsoleEvent | None = None
    try:
        with _ctrl_c_cancels(control, asker):
            async for event in start(pf, control):
                show(event)
                last = event
                if asker and event.kind == "approval_required" and event.data["asking"]:
                    await asker.answer(event.data, control)
    except asyncio.CancelledError:
        return fail(
            f"stopped at once: run {pf.run.run_id!r} is left interrupted",
            EXIT_INTERRUPTED,
        )
    if control.cancelled:  # Ctrl+C: lovia stopped it at its next safe point
        return EXIT_INTERRUPTED
    completed = last is not None and last.kind == "run_completed"
    return EXIT_OK if completed else EXIT_FINDINGS


@contextmanager
def _ctrl_c_cancels(
    control: RunControl, asker: TerminalAnswers | None
) -> Iterator[None]:
    """The first Ctrl-C cancels at lovia's next safe point (a question waiting
    for an answer is left unanswered); a second stops at once."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def interrupt() -> None:
        if control.cancelled and task is not None:
            task.cancel()
            return
        control.cancel("interrupted from the terminal")
        if asker is not None:
            asker.stop()
        print(
            "cancelling at lovia's next safe point; Ctrl-C again to stop at once",
            file=sys.stderr,
        )

    try:
        loop.add_signal_handler(signal.SIGINT, interrupt)
    except (
        NotImplementedError,
        RuntimeError,
    ):  # no signal handlers here (Windows, a thread)
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _preflight_data(
    pf: Preflight, answer: Answering | None, refusal: str | None
) -> dict[str, Any]:
    run = pf.run
    return {
        "mode": pf.mode,
        "run_id": run.run_id,
        "status": run.status,
        "stale": pf.stale,
        "error": run.error,
        "agent_name": run.agent_name,
        "turns": run.turns,
        "checkpoint_file": str(pf.checkpoint_file),
        "entry_agent": pf.agent.spec if pf.agent else None,
        "reachable": pf.reachable,
        "session_id": pf.session_id,
        "session_source": pf.session_source,
        "session_file": str(pf.session_file) if pf.session_file else None,
        "already_in_session": pf.already_in_session,
        "dangling": [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in pf.dangling
        ],
        "asks_approval": [
            {"call_id": g.call.call_id, "name": g.call.name, "why": g.why}
            for g in pf.approvals.gated
        ],
        "agent_answers": pf.approvals.agent_answers,
        "approvals": describe(pf, answer, refusal),
        "may_ask_approval": list(pf.approvals.tools),
        "denied_inside_agent_tools": list(pf.approvals.nested),
        "max_turns": pf.max_turns if pf.mode == "resume" else None,
        "delete_on_success": pf.delete_on_success,
        "stale_reason": pf.stale_reason,
        "web_chat": pf.web_chat,
        "afterwards": list(pf.afterwards),
        "warnings": list(pf.warnings),
        "problems": list(pf.problems),
    }


def _print_json(event: ConsoleEvent) -> None:
    print_json_line(event.to_json())


class _TextPrinter:
    """Console events as terminal lines; deltas run on in one line."""

    def __init__(self) -> None:
        self._console = console()
        self._inline = False

    def __call__(self, event: ConsoleEvent) -> None:
        if event.kind == "preflight":
            self._preflight(event.data)
            return
        inline = event.kind in ("text_delta", "reasoning_delta")
        if self._inline and not inline:
            self._console.print()
        self._line(event.text, _STYLES[event.style], end="" if inline else "\n")
        self._inline = inline

    def _line(self, text: str, style: str = "", end: str = "\n") -> None:
        self._console.print(text, style=style, end=end, markup=False, soft_wrap=True)

    def _fact(self, text: str, style: str = "") -> None:
        """A line of the preflight: one line whatever ids, names or arguments
        it quotes (a stored newline shows as ␊, never as a line of its own)."""
        self._line(printable(text), style)

    def _preflight(self, data: Mapping[str, Any]) -> None:
        status = (
            f"{data['status']} (stale: {data['stale_reason']})"
            if data["stale"]
            else data["status"]
        )
        self._fact(
            f"{data['mode']} run {data['run_id']} · {status} · agent {data['agent_name']} "
            f"· {plural(data['turns'], 'turn')}",
            "bold",
        )
        self._fact(f"  checkpoint  {data['checkpoint_file']}")
        if data["session_id"] is None:
            self._fact("  session     none")
        else:
            source = _SOURCES[data["session_source"]]
            self._fact(
                f"  session     {data['session_id']} in {data['session_file']} ({source})"
            )
        if data["error"]:
            self._fact(f"  error       {error_line(data['error'])}")
        asking = {call["call_id"]: call["why"] for call in data["asks_approval"]}
        for call in data["dangling"]:
            self._fact(
                f"  runs again  {call['name']}({call['arguments']}) [{call['call_id']}]"
            )
            if why := asking.get(call["call_id"]):
                self._fact(f"              asks for approval: {why}", "yellow")
        if data["mode"] == "resume":
            self._fact(f"  approvals   {data['approvals']}")
        if data["max_turns"] is not None:
            self._fact(f"  max turns   {data['max_turns']}")
        for line in data["afterwards"]:
            self._fact(f"  afterwards  {line}")
        for warning in data["warnings"]:
            self._fact(f"  ! {warning}", "yellow")
        for problem in data["problems"]:
            self._fact(f"  ✗ {problem}", "red")


COMMANDS = [
    Command(
        "resume",
        "resume an unfinished run through lovia (preflight first)",
        _configure_resume,
        _resume,
        json_lines=True,
    ),
    Command(
        "replay",
        "replay a completed run: its output, and its lost session append",
        _configure_replay,
        _replay,
        json_lines=True,
    ),
]
