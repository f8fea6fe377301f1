"""The preview of ``trim``: which stored tool results lovia's
``trim_tool_results`` cuts, what is lost for good, and, when it cuts
nothing, why (the threshold and the largest result it found).

The counts apply lovia's ``_trim_entries`` to the stored JSON, so they equal
what lovia returns. lovia itself is imported only for its trim marker and
result digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from lovia_tui.core.actions.offloads import offloaded, result_digest_of
from lovia_tui.core.actions.plans import (
    make_plan,
    meta_of,
    refuse_live_session,
    refuse_unsound,
    session_database,
    stored_values,
    unreadable,
)
from lovia_tui.core.actions.previews import TrimCut, TrimPreview, TrimRun
from lovia_tui.core.entries import (
    UnreadableError,
    is_trimmed,
    known_only,
    output_text,
    trimmed_output,
)
from lovia_tui.core.errors import ActionError
from lovia_tui.core.huge_text import dumped_bytes
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store.entry_stream import read_entries
from lovia_tui.core.store.rows import Captured, RowGroup, capture
from lovia_tui.core.store.workspace import Workspace


async def preview_trim(
    ws: Workspace,
    session_id: str,
    keep_chars: int = 400,
    keep_runs: int = 1,
    *,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> TrimPreview:
    """Which stored tool results ``trim_tool_results`` cuts, and what is lost for good.

    A cut output is recoverable only if the context policy offloaded it (an
    offload record with its digest in a segment's carried context state) to
    a result store; the rest of its text is gone once trimmed. A segment is
    read as :func:`read_entries` reads it (a large one streamed, a huge
    output left stored): a first pass finds the results cut, a second, if
    any are, names their tools and weighs the segments after the cut.
    """
    refuse_unsound(ws)
    if keep_chars < 0 or keep_runs < 0:
        raise ActionError("keep_chars and keep_runs must be >= 0")
    db = await session_database(ws, session_id)
    await refuse_live_session(ws, session_id, force, stale_after, "trimming")
    rows = await capture(db, RowGroup(db.path, "session_runs", session_id))
    segments = [
        (run_id, _readable(rows, run_id, raw), meta_of(meta), raw)
        for run_id, raw, meta in stored_values(rows)
    ]
    kept = max(0, len(segments) - keep_runs)
    cut_ids: set[str] = set()
    seen = Seen()
    for _, entries, _, _ in segments[:kept]:
        for entry in entries:
            seen.add(entry)
            if trimmed_output(entry, keep_chars) is not None:
                cut_ids.add(str(entry.get("call_id")))
    for _, entries, _, _ in segments[kept:]:
        for _ in entries:  # read whole, as every preview reads every segment
            pass
    archived = offloaded(meta for _, _, meta, _ in segments)
    names: dict[str, str] = {}
    cuts, runs = [], []
    for run_id, entries, _, raw in segments[:kept] if cut_ids else ():
        count, after = 0, 2
        for position, entry in enumerate(entries):
            call_id = str(entry.get("call_id"))
            if entry.get("type") == "tool_call" and call_id in cut_ids:
                names[call_id] = str(entry.get("name", "?"))
            output = trimmed_output(entry, keep_chars)
            if output is not None:
                old = output_text(entry)
                count += 1
                cuts.append(
                    TrimCut(
                        run_id=run_id,
                        call_id=call_id,
                        tool=names.get(call_id, "?"),
                        old_chars=len(old),
                        new_chars=len(output),
                        archived=(call_id, result_digest_of(old)) in archived,
                        drops_parts=entry.get("parts") is not None,
                    )
                )
                # The shape lovia's entry_to_dict gives the new ToolResultEntry.
                entry = {
                    "type": "tool_result",
                    "call_id": entry.get("call_id"),
                    "output": output,
                    "is_error": entry.get("is_error", False),
                    "raw": None,
                }
            after += dumped_bytes(entry) + (2 if position else 0)  # ", " between
        if count:
            runs.append(TrimRun(run_id, count, len(bytes(raw)), after))
    return TrimPreview(
        file=db.path,
        session_id=session_id,
        keep_chars=keep_chars,
        keep_runs=keep_runs,
        results_trimmed=len(cuts),
        bytes_reclaimed=sum(r.bytes_reclaimed for r in runs),
        lost_for_good=sum(1 for c in cuts if not c.archived),
        cuts=tuple(cuts),
        runs=tuple(runs),
        plan=await make_plan(ws, [rows.group], False, [rows]),
        older_runs=kept,
        older_results=seen.results,
        already_trimmed=seen.trimmed,
        largest_result=None if seen.largest is None else len(output_text(seen.largest)),
        largest_cut_above=seen.cut_above(keep_chars),
    )


class Seen:
    """The tool results of the runs trim may cut: how many, how many it cut
    before, and the longest of the others (what decides "nothing to trim")."""

    def __init__(self) -> None:
        self.results = self.trimmed = 0
        self.largest: dict[str, Any] | None = None

    def add(self, entry: dict[str, Any]) -> None:
        if entry.get("type") != "tool_result":
            return
        self.results += 1
        if is_trimmed(entry):
            self.trimmed += 1
        elif self.largest is None or len(output_text(entry)) > len(
            output_text(self.largest)
        ):
            self.largest = entry

    def cut_above(self, keep_chars: int) -> int | None:
        """The length past which the longest result would be cut."""
        if self.largest is None:
            return None
        from lovia_tui.core.lovia_private import trim_marker

        dropped = max(0, len(output_text(self.largest)) - keep_chars)
        return keep_chars + len(trim_marker(self.largest.get("call_id"), dropped))


def _readable(rows: Captured, run_id: str, raw: Any) -> Iterable[dict[str, Any]]:
    """:func:`read_entries`, refused as :func:`parse_segments` refuses (a large
    segment's refusal comes as it is read)."""
    try:
        entries = read_entries(raw)
        if isinstance(entries, list):
            entries = list(known_only(entries))
    except UnreadableError as exc:
        raise unreadable(rows, run_id, "trim", exc) from exc
    if isinstance(entries, list):
        return entries

    class Refused:
        def __iter__(self) -> Iterator[dict[str, Any]]:
            try:
                yield from known_only(entries)
            except UnreadableError as exc:
                raise unreadable(rows, run_id, "trim", exc) from exc

    return Refused()
