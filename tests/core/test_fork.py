"""fork: a session's first N entries copied into a new session through lovia,
agreeing with lovia web's own ChatStore.fork and lovia's rewind split; undo
removes the copy exactly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lovia import Runner, SQLiteSession
from lovia.testing import text
from lovia.web.store import ChatStore
from support.lovia_factory import SCRIPTS, agent, copy_db, rows, write_session

from lovia_tui.cli import main
from lovia_tui.core.actions.fork import preview_fork
from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.workspace import Workspace

pytestmark = pytest.mark.usefixtures("private_journal")


async def cli_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> dict:
    assert await asyncio.to_thread(main, [str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)


def shape(segments) -> list:
    return [(s.run_id, [e for e in s.entries], s.meta) for s in segments]


async def web_chat(path: Path) -> list[str]:
    store = ChatStore.sqlite(path)
    await store.upsert("chat", agent="worker", title="Three runs")
    return await write_session(path, "chat", SCRIPTS)


async def test_a_web_chat_forks_as_lovia_web_forks_it_and_undo_removes_it(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scratch / "web.db"
    run_ids = await web_chat(path)
    reference = copy_db(path, scratch / "reference.db")
    before = rows(path)
    # Entries 0-3 are the first run; 4 is the second run's user message.
    out = await cli_json(capsys, "fork", path, "chat", "--keep", "4", "--yes", "--json")
    assert out["preview"]["web_ref"] == f"{run_ids[1]}:0"
    fork_id = out["result"]["new_session_id"]

    lovia_store = ChatStore.sqlite(reference)
    lovia_id = await lovia_store.fork("chat", ref=f"{run_ids[1]}:0")
    ours, theirs = ChatStore.sqlite(path), lovia_store
    assert shape(await ours.session.segments(fork_id)) == shape(
        await theirs.session.segments(lovia_id)
    )
    mine, lovias = await ours.get(fork_id), await theirs.get(lovia_id)
    assert (mine.title, mine.origin_kind, mine.origin_session_id, mine.origin_ref) == (
        lovias.title,
        "fork",
        "chat",
        lovias.origin_ref,
    )
    assert shape(await ours.session.segments("chat")) == shape(
        await theirs.session.segments("chat")
    ), "the source is left as it was"

    undone = await asyncio.to_thread(
        main, ["undo", str(path), str(out["result"]["journal_id"]), "--yes"]
    )
    assert undone == 0
    assert rows(path) == before


async def test_a_web_fork_is_cut_only_before_a_user_message(scratch: Path) -> None:
    path = scratch / "web.db"
    await web_chat(path)
    ws = await Workspace.open([path])
    try:
        with pytest.raises(ActionError, match=r"user message's index \(0, 4, 10\)"):
            await preview_fork(ws, "chat", 5)
        with pytest.raises(ActionError, match="names its forks itself"):
            await preview_fork(ws, "chat", 4, "mine")
        whole = await preview_fork(ws, "chat", 12)
        assert (whole.web_ref, whole.entries_copied, whole.truncated) == (
            None,
            12,
            None,
        )
        past = await preview_fork(ws, "chat", 99)  # as rewind: nothing to do
        assert (past.past_end, past.noop, past.entries_copied) == (True, True, 0)
    finally:
        await ws.close()


async def _fork_as_f(
    capsys: pytest.CaptureFixture[str], two_files: tuple[Path, Path], *, keep: int
) -> dict:
    """``lovia-tui fork`` of session "s" into "f", keeping ``keep`` entries."""
    sessions, runs = two_files
    return await cli_json(
        capsys, "fork", sessions, runs, "s", "--keep", str(keep), "--as", "f",
        "--yes", "--json",
    )  # fmt: skip


async def test_another_layout_forks_with_lovias_rewind_split(
    two_files: tuple[Path, Path], scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions, runs = two_files
    before = rows(sessions)
    rewound = copy_db(sessions, scratch / "rewound.db")
    # Keep 7: the second run cut after its parallel calls, before any result.
    out = await _fork_as_f(capsys, two_files, keep=7)
    preview = out["preview"]
    assert (preview["new_session_id"], preview["entries_copied"]) == ("f", 5)
    assert [c["call_id"] for c in preview["truncated"]["dropped_calls"]] == ["c1", "c2"]
    await SQLiteSession(rewound).rewind("s", keep_entries=7)
    assert shape(await SQLiteSession(sessions).segments("f")) == shape(
        await SQLiteSession(rewound).segments("s")
    )
    with pytest.raises(ActionError, match="'f' already exists"):
        ws = await Workspace.open([sessions, runs])
        try:
            await preview_fork(ws, "s", 2, "f")
        finally:
            await ws.close()
    code = await asyncio.to_thread(
        main,
        ["undo", str(sessions), str(runs), str(out["result"]["journal_id"]), "--yes"],
    )
    assert code == 0
    assert rows(sessions) == before


async def test_a_fork_continued_since_is_not_undone_from_under_its_runs(
    two_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Undoing it would take out the copied beginning and leave the run stored
    in the fork since without it: refused, saying how to remove it whole."""
    sessions, runs = two_files
    out = await _fork_as_f(capsys, two_files, keep=4)
    await Runner.run(
        agent([text("Go on.")]), "And then?",
        session=SQLiteSession(sessions), session_id="f",
    )  # fmt: skip
    continued = rows(sessions)
    capsys.readouterr()
    undo = ["undo", str(sessions), str(runs), str(out["result"]["journal_id"]), "--yes"]
    assert await asyncio.to_thread(main, undo) == 2
    assert "session 'f' has 1 run stored since" in capsys.readouterr().err
    assert rows(sessions) == continued
