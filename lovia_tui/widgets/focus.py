"""Moving the focus in answer to a key, before the next key is handled."""

from __future__ import annotations

from textual.widget import Widget


def focus_now(widget: Widget) -> None:
    """Focus ``widget`` at once. ``Widget.focus()`` waits behind the keys
    already queued, so in a burst (a fast typist, tmux ``send-keys 3 Down``,
    a paste) those keys reached the old focus: `3` then Down moved the
    sessions cursor, and the run acted on was not the one under the eyes."""
    widget.screen.set_focus(widget)
