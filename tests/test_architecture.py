"""The shape the code promises: layers that import only downwards, no import
cycle, a Textual-free core and view, small modules, tests that share helpers
only through tests/support, and a light start-up.

The import graph is read from the source with ``ast`` (every ``import``,
lazy ones inside functions included; those under ``if TYPE_CHECKING:`` are
annotations only and never run, so they are left out).
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import lovia_tui

PACKAGE = Path(lovia_tui.__file__).parent

LAYERS: list[tuple[str, ...]] = [
    ("lovia_tui.__main__",),
    ("lovia_tui.cli", "lovia_tui.screenshots"),
    ("lovia_tui.serve",),
    ("lovia_tui.app", "lovia_tui.demo", "lovia_tui.pilot"),
    ("lovia_tui.screens",),
    ("lovia_tui.widgets",),
    ("lovia_tui.messages", "lovia_tui.commands"),
    ("lovia_tui.view",),
    ("lovia_tui.core.doctor",),
    ("lovia_tui.core.runs",),
    (
        "lovia_tui.core.actions",
        "lovia_tui.core.live",
        "lovia_tui.core.search",
        "lovia_tui.core.export",
    ),
    ("lovia_tui.core.store",),
    ("lovia_tui.core",),
    ("lovia_tui",),
]
"""Top to bottom. A module belongs to the unit that is its longest prefix; it
may import its own unit and any unit of a lower layer, never one beside or
above it. ``lovia_tui.core`` holds the core's shared base (errors,
formatting, models, entries, run statuses); ``lovia_tui`` itself (only its
version) is the one unit that matches no module but itself."""
MAX_LINES = 400
OVER_MAX_LINES: set[str] = set()


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def _imports(module: str) -> frozenset[str]:
    """Every module ``module`` imports at run time (external ones by full name)."""
    path = _modules()[module]
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit_node(other)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in _modules() else base)
        visit(node)

    visit(ast.parse(path.read_text(), str(path)))
    return frozenset(found - {module})


def _unit(module: str) -> tuple[int, str]:
    """(layer index, unit prefix) of a module of the package."""
    matches = [
        (len(prefix), depth, prefix)
        for depth, layer in enumerate(LAYERS)
        for prefix in layer
        if module == prefix
        or (prefix != "lovia_tui" and module.startswith(prefix + "."))
    ]
    assert matches, f"{module} is in no layer: add it to LAYERS"
    _, depth, prefix = max(matches)
    return depth, prefix


def _internal(module: str) -> set[str]:
    return {name for name in _imports(module) if name in _modules()}


def test_layers_import_only_downwards():
    wrong = []
    for module in _modules():
        depth, unit = _unit(module)
        for imported in _internal(module):
            their_depth, their_unit = _unit(imported)
            if their_unit != unit and their_depth <= depth:
                wrong.append(f"{module} ({unit}) imports {imported} ({their_unit})")
    assert not wrong, "\n".join(sorted(wrong))


def test_every_layer_holds_modules():
    """A renamed package must not leave its layer empty (and the rule void)."""
    units = {_unit(module)[1] for module in _modules()}
    assert {prefix for layer in LAYERS for prefix in layer} <= units


def test_no_import_cycle():
    """Tarjan's strongly connected components over the package's imports."""
    graph = {module: sorted(_internal(module)) for module in _modules()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def connect(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph[module]:
            if imported not in index:
                connect(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for module in graph:
        if module not in index:
            connect(module)
    assert not cycles, cycles


def test_core_and_view_import_no_ui_library():
    """The core and the view layer are plain Python: no Textual, no Rich."""
    wrong = {
        f"{module} imports {name}"
        for module in _modules()
        if module.startswith(("lovia_tui.core", "lovia_tui.view"))
        for name in _imports(module)
        if name.partition(".")[0] in ("textual", "rich")
    }
    assert not wrong, sorted(wrong)


def test_modules_stay_small():
    over = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in _modules().values()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert set(over) <= OVER_MAX_LINES, over


def test_tests_share_helpers_only_through_support():
    """A test module imports no other test module: what tests share lives in
    ``tests/support`` (a helper left in a test file is found here)."""
    tests = Path(__file__).parent
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            wrong += [
                f"{path.relative_to(tests)} imports {name}"
                for name in names
                if name.rpartition(".")[2].startswith(("test_", "conftest"))
            ]
    assert not wrong, wrong


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_the_core_never_imports_textual():
    """At run time too: importing every core module loads no Textual."""
    import lovia_tui.core

    names = [
        m.name
        for m in pkgutil.walk_packages(lovia_tui.core.__path__, "lovia_tui.core.")
    ]
    assert len(names) > 40  # the walk reached into the subpackages
    loaded = _loaded_after("; ".join(f"import {name}" for name in names))
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
