"""Regenerate the README screenshots from the running app on a fresh demo.

``python -m lovia_tui.screenshots DIR`` (``make screenshots``) builds the demo
in a temporary directory, drives the app with the pilot and saves SVGs.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from lovia_tui.app import make_app
from lovia_tui.pilot import settle
from lovia_tui.screens.inspector import InspectorScreen

SHOTS: list[tuple[str, tuple[int, int], list[str]]] = [
    ("main", (160, 42), []),
    ("crashed-run", (160, 42), ["enter"]),
    ("help", (120, 42), ["question_mark"]),
    ("narrow", (80, 24), ["3"]),
]


async def _shoot(directory: Path, target: Path) -> None:
    for name, size, keys in SHOTS:
        app = make_app([directory], stale_after=2.0, agent_spec="lovia_tui.demo:agent")
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            if name == "crashed-run":
                await pilot.press("3")
                screen = app.screen
                assert isinstance(screen, InspectorScreen)
                runs = screen.runs
                shown = [r.run_id if r else None for r in runs.shown]
                runs.row_list.cursor = shown.index("run-crashed")
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
            app.save_screenshot(str(target / f"{name}.svg"))
        print(f"wrote {target / f'{name}.svg'}")


def main() -> None:
    from lovia_tui.demo import build_demo

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lovia-tui-shots-") as tmp:
        build_demo(Path(tmp))
        # Let the crashed runs age past the 2 s staleness threshold.
        asyncio.run(asyncio.sleep(2.5))
        asyncio.run(_shoot(Path(tmp), target))


if __name__ == "__main__":
    main()
