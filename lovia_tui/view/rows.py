"""The transcript's rows as plain data: what each stands for, its pairing and folding.

Built by :mod:`~lovia_tui.view.transcript_loader`, rendered by the widgets'
:mod:`~lovia_tui.widgets.transcript_rows`, read by the selection.
"""

from __future__ import annotations

from dataclasses import dataclass

from lovia_tui.core.entries import entry_types
from lovia_tui.core.models import Entry, RunInfo, SegmentInfo, Unreadable
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.web_models import RunRecord
from lovia_tui.view.kinds import RowKind, newer_key, older_key

ENTRY_COMPONENTS = (
    "user", "system", "assistant-text", "reasoning",
    "tool-call", "tool-result", "error", "unknown",
)  # fmt: skip
"""How an entry row is coloured, by what it is (:attr:`Row.component`)."""
ROW_COMPONENTS = frozenset(
    [f"transcript--{kind}" for kind in RowKind if kind != RowKind.ENTRY]
    + [f"transcript--{name}" for name in ENTRY_COMPONENTS]
)
"""Every component class (in the .tcss) a transcript row is coloured by."""
KIND_LABELS = {
    "assistant_text": "assistant",
    "reasoning": "reasoning",
    "tool_call": "tool call",
}


@dataclass
class Row:
    """One selectable item of the transcript."""

    kind: RowKind
    key: str
    segment: SegmentInfo | None = None
    entry: Entry | None = None
    run: RunInfo | None = None
    problem: Unreadable | None = None
    older: int = 0
    partner: int | None = None
    tool_name: str = ""
    fold: str = ""
    """The key of the segment or seam whose header folds this row away."""
    status: str = ""
    """A seam's run status as last seen (the live tail updates it)."""
    running: bool = False
    """A tool call of a live run's checkpoint: still waiting, not dangling."""
    result_held_back: bool = False
    """A tool call whose result may be among the entries not held (a large
    segment held in part): not known to be dangling."""
    boundary: int = 0
    """An "older" row's first unloaded id from above, a "newer" row's from below."""
    record: RunRecord | None = None
    """lovia web's record of a run that left no entries here (a record row)."""
    note: str = ""
    """What a chat row or a record row with no record says; on a segment
    header, what started its run (stored text, raw)."""

    @property
    def unfolds(self) -> bool:
        """Enter shows more of it below: an entry, a compaction notice, or
        lovia web's record of a run that left no entries."""
        return self.kind in (RowKind.ENTRY, RowKind.NOTICE, RowKind.RECORD)

    @property
    def has_raw(self) -> bool:
        """``r`` shows what is stored behind it: an entry's JSON, a notice's,
        or a segment header's meta."""
        return (
            self.entry is not None
            or self.kind == RowKind.NOTICE
            or (self.kind == RowKind.SEGMENT and self.segment is not None)
        )

    @property
    def label(self) -> str:
        data = self.entry.data if self.entry else {}
        kind = data.get("type")
        if kind == "input":
            return str(data.get("role", "input"))
        if kind == "tool_result":
            return "tool error" if data.get("is_error") else "tool result"
        return KIND_LABELS.get(str(kind), "unknown")

    @property
    def component(self) -> str:
        """The component class (in the .tcss) that colours this row."""
        if self.kind != RowKind.ENTRY:
            return f"transcript--{self.kind}"
        data = self.entry.data if self.entry else {}
        kind = data.get("type")
        if kind == "input":
            return (
                "transcript--user"
                if data.get("role") == "user"
                else "transcript--system"
            )
        if kind == "tool_result" and data.get("is_error"):
            return "transcript--error"
        if kind not in entry_types():
            return "transcript--unknown"
        return "transcript--" + str(kind).replace("_", "-")


def older_row(count: int, before_id: int) -> list[Row]:
    """The row standing for ``count`` segments below id ``before_id``, not loaded."""
    return (
        [Row(RowKind.OLDER, older_key(before_id), older=count, boundary=before_id)]
        if count
        else []
    )


def newer_row(count: int, after_id: int) -> list[Row]:
    """The row standing for ``count`` segments above id ``after_id``, not loaded
    (dropped from the window while the user read older ones)."""
    return (
        [Row(RowKind.NEWER, newer_key(after_id), older=count, boundary=after_id)]
        if count
        else []
    )


def keep_oldest(rows: list[Row], most: int) -> list[Row]:
    """``rows`` with only their first segments, whole, within ``most`` rows
    (one segment at least); the rest (in-flight seams included) folded into
    a "newer" row to load again."""
    headers = [n for n, row in enumerate(rows) if row.kind == RowKind.SEGMENT]
    kept, total = 1, len(headers)
    while (
        kept < total and (headers[kept + 1] if kept + 1 < total else len(rows)) <= most
    ):
        kept += 1
    if kept >= total:
        return rows
    cut = headers[kept]
    dropped = rows[cut:]
    count = sum(1 for row in dropped if row.kind == RowKind.SEGMENT) + sum(
        row.older for row in dropped if row.kind == RowKind.NEWER
    )
    return rows[:cut] + newer_row(count, _row_id(rows[headers[kept - 1]]))


def keep_newest(rows: list[Row], most: int) -> list[Row]:
    """``rows`` with only their last segments, whole, within ``most`` rows
    (one segment at least), and what follows them; the rest folded into an
    "older" row to load again."""
    headers = [n for n, row in enumerate(rows) if row.kind == RowKind.SEGMENT]
    kept, total = 1, len(headers)
    while kept < total and len(rows) - headers[total - kept - 1] <= most:
        kept += 1
    if kept >= total:
        return rows
    cut = headers[total - kept]
    dropped = rows[:cut]
    count = sum(1 for row in dropped if row.kind == RowKind.SEGMENT) + sum(
        row.older for row in dropped if row.kind == RowKind.OLDER
    )
    return older_row(count, _row_id(rows[cut])) + rows[cut:]


def _row_id(header: Row) -> int:
    """A segment header's ``session_runs`` id."""
    assert header.segment is not None, "a segment row holds its segment"
    return header.segment.row_id


def pair_tool_calls(rows: list[Row]) -> None:
    """Link each tool call row with its result row (by call_id occurrence); a
    call of a live run's checkpoint still waiting for its result is ``running``;
    one before the entries a large segment holds back may have its result there."""
    waiting: dict[str, list[int]] = {}
    names: dict[int, str] = {}
    live = False
    for position, row in enumerate(rows):
        if row.kind == RowKind.SEGMENT or row.kind == RowKind.SEAM:
            waiting.clear()
            live = row.kind == RowKind.SEAM and row.status == RunStatus.RUNNING
        if row.kind == RowKind.HELD_BACK:  # the calls waiting may be answered there
            for calls in waiting.values():
                for call in calls:
                    rows[call].result_held_back = True
        if row.kind != RowKind.ENTRY or row.entry is None:
            continue
        row.running = live
        data = row.entry.data
        call_id = str(data.get("call_id"))
        if data.get("type") == "tool_call":
            waiting.setdefault(call_id, []).append(position)
            names[position] = str(data.get("name", ""))
            row.tool_name = names[position]
            row.result_held_back = False
        elif data.get("type") == "tool_result" and waiting.get(call_id):
            call = waiting[call_id].pop(0)
            row.partner, rows[call].partner = call, position
            rows[call].result_held_back = False
            row.tool_name = names.get(call, "")


def index_text(row: Row) -> str:
    """The flat index (what rewind counts); ``…`` while it is being counted,
    ``·`` for entries not in the session (or after an unreadable segment)."""
    if row.entry is None:
        return ""
    if row.entry.index is not None:
        return str(row.entry.index)
    return "…" if row.segment is not None and row.segment.counting else "·"


def partner_text(row: Row, rows: list[Row], arrow: str) -> str:
    partner = rows[row.partner] if row.partner is not None else None
    if partner is None:
        return ""
    if partner.entry is not None and partner.entry.index is not None:
        return f"{arrow} {partner.entry.index}"
    return f"{arrow} {'↓' if arrow == '→' else '↑'}"
