"""Stored text that attacks the terminal, at the CLI: shown, never obeyed.

The database (tests/support/hostile_text_db.py) is written by lovia; its ids, titles,
agent names, messages, tool calls and outputs and errors carry escape
sequences, control characters and Rich markup. Every human-readable command
prints them visibly (``␛[2J``) and exits as usual; ``--json`` keeps them
exact; an export to a file keeps them exact, to stdout neutralized.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.hostile_text_db import (
    BEL,
    CRASHED_RUN,
    ESC,
    FAILED_RUN,
    MARKUP,
    SESSION,
    SESSION_PLAIN_TITLE,
    TITLE,
    UNSAFE,
    assert_inert,
    hostile,
    unwritable,
)

from lovia_tui.cli import main
from lovia_tui.core.export import export_name, free_path
from lovia_tui.core.formatting import printable, printable_json
from lovia_tui.core.markdown_text import code_span
from lovia_tui.core.runs.console import one_line
from lovia_tui.core.runs.redact import HIDDEN, error_line, redact


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------- the one gate


def test_printable_shows_every_control_and_keeps_the_rest() -> None:
    assert printable(f"{ESC}[2J{ESC}]52;c;eA==\x07\x00\r") == "␛[2J␛]52;c;eA==␇␀␍"
    assert printable("a\nb\tc") == "a␊b␉c"
    assert printable("a\nb\tc\r", multiline=True) == "a\nb\tc␍"
    assert printable("\x9b6n \u202eevil \x7f") == "\\x9b6n \\u202eevil ␡"
    assert printable("ch\u200bat\U000e0041") == "ch\\u200bat\\U000e0041"
    assert printable("👩\u200d💻") == "👩\u200d💻"  # a joiner that shapes is kept
    assert printable(MARKUP) == MARKUP  # markup is the renderer's business: Text
    assert printable("金閣寺 ✂ é") == "金閣寺 ✂ é"


@given(st.text())
def test_printable_never_emits_a_control(text: str) -> None:
    assert not UNSAFE.search(printable(text, multiline=True))
    assert "\n" not in printable(text)
    dumped = printable_json(json.dumps(text, ensure_ascii=False))
    assert not UNSAFE.search(dumped) and json.loads(dumped) == text


# ------------------------------------------------------------ human output


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "tty"])
def test_every_command_shows_hostile_text_inert_and_literal(
    hostile_text: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tty: bool,
) -> None:
    """Piped, or as a terminal with colours (Rich's own SGR codes only)."""
    monkeypatch.setenv("COLUMNS", "3000")  # whole ids on one line
    if tty:
        monkeypatch.setenv("FORCE_COLOR", "1")
    commands = {
        "sessions": ["sessions", hostile_text],
        "runs": ["runs", hostile_text],
        "doctor": ["doctor", hostile_text],
        "show": ["show", hostile_text, SESSION],
        "show-markup": ["show", hostile_text, SESSION_PLAIN_TITLE],
        "export": ["export", hostile_text, SESSION],
        "export-json": ["export", hostile_text, SESSION, "--format", "json"],
        "journal": ["journal", hostile_text],
        "finalize": ["finalize", hostile_text, CRASHED_RUN, "--force"],
        "delete-run": ["delete-run", hostile_text, FAILED_RUN],
        "clear": ["clear", hostile_text, SESSION, "--force"],
        "resume": ["resume", hostile_text, FAILED_RUN],
        "replay": ["replay", hostile_text, hostile("r-done"), "--yes"],  # events
    }
    shown = {}
    for name, argv in commands.items():
        code, out, err = cli(capsys, *argv)
        expected = (0, 1) if name == "doctor" else (2,) if name == "resume" else (0,)
        assert code in expected, (name, code, err)
        assert "Traceback" not in err, name
        if tty:  # colours only: no other escape sequence, no OSC at all
            assert "\x1b]" not in out and "\x07" not in out, name
            out = re.sub("\x1b\\[[0-9;]*m", "", out)
        assert_inert(out)
        assert_inert(err)
        shown[name] = out + err
    visible = printable(SESSION)
    for name in ("sessions", "export", "finalize", "clear"):
        assert visible in shown[name], name
    assert printable(hostile("r-done")) in shown["show"]
    assert printable(TITLE)[:40] in shown["sessions"]  # titles are cut
    for name in ("runs", "finalize"):
        assert printable(CRASHED_RUN) in shown[name], name
    assert printable(FAILED_RUN) in shown["delete-run"]
    assert f"run {SESSION_PLAIN_TITLE}" not in shown["show-markup"]
    assert "[/oops] question" in shown["show-markup"] and "[/oops]" in shown["sessions"]
    assert "[bold]plain[/bold] answer" in shown["show-markup"]
    assert printable(FAILED_RUN) in shown["resume"]  # its refusal, one line
    assert f"completed: {printable(hostile('answer'))}" in shown["replay"]
    assert "unknown-json" not in shown["export-json"]
    exported = json.loads(shown["export-json"])  # escaped, still the same data
    assert exported["session_id"] == SESSION


def test_json_output_keeps_the_exact_data(
    hostile_text: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "sessions", hostile_text, "--json")
    assert code == 0 and not UNSAFE.search(out)
    sessions = {s["session_id"]: s for s in json.loads(out)["sessions"]}
    assert sessions[SESSION]["title"].startswith(TITLE[:40])  # a title is cut
    code, out, _ = cli(capsys, "runs", hostile_text, "--json")
    assert code == 0 and not UNSAFE.search(out)
    runs = {r["run_id"]: r for r in json.loads(out)["runs"]}
    assert {CRASHED_RUN, FAILED_RUN} <= set(runs)
    assert runs[CRASHED_RUN]["session_id"] == SESSION
    code, out, _ = cli(capsys, "show", hostile_text, SESSION, "--json")
    assert code == 0 and not UNSAFE.search(out)
    assert json.loads(out)["session_id"] == SESSION


# ------------------------------------------------------------------ export


def test_export_to_a_file_is_exact_and_never_overwrites_or_follows(
    hostile_text: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = scratch / "out.md"
    code, _, err = cli(capsys, "export", hostile_text, SESSION, "-o", target)
    assert code == 0 and printable(str(target)) in err
    # The header is one line (the id's CR and controls shown as symbols);
    # the JSON export below keeps the id exact.
    header = target.read_bytes().split(b"\n")[0]
    assert header == f"# Session {code_span(SESSION)}".encode()
    before = target.read_bytes()
    code, out, err = cli(capsys, "export", hostile_text, SESSION, "-o", target)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "exists" in err
    assert target.read_bytes() == before
    code, _, _ = cli(
        capsys, "export", hostile_text, SESSION, "-o", target, "--format", "json"
    )
    assert code == 2
    code, _, _ = cli(
        capsys, "export", hostile_text, SESSION, "-o", target, "--format", "json",
        "--force",
    )  # fmt: skip
    assert code == 0 and json.loads(target.read_text())["session_id"] == SESSION
    assert sorted(p.name for p in scratch.iterdir()) == ["db", "out.md"]  # no temp left
    # A planted symbolic link: refused, with or without --force; its target untouched.
    victim = scratch / "victim.txt"
    victim.write_text("precious")
    link = scratch / "planted.md"
    link.symlink_to(victim)
    for extra in ([], ["--force"]):
        code, out, err = cli(
            capsys, "export", hostile_text, SESSION, "-o", link, *extra
        )
        assert code == 2 and "symbolic link" in err and "Traceback" not in err
    assert victim.read_text() == "precious" and link.is_symlink()


def test_distinct_ids_get_distinct_safe_names(scratch: Path) -> None:
    ids = ["a/b", "a_b", "a b", "x" * 80 + "1", "x" * 80 + "2", "", "..", "金閣寺"]
    ids += ["../../etc/passwd", SESSION, SESSION_PLAIN_TITLE]
    names = [export_name(session_id, "md") for session_id in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{12}\.md", name), name
    taken = scratch / export_name("a/b", "md")
    taken.write_text("")
    assert free_path(scratch, "a/b", "md") == taken.with_name(
        taken.name.replace(".md", "-2.md")
    )


def test_export_failures_are_one_line(
    hostile_text: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = scratch / "a-file"
    blocked.write_text("")
    for target, why in (
        (scratch / "missing" / "dir" / "x.md", "no directory"),
        (blocked / "x.md", "Not a directory"),
        (unwritable(scratch) / "x.md", "Permission denied"),
    ):
        code, out, err = cli(capsys, "export", hostile_text, SESSION, "-o", target)
        assert (code, out) == (2, ""), err
        assert err.startswith("lovia-tui: ") and err.count("\n") == 1, err
        assert why in err and str(target) in err


# --------------------------------------------------------------- secrets


def test_secrets_are_redacted_from_quoted_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_API_KEY", "acme-7f3c9b1d2e")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdefghijklmnop")
    monkeypatch.setenv("DEBUG_TOKEN", "1")  # too short to be a secret
    text = redact(
        "401 for key acme-7f3c9b1d2e, sk-proj-abcDEF1234567890 and ghp_abcdefghijklmnop; "
        "headers {'Authorization': 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.x'} "
        "url https://api.example/v1?api_key=QWERTY123456&page=1 token 1"
    )
    for secret in ("acme-7f3c9b1d2e", "sk-proj-", "ghp_", "eyJhbG", "QWERTY"):
        assert secret not in text, text
    assert "Bearer " + HIDDEN in text and "api_key=" + HIDDEN in text
    assert text.endswith("page=1 token 1")
    assert "sk-" not in one_line(RuntimeError("bad key sk-abcdefghijklmnop"))
    stored = {"type": "AuthenticationError", "message": "key sk-abcdefghijklmnop"}
    assert error_line(stored) == f"AuthenticationError: key {HIDDEN}"


def test_an_agent_import_error_never_prints_the_key(
    hostile_text: Path,
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    (scratch / "leaky_agent.py").write_text(
        "import os\n"
        "raise RuntimeError('auth failed for ' + os.environ['OPENAI_API_KEY'])\n"
    )
    monkeypatch.chdir(scratch)
    monkeypatch.syspath_prepend(str(scratch))
    code, out, err = cli(
        capsys, "resume", hostile_text, FAILED_RUN, "--agent", "leaky_agent:agent"
    )
    assert code == 2 and "auth failed for" in err
    assert "0123456789abcdef" not in out + err and HIDDEN in err


async def test_a_hostile_file_name_is_shown_inert(
    hostile_text: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """File names are text from outside too (a directory of *.db)."""
    from lovia_tui.app import make_app

    name = f"[red]x{ESC}]0;PWNED{BEL}{ESC}[2J.db"
    renamed = hostile_text.rename(hostile_text.with_name(name))
    for argv in (["sessions", renamed.parent], ["doctor", renamed.parent]):
        code, out, err = await asyncio.to_thread(cli, capsys, *argv)
        assert code in (0, 1) and err == ""
        assert_inert(out) and printable(name) in out
    (renamed.parent.parent / "bad").mkdir()
    not_a_db = renamed.parent.parent / "bad" / name
    not_a_db.write_text("notes, not a database")
    code, out, err = await asyncio.to_thread(cli, capsys, "sessions", not_a_db)
    assert code == 2 and printable(str(not_a_db)) in err
    assert_inert(err)
    app = make_app([renamed.parent], readonly=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        status = str(app.screen.query_one("#status-line").content)
        assert printable(name) in status and not UNSAFE.search(status)
