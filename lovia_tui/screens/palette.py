"""The command palette: Textual's, made safe against paging before it is drawn."""

from __future__ import annotations

from textual.command import CommandList, CommandPalette


class Palette(CommandPalette):
    """Textual's command palette whose PgUp/PgDn wait for a laid-out list.

    Textual 8.2's ``OptionList`` pages through lines it builds only once it has a
    size; a PgUp that arrives with the palette's first keys (``ctrl+p`` then
    ``PgUp`` in one burst) found no lines and raised ``KeyError``, ending the app.
    """

    PAGE_MOVES = frozenset({"page_up", "page_down"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "command_list" and parameters and parameters[0] in self.PAGE_MOVES:
            # The same test OptionList makes before it builds its lines.
            return bool(self.query_one(CommandList).scrollable_content_region)
        return super().check_action(action, parameters)
