"""Giant segments read in a window: the same outputs as reading them whole.

Segments written by lovia: one of many entries (read as a stream) and one
huge tool output (left stored, written a piece at a time). Every output
(show, show --json, export json/md to a terminal and to a file, doctor,
trim's preview) is compared with the one the whole reading gives, the
thresholds lowered so that the tests stay small; one test at the real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sqlite3
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.context.state import result_digest
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
)
from support import lovia_factory

from lovia_tui.cli import main
from lovia_tui.core import huge_text
from lovia_tui.core.doctor import segments as doctor_segments
from lovia_tui.core.store import entry_stream, segment_reads

HOSTILE = 'ok ✓ é \x1b[2J\x07 \u202e \x9b \u2028 \x00 "q" \\ 😀 \t\n'
WHOLE = 1 << 60


def _thresholds(
    monkeypatch: pytest.MonkeyPatch, stream: int, huge: int, many: int = 1_000
) -> None:
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", stream)
    monkeypatch.setattr(entry_stream, "MANY_ENTRIES", many)
    monkeypatch.setattr(doctor_segments, "STREAM_ABOVE", stream)
    monkeypatch.setattr(entry_stream, "COUNT_IN_SQL_UP_TO", huge)
    monkeypatch.setattr(segment_reads, "COUNT_IN_SQL_UP_TO", huge)
    monkeypatch.setattr(huge_text, "HUGE_ABOVE", huge)


def _write(path: Path, segments: list[tuple[str, list, dict | None]]) -> None:
    async def write() -> None:
        session = SQLiteSession(path)
        for run_id, entries, meta in segments:
            await session.append("s", entries, run_id=run_id, meta=meta)

    asyncio.run(write())
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")  # as a read-write open leaves it


def _many(count: int, width: int, *, dangling_at: int) -> list:
    entries: list = [InputEntry("user", "check every ticket")]
    for n in range(count):
        entries.append(ToolCallEntry(f"c{n}", "ticket", json.dumps({"id": n})))
        if n != dangling_at:  # a call left without its result, deep inside
            entries.append(ToolResultEntry(f"c{n}", f"{n} {HOSTILE}" * width))
    return [*entries, AssistantTextEntry("done")]


def _huge(chars: int) -> tuple[list, dict]:
    output = (HOSTILE * (chars // len(HOSTILE) + 1))[:chars]
    entries = [
        InputEntry("user", "dump the log"),
        ToolCallEntry("big", "read_log", "{}"),
        ToolResultEntry("big", output),
        AssistantTextEntry(HOSTILE),
    ]
    # The context policy offloaded it: trim's preview calls it archived.
    record = {"digest": result_digest(output)}
    meta = {"context_state": {"context": {"offloaded": {"big": record}}}}
    return entries, meta


@pytest.fixture
def giant(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    entries, meta = _huge(300_000)
    _write(
        path,
        [
            ("r0", [InputEntry("user", "hi")], None),
            ("r1", _many(200, 1, dangling_at=150), None),
            ("r2", entries, meta),
            ("r3", [InputEntry("user", HOSTILE), AssistantTextEntry("bye")], None),
        ],
    )
    return path


def _outputs(path: Path, capsys, scratch: Path) -> dict[str, str]:
    """Every output of the CLI on ``path``'s session "s"."""
    found = {}
    for name, argv in {
        "show": ["show", str(path), "s", "--readonly"],
        "show --json": ["show", str(path), "s", "--json", "--readonly"],
        "export json": ["export", str(path), "s", "--format", "json"],
        "export md": ["export", str(path), "s", "--format", "md"],
        "doctor": ["doctor", str(path), "--json"],
        "trim": ["trim", str(path), "s", "--json"],
    }.items():
        main(argv)
        found[name] = capsys.readouterr().out
    for fmt in ("json", "md"):
        target = scratch / f"export-{len(os.listdir(scratch))}.{fmt}"
        assert main(["export", str(path), "s", "--format", fmt, "-o", str(target)]) == 0
        found[f"export {fmt} file"] = target.read_text(encoding="utf-8")
    capsys.readouterr()
    return found


def _spied(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of huge texts made and streams read, to show the window was used."""
    seen = {"huge": 0, "streams": 0}
    make, stream = huge_text.HugeText.__init__, entry_stream.iter_entries

    def counted_huge(self, *args, **kwargs):
        seen["huge"] += 1
        make(self, *args, **kwargs)

    def counted_stream(*args, **kwargs):
        seen["streams"] += 1
        return stream(*args, **kwargs)

    monkeypatch.setattr(huge_text.HugeText, "__init__", counted_huge)
    monkeypatch.setattr(entry_stream, "iter_entries", counted_stream)
    return seen


def test_every_output_of_a_giant_session_equals_the_whole_reading(
    giant, capsys, monkeypatch, tmp_path
):
    _thresholds(monkeypatch, WHOLE, WHOLE)
    whole = _outputs(giant, capsys, tmp_path)
    _thresholds(monkeypatch, 20_000, 100_000, 50)
    monkeypatch.setattr(huge_text, "PIECE", 4_096)
    seen = _spied(monkeypatch)
    windowed = _outputs(giant, capsys, tmp_path)
    assert seen["huge"] >= 8 and seen["streams"] >= 4
    for name, text in whole.items():
        assert windowed[name] == text, name
    shown = json.loads(whole["show --json"])
    assert [len(s["entries"]) for s in shown["segments"]] == [1, 401, 4, 2]
    doctor = json.loads(whole["doctor"])
    assert [f["kind"] for f in doctor["findings"]] == ["unpaired-tool-call"]
    assert "entry 302: tool call ticket [c150]" in doctor["findings"][0]["message"]
    cuts = json.loads(whole["trim"])["preview"]["cuts"]
    assert [(c["call_id"], c["archived"]) for c in cuts] == [("big", True)]
    assert "\x1b" not in windowed["show"] + windowed["export md"]


def test_a_huge_output_at_the_real_thresholds(tmp_path, capsys, monkeypatch):
    path = tmp_path / "sessions.db"
    entries, meta = _huge(huge_text.HUGE_ABOVE + 100_000)
    _write(
        path,
        [
            ("r1", _many(1_050, 80, dangling_at=1_000), None),
            ("r2", entries, meta),
            ("r3", [AssistantTextEntry("bye")], None),
        ],
    )
    assert path.stat().st_size > 2 * entry_stream.STREAM_ABOVE
    seen = _spied(monkeypatch)
    argvs = {
        "show --json": ["show", str(path), "s", "--json", "--readonly"],
        "doctor": ["doctor", str(path), "--json"],
        "trim": ["trim", str(path), "s", "--json"],
    }
    windowed = {}
    for name, argv in argvs.items():
        main(argv)
        windowed[name] = capsys.readouterr().out
    assert seen["huge"] >= 1 and seen["streams"] >= 1
    _thresholds(monkeypatch, WHOLE, WHOLE)
    for name, argv in argvs.items():
        main(argv)
        assert capsys.readouterr().out == windowed[name], name


def test_trimming_a_huge_output_is_undone_byte_for_byte(tmp_path, capsys, monkeypatch):
    """The preview's rows (a large value read by blob I/O) are the journal's."""
    monkeypatch.setenv("LOVIA_TUI_JOURNAL", str(tmp_path / "journal.db"))
    path = tmp_path / "sessions.db"
    entries, meta = _huge(huge_text.HUGE_ABOVE + 100_000)
    _write(path, [("r1", entries, meta), ("r2", [AssistantTextEntry("bye")], None)])
    before = lovia_factory.rows(path)
    assert main(["trim", str(path), "s", "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert (
        done["preview"]["results_trimmed"] == 1 and lovia_factory.rows(path) != before
    )
    assert main(["undo", str(path), "--yes"]) == 0
    assert lovia_factory.rows(path) == before


def test_huge_text_pieces_join_into_the_stored_string(monkeypatch):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    alphabet = [*HOSTILE, "\\u", "\ud83d", "\udc00", "\U000e0041", "x" * 7]
    monkeypatch.setattr(huge_text, "HUGE_ABOVE", 1_000)
    for _ in range(30):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(600, 3_000)))
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        monkeypatch.setattr(huge_text, "PIECE", rng.randrange(16, 700))
        stored = json.dumps(
            [{"type": "tool_result", "call_id": "c", "output": text}],
            ensure_ascii=rng.random() < 0.5,
        ).encode()
        spared = huge_text.spare_entries(stored)
        assert spared is not None, seed
        output = spared[0]["output"]
        assert isinstance(output, huge_text.HugeText)
        assert "".join(output.pieces()) == text, seed
        assert len(output) == len(text)
        assert output[:100] == text[:100]
        assert output.endswith(text[-40:]) and not output.endswith("\x00" + text)
        assert output.sha1()[:16] == result_digest(text)


def test_a_value_not_certain_to_read_the_same_is_parsed_whole(monkeypatch):
    monkeypatch.setattr(huge_text, "HUGE_ABOVE", 100)
    long = "y" * 500
    for stored in (
        json.dumps([{"type": "tool_result", "call_id": long, "output": "o"}]),
        json.dumps([{"type": "input", "content": [{"type": "text", "text": long}]}]),
        json.dumps([{long: 1, "type": "input"}]),
        json.dumps([{"type": "tool_result", "output": long}])[:-1],  # cut short
        json.dumps({"type": "tool_result", "output": long}),  # not a list
    ):
        assert huge_text.spare_entries(stored.encode()) is None
    bad_utf8 = json.dumps([{"type": "tool_result", "output": long}]).encode()
    assert huge_text.spare_entries(bad_utf8.replace(b"yyyy", b"y\xffyy", 1)) is None
