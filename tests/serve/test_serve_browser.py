"""``lovia-tui serve`` in a real browser: Debian's chromium, headless, through Selenium.

Skipped, with the reason, where chromium or its driver is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ports import free_port

from lovia_tui.demo import build_demo

CHROMEDRIVER = "/usr/bin/chromedriver"
_MISSING = [
    name
    for name, found in (
        ("chromium", shutil.which("chromium")),
        ("chromedriver", os.access(CHROMEDRIVER, os.X_OK)),
    )
    if not found
]
pytestmark = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"browser tests need {' and '.join(_MISSING)} (apt-get install chromium chromium-driver)",
)

_RECORD_SCREEN = """
window.__screen = "";
const decoder = new TextDecoder();
const Native = window.WebSocket;
window.WebSocket = function (...args) {
  const socket = new Native(...args);
  socket.addEventListener("message", (event) => {
    if (event.data instanceof ArrayBuffer) {
      window.__screen += decoder.decode(event.data, { stream: true });
    } else if (typeof event.data === "string") { window.__screen += event.data; }
  });
  return socket;
};
window.WebSocket.prototype = Native.prototype;
Object.assign(window.WebSocket, Native);
"""
"""Keeps every byte the app sends the page: xterm.js draws on a canvas."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``lovia-tui serve`` on the demo, as started on a host; yields the printed URL."""
    demo = tmp_path_factory.mktemp("demo")
    build_demo(demo)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lovia_tui",
            "serve",
            str(demo),
            "--port",
            str(free_port()),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=demo,
    )
    assert server.stdout is not None
    url = ""
    for line in server.stdout:
        if "open http" in line:
            url = line.split("open ", 1)[1].strip()
            break
    assert url.startswith("http://127.0.0.1:") and "?token=" in url
    yield url, demo
    server.send_signal(signal.SIGINT)
    server.wait(timeout=30)


def _browser(profile: Path, downloads: Path | None = None):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    if downloads is not None:
        options.add_experimental_option(
            "prefs", {"download.default_directory": str(downloads)}
        )
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument", {"source": _RECORD_SCREEN}
    )
    return driver


def _until(check, what: str, timeout: float = 60) -> None:
    """Poll ``check`` until it is true (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)  # bounded by the deadline
    raise AssertionError(f"{what} within {timeout:g} s")


def _wait_for(driver, text: str, timeout: float = 60) -> None:
    _until(
        lambda: text in driver.execute_script("return window.__screen || ''"),
        f"{text!r} never reached the browser",
        timeout,
    )


def test_printed_url_shows_the_demo_sessions(served, tmp_path: Path) -> None:
    url, _ = served
    driver = _browser(tmp_path / "profile")
    try:
        driver.get(url)
        assert "token=" not in driver.current_url  # swapped for the cookie
        assert not [c for c in driver.get_cookies() if not c.get("httpOnly")]
        _wait_for(driver, "chat-weekly")
        _wait_for(driver, "chat-kyoto")
    finally:
        driver.quit()


def test_a_second_browser_without_the_token_is_refused(served, tmp_path: Path) -> None:
    url, _ = served
    driver = _browser(tmp_path / "profile")
    try:
        driver.get(url.split("?", 1)[0])
        assert "open the printed URL" in driver.page_source
        driver.get(url)  # the token works once per browser, not only once at all
        _wait_for(driver, "chat-weekly")
    finally:
        driver.quit()


def test_export_arrives_as_a_download(served, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    url, demo = served
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = _browser(tmp_path / "profile", downloads)
    try:
        driver.get(url)
        _wait_for(driver, "chat-weekly")
        terminal = driver.find_element(By.CSS_SELECTOR, ".textual-terminal")
        ActionChains(driver).click(terminal).send_keys("x").perform()
        _until(
            lambda: any(p.suffix == ".md" for p in downloads.iterdir()),
            "no Markdown download arrived",
        )
        (arrived,) = [p for p in downloads.iterdir() if p.suffix == ".md"]
        assert arrived.stat().st_size > 0
        assert not list(demo.glob("*.md"))  # no file on the server (its cwd)
    finally:
        driver.quit()
