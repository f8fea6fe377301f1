"""What lovia stores beyond text, read as lovia reads it: compaction meta,
attachments, encrypted reasoning, usage. On files written by real lovia runs
(the demo's own: lovia's Compaction policy, image and file parts, redacted
reasoning), compared with what lovia's ``SQLiteSession`` loads from them."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import shutil
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from lovia import SQLiteSession
from lovia.parts import FilePart, ImagePart, project_parts
from lovia.transcript import InputEntry, ReasoningEntry, ToolResultEntry, entry_to_dict
from lovia.web.sse import usage_dict
from support.lovia_factory import ATTACHED, COMPACTED, build_stored_extras

from lovia_tui.cli import main
from lovia_tui.core.attachments import part_label, without_blobs
from lovia_tui.core.entries import entry_text
from lovia_tui.core.formatting import size
from lovia_tui.core.runs.agents import load_agent
from lovia_tui.core.runs.preflight import preflight
from lovia_tui.core.runs.resume import resume
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.demo.compaction import SUMMARY

BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{101,}")
"""A run of base64 longer than anything shown as it is (a URL, a signature)."""


@pytest.fixture(scope="module")
def extras(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return asyncio.run(
        build_stored_extras(tmp_path_factory.mktemp("extras") / "extras.db")
    )


def _lovia_segments(path: Path, session_id: str) -> list[Any]:
    return asyncio.run(SQLiteSession(path).segments(session_id))


def _show_json(capsys: pytest.CaptureFixture[str], path: Path, sid: str) -> Any:
    code = main(["show", str(path), sid, "--json", "--readonly"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return json.loads(out)


def test_show_json_gives_each_segment_meta_as_lovia_stores_it(
    extras: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = _show_json(capsys, extras, COMPACTED)["segments"]
    theirs = _lovia_segments(extras, COMPACTED)
    assert [s["meta"] for s in shown] == [segment.meta for segment in theirs]
    assert [[{k: v for k, v in e.items() if k != "index"} for e in s["entries"]]
            for s in shown] == [[entry_to_dict(e) for e in segment.entries]
                                for segment in theirs]  # fmt: skip
    notices = [s["meta"].get("context_notice") for s in shown]
    # lovia's policy offloaded an old log first, then summarized the history.
    assert notices[0]["reason"] == "offload" and notices[0]["summary"] is None
    assert [n["summary"] for n in notices[1:]] == [SUMMARY, SUMMARY]
    state = shown[-1]["meta"]["context_state"]["context"]
    assert list(state["offloaded"]) == ["call_cmp_api"]
    assert state["summary"]["text"] == SUMMARY


def test_show_prints_the_notices_after_their_runs(
    extras: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one printed line per line shown
    assert main(["show", str(extras), COMPACTED, "--readonly"]) == 0
    out = capsys.readouterr().out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    notices = [
        n for n, line in enumerate(lines) if line.startswith("⟲ context compacted")
    ]
    assert len(notices) == 3
    for at in notices:  # each closes its run: the next line is the next run's rule
        assert at + 1 == len(lines) or lines[at + 1].startswith("─")
    first = _lovia_segments(extras, COMPACTED)[0].meta["context_notice"]
    before, after = first["tokens_before"], first["tokens_after"]
    saving = round((1 - after / before) * 100)  # as lovia web's page shows it
    assert f"{before:,} → {after:,} tokens (-{saving}%)" in lines[notices[0]]
    assert (
        "context: 1 tool result offloaded · summary of the first 9 entries"
        in " ".join(lines)
    )


def test_export_carries_each_runs_meta_and_attachments(extras: Path) -> None:
    from lovia_tui.core.export import export_session
    from lovia_tui.core.store.database import open_database

    async def exported(session_id: str, fmt: str) -> str:
        db = await open_database(extras, readonly=True)
        try:
            out = io.StringIO()
            await export_session(db, session_id, fmt, out)
            return out.getvalue()
        finally:
            await db.close()

    as_json = json.loads(asyncio.run(exported(COMPACTED, "json")))
    theirs = _lovia_segments(extras, COMPACTED)
    assert [s["meta"] for s in as_json["segments"]] == [s.meta for s in theirs]
    markdown = asyncio.run(exported(COMPACTED, "md"))
    assert markdown.count("> ⟲ context compacted · proactive") == 3
    assert (
        "_context state: 1 tool result offloaded · summary of the first 9 entries"
        in markdown
    )
    attached = asyncio.run(exported(ATTACHED, "md"))
    assert "📎 [file errors-export.pdf · application/pdf · 2.0 KB]" in attached
    assert "[encrypted reasoning · anthropic · 768 B]" in attached
    assert not BASE64_RUN.search(attached)


def test_attachments_are_told_by_lovias_own_facts(extras: Path) -> None:
    [segment] = _lovia_segments(extras, ATTACHED)
    first, result = (
        segment.entries[0],
        next(e for e in segment.entries if isinstance(e, ToolResultEntry)),
    )
    assert isinstance(first, InputEntry) and isinstance(first.content, list)
    assert result.parts is not None
    parts = [
        p
        for p in [*first.content, *result.parts]
        if isinstance(p, ImagePart | FilePart)
    ]
    assert len(parts) == 5
    for part in parts:
        label = part_label(asdict(part))
        for fact in (part.mime_type, getattr(part, "filename", None), part.url):
            assert fact is None or fact in label
        if part.data is not None:
            decoded = size(len(base64.b64decode(part.data)))
            assert decoded in label and part.data not in label
    # The sizes agree with lovia's own projection of the tool's parts.
    for part in result.parts:
        if isinstance(part, ImagePart | FilePart):
            assert size(len(base64.b64decode(part.data or ""))) in project_parts([part])
    text = entry_text(entry_to_dict(first))
    assert "[file incident.log · text/plain · 51 B]" in text
    assert "https://status.example.com/charts/errors.png · detail low" in text


def test_raw_json_elides_base64_and_encrypted_reasoning(extras: Path) -> None:
    [segment] = _lovia_segments(extras, ATTACHED)
    stored = [entry_to_dict(e) for e in segment.entries]
    assert any(BASE64_RUN.search(json.dumps(e)) for e in stored)
    for entry in stored:
        shown = json.dumps(without_blobs(entry), ensure_ascii=False)
        assert not BASE64_RUN.search(shown), shown
    reasoning = [e for e in segment.entries if isinstance(e, ReasoningEntry)]
    assert len(reasoning) == 2
    for entry in reasoning:
        data = entry_to_dict(entry)
        assert entry.content == "" and entry.provider == "anthropic"
        size_of = size(len(base64.b64decode(entry.metadata["redacted"])))
        assert entry_text(data) == f"[encrypted reasoning · anthropic · {size_of}]"
        assert size_of in without_blobs(data)["metadata"]["redacted"]


def test_a_web_resume_records_usage_as_lovia_web_does(
    demo_dir: Any, tmp_path: Path
) -> None:
    """lovia web's server settles a run's record with ``usage_dict(usage,
    last_input_tokens=...)``; a resume here does the same."""
    directory = tmp_path / "demo"
    shutil.copytree(demo_dir.directory, directory)

    async def run() -> None:
        ws = await Workspace.open([directory])
        try:
            pf = await preflight(
                ws,
                demo_dir.crashed_run,
                agent=load_agent("lovia_tui.demo:agent"),
                stale_after=0,
            )
        finally:
            await ws.close()
        assert pf.ok, pf.problems
        async with asyncio.timeout(20):
            events = [event async for event in resume(pf)]
        assert events[-1].kind == "run_completed"

    asyncio.run(run())
    with sqlite3.connect(directory / demo_dir.web_db.name) as db:
        [(usage_json, status)] = db.execute(
            "SELECT usage_json, status FROM chat_runs WHERE id = ?",
            (demo_dir.crashed_run,),
        ).fetchall()
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    usage = json.loads(usage_json)
    assert status == "completed"
    assert set(usage) == set(usage_dict(_zero(), last_input_tokens=0))
    assert usage["last_input_tokens"] == 1  # the scripted model's one input token


def _zero() -> Any:
    from lovia.messages import Usage

    return Usage()
