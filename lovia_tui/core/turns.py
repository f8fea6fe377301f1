"""A run's stored entries read as lovia's loop wrote them: turns, and calls that ran.

lovia web's Stop keeps only whole turns (``RunController.completed_mirror``
grows on ``TurnEnded``), and a tool call rejected before it started (a denial,
an unknown tool, bad arguments, a second handoff) leaves an error result
although nothing ran (``ToolCallRunner._rejected``). Both are read here from
entry dicts, without importing lovia.
"""

from __future__ import annotations

from typing import Any

# The texts ``ToolCallRunner._rejected`` stores for a call that never started,
# by how they begin ({name} is the call's tool).
_REJECTIONS = (
    "Tool {name} was not approved.",
    "Tool {name} was not approved (approval check failed).",
    "Tool {name!r} is not available.",
    "Tool {name} arguments are incomplete:",
    "Handoff not performed:",
    "Invalid JSON in tool arguments:",
    "Invalid tool arguments:",
)


def never_ran(call: dict[str, Any], result: dict[str, Any]) -> bool:
    """Whether ``result`` is lovia's record of ``call`` rejected before it started."""
    output = result.get("output")
    if result.get("is_error") is not True or not isinstance(output, str):
        return False
    name = str(call.get("name", ""))
    return any(output.startswith(text.format(name=name)) for text in _REJECTIONS)


def calls_that_ran(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls among ``entries`` that ran: answered by a result that is
    not a rejection. A call with no result was cancelled or never started
    (lovia stores a result for every call that finished, error or not)."""
    results = {
        str(e.get("call_id")): e for e in entries if e.get("type") == "tool_result"
    }
    return [
        e
        for e in entries
        if e.get("type") == "tool_call"
        and (result := results.get(str(e.get("call_id")))) is not None
        and not never_ran(e, result)
    ]


def is_system_input(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "input" and entry.get("role") == "system"


def whole_turns(entries: list[dict[str, Any]]) -> int:
    """How many of a run's entries (system inputs left out) lovia web's Stop keeps.

    The run's opening input, then each turn that ended: a model message whose
    calls all have their results (or that made none). An injected user
    message, a message still waiting on a call, or results of an unfinished
    turn are its partial turn, which Stop does not keep.
    """
    kept = [e for e in entries if not is_system_input(e)]
    end = 0
    while end < len(kept) and kept[end].get("type") == "input":
        end += 1
    open_calls: set[str] = set()
    in_message = False
    for position in range(end, len(kept)):
        kind = kept[position].get("type")
        call_id = str(kept[position].get("call_id"))
        if kind == "tool_call":
            open_calls.add(call_id)
        elif kind == "tool_result":
            open_calls.discard(call_id)
        if kind in ("assistant_text", "reasoning", "tool_call"):
            in_message = True
            following = kept[position + 1] if position + 1 < len(kept) else None
            message_ends = following is None or following.get("type") in (
                "input",
                "tool_result",
            )
            if message_ends and not open_calls:
                end = position + 1  # a message that made no call ends its turn
        elif kind == "tool_result" and in_message and not open_calls:
            end = position + 1
    return end
