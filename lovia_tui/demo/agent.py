"""The demo's agents and tools: real lovia agents on scripted models.

Every demo row is written by these agents, and :func:`agent` rebuilds them with
a script that can finish any of the demo's unfinished runs, so the inspector's
resume works offline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from lovia import Agent, tool
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, text

ASSISTANT = "assistant"
RESEARCHER = "researcher"

_FACTS = {
    "kyoto": "京都: 金閣寺 (Kinkaku-ji) opens 9:00; 伏見稲荷大社 is open 24h ⛩️",
    "osaka": "大阪: 道頓堀 street food until midnight 🍜; castle park free",
    "weather": "Kyoto forecast: 晴れ 22°C ☀️ Sat, 小雨 18°C 🌧️ Sun",
    "suppliers": "Acme GmbH: 4.2★ 14d lead · 深圳电子有限公司: 4.6★ 21d lead",
    "export": "Nightly export: 3 tables, 1.2M rows, last success 02:00 UTC",
}
_STOCK = {"AB-100": 42, "CD-220": 0}


@dataclass(frozen=True)
class _Slowness:
    seconds: float
    on_start: Callable[[], None] | None


_SLOW: ContextVar[_Slowness | None] = ContextVar("lovia_tui_demo_slow", default=None)


@contextmanager
def slow_jobs(
    seconds: float, on_start: Callable[[], None] | None = None
) -> Iterator[None]:
    """Make ``run_job`` sleep ``seconds`` (calling ``on_start`` first) in this context.

    Outside it ``run_job`` returns at once, so a resumed run that re-executes
    a dangling ``run_job`` call never hangs.
    """
    token = _SLOW.set(_Slowness(seconds, on_start))
    try:
        yield
    finally:
        _SLOW.reset(token)


@tool
def lookup(topic: str) -> str:
    """Look up short facts about a topic."""
    return _FACTS.get(topic.lower(), f"No notes about {topic!r} yet.")


@tool
def check_stock(sku: str) -> str:
    """Return the units in stock for a SKU."""
    if sku not in _STOCK:
        raise LookupError(f"unknown SKU {sku!r} (known: {', '.join(_STOCK)})")
    return f"{sku}: {_STOCK[sku]} units"


@tool
def fetch_logs(service: str, kb: int = 100) -> str:
    """Fetch roughly ``kb`` kilobytes of a service's recent log lines."""
    lines, size, n = [], 0, 0
    while size < kb * 1024:
        level = "ERROR" if n % 97 == 13 else "INFO"
        line = f"2024-05-0{1 + n % 9}T02:{n % 60:02d}:{n % 59:02d}Z {level} {service}[{n % 7}] request {n:06d} done in {n % 250} ms"
        lines.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(lines)


@tool
async def run_job(job: str) -> str:
    """Run a named batch job and report how it went."""
    slowness = _SLOW.get()
    if slowness is not None:
        if slowness.on_start is not None:
            slowness.on_start()
        await asyncio.sleep(slowness.seconds)
    return f"job {job!r} finished: ok ✅"


@tool(needs_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order; a person approves each refund before it runs."""
    return f"refunded {amount} € on order {order} 💸"


TOOLS = [lookup, check_stock, fetch_logs, run_job, refund]


def make_agent(
    script: Sequence[AssistantTurn], researcher_script: Sequence[AssistantTurn] = ()
) -> Agent:
    """The entry agent "assistant" (handing off to "researcher") on the given scripts."""
    researcher = Agent(
        name=RESEARCHER,
        instructions="You research questions in depth and cite what you found.",
        model=ScriptedProvider(list(researcher_script)),
        tools=[lookup, fetch_logs],
    )
    return Agent(
        name=ASSISTANT,
        instructions="You are a helpful assistant. Hand deep research to the researcher.",
        model=ScriptedProvider(list(script)),
        tools=list(TOOLS),
        handoffs=[researcher],
    )


def agent() -> Agent:
    """A fresh entry agent whose models finish any unfinished demo run with text."""
    return make_agent(
        [text("Resumed and finished: everything is done. 完成 ✅")],
        [text("Research resumed and wrapped up. 调查完成 🔎")],
    )
