"""Command palette provider: go to a session or a run by id.

The palette reads a hit's help, and the match highlight its text, as markup:
stored text (ids, a run's status and agent) goes only into the hit's text, as
printable Content; a text with brackets is shown without the highlight.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from lovia_tui.core.formatting import printable

MAX_HITS = 50


class GotoProvider(Provider):
    """Matches the ids of loaded sessions and runs."""

    def _targets(self):
        from lovia_tui.screens.inspector import InspectorScreen

        screen = self.screen
        if not isinstance(screen, InspectorScreen):
            return []
        targets = [
            (
                printable(f"Go to session {key[1]}"),
                partial(screen.go_to_session, key),
                "session",
            )
            for key in screen.sessions.keys
        ]
        targets += [
            (
                printable(
                    f"Go to run {run.run_id} · {screen.runs.status_of(run)} · {run.agent_name}"
                ),
                partial(screen.go_to_run, run.run_id),
                "run",
            )
            for run in screen.runs.runs
        ]
        targets += [
            (
                printable(f"Go to run {run_id} · {status}"),
                partial(screen.go_to_run, run_id),
                "run",
            )
            for run_id, status in screen.runs.unfinished_unread()
        ]
        return targets

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        hits = 0
        for title, callback, help_text in self._targets():
            score = matcher.match(title)
            if score > 0:
                shown = matcher.highlight(title) if "[" not in title else Content(title)
                yield Hit(score, shown, callback, help=help_text)
                hits += 1
                if hits >= MAX_HITS:
                    return

    async def discover(self) -> Hits:
        for title, callback, help_text in self._targets()[:10]:
            yield DiscoveryHit(Content(title), callback, help=help_text)
