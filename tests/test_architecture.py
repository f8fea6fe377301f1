"""The shape the code promises: a Textual-free core, and a light start-up."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import lovia_tui
import lovia_tui.core

CORE_MODULES = sorted(
    f"lovia_tui.core.{m.name}" for m in pkgutil.iter_modules(lovia_tui.core.__path__)
)


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_the_core_never_imports_textual():
    imports = "; ".join(f"import {name}" for name in CORE_MODULES)
    loaded = _loaded_after(imports)
    assert not {
        name for name in loaded if name == "textual" or name.startswith("textual.")
    }


def test_starting_the_app_does_not_import_lovia():
    """lovia takes ~0.7 s to import; browsing never needs it, actions load it lazily."""
    loaded = _loaded_after("import lovia_tui.app, lovia_tui.cli")
    assert "lovia" not in loaded


def test_the_doctor_and_the_inspector_share_flows_without_a_cycle():
    """The doctor's fixes go through the flows the inspector's keys use
    (``ActionFlows``, ``RunFlows``), imported by both; the doctor never
    imports the inspector, which imports it on first use, and the flows
    import neither."""
    import lovia_tui.screens.doctor as doctor

    loaded = _loaded_after("import lovia_tui.screens.doctor")
    assert "lovia_tui.screens.inspector" not in loaded
    assert "lovia_tui.screens.inspector_base" not in loaded
    assert {"lovia_tui.screens.action_flows", "lovia_tui.screens.run_flows"} <= loaded
    source = Path(doctor.__file__).read_text(encoding="utf-8")
    assert "screens.inspector" not in source
    for flows in ("action_flows", "run_flows"):
        loaded = _loaded_after(f"import lovia_tui.screens.{flows}")
        assert not {"lovia_tui.screens.inspector", "lovia_tui.screens.doctor"} & loaded


def test_the_panes_are_components_not_parts_of_the_screen():
    """Each pane is a widget with its own reads; the screen has one base
    (no mixins), and no pane imports a screen."""
    from lovia_tui.screens.inspector import InspectorScreen
    from lovia_tui.screens.inspector_base import InspectorBase

    assert InspectorScreen.__bases__ == (InspectorBase,)
    widgets = Path(lovia_tui.__file__).parent / "widgets"
    for module in widgets.glob("*.py"):
        assert "lovia_tui.screens" not in module.read_text(encoding="utf-8"), module
