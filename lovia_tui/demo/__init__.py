"""A demo workspace written by real lovia runs: every run state the inspector shows.

``lovia_tui.demo:agent`` is the entry-agent factory that resumes the demo's
unfinished runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agent import agent

if TYPE_CHECKING:
    from .build import DemoWorkspace, build_demo

__all__ = ["DemoWorkspace", "agent", "build_demo"]


def __getattr__(name: str) -> Any:
    # Lazy: build pulls in lovia.web (~0.7 s) and imports crash, which
    # `python -m lovia_tui.demo.crash` children must not find pre-imported.
    if name in ("DemoWorkspace", "build_demo"):
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
