"""``lovia-tui serve`` in a real browser: Debian's chromium, headless, through Selenium.

Skipped, with the reason, where chromium or its driver is missing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import browser as page

from lovia_tui.demo import build_demo

pytestmark = page.needs_chromium


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    demo = tmp_path_factory.mktemp("demo")
    build_demo(demo)
    return demo


@pytest.fixture
def served(demo: Path) -> Iterator[tuple[str, Path, subprocess.Popen[str]]]:
    """``lovia-tui serve`` on the demo, as started on a host (a start URL lets
    one browser in, once): the printed URL, the demo, the server."""
    with page.serve([demo], demo) as (url, server):
        assert "?token=" in url
        yield url, demo, server


def test_printed_url_shows_the_demo_sessions(served, tmp_path: Path) -> None:
    url, _, _ = served
    driver = page.browser(tmp_path / "profile")
    try:
        driver.get(url)
        assert "token=" not in driver.current_url  # swapped for the cookie
        assert not [c for c in driver.get_cookies() if not c.get("httpOnly")]
        page.wait_for(driver, "chat-weekly")
        page.wait_for(driver, "chat-kyoto")
    finally:
        driver.quit()


def test_a_second_browser_needs_a_url_of_its_own(served, tmp_path: Path) -> None:
    """Without the token, or with a URL another browser used: refused, saying
    what to do; the URL the server printed after that use lets it in."""
    url, _, server = served
    first = page.browser(tmp_path / "first")
    second = page.browser(tmp_path / "second")
    try:
        first.get(url)
        page.wait_for(first, "chat-weekly")
        second.get(url.split("?", 1)[0])
        # Chromium may hand back the plain-text page before its text is in it.
        page.until(
            lambda: "open the printed URL" in second.page_source,
            "the refusal never showed",
            timeout=10,
        )
        second.get(url)
        page.until(
            lambda: "open the newest URL the server printed" in second.page_source,
            f"the used URL let a second browser in: {second.page_source[:300]!r}",
            timeout=10,
        )
        second.get(page.next_url(server))
        page.wait_for(second, "chat-weekly")
    finally:
        first.quit()
        second.quit()


def test_export_arrives_as_a_download(served, tmp_path: Path) -> None:
    url, demo, _ = served
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = page.browser(tmp_path / "profile", downloads)
    try:
        driver.get(url)
        page.wait_for(driver, "chat-weekly")
        mark = len(page.screen(driver))
        page.keys(driver, "1")  # the sessions pane: its key bar offers the filter
        page.wait_for(driver, "Filter", after=mark)
        page.keys(driver, "x")
        page.until(
            lambda: any(p.suffix == ".md" for p in downloads.iterdir()),
            "no Markdown download arrived",
        )
        (arrived,) = [p for p in downloads.iterdir() if p.suffix == ".md"]
        assert arrived.stat().st_size > 0
        assert not list(demo.glob("*.md"))  # no file on the server (its cwd)
    finally:
        driver.quit()
