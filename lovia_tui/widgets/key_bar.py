"""The footer as one line of text: the keys that work here, each clickable.

Textual's Footer mounts a widget per key and mounts them all again whenever
the focus moves or a binding changes state; on the inspector that made every
focus change a full-screen layout (~150 ms measured, most of opening a
session). This bar shows the same keys (bindings with ``show=True``, disabled
ones dimmed, the command palette's key at the right) as one line of text and
repaints only itself.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

SEPARATOR = "  "


class Key(NamedTuple):
    """One key as shown: the key to simulate on a click, its label and state."""

    key: str
    display: str
    description: str
    enabled: bool


class KeyBar(Widget):
    """The active bindings of the screen, like Textual's Footer, in one line."""

    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description", "key-bar--disabled"}

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._keys: list[Key] = []
        self._palette: Key | None = None
        self._spans: list[tuple[int, int, str]] = []
        self._drawn: tuple[tuple | None, Text] = (None, Text())

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if screen is not self.screen:
            return
        app = self.app
        keys: dict[str, Key] = {}
        palette = None
        for key, (_, binding, enabled, _) in screen.active_bindings.items():
            shown = Key(key, app.get_key_display(binding), binding.description, enabled)
            if key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = shown
            elif binding.show:
                keys.setdefault(binding.action, shown)
        state = (list(keys.values()), palette)
        if state != (self._keys, self._palette):
            self._keys, self._palette = state
            self.refresh()

    def render(self) -> Text:
        styles = tuple(
            self.get_component_rich_style(f"key-bar--{name}")
            for name in ("key", "description", "disabled")
        )
        # Drawn again with its neighbours' repaints: build the line only when it changes.
        state = (self.size.width, styles, self._keys, self._palette)
        if state != self._drawn[0]:
            self._drawn = (state, self._line(*styles))
        return self._drawn[1]

    def _line(
        self, key_style: Style, description_style: Style, disabled_style: Style
    ) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []

        def add(shown: Key) -> None:
            start = text.cell_len
            text.append(
                f" {shown.display} ",
                style=key_style if shown.enabled else disabled_style,
            )
            text.append(
                shown.description,
                style=description_style if shown.enabled else disabled_style,
            )
            self._spans.append((start, text.cell_len, shown.key))

        for shown in self._keys:
            add(shown)
            text.append(SEPARATOR)
        if self._palette:
            room = (
                self.size.width
                - text.cell_len
                - len(self._palette.display)
                - len(self._palette.description)
                - 2
            )
            if room >= 0:
                text.append(" " * room)
                add(self._palette)
        return text

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
