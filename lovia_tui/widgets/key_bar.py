"""The footer as one line of text: the keys that work here, each clickable.

Textual's Footer mounts a widget per key and mounts them all again whenever
the focus moves or a binding changes state; on the inspector that made every
focus change a full-screen layout (~150 ms measured, most of opening a
session). This bar shows the same keys (bindings with ``show=True``, disabled
ones dimmed, the command palette's key at the right) as one line of text and
repaints only itself. The ``pinned`` keys (help, quit) and the palette's
stay at the right end; the others are cut, with an ellipsis, when the
terminal is too narrow for all of them (whole keys, then an ellipsis).
"""

from __future__ import annotations

from collections.abc import Callable
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

    def __init__(
        self,
        pinned: tuple[str, ...] = (),
        shown: Callable[[str], bool] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.pinned = pinned
        """Actions whose keys are always shown, at the right end."""
        self.shown = shown
        """Whether a shown binding's action belongs on the bar now (the
        screen's say: e.g. only the focused pane's commands)."""
        self._keys: list[Key] = []
        self._right: list[Key] = []
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
        right: dict[str, Key] = {}
        for key, (_, binding, enabled, _) in screen.active_bindings.items():
            shown = Key(key, app.get_key_display(binding), binding.description, enabled)
            if key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                right["\0palette"] = shown
            elif binding.action in self.pinned:
                right.setdefault(binding.action, shown)
            elif binding.show and (self.shown is None or self.shown(binding.action)):
                keys.setdefault(binding.action, shown)
        order = [*self.pinned, "\0palette"]
        state = (list(keys.values()), [right[name] for name in order if name in right])
        if state != (self._keys, self._right):
            self._keys, self._right = state
            self.refresh()

    def render(self) -> Text:
        styles = tuple(
            self.get_component_rich_style(f"key-bar--{name}")
            for name in ("key", "description", "disabled")
        )
        # Drawn again with its neighbours' repaints: build the line only when it changes.
        state = (self.size.width, styles, self._keys, self._right)
        if state != self._drawn[0]:
            self._drawn = (state, self._line(*styles))
        return self._drawn[1]

    def _line(
        self, key_style: Style, description_style: Style, disabled_style: Style
    ) -> Text:
        def line(keys: list[Key]) -> tuple[Text, list[tuple[int, int, str]]]:
            text, spans = Text(no_wrap=True), []
            for number, shown in enumerate(keys):
                if number:
                    text.append(SEPARATOR)
                start = text.cell_len
                text.append(
                    f" {shown.display} ",
                    style=key_style if shown.enabled else disabled_style,
                )
                text.append(
                    shown.description,
                    style=description_style if shown.enabled else disabled_style,
                )
                spans.append((start, text.cell_len, shown.key))
            return text, spans

        right, right_spans = line(self._right)
        left, left_spans = line(self._keys)
        shift = max(0, self.size.width - right.cell_len)
        room = max(0, shift - len(SEPARATOR))
        if left.cell_len > room:
            # Whole keys only: "C Cle…" named no command.
            left_spans = [span for span in left_spans if span[1] + 2 <= room]
            left = left[: left_spans[-1][1] if left_spans else 0]
            left.append(" …")
        left.append(" " * (shift - left.cell_len))
        self._spans = left_spans + [
            (start + shift, end + shift, key) for start, end, key in right_spans
        ]
        return left + right

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
