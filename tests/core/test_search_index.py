"""The search index against files written by real lovia code: it agrees with
a scan, stays current through appends, rewinds, trims, clears and deleted
checkpoints, lives outside the database, and never writes to it."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import re
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lovia import Agent, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text
from support.lovia_factory import READY, abandoned_run, append_entries, write_session

from lovia_tui.core.entries import entry_text, parse_entries
from lovia_tui.core.private_files import cache_dir
from lovia_tui.core.search.file_search import FileSearch, drop_index
from lovia_tui.core.search.index import FORMAT_VERSION, index_path
from lovia_tui.core.search.query import QueryError, parse_query

VOCABULARY = [
    "order", "refund", "invoice", "shipment", "latency", "cache", "parcel",
    "quartz", "zebra", "nominal", "ticket", "warehouse", "beacon", "harbor",
]  # fmt: skip


@tool
def explode(reason: str) -> str:
    """Fail with ``reason``: lovia stores an error result."""
    raise ValueError(f"exploded: {reason}")


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(count))


def _search(path: Path, query: str, **kwargs):
    search = FileSearch(path)
    try:
        search.build()
        return search.search(parse_query(query), limit=1000, **kwargs)
    finally:
        search.close()


def _sessions(result) -> set[str]:
    return {group.session_id for group in result.groups if group.session_id}


def _scan(path: Path, word: str) -> set[str]:
    """Sessions with an entry holding ``word`` as a token, read row by row."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found = set()
        for session_id, stored in conn.execute(
            "SELECT session_id, entries_json FROM session_runs"
        ):
            for entry in parse_entries(stored):
                if word in re.findall(r"[^\W_]+", entry_text(entry).lower()):
                    found.add(session_id)
        return found
    finally:
        conn.close()


@pytest.fixture
def corpus(scratch: Path) -> tuple[Path, int]:
    """Eight sessions of random words, written by lovia's Runner (seed printed)."""
    seed = int(os.environ.get("SEARCH_SEED", random.randrange(1 << 30)))
    print(f"corpus seed {seed}")
    rng = random.Random(seed)
    path = scratch / "corpus.db"

    async def build() -> None:
        for number in range(8):
            scripts = [
                [
                    call("echo", {"message": _words(rng, 3)}),
                    text(_words(rng, rng.randint(1, 6))),
                ]
                for _ in range(rng.randint(1, 3))
            ]
            prompts = [_words(rng, 2) for _ in scripts]
            await write_session(path, f"s{number}", scripts, prompts=prompts)

    asyncio.run(build())
    return path, seed


def test_word_queries_agree_with_a_scan(corpus):
    path, seed = corpus
    for word in VOCABULARY:
        assert _sessions(_search(path, word)) == _scan(path, word), (word, seed)


def test_a_partly_built_index_scans_the_rest_and_agrees(corpus):
    path, seed = corpus
    search = FileSearch(path)
    try:
        search.builder.chunks.rows = 1
        search.build(deadline=time.monotonic() - 1)  # one chunk: one segment
        assert search.progress().indexed == 1
        for word in VOCABULARY[:6]:
            result = search.search(parse_query(word), limit=1000)
            assert not result.progress.done and result.scanned > 0
            assert _sessions(result) == _scan(path, word), (word, seed)
    finally:
        search.close()


def test_prefixes_spelled_from_the_words_list_agree_with_the_vocabulary(corpus):
    """Once built, a prefix is spelled from the index's own list of words (a
    b-tree, not FTS5's vocabulary, which reads every word's postings): the
    same sessions either way, also for words appended after the list was made."""
    path, seed = corpus
    prefixes = [f"{word[:3]}*" for word in VOCABULARY]
    search = FileSearch(path)
    try:
        search.builder.chunks.rows = 1
        search.build(deadline=time.monotonic() - 1)  # one chunk: not listed yet
        assert not search.builder.words.ready and not search.progress().done
        search.build()
        assert search.builder.words.ready and search.progress().done
        listed = {p: _sessions(search.search(parse_query(p))) for p in prefixes}
        asyncio.run(append_entries(path, "late", 1, prefix="xylophone"))
        search.build()
        assert search.builder.words.spell("xyl", 10) == ["xylophone"]
        assert _sessions(search.search(parse_query("xylo*"))) == {"late"}
        for prefix in prefixes:
            assert listed[prefix] == _scan_prefix(path, prefix[:-1]), (prefix, seed)
    finally:
        search.close()
    slow = FileSearch(path)  # the same file, spelled through the vocabulary
    try:
        slow.builder.words.forget()
        for prefix in prefixes:
            assert _sessions(slow.search(parse_query(prefix))) == listed[prefix]
    finally:
        slow.close()


def _scan_prefix(path: Path, stem: str) -> set[str]:
    """Sessions before "late" with a token starting with ``stem``, read row by row."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            session_id
            for session_id, stored in conn.execute(
                "SELECT session_id, entries_json FROM session_runs WHERE session_id != 'late'"
            )
            for entry in parse_entries(stored)
            if any(
                token.startswith(stem)
                for token in re.findall(r"[^\W_]+", entry_text(entry).lower())
            )
        }
    finally:
        conn.close()


def test_phrases_prefixes_fields_and_snippets(scratch: Path):
    path = scratch / "f.db"
    agent = Agent(
        name="worker",
        instructions="x",
        model=ScriptedProvider(
            [call("explode", {"reason": "disk full"}), text("Order A-1001 refunded.")]
        ),
        tools=[explode],
    )
    session = SQLiteSession(path, wal=True)
    asyncio.run(
        Runner.run(agent, "please refund order A-1001", session=session, session_id="x")
    )
    hit = _search(path, "A-1001").groups[0]
    assert hit.session_id == "x" and hit.hits == 2
    assert "A-1001" in hit.first.snippet and hit.first.entry_index == 3
    assert _search(path, '"order a 1001"').groups[0].hits == 2
    assert _search(path, '"please refund"').groups[0].hits == 1
    assert _search(path, '"1001 order"').groups == []
    assert _search(path, "refun*").groups[0].hits == 2
    assert _search(path, "tool:explode").groups[0].hits == 2  # the call, its result
    assert _search(path, "error:").groups[0].first.entry_index == 2
    assert _search(path, "error:disk").groups[0].hits == 1
    assert _search(path, "error:refunded").groups == []
    assert _search(path, "refund session:x").groups
    assert _search(path, "refund session:y").groups == []
    assert _search(path, 'NEAR( "unclosed OR AND *').groups == []  # no FTS5 syntax
    with pytest.raises(QueryError):
        parse_query('"" !!! session:x')
    # Operators of other search boxes: `-osaka` found entries WITH osaka.
    for query in ("kyoto -osaka", "kyoto OR refund", "kyoto NOT osaka", "a AND b"):
        with pytest.raises(QueryError, match="no operators"):
            parse_query(query)
    assert parse_query('kyoto "-osaka" A-1001 or').words == (
        "kyoto", "osaka", "a", "1001", "or",
    )  # fmt: skip


def test_appends_rewinds_trims_and_clears_keep_it_current(scratch: Path):
    path = scratch / "live.db"
    scripts = [
        [call("dump", {"lines": 200}), text("first harbor")],
        [call("echo", {"message": "middle beacon"}), text("ending quartz")],
        [text("last zebra")],
    ]
    asyncio.run(write_session(path, "s", scripts))
    search = FileSearch(path)
    try:
        search.build()
        session = SQLiteSession(path, wal=True)
        asyncio.run(append_entries(path, "s", 1, prefix="appended"))
        # Not indexed yet: found by the scan of the rest, then by the index.
        first = search.search(parse_query("appended"))
        assert first.scanned and _sessions(first) == {"s"}
        search.build()
        again = search.search(parse_query("appended"))
        assert not again.scanned and _sessions(again) == {"s"}

        # Rewind into the second run: the third, the append and the cut's tail go.
        asyncio.run(session.rewind("s", keep_entries=7))
        search.build()
        for gone in ("zebra", "appended", "quartz"):
            assert search.search(parse_query(gone)).groups == [], gone
        assert _sessions(search.search(parse_query("beacon"))) == {"s"}

        # Trim the first run's dump: line 00150 is cut, line 00001 kept.
        assert asyncio.run(session.trim_tool_results("s", keep_chars=400))
        search.build()
        assert search.search(parse_query("00150")).groups == []
        assert search.search(parse_query("00001")).groups

        asyncio.run(session.clear("s"))
        search.build()
        assert search.search(parse_query("harbor")).groups == []
        assert search.index.state().seg_count == 0
    finally:
        search.close()


def test_checkpoints_are_searchable_until_deleted(scratch: Path):
    path = scratch / "cp.db"
    asyncio.run(
        abandoned_run(
            path, "inflight", [call("echo", {"message": "warehouse"})], prompt="parcel"
        )
    )
    search = FileSearch(path)
    try:
        search.build()
        group = search.search(parse_query("parcel")).groups[0]
        assert (group.session_id, group.run_id) == (None, "inflight")
        asyncio.run(SQLiteCheckpointer(path, wal=True).delete("inflight"))
        search.build()
        assert search.search(parse_query("parcel")).groups == []
    finally:
        search.close()


def _digest(path: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in path.parent.iterdir()
        if p.name.startswith(path.name)
    }


def test_the_index_lives_outside_the_database_and_private(corpus, isolated_cache):
    path, _ = corpus
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    before = _digest(path)
    os.chmod(path.parent, 0o555)  # root ignores it; mode=ro is what guards
    try:
        _search(path, "order")
    finally:
        os.chmod(path.parent, 0o755)
    assert _digest(path) == before
    where = index_path(path)
    assert where.parent == cache_dir() == isolated_cache / "lovia-tui"
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    assert stat.S_IMODE(where.parent.stat().st_mode) == 0o700
    assert drop_index(path) and not where.exists()


def test_a_new_format_version_rebuilds(corpus):
    path, _ = corpus
    _search(path, "order")
    conn = sqlite3.connect(index_path(path))
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'version'", (FORMAT_VERSION - 1,)
    )
    conn.execute("UPDATE meta SET value = 999999 WHERE key = 'seg_high'")
    conn.commit()
    conn.close()
    search = FileSearch(path)
    try:
        assert search.index.state().seg_high == 0  # a fresh file
        search.build()
        assert search.search(parse_query("order")).groups
    finally:
        search.close()


def test_stays_current_beside_a_writer_in_another_process(scratch: Path):
    """A lovia writer appends in its own process while the index builds in
    short steps and another session is rewound; at the end the index holds
    exactly what the file holds."""
    path = scratch / "busy.db"
    asyncio.run(append_entries(path, "other", 3, prefix="harbor"))
    stop = scratch / "stop"
    writer = subprocess.Popen(
        [sys.executable, str(Path(__file__).parents[1] / "support" / "lovia_factory.py"),
         "append-loop", str(path), "busy", str(stop), "2000"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    search = FileSearch(path)
    try:
        assert writer.stdout.readline().strip() == READY
        deadline = time.monotonic() + 10
        while search.index.state().seg_count < 40:
            assert time.monotonic() < deadline, "the writer or the index stalled"
            search.build(deadline=time.monotonic() + 0.05)
        asyncio.run(SQLiteSession(path, wal=True).rewind("other", keep_entries=2))
        search.build()
        stop.touch()
        out, _ = writer.communicate(timeout=30)
        written = int(out.split()[-1])
        search.build()
        count = sqlite3.connect(path).execute("SELECT COUNT(*) FROM session_runs")
        assert search.index.state().seg_count == count.fetchone()[0] == written + 1
        [busy] = search.search(parse_query("loop"), cap=None).groups
        assert (busy.session_id, busy.hits) == ("busy", written)
        assert search.search(parse_query("harbor")).groups[0].hits == 1
    finally:
        writer.kill()
        writer.wait()
        search.close()
