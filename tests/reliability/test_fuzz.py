"""Property tests over everything that interprets stored JSON.

The read layer's parsers raise nothing but the documented UnreadableError;
everything downstream of a successful parse (analysis, text, transcript rows,
the run head panel) takes any JSON shape without an exception; previews on
hostile stored rows refuse with ActionError or succeed. (Previews on
well-formed transcripts are compared with lovia in test_actions.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lovia.testing import call
from lovia.testing import text as scripted_text
from rich.console import Console
from rich.text import Text
from support.lovia_factory import scratch_directory, write_session

from lovia_tui.core.actions.session_plans import (
    preview_clear,
    preview_rewind,
    user_turn_start,
)
from lovia_tui.core.actions.trim_plan import preview_trim
from lovia_tui.core.entries import (
    UnreadableError,
    dangling_calls,
    drop_dangling,
    entry_text,
    entry_types,
    parse_entries,
    parse_json,
    parse_object,
    shorten,
    text_of,
)
from lovia_tui.core.errors import ActionError
from lovia_tui.core.models import Entry, SessionLink
from lovia_tui.core.store import checkpoint_reads, segment_reads
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.rows import Row, pair_tool_calls
from lovia_tui.widgets.run_detail import dangling_panel, head_table
from lovia_tui.widgets.transcript_rows import (
    detail_lines,
    segment_title,
    summary_line,
    trim_markers,
)

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
MARKER = '\n[... 1,234 chars trimmed from stored history; recall_tool_result("c1") returns the full output only if it was archived to a result store]'

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            "\n",
            "c1",
            MARKER,
            "x" * 300,
            "line\n" * 50,
            "金閣寺 🗾",
            "\u200b\t\r\x1b[31m",
        ]
    ),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = (
    "role",
    "content",
    "call_id",
    "name",
    "arguments",
    "output",
    "is_error",
    "id",
    "raw",
    "parts",
    "text",
)
entries = st.fixed_dictionaries(
    # The installed lovia's types, and one of a newer lovia's (shown as stored).
    # (deferred: read when a test draws, with the test's own cache directory).
    {"type": st.deferred(lambda: st.sampled_from([*sorted(entry_types()), "future"]))},
    optional={field: json_values for field in FIELDS},
)
stored_text = st.one_of(
    st.text(),
    st.binary().map(lambda raw: raw.decode("utf-8", "replace")),
    json_values.map(lambda value: json.dumps(value, ensure_ascii=False)),
    st.lists(entries, max_size=6).map(
        lambda value: json.dumps(value, ensure_ascii=False)
    ),
    st.lists(st.one_of(entries, json_values), max_size=4).map(
        lambda value: json.dumps(value, ensure_ascii=False)
    ),
)


# ----------------------------------------------------------------- parsers


@FUZZ
@given(stored_text | st.binary())
def test_parsers_raise_only_unreadable(raw: str | bytes) -> None:
    try:
        parsed = parse_entries(raw)
    except UnreadableError:
        pass
    else:
        assert isinstance(parsed, list)
        assert all(
            isinstance(e, dict) and isinstance(e.get("type"), str) for e in parsed
        )
    try:
        obj = parse_object(raw)
    except UnreadableError:
        pass
    else:
        assert obj is None or isinstance(obj, dict)
    with contextlib.suppress(UnreadableError):
        parse_json(raw)


@FUZZ
@given(st.lists(entries, max_size=12))
def test_analysis_takes_any_entry_shape(data: list[dict[str, Any]]) -> None:
    dangling = dangling_calls(data)
    kept = drop_dangling(data)
    calls = [e for e in data if e.get("type") == "tool_call"]
    assert len(dangling) <= len(calls)
    assert all(isinstance(c.call_id, str) and isinstance(c.name, str) for c in dangling)
    assert [e for e in data if e not in kept] == [
        e for e in data if e.get("type") == "tool_call" and e not in kept
    ]
    for entry in data:
        assert isinstance(entry_text(entry), str)
        assert isinstance(text_of(entry.get("content")), str)


@FUZZ
@given(st.text(), st.integers(min_value=0, max_value=400))
def test_shorten_equals_collapsing_everything(text: str, width: int) -> None:
    """The prefix shortcut for megabyte outputs gives what the plain rule gives."""
    flat = " ".join(text.split())
    expected = flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"
    assert shorten(text, width) == expected
    padded = text + " " * 5 + "tail " * (width + 10)
    flat = " ".join(padded.split())
    assert shorten(padded, width) == (
        flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"
    )


# --------------------------------------------------------- transcript rows

console = Console(width=100, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115


def _segment(meta_json: str | None, count: int | None = 2) -> Any:
    """A SegmentInfo as the read layer builds it from a row with this meta."""

    class Stub:
        name, path = "fuzz.db", Path("fuzz.db")

    return segment_reads._segment(
        Stub(), (7, "s", "r", time.time(), 100, meta_json), count, 0
    )


@FUZZ
@given(st.lists(entries, min_size=1, max_size=8), st.one_of(st.none(), stored_text))
def test_transcript_rows_take_any_entry_shape(
    data: list[dict[str, Any]], meta_json: str | None
) -> None:
    segment = _segment(meta_json)
    rows = [Row("segment", "seg", segment=segment, fold="seg")]
    rows += [
        Row(
            "entry",
            f"seg:{n}",
            segment=segment,
            entry=Entry(n if n % 3 else None, entry),
            fold="seg",
        )
        for n, entry in enumerate(data)
    ]
    pair_tool_calls(rows)
    for row in rows:
        for expanded in (False, True):
            line = summary_line(row, rows, expanded)
            console.print(line)
        assert isinstance(row.component, str)
        for raw in (False, True):
            for full in (False, True):
                for line in detail_lines(row, raw, full):
                    assert isinstance(line, Text)
                    line.wrap(console, 60)
    console.print(segment_title(segment, True))


def _old_tool_result_lines(output: str, full: bool) -> list[Text]:
    """detail_lines for a tool result before it learned to clip (the reference)."""
    text = Text(output)
    for match in trim_markers().finditer(output):
        text.stylize("reverse", match.start(), match.end())
    lines = list(text.split("\n"))
    if full or len(lines) <= 40:
        return lines
    note = f"… {len(lines) - 40:,} more lines — Enter shows all, o opens in $PAGER"
    return [*lines[:40], Text(note, style="dim italic")]


@FUZZ
@given(
    st.lists(
        st.sampled_from(["", "\n", "ok", "a b", MARKER, "\n\n", "x" * 90]), max_size=60
    ),
    st.booleans(),
)
def test_tool_output_lines_are_what_they_were_below_the_clip(
    parts: list[str], full: bool
) -> None:
    output = "".join(parts)
    row = Row(
        "entry",
        "k",
        entry=Entry(0, {"type": "tool_result", "call_id": "c1", "output": output}),
    )
    expected = _old_tool_result_lines(output, full)
    assert detail_lines(row, False, full, clip=False) == expected
    if len(output) <= 20_000:
        assert detail_lines(row, False, full) == expected


@FUZZ
@given(st.one_of(stored_text, json_values.map(lambda v: json.dumps(v))), json_values)
def test_run_head_panel_takes_any_head(head_json: str, output: Any) -> None:
    class Stub:
        name, path = "fuzz.db", Path("fuzz.db")

    run = checkpoint_reads.run_info(Stub(), ("run-x", head_json, time.time(), 3, 1))
    link = SessionLink(Path("fuzz.db"), "s", "segment")
    for now in (run.updated_at, run.updated_at + 10_000):
        console.print(head_table(run, link, now, 300))
        console.print(head_table(run, None, now, 300))
    console.print(
        dangling_panel(
            dangling_calls(
                [{"type": "tool_call", "call_id": output, "arguments": output}]
            )
        )
    )


# ---------------------------------------------------------------- previews


@pytest.fixture(scope="module")
def session_template() -> Iterator[Path]:
    """Session "s" written by lovia: a tool call and a long result, then text."""
    script = [
        call("echo", {"message": "hi " * 300}, call_id="c0"),
        scripted_text("Done."),
    ]
    with scratch_directory() as directory:
        path = directory / "s.db"
        asyncio.run(write_session(path, "s", [script, [scripted_text("Again.")]]))
        yield path


hostile_rows = st.lists(
    st.tuples(stored_text, st.one_of(st.none(), stored_text)), min_size=1, max_size=3
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    hostile_rows,
    st.integers(min_value=0, max_value=20),
    st.integers(min_value=0, max_value=3),
)
def test_previews_on_hostile_rows_refuse_or_succeed(
    session_template: Path,
    rows: list[tuple[str, str | None]],
    keep: int,
    keep_runs: int,
) -> None:
    with scratch_directory() as directory:
        path = directory / "s.db"
        shutil.copy(session_template, path)
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.executemany(
                "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, created_at) VALUES ('s', ?, ?, ?, ?)",
                [
                    (f"h{n}", entries_json, meta, time.time())
                    for n, (entries_json, meta) in enumerate(rows)
                ],
            )
            conn.commit()
        asyncio.run(_previews(path, keep, keep_runs))


async def _previews(path: Path, keep: int, keep_runs: int) -> None:
    ws = await Workspace.open([path])
    try:
        for preview in (
            lambda: preview_rewind(ws, "s", keep),
            lambda: preview_trim(ws, "s", keep_chars=10, keep_runs=keep_runs),
            lambda: user_turn_start(ws, "s", keep),
        ):
            with contextlib.suppress(ActionError):
                await preview()
        cleared = await preview_clear(ws, "s")
        assert cleared.segments >= 3
    finally:
        await ws.close()
