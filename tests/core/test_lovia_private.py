"""Every private lovia name lovia-tui uses (all in ``core/lovia_private.py``), each
held to what lovia-tui relies on: a lovia release that moves or changes one
fails here, not in a user's action. The store plumbing ``locked_stores``
overrides is pinned in ``test_locked_stores.py``."""

from __future__ import annotations

import ast
import asyncio
import inspect
import typing
from pathlib import Path

import lovia
import pytest
from lovia import Agent, Handoff, SQLiteSession
from lovia.messages import Usage
from lovia.testing import ScriptedProvider
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    entry_from_dict,
    entry_to_dict,
)

import lovia_tui
from lovia_tui.core import lovia_private
from lovia_tui.core.entries import trimmed_output


def test_sqlite_store_is_the_base_of_lovias_stores() -> None:
    from lovia.stores.checkpointer import SQLiteCheckpointer
    from lovia.web.store import ChatStore

    assert issubclass(SQLiteSession, lovia_private.SQLiteStore)
    assert issubclass(SQLiteCheckpointer, lovia_private.SQLiteStore)
    assert "self._meta = SQLiteStore(" in inspect.getsource(ChatStore.__init__)


def test_rewind_split_is_what_rewind_cuts_with(tmp_path: Path) -> None:
    session = SQLiteSession(tmp_path / "s.db")
    for n in range(2):
        entries = [
            InputEntry(role="user", content=f"q{n}"),
            AssistantTextEntry(content=f"a{n}"),
        ]
        asyncio.run(session.append("s", entries, run_id=f"r{n}"))
    segments = asyncio.run(session.segments("s"))
    kept, boundary, removed = lovia_private.rewind_split()(segments, 3)
    assert [s.run_id for s in kept] == ["r0"]
    assert boundary is not None and boundary.run_id == "r1"
    assert len(boundary.entries) == 1 and removed == 1
    assert "_rewind_split(" in inspect.getsource(SQLiteSession.rewind)


def test_result_digest_keys_offloaded_outputs() -> None:
    from lovia.context import state

    digest = lovia_private.result_digest("some tool output")
    assert digest == lovia_private.result_digest("some tool output")
    assert len(digest) == 16 and digest != lovia_private.result_digest("other")
    assert "result_digest(" in inspect.getsource(state)


def test_reachable_agents_walks_the_handoff_graph() -> None:
    billing = Agent(name="billing", model=ScriptedProvider([]))
    triage = Agent(
        name="triage", model=ScriptedProvider([]), handoffs=[Handoff(billing)]
    )
    assert set(lovia_private.reachable_agents(triage)) == {"triage", "billing"}


def test_the_agent_a_tool_runs_is_the_one_as_tool_wrapped() -> None:
    payer = Agent(name="payer", model=ScriptedProvider([]))
    assert lovia_private.agent_run_as_tool(payer.as_tool()) is payer
    assert lovia_private.agent_run_as_tool(payer.as_tool(name="pay")) is payer
    plain = Agent(name="plain", model=ScriptedProvider([]), tools=[payer.as_tool()])
    assert lovia_private.agent_run_as_tool(plain) is None


def test_usage_dict_is_lovia_webs_usage_json() -> None:
    usage = Usage(
        input_tokens=10, output_tokens=5, cache_read_tokens=3, cache_write_tokens=2
    )
    data = lovia_private.usage_dict(usage, last_input_tokens=7)
    assert data["input_tokens"] == 10 and data["output_tokens"] == 5
    assert data["cache_read_tokens"] == 3 and data["cache_write_tokens"] == 2
    assert data["last_input_tokens"] == 7


def test_the_trim_marker_is_the_one_trim_writes(tmp_path: Path) -> None:
    """lovia's own trim of a long output leaves exactly the preview's output."""
    output = "x" * 5000
    session = SQLiteSession(tmp_path / "t.db")
    for n in range(2):
        entries = [
            ToolCallEntry(call_id=f"c{n}", name="dump", arguments="{}"),
            ToolResultEntry(call_id=f"c{n}", output=output),
        ]
        asyncio.run(session.append("s", entries, run_id=f"r{n}"))
    expected = trimmed_output(
        {"type": "tool_result", "call_id": "c0", "output": output}, 100
    )
    assert asyncio.run(session.trim_tool_results("s", keep_chars=100)) == 1
    [first, _] = asyncio.run(session.segments("s"))
    assert first.entries[1].output == expected
    assert expected is not None
    assert expected.endswith(lovia_private.trim_sentinel())
    assert lovia_private.trim_marker("c0", 4900) in expected
    untrimmed = [ToolResultEntry(call_id="c0", output=output)]
    trimmed, count = lovia_private.trim_entries()(untrimmed, 100)
    assert (trimmed[0].output, count) == (expected, 1)  # the trim of one segment


def test_entry_types_are_those_entry_from_dict_loads() -> None:
    """Every kind of lovia's TranscriptEntry union, and nothing else, loads."""
    samples = [
        InputEntry(role="user", content="q"),
        AssistantTextEntry(content="a"),
        ReasoningEntry(content="r"),
        ToolCallEntry(call_id="c", name="t", arguments="{}"),
        ToolResultEntry(call_id="c", output="o"),
    ]
    assert {type(e) for e in samples} == set(typing.get_args(TranscriptEntry))
    dicts = [entry_to_dict(e) for e in samples]
    assert {d["type"] for d in dicts} == lovia_private.entry_types()
    assert [entry_from_dict(d) for d in dicts] == samples
    with pytest.raises(ValueError, match="Unknown entry type"):
        entry_from_dict({"type": "not-a-kind"})


def test_store_versions_and_columns_from_lovia_itself() -> None:
    for name in lovia_private.STORES:
        assert isinstance(lovia_private.store_version(name), int)
    columns = lovia_private.store_columns("session", ["session_runs"])
    assert {"session_id", "run_id", "entries_json", "meta_json"} <= columns[
        "session_runs"
    ]


def test_no_other_module_imports_a_private_lovia_name() -> None:
    """lovia is imported elsewhere only by its public names: its package's
    exports, or a public module's ``__all__``."""
    package = Path(lovia_tui.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "lovia_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "lovia."
            ):
                module = __import__(node.module, fromlist=["_"])
                public = set(getattr(module, "__all__", ()))
                for alias in node.names:
                    private = (
                        alias.name.startswith("_")
                        or any(part.startswith("_") for part in node.module.split("."))
                        or (
                            alias.name not in public and alias.name not in lovia.__all__
                        )
                    )
                    if private:
                        found.append(
                            f"{path.relative_to(package)}: {node.module}.{alias.name}"
                        )
    assert found == []
