"""Session ids that differ only by whitespace at an end (``mix``, ``mix ``,
`` mix``) look different in ``sessions`` and in the app's list, through the
one formatting helper both use; an ordinary id looks as it is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.lovia_factory import SCRIPTS, copy_db, scratch_directory, write_session

from lovia_tui.app import make_app
from lovia_tui.cli import main
from lovia_tui.core.formatting import printable_id
from lovia_tui.pilot import settle

IDS = ("mix", "mix ", " mix", "mix\u00a0", "chat kyoto")
SHOWN = ("mix", "mix␠", "␠mix", "mix\\u00a0", "chat kyoto")


def test_whitespace_at_an_ids_ends_is_shown_and_nothing_else_changes() -> None:
    assert [printable_id(sid) for sid in IDS] == list(SHOWN)
    assert printable_id("a\tb ") == "a␉b␠" and printable_id("") == ""
    assert printable_id("  ") == "␠␠"


@pytest.fixture(scope="module")
def lookalike_template() -> Iterator[Path]:
    with scratch_directory() as directory:
        path = directory / "sessions.db"
        for sid in IDS:
            asyncio.run(write_session(path, sid, SCRIPTS[:1]))
        yield path


@pytest.fixture
def lookalikes(lookalike_template: Path, scratch: Path) -> Path:
    return copy_db(lookalike_template, scratch / lookalike_template.name)


def test_sessions_lists_each_id_as_it_differs(
    lookalikes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sessions", str(lookalikes)]) == 0
    lines = capsys.readouterr().out.splitlines()
    cells = [line.split("│")[1].strip(" ") for line in lines if "│" in line]
    assert sorted(cells) == sorted(SHOWN), cells


async def test_the_apps_list_shows_the_same(lookalikes: Path) -> None:
    app = make_app([lookalikes])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        pane = app.screen.sessions
        rows = [pane.list.render_row(n, 80).plain for n in range(len(IDS))]
        width = max(map(len, SHOWN))  # the id column: as wide as the longest
        cells = sorted(row[2 : 2 + width].rstrip(" ") for row in rows)
        assert cells == sorted(SHOWN), rows
