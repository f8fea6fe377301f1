"""The inspector on lovia web's history (tests/support/web_history_db.py): a
subagent task chat listed under its parent, the records of runs that saved
nothing among the chat's runs, the task's and the fork's ties on top."""

from __future__ import annotations

from support.web_history_db import CHAT, TASK, WebHistory

from lovia_tui.app import make_app
from lovia_tui.demo.web_history import REJECTED, REJECTED_RUN, STOPPED_RUN
from lovia_tui.pilot import settle
from lovia_tui.view.kinds import RowKind
from lovia_tui.widgets.session_list import TASK as TASK_MARK
from lovia_tui.widgets.transcript_rows import summary_line


def lines(screen) -> list[tuple[str, str]]:
    rows = screen.transcript.rows
    return [(row.kind, summary_line(row, rows, False).plain) for row in rows]


async def test_records_show_where_they_happened_and_a_task_under_its_parent(
    web_history: WebHistory,
) -> None:
    app = make_app([web_history.path])
    async with app.run_test(size=(170, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        sessions = screen.sessions
        shown = [sid for _, sid in sessions.shown]
        assert shown[shown.index(CHAT) + 1] == TASK
        task_row = sessions.list.render_row(shown.index(TASK), 120).plain
        assert task_row.startswith(f"  {TASK_MARK}{TASK}")
        assert TASK_MARK not in sessions.list.render_row(shown.index(CHAT), 120).plain

        screen.go_to_session(next(k for k in sessions.keys if k[1] == CHAT))
        await settle(pilot)
        shown_rows = lines(screen)
        kinds = [kind for kind, _ in shown_rows]
        assert kinds.count(RowKind.RECORD) == 2
        first, second = (n for n, kind in enumerate(kinds) if kind == RowKind.RECORD)
        segments = [n for n, kind in enumerate(kinds) if kind == RowKind.SEGMENT]
        # Between the first run's entries and the second run.
        assert segments[0] < first < second == segments[1] - 1
        assert REJECTED_RUN in shown_rows[first][1] and REJECTED in shown_rows[first][1]
        assert STOPPED_RUN in shown_rows[second][1]
        assert "cancelled" in shown_rows[second][1]
        assert shown_rows[0] == (
            RowKind.CHAT,
            "1 subagent task chat, listed under it in Sessions",
        )
        # The last run brought the task's report back: lovia web's source says so.
        assert shown_rows[segments[-1]][1].endswith(" · by report of subagent task t1")
        assert " · by " not in shown_rows[segments[0]][1]

        # Enter unfolds a record: every field, its error whole.
        transcript = screen.transcript
        transcript.select_key(transcript.rows[first].key)
        transcript.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert transcript.rows[first].key in transcript.window.expanded
        details = transcript.window.details_for(
            transcript.rows[first], 160, app.console
        )
        text = "\n".join(line.plain for line in details)
        assert f"error:       {REJECTED}" in text
        assert "none in this chat (no segment, no checkpoint)" in text

        screen.go_to_session(next(k for k in sessions.keys if k[1] == TASK))
        await settle(pilot)
        assert lines(screen)[0] == (
            RowKind.CHAT,
            f"↳ subagent task of chat {CHAT} “Launch checklist 🚀”",
        )
        screen.go_to_session(next(k for k in sessions.keys if k[1] == web_history.fork))
        await settle(pilot)
        assert lines(screen)[0][1].startswith(f"⑂ forked from chat {CHAT} before")
