"""What the transcript shows, as rows: segment headers, entries, the seam.

Plain data and text-building only; the widget decides what is on screen.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence

from rich.text import Text

from lovia_tui.core.attachments import (
    attachments,
    is_attachment,
    part_label,
    without_blobs,
)
from lovia_tui.core.context_meta import notice_details, notice_line, notice_of
from lovia_tui.core.entries import (
    entry_text,
    entry_types,
    is_trimmed,
    shorten,
    trim_sentinel,
)
from lovia_tui.core.formatting import (
    plural,
    printable,
    printable_json,
    size,
    timestamp,
)
from lovia_tui.core.models import SegmentInfo
from lovia_tui.core.run_status import DANGLING_CALL, RUNNING_CALL, web_reason
from lovia_tui.core.stored import UNREADABLE_SHOWN
from lovia_tui.core.web_models import record_details, record_line
from lovia_tui.view.kinds import RowKind
from lovia_tui.view.rows import Row, index_text, partner_text

FOLD_LINES = 40
FOLD_CHARS = 20_000
"""Most characters a folded entry shows on screen."""
FULL_CHARS = 400_000
"""Most characters an entry unfolded in full shows on screen (wrapping costs ~1 s per MB)."""


@functools.cache
def trim_markers() -> re.Pattern[str]:
    """lovia's trim markers in an output (their tail as the installed lovia writes it)."""
    return re.compile(
        r"\n?\[\.\.\. [\d,]+ chars trimmed from stored history;.*?"
        + re.escape(trim_sentinel()),
        re.S,
    )


def summary_line(row: Row, rows: list[Row], expanded: bool) -> Text:
    """The one line a row shows when folded (and the first line when expanded)."""
    if row.kind == RowKind.OLDER:
        return Text(
            f"▲ {row.older:,} older runs — press Enter (or scroll to the top) to load"
        )
    if row.kind == RowKind.NEWER:
        return Text(
            f"▼ {row.older:,} newer runs — press Enter (or scroll to the bottom) to load"
        )
    if row.kind == RowKind.HELD_BACK and row.segment and row.segment.uncounted:
        return Text("⋯ more entries: the run is being counted, its last entries follow")
    if row.kind == RowKind.HELD_BACK:
        # A run this large shows its first and last HELD_ENTRIES / 2 entries.
        return Text(
            f"⋯ {row.older:,} entries not held here (show or export prints them all)"
        )
    if row.kind == RowKind.UNREADABLE and row.problem:
        return Text(printable(f"{UNREADABLE_SHOWN}: {row.problem}"))
    if row.kind == RowKind.CHAT:
        return Text(printable(row.note))
    if row.kind == RowKind.RECORD:
        if row.record is None:
            return Text(printable(row.note))
        marker = "▾" if expanded else "▸"
        return Text(printable(f"     {marker} {record_line(row.record, 200)}"))
    if row.kind == RowKind.SEGMENT and row.segment:
        by = f" · {row.note}" if row.note else ""
        return Text(printable(segment_title(row.segment, expanded) + by))
    if row.kind == RowKind.NOTICE:
        marker = "▾" if expanded else "▸"
        notice = notice_of(row.segment.meta if row.segment else None) or {}
        return Text(printable(f"{'':>6} {marker} ⟲ {notice_line(notice)}"))
    if row.kind == RowKind.SEAM and row.run:
        status = row.status or row.run.status
        # lovia web's own record says why a run that looks running is not.
        why = f" ({web_reason(row.run)})" if row.run.web_settled else ""
        return Text(
            printable(
                f"━━ not yet in the session — run {row.run.run_id}, status {status}{why} ━━"
            )
        )
    assert row.entry is not None
    data = row.entry.data
    marker = "▾" if expanded else "▸"
    head = Text(f"{index_text(row):>6} {marker} {printable(row.label):<11} ")
    kind = data.get("type")
    if kind == "tool_call":
        head.append(f"{printable(data.get('name', ''))} ", style="bold")
        head.append(printable(shorten(str(data.get("arguments", "")), 200)))
        if row.partner is not None:
            head.append(f"  {partner_text(row, rows, '→')}", style="dim")
        elif row.running:
            head.append(f"  {RUNNING_CALL}", style="bold green")
        elif row.result_held_back:
            head.append("  its result may be among the entries not held", style="dim")
        else:
            head.append(f"  {DANGLING_CALL}", style="bold")
        return head
    if kind == "tool_result":
        if row.tool_name:
            head.append(f"{printable(row.tool_name)} ", style="bold")
        if row.partner is not None:
            head.append(f"{partner_text(row, rows, '←')} ", style="dim")
        if is_trimmed(data):
            head.append("✂ trimmed ", style="reverse")
        output = str(data.get("output", ""))
        head.append(printable(shorten(output, 200)))
        if len(output) > 200:
            head.append(f"  ({size(len(output.encode()))})", style="dim")
        attached = len(attachments(data))
        if attached:
            head.append(f"  📎 {attached} attached", style="dim")
        return head
    if kind == "reasoning":
        head.append(printable(shorten(entry_text(data), 200)), style="italic")
        return head
    if kind not in entry_types():  # a newer lovia's entry: shown as it is stored
        head.append(printable(shorten(json.dumps(data, ensure_ascii=False), 300)))
        return head
    head.append(printable(shorten(entry_text(data), 300)))
    return head


def segment_title(segment: SegmentInfo, expanded: bool) -> str:
    marker = "▼" if expanded else "▶"
    started = timestamp(segment.started_at or segment.created_at, UNREADABLE_SHOWN)
    finished = timestamp(segment.finished_at) if segment.finished_at else ""
    span = f"{started} → {finished[11:]}" if finished else started
    count = (
        "? entries"
        if segment.entry_count is None
        else plural(segment.entry_count, "entry", "entries")
    )
    if segment.uncounted:
        count = "counting… entries"
    badges = []
    if segment.unreadable:
        badges.append(UNREADABLE_SHOWN)
    if segment.has_notice:
        badges.append("⟲ compacted")
    if segment.has_context_state:
        badges.append("ctx")
    # Badges first: a line is cut at the pane's width, and a run id is long.
    return " · ".join(
        [
            f"{marker} " + " · ".join([*badges, f"run {segment.run_id}"]),
            span,
            count,
            size(segment.stored_bytes),
        ]
    )


def detail_lines(row: Row, raw: bool, full: bool, *, clip: bool = True) -> list[Text]:
    """The lines an expanded entry shows below its summary line.

    Folded, the first FOLD_LINES lines; ``full``, all of them. On screen
    (``clip``) the text also stops after FOLD_CHARS or FULL_CHARS characters:
    wrapping a 10 MB tool output would freeze the app. $PAGER gets it whole.
    """
    if row.record is not None:
        return _fold(record_details(row.record), full, None)
    limit = (FULL_CHARS if full else FOLD_CHARS) if clip else None
    meta = row.segment.meta if row.segment else None
    if row.kind == RowKind.SEGMENT:
        if not raw:
            return []
        if meta is None:
            problem = row.segment.unreadable if row.segment else None
            why = f"unreadable: {problem}" if problem else "lovia stored none"
            return [Text(printable(f"no meta to show ({why})"), style="dim italic")]
        return _fold(raw_json(meta).splitlines(), full, limit)
    if row.kind == RowKind.NOTICE:
        notice = notice_of(meta) or {}
        lines = raw_json(notice).splitlines() if raw else notice_details(notice)
        return _fold(lines, full, limit)
    if row.entry is None:
        return []
    data = row.entry.data
    if raw or data.get("type") not in entry_types():
        return _fold(raw_json(data).splitlines(), full, limit)
    kind = data.get("type")
    if kind == "tool_call":
        body = pretty_arguments(str(data.get("arguments", "")))
        return _fold(body.splitlines(), full, limit)
    if kind == "tool_result":
        output = str(data.get("output", ""))
        # The substring test first: the regex alone takes ~0.4 s over 10 MB.
        trimmed = "chars trimmed from stored history" in output
        marks = (
            [match.span() for match in trim_markers().finditer(output)]
            if trimmed
            else []
        )
        attached = [f"📎 {part_label(part)}" for part in attachments(data)]
        return _fold(_split_lines(output) + attached, full, limit, marks)
    content = data.get("content")
    if kind == "input" and isinstance(content, list):
        # Each attachment on a line of its own, below the text it came with.
        lines = [
            line
            for part in content
            if isinstance(part, dict)
            for line in (
                [f"📎 {part_label(part)}"]
                if is_attachment(part)
                else part_label(part).splitlines()
            )
        ]
        return _fold(lines, full, limit)
    return _fold(entry_text(data).splitlines(), full, limit)


def raw_json(value: object) -> str:
    """Stored JSON as ``r`` shows it: exact, escaped, but for the base64 of
    attachments and encrypted reasoning, each told by its size instead."""
    return printable_json(
        json.dumps(without_blobs(value), ensure_ascii=False, indent=2)
    )


def pretty_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
    except (ValueError, TypeError):
        return arguments


def _split_lines(text: str) -> list[str]:
    """What ``Text(text).split("\\n")`` gives, as plain strings: no trailing blank line."""
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and text.endswith("\n") else lines


def _marked(line: str, offset: int, marks: Sequence[tuple[int, int]]) -> Text:
    """``line`` (at ``offset`` in its text), printable, with the trim markers in
    reverse video (marked piece by piece: printable text may be longer)."""
    cuts = {0, len(line)}
    for start, end in marks:
        start, end = max(start, offset) - offset, min(end, offset + len(line)) - offset
        if start < end:
            cuts.update((start, end))
    text = Text()
    bounds = sorted(cuts)
    for start, end in zip(bounds, bounds[1:], strict=False):
        middle = offset + (start + end) // 2
        marked = any(a <= middle < b for a, b in marks)
        text.append(
            printable(line[start:end], multiline=True), "reverse" if marked else ""
        )
    return text


def _fold(
    lines: list[str],
    full: bool,
    limit: int | None,
    marks: Sequence[tuple[int, int]] = (),
) -> list[Text]:
    """Text for the lines shown (Text only for those: an output may be megabytes)."""
    shown = lines if full or len(lines) <= FOLD_LINES else lines[:FOLD_LINES]
    texts: list[Text] = []
    offset = used = 0
    for line in shown:
        if limit is not None and used + len(line) > limit:
            texts.append(_marked(line[: limit - used], offset, marks))
            more = sum(map(len, lines)) - limit
            hint = (
                "o opens in $PAGER" if full else "Enter shows more, o opens in $PAGER"
            )
            return [
                *texts,
                Text(f"… {more:,} more characters — {hint}", style="dim italic"),
            ]
        texts.append(_marked(line, offset, marks))
        offset, used = offset + len(line) + 1, used + len(line)
    if len(shown) < len(lines):
        hidden = len(lines) - len(shown)
        texts.append(
            Text(
                f"… {hidden:,} more lines — Enter shows all, o opens in $PAGER",
                style="dim italic",
            )
        )
    return texts
