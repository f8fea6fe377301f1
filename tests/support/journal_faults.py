"""An action whose journal never hears back, in-process.

As if the process died right after lovia committed and before the journal
recorded the outcome (the real SIGKILL is in ``test_interrupted_actions``):
the entry stays pending.
"""

from __future__ import annotations

import pytest

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.perform import perform
from lovia_tui.core.actions.previews import Preview
from lovia_tui.core.store.workspace import Workspace


async def perform_then_die(
    ws: Workspace, preview: Preview, monkeypatch: pytest.MonkeyPatch
) -> None:
    finish = Journal.finish_sync

    def dies(self, entry_id, status, *args, **kwargs):
        if status == "done":
            raise KeyboardInterrupt  # the end, as far as the journal can tell
        return finish(self, entry_id, status, *args, **kwargs)

    monkeypatch.setattr(Journal, "finish_sync", dies)
    try:
        with pytest.raises(KeyboardInterrupt):
            await perform(ws, preview)
    finally:
        monkeypatch.setattr(Journal, "finish_sync", finish)
