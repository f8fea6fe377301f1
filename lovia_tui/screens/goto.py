"""Command palette provider: go to a session or a run by id."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

MAX_HITS = 50


class GotoProvider(Provider):
    """Matches the ids of loaded sessions and runs."""

    def _targets(self):
        from lovia_tui.screens.inspector import InspectorScreen

        screen = self.screen
        if not isinstance(screen, InspectorScreen):
            return []
        targets = [
            (f"Go to session {key[1]}", partial(screen.go_to_session, key), "session")
            for key in screen.sessions.keys
        ]
        targets += [
            (
                f"Go to run {run.run_id}",
                partial(screen.go_to_run, run.run_id),
                f"run · {screen.runs.status_of(run)} · {run.agent_name}",
            )
            for run in screen.runs.runs
        ]
        return targets

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        hits = 0
        for title, callback, help_text in self._targets():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
                hits += 1
                if hits >= MAX_HITS:
                    return

    async def discover(self) -> Hits:
        for title, callback, help_text in self._targets()[:10]:
            yield DiscoveryHit(title, callback, help=help_text)
