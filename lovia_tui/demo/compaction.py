"""The demo's runs that keep more than text: compaction, attachments, encrypted
reasoning and prompt-cache usage, each written by a real lovia run.

- A session long enough for lovia's own ``Compaction`` policy to offload an
  old log and summarize the history: its segments' ``meta`` hold the
  ``context_state`` and the ``context_notice`` lovia web replays.
- A session whose user attaches an image and a file (``ImagePart``,
  ``FilePart``) and whose tool returns a screenshot and a PDF (a tool
  result's ``parts``); its model's reasoning comes back encrypted, as
  Anthropic's redacted thinking is stored.
- Their models report prompt-cache use (cache read and write tokens), as
  the kept checkpoint of the daily report does in its head's usage.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import zlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia import Agent, Runner, SQLiteSession
from lovia import tool as lovia_tool
from lovia.context import Compaction, OffloadToolResults, SummarizeHistory
from lovia.messages import AssistantTurn, Usage, user
from lovia.parts import FilePart, ImagePart, TextPart
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import EntryCompletedDelta, ModelDelta, ReasoningEntry

SUMMARY = (
    "The user is chasing API errors. The API and worker logs (~12 KB each) show "
    "an upstream reset every ~97 requests, all on shard 6. Next: check the gateway."
)


@lovia_tool
def tail_log(service: str, kb: int = 12) -> str:
    """Tail about ``kb`` kilobytes of a service's log, by shard."""
    lines: list[str] = []
    size = 0
    while size < kb * 1024:
        n = len(lines)
        state = "upstream reset" if n % 97 == 13 else "served"
        lines.append(
            f"{service} shard={6 if n % 97 == 13 else n % 6} seq={n:05d} {state}"
        )
        size += len(lines[-1]) + 1
    return "\n".join(lines)


class _FixedSummarizer:
    """lovia's ``Summarizer`` protocol with a canned summary (no model to ask)."""

    async def summarize(
        self, entries: list, *, req: Any, prior_summary: Any = None
    ) -> str:
        return SUMMARY


def cached(turn: AssistantTurn, read: int, written: int) -> AssistantTurn:
    """A scripted turn whose model reports prompt-cache use, as Anthropic's does."""
    return dataclasses.replace(
        turn,
        usage=Usage(
            input_tokens=1_200 + read,
            output_tokens=90,
            cache_read_tokens=read,
            cache_write_tokens=written,
        ),
    )


def _policy() -> Compaction:
    """lovia's default policy, sized so that two logs fill the window: the
    oldest log is offloaded, then the history is summarized."""
    return Compaction(
        context_window=9_000,
        compact_at=4_000,
        compact_to=2_000,
        keep_recent_tokens=400,
        reserve_output_tokens=0,
        stages=[
            OffloadToolResults(min_chars=2_000, keep_last=1, preview_chars=120),
            SummarizeHistory(summarizer=_FixedSummarizer()),
        ],
    )


async def compacted_session(session: SQLiteSession, session_id: str) -> None:
    """Three runs that fill the context until lovia compacts it."""
    for prompt, turns in [
            ("Why do the API and the worker fail?", [
                call("tail_log", {"service": "api", "kb": 12}, call_id="call_cmp_api"),
                call("tail_log", {"service": "worker", "kb": 12}, call_id="call_cmp_worker"),
                text("Both show an upstream reset every ~97 requests, all on shard 6."),
            ]),
            ("Is the gateway the same?", [
                call("tail_log", {"service": "gateway", "kb": 6}, call_id="call_cmp_gateway"),
                text("No: the gateway is clean, so shard 6 is behind it."),
            ]),
            ("Summarise where we are.", [
                text("API and worker fail on shard 6; the gateway is clean."),
            ]),
    ]:  # fmt: skip
        agent = Agent(
            name="assistant",
            instructions="You are a helpful assistant.",
            model=ScriptedProvider([cached(t, 900, 300) for t in turns]),
            tools=[tail_log],
            context_policy=_policy(),
        )
        await Runner.run(agent, prompt, session=session, session_id=session_id)


class _EncryptedReasoning(ScriptedProvider):
    """A scripted model whose reasoning arrives encrypted, as lovia's
    Anthropic adapter stores redacted thinking: no text, its base64 in
    ``metadata["redacted"]``, the provider named."""

    name = "anthropic"

    async def stream(self, entries: list, **options: Any) -> AsyncIterator[ModelDelta]:
        # What Anthropic sends is opaque; 768 bytes that look the part.
        sealed = base64.b64encode(
            b"".join(hashlib.sha256(bytes([n])).digest() for n in range(24))
        )
        yield EntryCompletedDelta(
            ReasoningEntry(
                content="",
                provider=self.name,
                metadata={"redacted": sealed.decode()},
            )
        )
        async for delta in super().stream(entries, **options):
            yield delta


def _png(width: int, height: int = 24) -> bytes:
    """A small real PNG made here (no file to ship): an error-rate chart, pale
    bars with a red spike two thirds of the way along, ``width`` x ``height``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    spike = width * 2 // 3

    def bar(x: int) -> int:  # pixels tall
        return height - 2 if abs(x - spike) < max(1, width // 32) else 3 + (x * 7) % 5

    def pixel(x: int, y: int) -> bytes:
        if height - y > bar(x):
            return bytes([24, 26, 33])  # the background
        return bytes([230, 57, 70]) if bar(x) > height // 2 else bytes([120, 170, 220])

    header = (
        width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    )
    rows = b"".join(
        b"\x00" + b"".join(pixel(x, y) for x in range(width)) for y in range(height)
    )
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@lovia_tool
def screenshot(page: str) -> list:
    """Take a screenshot of a dashboard page and attach its PDF export."""
    return [
        f"Screenshot of {page}:",
        ImagePart(data=base64.b64encode(_png(320)).decode(), mime_type="image/png"),
        FilePart.from_bytes(
            b"%PDF-1.4\n% error-rate export\n" + b"0" * 2_000,
            mime_type="application/pdf",
            filename=f"{page}-export.pdf",
        ),
    ]


async def attachments_session(session: SQLiteSession, session_id: str) -> None:
    """A user message with an image and a file, a tool answering with a
    screenshot and a PDF, and encrypted reasoning."""
    message: Sequence[Any] = [
        TextPart("Here is the error chart and the incident log. What stands out?"),
        ImagePart(data=base64.b64encode(_png(64)).decode(), mime_type="image/png"),
        ImagePart(url="https://status.example.com/charts/errors.png", detail="low"),
        FilePart.from_bytes(
            b"02:13 shard 6 failover\n02:14 errors back to normal\n",
            mime_type="text/plain",
            filename="incident.log",
        ),
    ]
    agent = Agent(
        name="assistant",
        instructions="You are a helpful assistant.",
        model=_EncryptedReasoning(
            [
                cached(
                    call("screenshot", {"page": "errors"}, call_id="call_shot_1"),
                    0,
                    1_500,
                ),
                cached(
                    text("The spike at 02:13 matches the shard 6 failover."), 1_500, 0
                ),
            ]
        ),
        tools=[screenshot],
    )
    await Runner.run(
        agent,
        [user(list(message))],
        session=session,
        session_id=session_id,
    )
