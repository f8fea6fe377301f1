"""What lovia stores beyond text, in the inspector: compaction notices and run
meta, attachments, encrypted reasoning, cache tokens (on a file written by the
demo's real lovia runs, opened read-only)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from rich.console import Console
from support.lovia_factory import ATTACHED, CACHED_RUN, COMPACTED, build_stored_extras
from textual.widgets import Static

from lovia_tui.app import make_app
from lovia_tui.demo.compaction import SUMMARY
from lovia_tui.pilot import settle
from lovia_tui.screens.attachments import AttachmentsScreen
from lovia_tui.view.kinds import RowKind
from lovia_tui.widgets.half_blocks import HalfBlocks
from lovia_tui.widgets.run_detail import RunDetail

BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{101,}")


@pytest.fixture(scope="module")
def extras(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return asyncio.run(
        build_stored_extras(tmp_path_factory.mktemp("extras") / "extras.db")
    )


async def _open_session(pilot, session_id: str):
    screen = pilot.app.screen
    await pilot.press("1")
    keys = [key[1] for key in screen.sessions.shown]
    screen.sessions.row_list.cursor = keys.index(session_id)
    await settle(pilot)
    await pilot.press("2")
    return screen.transcript


@asynccontextmanager
async def _attached(extras: Path) -> AsyncIterator:
    """The app (read-only) on session :data:`ATTACHED`: (app, pilot, transcript)."""
    app = make_app([extras], readonly=True)
    async with app.run_test(size=(170, 45)) as pilot:
        await settle(pilot)
        yield app, pilot, await _open_session(pilot, ATTACHED)


def _details(transcript, row) -> str:
    lines = transcript.window.details_for(row, 100, Console(width=100))
    return " ".join(" ".join(line.plain.split()) for line in lines)


def _screen_lines(transcript) -> list[str]:
    """Every line the transcript draws, page by page."""
    seen = []
    height = max(1, transcript.size.height)
    for top in range(0, len(transcript.window.lines), height):
        transcript.scroll_to(y=top, animate=False, immediate=True)
        offset = int(transcript.scroll_offset.y)
        seen += [
            transcript.render_line(y).text
            for y in range(
                top - offset, min(height, len(transcript.window.lines) - offset)
            )
        ]
    return seen


async def test_notices_follow_their_runs_and_r_shows_a_runs_meta(extras: Path) -> None:
    app = make_app([extras], readonly=True)
    async with app.run_test(size=(170, 45)) as pilot:
        await settle(pilot)
        transcript = await _open_session(pilot, COMPACTED)
        rows = transcript.rows
        notices = [n for n, row in enumerate(rows) if row.kind == RowKind.NOTICE]
        assert len(notices) == 3
        for n in notices:  # after its run's last entry, as lovia web replays it
            assert rows[n - 1].kind == RowKind.ENTRY
            assert n + 1 == len(rows) or rows[n + 1].kind == RowKind.SEGMENT
            assert rows[n].fold == rows[n - 1].fold  # folds with its run

        headers = [row for row in rows if row.kind == RowKind.SEGMENT]
        for header in headers:  # the badge is drawn at 170 columns, not cut off
            assert transcript.select_key(header.key)
            await pilot.pause()
            first = transcript.window.first_line_of(transcript.cursor)
            drawn = transcript.render_line(first - int(transcript.scroll_offset.y))
            assert "⟲ compacted" in drawn.text, drawn.text

        header = headers[-1]
        transcript.select_key(header.key)
        await pilot.press("r")
        assert transcript.shows_raw(header.key)
        meta = _details(transcript, header)
        assert '"context_notice": {' in meta and '"context_state": {' in meta
        assert '"offloaded": { "call_cmp_api": {' in meta
        await pilot.press("r")
        assert _details(transcript, header) == ""

        notice = rows[notices[-1]]
        transcript.select_key(notice.key)
        await pilot.press("enter")
        shown = _details(transcript, notice)
        assert "context compacted · proactive" in shown
        assert "reason: summary" in shown and " ".join(SUMMARY.split()) in shown
        await pilot.press("r")
        assert '"summary": "The user is chasing API errors.' in _details(
            transcript, notice
        )


async def test_attachments_and_encrypted_reasoning_never_show_base64(
    extras: Path,
) -> None:
    async with _attached(extras) as (app, pilot, transcript):
        entries = [row for row in transcript.rows if row.kind == RowKind.ENTRY]
        summaries = [transcript.window.summary(row).plain for row in entries]
        assert (
            sum("[encrypted reasoning · anthropic · 768 B]" in s for s in summaries)
            == 2
        )
        assert any("📎 2 attached" in s for s in summaries)

        for row in entries:  # every entry unfolded, as it reads
            transcript.select_key(row.key)
            await pilot.press("enter")
        unfolded = " ".join(_details(transcript, row) for row in entries)
        for fact in (
            "📎 [file incident.log · text/plain · 51 B]",
            "📎 [image https://status.example.com/charts/errors.png · detail low]",
            "📎 [file errors-export.pdf · application/pdf · 2.0 KB]",
        ):
            assert fact in unfolded
        shown = _screen_lines(transcript)
        for row in entries:  # and as stored, with r
            transcript.select_key(row.key)
            await pilot.press("r")
        raw = " ".join(_details(transcript, row) for row in entries)
        assert "base64 data: 2.0 KB as 2,708 base64 characters, not shown" in raw
        assert "opaque provider data: 768 B" in raw
        shown += _screen_lines(transcript)
        assert any("errors-export.pdf" in line for line in shown)
        for line in [*shown, *raw.split(" ")]:
            assert not BASE64_RUN.search(line), line


async def test_the_run_detail_shows_cache_tokens(extras: Path) -> None:
    app = make_app([extras], readonly=True)
    async with app.run_test(size=(170, 45)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        assert app.screen.runs.select_run(CACHED_RUN)
        await settle(pilot)
        body = app.screen.query_one(RunDetail).query_one("#run-detail-body")
        console = Console(width=200, record=True, color_system=None)
        console.print(body.content)
        text = " ".join(console.export_text().split())
        from lovia import SQLiteCheckpointer

        head = (await SQLiteCheckpointer(extras).load(CACHED_RUN)).head
        usage = head.usage
        assert (usage.cache_read_tokens, usage.cache_write_tokens) == (900, 300)
        assert (
            f"usage {usage.input_tokens:,} in · {usage.output_tokens:,} out · "
            f"{usage.cache_read_tokens:,} cache read · {usage.cache_write_tokens:,} "
            f"cache write · last input {head.last_input_tokens:,}"
        ) in text


async def test_i_draws_a_stored_image_and_says_why_the_rest_are_not(
    extras: Path,
) -> None:
    async with _attached(extras) as (app, pilot, transcript):
        [message] = [
            row
            for row in transcript.rows
            if row.kind == RowKind.ENTRY and row.entry.data.get("type") == "input"
        ]
        transcript.select_key(message.key)
        await pilot.press("i")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AttachmentsScreen)
        drawn = [screen.query_one(f"#attachment-{n}", Static).content for n in range(3)]
        image = drawn[0]
        assert isinstance(image, HalfBlocks)
        assert len(image.pixels.rows[0]) == 64  # the demo's chart, not scaled up
        assert "stored as a URL, which lovia-tui does not fetch" in str(drawn[1])
        assert "not drawn: a file, not an image" in str(drawn[2])
        shown = app.export_screenshot()
        assert "▀" in shown and "incident.log" in shown
        assert not BASE64_RUN.search(shown)
        await pilot.press("escape")
        assert not isinstance(app.screen, AttachmentsScreen)
        answer = [row for row in transcript.rows if row.kind == RowKind.ENTRY][-1]
        assert answer.entry.data["type"] == "assistant_text"  # nothing attached:
        transcript.select_key(answer.key)  # i opens nothing
        await pilot.press("i")
        await settle(pilot)
        assert not isinstance(app.screen, AttachmentsScreen)
