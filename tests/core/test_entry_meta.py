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
from lovia_tui.core.markdown_text import plain
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
    # Stored text goes into Markdown escaped (core/markdown_text.plain).
    assert markdown.count("**⟲ context compacted · proactive · ") == 3
    assert markdown.count(f"{' '.join(SUMMARY.split()[:6])}") == 2
    context = "1 tool result offloaded · summary of the first 9 entries (153 chars)"
    assert f"_context state: {plain(context)}_" in markdown
    attached = asyncio.run(exported(ATTACHED, "md"))
    assert (
        f"📎 {plain('[file errors-export.pdf · application/pdf · 2.0 KB]')}" in attached
    )
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


def test_hostile_attachments_notices_and_reasoning_stay_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored through lovia's own entry classes and ``session.append``: every
    new line (notice, attachment, encrypted reasoning, raw meta) is printable."""
    from support.hostile_text_db import assert_inert, hostile

    from lovia_tui.core.store import segment_reads
    from lovia_tui.core.store.database import open_database
    from lovia_tui.view.rows import pair_tool_calls
    from lovia_tui.view.transcript_loader import segment_rows
    from lovia_tui.widgets.transcript_rows import detail_lines, summary_line

    path, sid = tmp_path / "hostile.db", "hostile"
    png = base64.b64encode(b"\x89PNG" + bytes(300)).decode()
    entries = [
        InputEntry("user", [
            ImagePart(url=hostile("https://x.invalid/a.png"), detail="high"),
            ImagePart(data=png, mime_type=hostile("image/png")),
            FilePart.from_bytes(b"x" * 200, mime_type="text/plain", filename=hostile("f.txt")),
        ]),
        ReasoningEntry("", provider=hostile("provider"), metadata={"redacted": png}),
        ToolResultEntry("c1", hostile("out"), parts=[
            ImagePart(data=png, mime_type="image/png"),
            FilePart.from_url(hostile("https://x.invalid/r.pdf"), filename=hostile("r.pdf")),
        ]),
    ]  # fmt: skip
    meta = {
        "context_notice": {
            "reason": hostile("reason"), "reactive": True, "summary": hostile("summary"),
            "tokens_before": 0, "tokens_after": "many", "detail": [hostile("d"), None],
        },
        "context_state": {"context": {"offloaded": {hostile("c"): {}}, "summary": {"text": 1}}},
    }  # fmt: skip
    asyncio.run(
        SQLiteSession(path).append(sid, entries, run_id=hostile("run"), meta=meta)
    )

    async def rendered() -> list[str]:
        db = await open_database(path, readonly=True)
        try:
            batch, _ = await segment_reads.newest_segments(db, sid, 10)
            rows = await segment_rows(db, batch, None)
        finally:
            await db.close()
        pair_tool_calls(rows)
        seen = []
        for row in rows:
            seen.append(summary_line(row, rows, True).plain)
            for raw in (False, True):
                seen += [line.plain for line in detail_lines(row, raw, True)]
        return seen

    seen = asyncio.run(rendered())
    assert any("⟲ context compacted · reactive" in line for line in seen)
    assert any("📎 [file f.txt|" in line for line in seen)
    assert any(
        line.startswith("[encrypted reasoning · provider|") for line in seen if line
    )
    for line in seen:
        assert_inert(line)
        assert not BASE64_RUN.search(line)
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["show", str(path), sid, "--readonly"]) == 0
    assert_inert(capsys.readouterr().out)
