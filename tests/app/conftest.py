"""Fixtures the app's tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lovia_tui.demo import DemoWorkspace


@pytest.fixture
def demo(demo_dir: DemoWorkspace, tmp_path: Path) -> DemoWorkspace:
    """A private copy of the demo, free to mutate."""
    copy = DemoWorkspace(tmp_path / "demo")
    shutil.copytree(demo_dir.directory, copy.directory)
    return copy
