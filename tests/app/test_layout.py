"""Widths as drawn: columns sized to their content with ids and titles first,
and emoji with presentation selectors measured as the terminal draws them
(issue 15, item 8)."""

from __future__ import annotations

import re
import shutil

from rich.cells import cell_len
from rich.text import Text

from lovia_tui.app import make_app
from lovia_tui.pilot import settle
from lovia_tui.screens.inspector import PANES
from lovia_tui.widgets.columns import Column, cell, fit, widest
from lovia_tui.widgets.line_view import LineCache, as_drawn


def rows(row_list) -> list[str]:
    return [row_list.render_line(y).text for y in range(row_list.count)]


async def test_ids_and_titles_whole_at_200_columns(demo_dir):
    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        sessions = rows(screen.sessions.row_list)
        weekly = next(
            line for line in sessions if demo_dir.crash_window_session in line
        )
        assert "Weekly summary" in weekly
        runs = rows(screen.runs.row_list)
        window = next(line for line in runs if demo_dir.crash_window_run in line)
        assert demo_dir.crash_window_session in window, window


async def test_at_120_columns_runs_keep_their_age_and_session(demo_dir):
    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        runs = rows(app.screen.runs.row_list)
        failed = next(line for line in runs if demo_dir.failed_run in line)
        assert demo_dir.failed_session in failed
        assert re.fullmatch(r"\d+[smhd]", failed.split()[2]), failed  # the age


def test_less_important_columns_go_first():
    columns = [
        Column("id", 20, 0),
        Column("status", 11, 1),
        Column("age", 4, 2),
        Column("agent", 10, 3),
    ]
    assert fit(columns, 80) == {"id": 20, "status": 11, "age": 4, "agent": 10}
    assert fit(columns, 40) == {"id": 20, "status": 11, "age": 4}
    assert fit(columns, 10) == {"id": 10}
    assert cell("chat-weekly", 6) == "chat-…" and cell("ab", 4, right=True) == "  ab"


def test_presentation_selectors_are_drawn_as_measured():
    """🗓️ ☀️ ⏱️: Rich counts two cells, most terminals draw one, and the pane's
    border moved; drawn without the selector, both say one."""
    from rich.console import Console
    from rich.style import Style

    text = Text("Weekly 🗓️ ☀️ ⏱️ done")
    text.stylize("bold", 0, 6)
    drawn = as_drawn(text)
    assert drawn.plain == "Weekly 🗓 ☀ ⏱ done" and drawn.spans == text.spans[:1]
    strip = LineCache().strip(text, 30, Style(), Console(width=30))
    assert "\ufe0f" not in strip.text and strip.cell_length == 30


def test_columns_after_a_presentation_selector_stay_aligned():
    """A title holding 🗓️ is padded as drawn (one cell), so the columns after
    it line up with every other row's (they were one cell to the left)."""
    titles = ["Weekly summary 🗓️", "Weekly summary ab", "Timer ⏱️ set"]
    width = widest(titles, 40)
    assert width == len("Weekly summary ab")
    rows = [cell(title, width) + " 1r" for title in titles]
    assert {cell_len(row) for row in rows} == {width + 3}
    assert all("\ufe0f" not in row for row in rows)


async def test_a_32_hex_id_is_cut_in_the_middle_and_the_title_still_shows(tmp_path):
    """A session named as lovia web names forks (32 hex digits) beside a short
    one at 160x45: its row keeps the id's start and end with the title beside
    it, the short id stays whole, and `y` copies the whole id."""
    from lovia.testing import text
    from support.lovia_factory import write_session

    db = tmp_path / "sessions.db"
    long_id = "f1538601d0cf475b867d20c99f0d1e8f"
    await write_session(db, long_id, [[text("Forked.")]], prompts=["A forked chat"])
    await write_session(db, "chat-kyoto", [[text("Hi.")]], prompts=["Kyoto"])
    app = make_app([db])
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # the terminal's clipboard (OSC 52)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        lines = rows(screen.sessions.row_list)
        forked = next(line for line in lines if "A forked chat" in line)
        assert long_id not in forked
        assert re.search(r"f1538601\w*…\w*0d1e8f", forked), forked
        assert any("chat-kyoto" in line for line in lines)
        screen.sessions.row_list.cursor = [k[1] for k in screen.sessions.shown].index(
            long_id
        )
        await settle(pilot)
        await pilot.press("y")
        assert copied == [long_id]


def test_cut_in_the_middle_only_where_an_id_is_long():
    assert cell("f1538601d0cf475b867d20c99f0d1e8f", 14, middle=True) == "f153860…0d1e8f"
    assert cell("chat-export", 8, middle=True) == "chat-ex…"  # too narrow to cut twice
    assert cell("chat-kyoto", 14, middle=True) == "chat-kyoto    "
    capped = Column("id", 32, 0, share=0.45)
    assert fit([capped, Column("title", 30, 1, grows=True)], 37) == {
        "id": 20,  # 45% would be 16: a capped id keeps 20 cells
        "title": 16,
    }


def test_a_page_of_summaries_widens_the_columns_without_walking_every_session():
    """Summaries arrive a screenful at a time: measuring them walked every
    key listed (55 ms of the UI's time a page at 166,000 sessions)."""
    from pathlib import Path

    from lovia_tui.core.models import SessionSummary
    from lovia_tui.widgets.session_list import SessionList

    class Walked(list):
        walks = 0

        def __iter__(self):
            Walked.walks += 1
            return super().__iter__()

    sessions = SessionList()
    sessions.keys = [("f", f"s{n}") for n in range(1_000)]
    sessions.refilter()
    sessions.shown = Walked(sessions.shown)
    title = "A title of twenty-six cells"
    summary = SessionSummary(Path("f"), "s1", 12, 1, None, title=title)
    sessions.take_summaries({("f", "s1"): summary})
    assert Walked.walks == 0
    widths = {column.name: column.natural for column in sessions._columns}
    assert widths["title"] == cell_len(title) and widths["runs"] == len("12r")


async def test_at_100_columns_the_transcript_stays_readable(demo_dir):
    """Below 120 columns the side panes give up some of theirs: at 100 the
    transcript had 22 (the sessions and runs panes' minimums took the rest)."""
    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        widths = {
            name: screen.query_one(f"#{name}-pane").region.width for name in PANES
        }
        assert widths["transcript"] >= 40, widths
        assert min(widths.values()) >= 24, widths


async def test_a_long_id_in_a_pane_title_uses_the_panes_width(tmp_path):
    """A pane title cut each id to 48 cells however wide the pane: at 250
    columns a 59-character session id showed as `support-…-end`. It is whole
    where the pane has room, cut in the middle to what is left where it has
    not, and the counts after it stay either way."""
    from lovia import SQLiteSession
    from lovia.transcript import AssistantTextEntry, InputEntry

    session_id = f"support-thread-{'0123456789' * 4}-end"
    path = tmp_path / "long.db"
    await SQLiteSession(path, wal=True).append(
        session_id,
        [InputEntry(role="user", content="hi"), AssistantTextEntry(content="ok")],
        run_id="r1",
    )
    app = make_app([path])
    async with app.run_test(size=(250, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        title = app.screen.query_one("#transcript-title")
        shown = str(title.content)
        assert shown == f"Transcript · {session_id} · 2 entries shown · 3/3", shown
        await pilot.resize_terminal(160, 30)
        await settle(pilot)
        shown = str(title.content)
        width = title.content_region.width
        assert shown.endswith(" · 2 entries shown · 3/3") and "…" in shown, shown
        assert len(shown) == width and len(shown.split(" · ")[1]) > 24, shown
        assert shown.startswith("Transcript · support-thread") and "9-end · 2" in shown


async def test_a_long_title_fills_the_sessions_column_to_its_edge(tmp_path):
    """A session's title was cut to 60 characters when read, so a wide list
    (maximized, on a wide screen) showed it cut mid-column: it runs to the
    column's edge, and ends there in "…"."""
    from lovia import SQLiteSession
    from lovia.transcript import AssistantTextEntry, InputEntry

    words = " ".join(f"word{n:03d}" for n in range(40))  # 319 characters
    path = tmp_path / "titles.db"
    await SQLiteSession(path, wal=True).append(
        "s1",
        [InputEntry(role="user", content=words), AssistantTextEntry(content="ok")],
        run_id="r1",
    )
    app = make_app([path])
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        row_list = app.screen.sessions.row_list
        row_list.focus()
        app.screen.maximize(row_list)
        await settle(pilot)
        [line] = [line for line in rows(row_list) if "s1" in line]
        title = "word000" + line.split("word000", 1)[1].rsplit(" 1r", 1)[0].rstrip()
        assert title.endswith("…") and cell_len(title) > 150, line


async def test_a_dialogs_buttons_stay_on_screen_at_60x15(demo_dir, tmp_path):
    """The dialog's title is kept to one line (cut with …): a rewind to a user
    turn, whose title wrapped at 60 columns, left its buttons below a 60x15
    screen (docs/stories.md says they stay)."""
    from lovia_tui.screens.action_dialog import ActionScreen

    directory = shutil.copytree(demo_dir.directory, tmp_path / "demo")
    app = make_app([directory])
    async with app.run_test(size=(60, 15)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"kyoto", "enter", "2", *"kkkkk", "W")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ActionScreen)
        title = str(dialog.query_one(".dialog-title").render())
        assert (
            "user turn" in title and dialog.query_one(".dialog-title").size.height == 1
        )
        for button in dialog.query("Button"):
            assert button.region.bottom <= 15, button
            assert dialog.get_widget_at(*button.region.center)[0] is button
