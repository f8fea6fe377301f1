"""An export stays what it is: Markdown that cannot break out into HTML, and
a target that never loosens permissions or replaces a database's file.

The Markdown is rendered by markdown-it-py (a CommonMark implementation; it
ships with rich) with raw HTML enabled, as a permissive viewer renders it.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lovia import SQLiteSession
from lovia.testing import call, text
from lovia.transcript import InputEntry
from markdown_it import MarkdownIt
from markdown_it.token import Token
from support.lovia_factory import write_session

from lovia_tui.cli import main
from lovia_tui.core.formatting import printable
from lovia_tui.core.markdown_text import (
    MARKDOWN_CHECK_CHARS,
    code_span,
    fenced,
    message,
    plain,
)


def img(where: str) -> str:
    """A tag CommonMark passes through as raw HTML, live in a browser."""
    return f"<img src=x onerror=\"alert('{where}')\">"


SESSION = f"s\n# Injected heading\n{img('session')}`x`"
RUN_ID = f"r``1`\n\n{img('run')}"
OUTPUT = (
    f"before\n```\n</pre>{img('output')}\n"
    "````\n``````````\n~~~\n<script>alert('output')</script>\nafter"
)
TOOL = f"na`me``\n\n{img('tool')}"
CALL_ID = "`c1\n<b>"
PROMPT = f"{img('user')} hello"
UNCLOSED = "Here:\n```python\nprint('x')\n\n<script>alert('answer')</script>"
MARKDOWN = "**bold** and `code`\n\n```python\nprint(1)\n```\n\n<https://example.org>"
ROLE = f"user{img('role')}"
HTML_TYPES = ("html_block", "html_inline")


async def _build(path: Path) -> None:
    """Every hostile value, written by lovia: tool outputs and arguments with
    backtick runs, a tool name and call id with backticks and line breaks, a
    session id and run id that try to add lines and HTML, raw HTML in
    messages and a message whose code fence is never closed."""
    await write_session(
        path,
        SESSION,
        [
            [
                call("echo", {"message": OUTPUT}, call_id=CALL_ID),
                call(TOOL, {"x": "```"}, call_id="c2"),
                text(UNCLOSED),
            ],
            [text(MARKDOWN)],
        ],
        prompts=[PROMPT, "Format it."],
    )
    await SQLiteSession(path, wal=True).append(
        SESSION,
        [InputEntry(role=ROLE, content="hi")],  # type: ignore[arg-type]
        run_id=RUN_ID,
    )


@pytest.fixture(scope="module")
def hostile_markdown(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("markdown") / "hostile.db"
    asyncio.run(_build(path))
    return path


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def _exported(path: Path, target: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["export", str(path), SESSION, "-o", str(target)]) == 0
    capsys.readouterr()
    return target.read_text(encoding="utf-8")


def test_stored_text_never_renders_as_html(
    hostile_markdown: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exported = _exported(hostile_markdown, tmp_path / "out.md", capsys)
    renderer = MarkdownIt("commonmark")  # raw HTML on, as CommonMark has it
    tokens = renderer.parse(exported)
    assert [t.content for t in _walk(tokens) if t.type in HTML_TYPES] == []
    rendered = renderer.render(exported)
    assert "<img" not in rendered and "<script" not in rendered
    assert "onerror=&quot;alert" in rendered  # shown as text, escaped
    # Every stored text whole in its code block; headers are one line each.
    fences = [t.content for t in tokens if t.type == "fence"]
    assert f"{OUTPUT}\n" in fences and f"{UNCLOSED}\n" in fences
    assert f"{PROMPT}\n" in fences
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.tag == "h1"]
    assert headings[::2] == [f"Session {code_span(SESSION)}"]
    inline_code = {t.content for t in _walk(tokens) if t.type == "code_inline"}
    assert {printable(SESSION), printable(RUN_ID), printable(TOOL)} <= inline_code
    assert printable(CALL_ID) in inline_code
    assert _escaped(ROLE) in rendered
    # A message whose own Markdown is inert stays Markdown.
    assert "<strong>bold</strong>" in rendered
    assert '<pre><code class="language-python">print(1)\n</code></pre>' in rendered


def test_fences_inline_code_and_plain_text_hold_any_backticks() -> None:
    """Each helper, checked on its own by the same renderer."""
    renderer = MarkdownIt("commonmark")
    for body in ("`", "``", "a ``` b", "`" * 12, "x`", "`x", "", " ", "<b>`"):
        block = renderer.parse(fenced(body))
        assert [(t.type, t.content) for t in block] == [("fence", f"{body}\n")]
        [paragraph] = [t for t in renderer.parse(code_span(body)) if t.children]
        [span] = paragraph.children or []
        assert (span.type, span.content) == ("code_inline", body or " ")
        rendered = renderer.render(plain(f"# {body}<i>*x*</i> [a](b)\n==="))
        assert (
            rendered == f"<p># {_escaped(body)}&lt;i&gt;*x*&lt;/i&gt; [a](b)␊===</p>\n"
        )
    assert message("```\nopen") == fenced("```\nopen")
    assert message("<!-- open") == fenced("<!-- open")
    assert message("a < b, **b**") == "a < b, **b**\n\n"
    long = "*" * (MARKDOWN_CHECK_CHARS + 1)  # as a huge text read in pieces is
    assert message(long) == fenced(long)


LINE = st.tuples(
    st.sampled_from(["", "", "", "  ", "- ", "> ", "    "]),
    st.sampled_from(["```", "```", "~~~", "x", "<div>", img("line"), "`", "<!--"]),
    st.sampled_from(["", "", "`", "a`b", "python"]),
).map("".join)
"""A line of a message: a container or indent, a fence or HTML, an info string."""


@settings(max_examples=250, deadline=None, print_blob=True)
@given(st.lists(LINE, max_size=6).map("\n".join))
def test_any_message_then_a_tool_output_renders_no_html(body: str) -> None:
    """Whatever a message holds, it neither renders raw HTML nor leaves a block
    open that would turn the next code block's content into Markdown.
    (Hypothesis prints the failing example and a blob to reproduce it.)"""
    hostile = f"x\n```\n{img('next')}\n"
    document = (
        f"**#0 user**\n\n{message(body)}**#1 tool result** `c`\n\n{fenced(hostile)}"
    )
    tokens = MarkdownIt("commonmark").parse(document)
    assert [t.content for t in _walk(tokens) if t.type in HTML_TYPES] == []
    assert tokens[-1].type == "fence" and tokens[-1].content == f"{hostile}\n"


def _escaped(text: str) -> str:
    """``text`` as markdown-it writes text into HTML."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
    )


# --------------------------------------------------------------- the target


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_force_keeps_the_replaced_files_mode_and_new_files_are_private(
    web_file: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = os.umask(0o022)
    try:
        target = scratch / "out.md"
        assert main(["export", str(web_file), "chat", "-o", str(target)]) == 0
        assert _mode(target) == 0o600
        for kept in (0o600, 0o640, 0o604):
            os.chmod(target, kept)
            argv = ["export", str(web_file), "chat", "-o", str(target), "--force"]
            assert main(argv) == 0
            assert _mode(target) == kept
    finally:
        os.umask(saved)
    capsys.readouterr()


def test_a_databases_files_are_never_an_export_target(
    web_file: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file being read, its -wal/-shm/-journal (there or not), the same
    file through a linked directory; a database with another name (a hard
    link) is not read at all."""
    linked_dir = scratch / "linked"
    linked_dir.symlink_to(scratch)
    targets = [web_file, linked_dir / web_file.name]
    targets += [Path(f"{web_file}{suffix}") for suffix in ("-wal", "-shm", "-journal")]
    hard = scratch / "hard.md"
    os.link(web_file, hard)
    argv = ["export", str(web_file), "chat", "-o", str(hard), "--force"]
    assert main(argv) == 2
    assert "has 2 names (hard links)" in capsys.readouterr().err
    hard.unlink()
    before = {p: (p.read_bytes(), _mode(p)) for p in (web_file,)}
    companions = sorted(p.name for p in scratch.iterdir())
    for target in targets:
        for force in ([], ["--force"]):
            argv = ["export", str(web_file), "chat", "-o", str(target), *force]
            assert main(argv) == 2, target
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "a file of a database being read" in err
    assert {p: (p.read_bytes(), _mode(p)) for p in (web_file,)} == before
    assert sorted(p.name for p in scratch.iterdir()) == companions
    conn = sqlite3.connect(f"file:{web_file}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_a_link_to_a_database_is_never_written_through(
    web_file: Path, hostile_markdown: Path, scratch: Path, capsys
) -> None:
    """Another lovia file behind a planted link: refused with or without --force."""
    link = scratch / "planted.md"
    link.symlink_to(hostile_markdown)
    before = (hostile_markdown.read_bytes(), _mode(hostile_markdown))
    for force in ([], ["--force"]):
        argv = ["export", str(web_file), "chat", "-o", str(link), *force]
        assert main(argv) == 2
        assert "symbolic link" in capsys.readouterr().err
    assert (hostile_markdown.read_bytes(), _mode(hostile_markdown)) == before
    assert link.is_symlink()


WAL_WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=50")
conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
print("ready", flush=True)
count, end = 0, time.time() + float(sys.argv[2])
while time.time() < end:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t VALUES (?)", ("x" * 2000,))
    conn.execute("COMMIT")
    count += 1
    time.sleep(0.005)
print(count, flush=True)
"""
"""Another program's database, written on in WAL mode for a few seconds."""


def test_another_databases_files_are_never_an_export_target(
    web_file: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """While another process writes a WAL database, an export with --force
    to it, to its -shm/-wal/-journal (also through a linked directory), or to
    any name SQLite uses beside an existing file is refused in one line: the
    live -shm is the same file after, and the database checks whole."""
    (scratch / "other").mkdir()
    (scratch / "linked").symlink_to(scratch / "other")
    live = scratch / "other" / "live"  # no telling name: known by its companions
    notes = scratch / "other" / "notes.md"
    notes.write_text("kept")
    writer = subprocess.Popen(
        [sys.executable, "-c", WAL_WRITER, str(live), "3"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        shm = Path(f"{live}-shm")
        inode = os.stat(shm).st_ino
        why = {live: "is a SQLite database"}
        for suffix in ("-shm", "-wal", "-journal", "-wal2", "-mj1A2B3C9D4"):
            why[Path(f"{live}{suffix}")] = f"the {suffix} file of {live}:"
        why[scratch / "linked" / shm.name] = f"the -shm file of {live}:"
        why[Path(f"{notes}-wal")] = f"the -wal file of {notes}:"
        for target, reason in why.items():
            for force in ([], ["--force"]):
                argv = ["export", str(web_file), "chat", "-o", str(target), *force]
                assert main(argv) == 2, target
                err = capsys.readouterr().err
                assert err.count("\n") == 1 and reason in err, err
        assert os.stat(shm).st_ino == inode
        out, _ = writer.communicate(timeout=60)
    finally:
        writer.kill()
        writer.wait()
    assert writer.returncode == 0
    assert not Path(f"{notes}-wal").exists() and notes.read_text() == "kept"
    conn = sqlite3.connect(live)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == int(out)
    finally:
        conn.close()


def test_a_database_is_never_replaced_nor_unlocked(
    web_file: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database with no companion is known by its name, or by its first
    bytes; one this process holds a lock on is refused without being opened
    by Python (closing that descriptor would drop the lock)."""
    history = scratch / "history"  # a rollback-journal database, no telling name
    named = scratch / "empty.sqlite"
    named.touch()
    made = "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('CREATE TABLE t (x)')"
    subprocess.run([sys.executable, "-c", made, str(history)], check=True)
    for target in (history, named):
        argv = ["export", str(web_file), "chat", "-o", str(target), "--force"]
        assert main(argv) == 2
        assert "is a SQLite database" in capsys.readouterr().err
    held = sqlite3.connect(history, isolation_level=None)
    try:
        held.execute("BEGIN IMMEDIATE")
        argv = ["export", str(web_file), "chat", "-o", str(history), "--force"]
        assert main(argv) == 2
        assert "is a SQLite database" in capsys.readouterr().err
        begin = "import sqlite3, sys; sqlite3.connect(sys.argv[1], timeout=0).execute('BEGIN IMMEDIATE')"
        probe = subprocess.run(
            [sys.executable, "-c", begin, str(history)], capture_output=True, text=True
        )
        assert "database is locked" in probe.stderr  # the lock held here holds
    finally:
        held.close()
    assert [p.name for p in scratch.iterdir() if p.name.startswith(".")] == []
