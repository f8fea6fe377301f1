"""What the first frame shows: read before the screen is composed."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lovia_tui.core.models import SessionKey, SessionSummary
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.runs.listing import RunList
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.widgets.sessions_pane import FIRST_PAGE
from lovia_tui.widgets.worker_errors import EXPECTED


@dataclass(frozen=True)
class FirstPage:
    """The newest sessions and the summaries of a screenful of them, read
    before the screen is composed so that its first frame shows them."""

    keys: list[SessionKey]
    summaries: dict[SessionKey, SessionSummary]
    runs: RunList | None = None
    """The newest checkpoints' first rows (``RunList.first_rows``)."""

    @classmethod
    async def read(cls, workspace: Workspace, rows: int) -> FirstPage | None:
        try:
            keys = await workspace.recent_sessions(FIRST_PAGE)
            page = cls(keys, await workspace.summaries(keys[:rows]))
        except EXPECTED:
            return None  # the screen's own worker reads again and says why
        runs = RunList(workspace.checkpoint_dbs, workspace.links, DEFAULT_STALE_AFTER)
        try:
            await runs.first_rows(rows)
        except EXPECTED:
            return page  # the runs pane's own walk reads again and says why
        return replace(page, runs=runs)
