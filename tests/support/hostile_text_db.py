"""A web-UI database, every row written by lovia, whose text attacks the terminal.

Session ids, run ids, agent names, chat titles, messages, tool names and
arguments, tool outputs, a run's error and a web run record's error carry
terminal escape sequences (OSC 52 clipboard, OSC 0 title, OSC 8 hyperlink,
CSI cursor report / clear / cursor up, a C1 CSI), bare control characters
(BEL, NUL, CR, backspace), characters that draw nothing and Rich markup (links, styles, a stray closing tag).
Nothing is inserted by hand: ``Runner`` on scripted models, ``SQLiteSession``,
``SQLiteCheckpointer`` and lovia web's ``ChatStore`` write it all.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

import pytest
from lovia import (
    Agent,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, call, text

ESC, BEL = "\x1b", "\x07"
OSC52 = f"{ESC}]52;c;SElKQUNLRUQ={BEL}"  # sets the clipboard to "HIJACKED"
OSC0 = f"{ESC}]0;PWNED-TITLE{BEL}"
OSC8 = f"{ESC}]8;;https://example.invalid{ESC}\\click{ESC}]8;;{ESC}\\"
CSI = f"{ESC}[6n{ESC}[2J{ESC}[H{ESC}[3A"  # cursor report, clear, home, up 3
C1 = "\x9b6n"  # CSI as one C1 character
CONTROLS = "bel\x07nul\x00cr\rbs\x08zw\u200bsp\U000e0041"  # and what draws nothing
MARKUP = "[link=https://example.invalid]click[/link][bold red]x[/][/oops]"
ATTACKS = (OSC52, OSC0, OSC8, CSI, C1, CONTROLS, MARKUP)
DATA_SEQUENCES = (
    "\x1b]52;",
    "\x1b]0;PWNED",
    "\x1b]8;;https://example.invalid",
    "\x1b[6n",
    "\x1b[2J",
    "\x1b[3A",
    "\x9b6n",
)
"""What the data would emit if it reached a terminal raw (Textual's own output
never holds these: it neither asks for the cursor position nor clears that way)."""


def hostile(label: str) -> str:
    """``label`` wrapped in every attack: one id or text that tries them all."""
    return f"{label}|{OSC52}|{OSC0}|{OSC8}|{CSI}|{C1}|{CONTROLS}|{MARKUP}|end"


SESSION = hostile("s-chat")
"""A web chat: hostile id and title, messages, a tool call and its output."""
SESSION_PLAIN_TITLE = "[/oops]"
"""A session whose id is just the markup that crashed Rich."""
CRASHED_RUN = hostile("r-crashed")
"""A run left running mid-tool (dangling hostile call), linked by the web records."""
FAILED_RUN = hostile("r-failed")
"""A run that failed with a hostile error, in no session."""
AGENT = hostile("agent")
TITLE = hostile("title")
ERROR = hostile("error")


@tool
def fetch(url: str) -> str:
    """Return a page that fights the terminal."""
    return hostile(f"page {url}") + "\nline two\n" + CSI + "overwritten header"


class HostileFailure(ScriptedProvider):
    """A model whose call fails with an error message quoting hostile text."""

    async def stream(self, *args, **kwargs):  # type: ignore[override]
        raise RuntimeError(ERROR)
        yield  # pragma: no cover - makes this an async generator


def _agent(script: list, model: ScriptedProvider | None = None) -> Agent:
    return Agent(
        name=AGENT,
        instructions="Do as asked.",
        model=model or ScriptedProvider(script),
        tools=[fetch],
    )


async def build_hostile_text_db(directory: Path) -> Path:
    """web.db: hostile sessions (one a web chat with a hostile title), a
    crashed run with a dangling hostile call, a failed run with a hostile error."""
    from lovia.web.store import ChatStore, RunRow

    path = directory / "web.db"
    session = SQLiteSession(path, wal=True)
    checkpointer = SQLiteCheckpointer(path, wal=True)
    chats = ChatStore.sqlite(path)
    await chats.upsert(SESSION, agent=AGENT, title=TITLE)
    await Runner.run(
        _agent(
            [
                call("fetch", {"url": hostile("u")}),
                call(hostile("no-such-tool"), {hostile("k"): hostile("v")}),
                text(hostile("answer") + "\nsecond line\r\n" + OSC8),
            ]
        ),
        hostile("question"),
        session=session,
        session_id=SESSION,
        checkpoint=CheckpointOptions(checkpointer, hostile("r-done")),
    )
    await Runner.run(
        _agent([text("[bold]plain[/bold] answer")]),
        "[/oops] question",
        session=session,
        session_id=SESSION_PLAIN_TITLE,
    )
    handle = Runner.stream(
        _agent([call("fetch", {"url": hostile("dangling")}), text("never")]),
        hostile("start the crash"),
        session=session,
        session_id=SESSION,
        checkpoint=CheckpointOptions(checkpointer, CRASHED_RUN),
    )
    async for event in handle:
        if isinstance(event, events.ToolCallStarted):
            break  # abandoned mid-tool: running, its call dangling
    await chats.set_active_run_id(SESSION, CRASHED_RUN)
    now = time.time()
    await chats.start_run(
        RunRow(CRASHED_RUN, SESSION, AGENT, "user", "running", None, now, None, None)
    )
    failed = hostile("r-web-failed")
    await chats.start_run(
        RunRow(failed, SESSION, AGENT, "user", "running", None, now, None, None)
    )
    await chats.finish_run(failed, status="failed", error=ERROR)
    with contextlib.suppress(RuntimeError):  # stored as failed, with this error
        await Runner.run(
            _agent([], HostileFailure([])),
            hostile("doomed"),
            checkpoint=CheckpointOptions(checkpointer, FAILED_RUN),
        )
    return path


UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\u200b\u2060-\u2064\ufeff\U000e0000-\U000e007f]"
)
"""What no human output may hold (newline and tab aside): controls, and what
draws nothing (so two ids that look alike are told apart)."""


def assert_inert(text: str) -> None:
    """No byte of the data reaches the terminal as a control sequence."""
    for sequence in DATA_SEQUENCES:
        assert sequence not in text, sequence
    assert not UNSAFE.search(text), UNSAFE.search(text)


def unwritable(scratch: Path) -> Path:
    """A directory this process cannot create files in (root ignores modes: /sys)."""
    if os.geteuid() != 0:
        directory = scratch / "locked"
        directory.mkdir(mode=0o500)
        return directory
    try:
        os.close(os.open("/sys/lovia-tui-probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except PermissionError:
        return Path("/sys")
    pytest.skip("no directory here refuses root")
