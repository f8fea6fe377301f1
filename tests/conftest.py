"""Shared fixtures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lovia_tui.demo import DemoWorkspace


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> DemoWorkspace:
    """The demo workspace, built once per test session: copy it before mutating."""
    from lovia_tui.demo import build_demo  # only sessions that use it pay for lovia.web

    return build_demo(tmp_path_factory.mktemp("demo"))
