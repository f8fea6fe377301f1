"""Which stored tool outputs lovia archived: a trim cuts those recoverably.

lovia's context policy offloads an output to a result store and records it
in the segment's carried context state under its content digest (not its
call id): an output is recoverable when an offload record has its digest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def offloaded(metas: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
    """(call_id, digest) of every offload record in the session's carried context state."""
    found = set()
    for meta in metas:
        state = meta.get("context_state") or {}
        context = state.get("context") if isinstance(state, dict) else None
        records = context.get("offloaded") if isinstance(context, dict) else None
        for call_id, record in (records if isinstance(records, dict) else {}).items():
            if isinstance(record, dict) and isinstance(record.get("digest"), str):
                found.add((call_id, record["digest"]))
    return found


def result_digest_of(output: Any) -> str:
    """lovia's ``result_digest`` of an output, a huge one read a piece at a time."""
    from lovia_tui.core.lovia_private import result_digest

    return result_digest(output) if isinstance(output, str) else output.sha1()[:16]
