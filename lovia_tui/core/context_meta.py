"""What lovia's context compaction left behind, in words.

lovia's loop stows two things in a finished run's segment ``meta``:
``context_state`` (the policy's sticky decisions: tool results offloaded or
cleared from the model's view, the running summary) and ``context_notice``
(the run's last compaction: why, tokens before and after, the summary),
which lovia web replays as a notice after the run when a chat is reloaded.
A checkpoint head holds the same ``context_state``. Stored values are
untrusted: any field may be missing or of another shape.
"""

from __future__ import annotations

import math
from typing import Any

from lovia_tui.core.stored import stored_number

NOTICE_KEY = "context_notice"
STATE_KEY = "context_state"
TIMING_KEY = "timing"


def notice_of(meta: Any) -> dict[str, Any] | None:
    """A segment meta's compaction notice, if it holds one."""
    notice = meta.get(NOTICE_KEY) if isinstance(meta, dict) else None
    return notice if isinstance(notice, dict) else None


def _count(value: Any) -> str:
    number = stored_number(value)
    return "?" if number is None else f"{number:,}"


def notice_line(notice: dict[str, Any]) -> str:
    """The notice on one line, as lovia web shows it: proactive or reactive,
    tokens before → after with the saving, and the policy's own detail."""
    trigger = (
        "reactive (after the provider refused an overflow)"
        if notice.get("reactive") is True
        else "proactive"
    )
    bits = [f"context compacted · {trigger}"]
    before, after = (
        stored_number(notice.get("tokens_before")),
        stored_number(notice.get("tokens_after")),
    )
    if before is not None and after is not None:
        ratio = 1 - after / before if before > 0 else 0.0
        saving = round(ratio * 100) if math.isfinite(ratio) else 0
        change = f" ({-saving:+d}%)" if saving else ""
        bits.append(f"{_count(before)} → {_count(after)} tokens{change}")
    detail = notice.get("detail")
    if isinstance(detail, list):
        bits += [str(item) for item in detail]
    return " · ".join(bits)


def notice_details(notice: dict[str, Any]) -> list[str]:
    """The lines an unfolded notice shows: the notice whole (its line is cut
    at the pane's width), its reason, then its summary."""
    lines = [notice_line(notice), f"reason: {notice.get('reason', '?')}"]
    summary = notice.get("summary")
    if isinstance(summary, str) and summary:
        lines += ["summary (what the model saw in place of the older messages):"]
        lines += summary.splitlines()
    else:
        lines.append("no summary: results were offloaded or cleared only")
    return lines


def context_line(context_state: Any) -> str | None:
    """The policy's sticky decisions in one line (a segment's ``context_state``
    or a head's): tool results offloaded or cleared from the model's view, the
    running summary; None when it has decided nothing yet."""
    context = context_state.get("context") if isinstance(context_state, dict) else None
    if not isinstance(context, dict):
        return None
    bits = []
    offloaded = _size_of(context.get("offloaded"))
    cleared = _size_of(context.get("cleared"))
    if offloaded:
        bits.append(f"{offloaded} tool result{'s' * (offloaded != 1)} offloaded")
    if cleared:
        bits.append(f"{cleared} cleared")
    summary = context.get("summary")
    if isinstance(summary, dict):
        text = summary.get("text")
        chars = f" ({len(text):,} chars)" if isinstance(text, str) else ""
        covered = _count(summary.get("covered"))
        bits.append(f"summary of the first {covered} entries{chars}")
    return " · ".join(bits) or None


def _size_of(records: Any) -> int:
    """How many records a stored collection holds (0 for a value of another shape)."""
    return len(records) if isinstance(records, dict | list) else 0
