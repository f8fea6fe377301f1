"""The panes are components: each says what happened by message, and the
screen routes it (issue 15, the structural part)."""

from __future__ import annotations

from textual.message import Message

from lovia_tui.app import make_app
from lovia_tui.demo import DemoWorkspace
from lovia_tui.pilot import settle
from lovia_tui.view.kinds import Pane
from lovia_tui.widgets.runs_pane import RunsPane
from lovia_tui.widgets.sessions_pane import SessionsPane

ANNOUNCED = (
    SessionsPane.Highlighted,
    SessionsPane.Chosen,
    RunsPane.Chosen,
    RunsPane.Opened,
)


async def test_the_panes_say_what_happened_and_the_screen_routes_it(
    demo_dir: DemoWorkspace,
):
    seen: list[Message] = []

    def hook(message: Message) -> None:
        # Called at each node the message bubbles through: keep it once.
        if isinstance(message, ANNOUNCED) and all(m is not message for m in seen):
            seen.append(message)

    app = make_app(demo_dir.files, readonly=True)
    async with app.run_test(size=(160, 40), message_hook=hook) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("1", "down")
        await settle(pilot)
        lit = screen.sessions.selected
        highlighted = [m for m in seen if isinstance(m, SessionsPane.Highlighted)]
        assert highlighted and highlighted[-1].key == lit
        # Routed: the transcript pane shows the session the list announced.
        assert screen.transcript_pane.session_key == lit
        await pilot.press("enter")
        await settle(pilot)
        assert [m.key for m in seen if isinstance(m, SessionsPane.Chosen)] == [lit]
        assert screen.focused_pane is Pane.TRANSCRIPT

        await pilot.press("3", "down")
        await settle(pilot)
        run = screen.runs.selected
        assert run is not None
        chosen = [m for m in seen if isinstance(m, RunsPane.Chosen)]
        assert chosen and chosen[-1].run == run
        # The detail below is the highlighted run's, read by the pane itself.
        assert screen.runs.detail.run == run
        await pilot.press("enter")
        await settle(pilot)
        [opened] = [m for m in seen if isinstance(m, RunsPane.Opened)]
        assert opened.run == run
        assert screen.focused_pane is Pane.TRANSCRIPT
        shown = screen.transcript_pane
        assert shown.run_view == run.run_id or (
            shown.session_key is not None
            and shown.session_key[1] == screen.runs.links[run.run_id].session_id
        )
