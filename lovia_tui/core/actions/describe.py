"""Previews in words: the sentences a confirm dialog and the CLI both show.

Each line is plain text; the first is the headline. Lines starting with
``WARNING`` name what cannot be undone outside lovia-tui's journal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from lovia_tui.core.actions.fork import ForkPreview, describe_fork
from lovia_tui.core.actions.previews import (
    CheckpointDeletion,
    ClearPreview,
    DeleteRunsPreview,
    FinalizePreview,
    Preview,
    RewindPreview,
    ToolCallRef,
    TrimPreview,
)
from lovia_tui.core.errors import ActionError
from lovia_tui.core.formatting import plural, size, timestamp

if TYPE_CHECKING:
    from lovia_tui.core.actions.journal import JournalEntry

_SOURCES = {
    "segment": "its stored segment",
    "web": "the web UI's records",
    "given": "your choice",
}


def _checkpoints(checkpoints: Sequence[CheckpointDeletion]) -> list[str]:
    """A line per checkpoint; each names its file when they are in several
    (a run id that is also a path in the working directory opens more)."""
    lines = []
    several = len({c.file for c in checkpoints}) > 1
    for c in checkpoints:
        state = f"stale: {c.stale_reason}" if c.stale_reason else c.status
        where = f" in {c.file}" if several else ""
        line = f"delete checkpoint {c.run_id}{where} ({state}, {plural(c.entries, 'entry', 'entries')}): {c.reason}"
        if c.web_pointer:
            line += f"; web chat {c.web_pointer!r} stops pointing at it"
        if c.live:
            line += " — LIVE, forced"
        lines.append(line)
        if c.pending_handoff:
            lines.append(_handoff_lost(c.run_id, c.pending_handoff))
    return lines


def _handoff_lost(run_id: str, agent: str) -> str:
    return (
        f"WARNING: run {run_id} had handed off to {agent!r}, which has not started: "
        "only resuming its checkpoint continues there; without it the next run "
        "starts on the entry agent"
    )


def _calls(heading: str, calls: Iterable[ToolCallRef]) -> list[str]:
    listed = [f"  {c.name}({c.arguments}) [{c.call_id}, run {c.run_id}]" for c in calls]
    return [heading, *listed] if listed else []


def _unknown_live(run_ids: tuple[str, ...]) -> list[str]:
    if not run_ids:
        return []
    return [
        f"WARNING: live runs with no known session: {', '.join(run_ids)}; "
        "if one belongs to this session it will keep writing to it"
    ]


def _rewind(p: RewindPreview) -> list[str]:
    if p.noop:
        entries = plural(p.total_entries, "entry", "entries")
        why = (
            f"keeping {p.keep_entries} is past its end ({entries})"
            if p.keep_entries > p.total_entries
            else f"keeping {p.keep_entries} of {entries} removes none"
        )
        return [f"rewind {p.session_id}: nothing to do: {why}"]
    kept = p.total_entries - p.entries_removed
    if p.entries_removed:
        headline = (
            f"rewind {p.session_id}: keep {kept} of {p.total_entries} entries, remove {p.entries_removed}"
            + (
                f" (the first {p.keep_entries}, less the tool calls the cut leaves without a result)"
                if kept != p.keep_entries
                else ""
            )
        )
    else:
        headline = (
            f"rewind {p.session_id}: the cut (entry {p.keep_entries}) falls inside the "
            f"chat's in-flight run: all {p.total_entries} stored entries stay, the run "
            "is dropped, as lovia web's rewind does"
        )
    lines = [headline]
    lines += [f"delete run {run_id}" for run_id in p.runs_deleted]
    if t := p.truncated:
        lines.append(
            f"truncate run {t.run_id}: keep {t.kept_entries}, remove {t.removed_entries}"
            + ("; its meta (context state, timing) is dropped" if t.loses_meta else "")
        )
        lines += _calls(
            "drop tool calls left without a result at the cut:", t.dropped_calls
        )
    lines += _checkpoints(p.checkpoints)
    lines += [
        f"keep checkpoint {run_id} (completed): its segment is only truncated, and a "
        "replay adds nothing to a segment that exists"
        for run_id in p.kept_checkpoints
    ]
    lines += _calls(
        "WARNING: these tool calls ran; rewinding removes them, not their effects:",
        p.side_effects,
    )
    return lines + _unknown_live(p.unknown_live_runs)


def _trim(p: TrimPreview) -> list[str]:
    if p.noop:
        return [f"trim {p.session_id}: nothing to trim: {_why_no_trim(p)}"]
    lines = [
        f"trim {p.session_id}: cut {plural(p.results_trimmed, 'tool result')} to "
        f"{p.keep_chars} chars, reclaim {size(p.bytes_reclaimed)}"
    ]
    for run in p.runs:
        lines.append(
            f"run {run.run_id}: {plural(run.results, 'result')}, {size(run.bytes_reclaimed)}"
        )
    for c in p.cuts:
        fate = (
            "archived (recall_tool_result can fetch it)"
            if c.archived
            else "gone for the agent (no result store)"
        )
        parts = "; its parts (images) are dropped" if c.drops_parts else ""
        lines.append(
            f"  {c.tool} [{c.call_id}]: {c.old_chars} → {c.new_chars} chars, {fate}{parts}"
        )
    if p.lost_for_good:
        lines.append(
            f"WARNING: {plural(p.lost_for_good, 'output')} not archived to a result store "
            "cannot be recovered by lovia or the agent once trimmed; only lovia-tui's "
            "journal keeps the full text"
        )
    return lines


def _why_no_trim(p: TrimPreview) -> str:
    """Why a trim cuts nothing, with the numbers that decide it."""
    last = f"the last {plural(p.keep_runs, 'run')}"
    if not p.older_runs:
        return f"it keeps {last}, and the session has no run before them"
    before = f"in the {plural(p.older_runs, 'run')} before {last} (kept)"
    if not p.older_results:
        return f"no tool result {before}"
    if p.largest_result is None or p.largest_cut_above is None:
        trimmed = plural(p.already_trimmed, "tool result")
        verb = "is" if p.already_trimmed == 1 else "are"
        return f"the {trimmed} {before} {verb} trimmed already"
    return (
        f"no tool result {before} is over the threshold of {p.keep_chars:,} "
        f"characters kept plus lovia's marker: the largest has "
        f"{p.largest_result:,} characters, cut only past {p.largest_cut_above:,}"
        + (f" ({p.already_trimmed:,} trimmed already)" if p.already_trimmed else "")
    )


def _delete(p: DeleteRunsPreview) -> list[str]:
    if p.noop:
        return ["delete checkpoints: none matches"]
    lines = [
        f"delete {plural(len(p.checkpoints), 'checkpoint')}",
        *_checkpoints(p.checkpoints),
    ]
    lost = [c.run_id for c in p.checkpoints if not c.appended]
    if lost:
        lines.append(
            f"WARNING: not in any session, their entries exist only in the checkpoint: {', '.join(lost)}"
        )
    return lines


def _finalize_headline(p: FinalizePreview) -> str:
    where = f"session {p.session_id} ({_SOURCES[p.session_source]})"
    if p.mode == "keep-partial":
        return (
            f"keep the partial run {p.run_id} in {where}, its unfinished turn included"
        )
    if p.mode == "store":
        return f"finalize run {p.run_id} into {where}"
    if p.live:
        return (
            f"stop run {p.run_id} of web chat {p.session_id} as lovia web's Stop does "
            "a live run: its whole turns are kept"
        )
    return (
        f"stop run {p.run_id} of web chat {p.session_id} as lovia web's Stop does a "
        "stranded run: its checkpoint goes, nothing is appended"
    )


def _finalize(p: FinalizePreview) -> list[str]:
    lines = [_finalize_headline(p)]
    if p.already_appended:
        lines.append("already a segment of the session: nothing is appended")
    elif p.entries_appended:
        timing = (
            f", finished {timestamp(p.timing['finished_at'])} (its last save)"
            if p.timing
            else ""
        )
        lines.append(
            f"append {plural(p.entries_appended, 'entry', 'entries')} as segment {p.run_id}{timing}"
        )
    if p.mode == "stop" and p.entries_left_out:
        lines.append(
            f"left out: {plural(p.entries_left_out, 'entry', 'entries')} the run saved "
            + (
                "of its unfinished turn"
                if p.live
                else "(lovia web keeps none of a stranded run)"
            )
            + "; keep-partial stores them instead"
        )
    heading = (
        "tool calls left out (whatever ran stays done):"
        if p.mode == "stop"
        else "drop tool calls without a result (never re-run):"
    )
    lines += _calls(heading, p.dropped_calls)
    lines += _checkpoints([p.checkpoint])
    if p.web_record_after == "interrupted":
        lines.append(
            f"the web UI's run record: {p.web_record} → interrupted, as lovia web's "
            "restart settles it before its Stop can reach the run"
        )
    elif p.web_record_after:
        lines.append(
            f"close the web UI's run record: {p.web_record} → {p.web_record_after}"
        )
    elif p.web_record:
        lines.append(
            f"the web UI's run record stays {p.web_record}, as lovia web's Stop leaves it"
        )
    if p.session_source == "given":
        lines.append(
            "WARNING: nothing links this run to the session: lovia cannot check your choice"
        )
    if p.new_session:
        lines.append(
            f"WARNING: no session {p.session_id!r} exists yet: this run starts it "
            "(check the id)"
        )
    return lines


def _clear(p: ClearPreview) -> list[str]:
    entries = (
        "an unknown number of entries"
        if p.entries is None
        else plural(p.entries, "entry", "entries")
    )
    return [
        f"clear {p.session_id}: remove {plural(p.segments, 'segment')} ({entries})",
        *_checkpoints(p.checkpoints),
        *_unknown_live(p.unknown_live_runs),
    ]


_JOURNAL = "byte for byte from lovia-tui's journal (as long as its file is kept)"
_UNDO = {
    RewindPreview: f"undo restores the removed entries and deleted checkpoints {_JOURNAL}; "
    "it cannot undo what tool calls did",
    TrimPreview: f"undo restores the full tool outputs {_JOURNAL}",
    DeleteRunsPreview: f"undo restores the deleted checkpoints {_JOURNAL}",
    FinalizePreview: "undo removes what was appended and restores the checkpoint and "
    f"web records {_JOURNAL}",
    ClearPreview: f"undo restores the removed segments and deleted checkpoints {_JOURNAL}; "
    "it cannot undo what tool calls did",
    ForkPreview: "undo deletes the copy (for a web chat, its chat row too) while no run "
    "is stored in it since; the source is never touched",
}
"""What undo can and cannot put back: the journal keeps what lovia no longer has."""


_COUNTED = {
    "entries_removed": ("entry", "entries", "removed", "restored"),
    "entries_appended": ("entry", "entries", "appended", "removed"),
    "segments_appended": ("segment", "segments", "appended", "removed"),
    "batches_saved": ("checkpoint batch", "checkpoint batches", "saved", "removed"),
    "web_records_changed": ("web record", "web records", "changed", "restored"),
    "checkpoints_deleted": ("checkpoint", "checkpoints", "deleted", "restored"),
    "segments_removed": ("segment", "segments", "removed", "restored"),
    "results_trimmed": ("tool result", "tool results", "trimmed", "restored whole"),
    "runs_copied": ("run", "runs", "copied", "removed"),
    "rows_restored": ("row", "rows", "restored", "removed"),
    "rows_removed": ("row", "rows", "removed", "restored"),
}
"""Each count an action reports: its noun, what the action did, what its undo does."""


def counts_text(counts: dict[str, int], *, undone: bool = False) -> str:
    """An action's counts in words ("5 entries removed, 1 checkpoint deleted"),
    or with ``undone`` what undoing it does, in the same units."""
    parts = []
    shown = {
        k: v for k, v in counts.items() if v
    } or counts  # "0 checkpoints" says little
    for what, count in shown.items():
        if what in _COUNTED:
            one, many, done, undo = _COUNTED[what]
            parts.append(f"{plural(count, one, many)} {undo if undone else done}")
        elif what == "bytes_reclaimed":
            parts.append(f"{size(count)} {'given back' if undone else 'reclaimed'}")
        else:  # a count an older lovia-tui journaled
            parts.append(f"{what.replace('_', ' ')}: {count}")
    return ", ".join(parts)


UNDONE_CHAIN_MOST = 1_000
"""Undos of undos followed down to the action (each undoes an older entry)."""


def undo_effect(entry: JournalEntry, get: Callable[[int], JournalEntry]) -> str:
    """What undoing ``entry`` does, in the units of the action at the bottom
    of its chain of undos (``get`` reads an entry by id): undoing a rewind
    that removed 14 entries restores them ("14 entries restored"); undoing
    that undo removes them again ("the rewind again, 14 entries removed"),
    though the undo's own counts are rows, which a redo may remove or write
    back; and so on ("the rewind's undo again, ..."). Empty when the action
    counted nothing (or is pruned from the journal)."""
    base, depth = entry, 0
    while base.action == "undo" and base.undoes is not None:
        if depth >= UNDONE_CHAIN_MOST:
            break
        try:
            base, depth = get(base.undoes), depth + 1
        except ActionError:  # pruned from the journal: no units to say it in
            return ""
    text = counts_text(base.counts, undone=depth % 2 == 0)
    if not (depth and text):
        return text
    again = f"the {base.action}" if depth % 2 else f"the {base.action}'s undo"
    return f"{again} again, {text}"


def describe(preview: Preview | ForkPreview) -> list[str]:
    """What ``preview`` will do, one sentence per line, headline first, then what undo restores."""
    render = {
        RewindPreview: _rewind,
        TrimPreview: _trim,
        DeleteRunsPreview: _delete,
        FinalizePreview: _finalize,
        ClearPreview: _clear,
        ForkPreview: describe_fork,
    }[type(preview)]
    lines = render(preview)  # type: ignore[operator]
    if preview.noop:
        return lines
    if isinstance(preview, FinalizePreview) and not preview.entries_appended:
        return [*lines, f"undo restores the checkpoint and web records {_JOURNAL}"]
    return [*lines, _UNDO[type(preview)]]
