"""A transcript's pieces as Markdown, for the export: a run's header, an
entry, and what compaction left in a run's meta. Stored text goes in through
:mod:`lovia_tui.core.markdown_text`, so it never acts as markup or HTML."""

from __future__ import annotations

from lovia_tui.core.attachments import attachments, part_label
from lovia_tui.core.context_meta import (
    STATE_KEY,
    context_line,
    notice_details,
    notice_line,
    notice_of,
)
from lovia_tui.core.entries import entry_text
from lovia_tui.core.markdown_text import code_span, fenced, message, plain


def run_header(run_id: str, when: str, problem: str | None, note: str = "") -> str:
    """A run's heading; ``note``: what lovia web's record adds (who started
    it, how it ended: :meth:`~lovia_tui.core.web_models.RunRecord.segment_note`)."""
    told = f" · {plain(note)}" if note else ""
    return f"\n## Run {code_span(run_id)} · {when}{told}\n\n" + (
        f"> unreadable: {plain(problem)}\n\n" if problem else ""
    )


def context_block(meta: dict | None) -> str:
    """What compaction left in a run's meta, after its entries (where lovia
    web replays the notice): the notice, its reason and summary, the sticky
    decisions; stored text escaped, the summary a message block."""
    notice = notice_of(meta)
    context = context_line(meta.get(STATE_KEY)) if meta else None
    text = ""
    if notice is not None:
        _, reason, *summary = notice_details(notice)
        text += f"**⟲ {plain(notice_line(notice))}**\n\n{plain(reason)}\n\n"
        text += message("\n".join(summary))
    if context:
        text += f"_context state: {plain(context)}_\n\n"
    return text


def entry_block(entry: dict) -> str:
    """One entry: a one-line label, then its text (stored text never acts as
    markup outside a code block or span, see :mod:`~lovia_tui.core.markdown_text`)."""
    kind, index = entry.get("type"), entry["index"]
    if kind == "tool_call":
        label = f"**#{index} tool call {code_span(entry.get('name'))}**\n\n"
        return label + fenced(str(entry.get("arguments")), "json")
    if kind == "tool_result":
        error = " (error)" if entry.get("is_error") else ""
        label = f"**#{index} tool result{error}** {code_span(entry.get('call_id'))}\n\n"
        attached = "".join(f"📎 {plain(part_label(p))}\n\n" for p in attachments(entry))
        return label + fenced(str(entry.get("output"))) + attached
    role = entry.get("role") if kind == "input" else str(kind).replace("_text", "")
    return f"**#{index} {plain(role)}**\n\n" + message(entry_text(entry))
