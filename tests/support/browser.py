"""Real browsers on ``lovia-tui serve``: Debian's chromium, headless, through Selenium.

The page draws the app on a canvas (xterm.js), so :data:`RECORD_SCREEN` keeps
every byte the app sends the page in ``window.__screen`` for the tests to read.
Tests using it are skipped, with the reason, where chromium or its driver is
missing (``.ci/run`` installs both).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.ports import free_port

CHROMEDRIVER = "/usr/bin/chromedriver"
_MISSING = [
    name
    for name, found in (
        ("chromium", shutil.which("chromium")),
        ("chromedriver", os.access(CHROMEDRIVER, os.X_OK)),
    )
    if not found
]
needs_chromium = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"browser tests need {' and '.join(_MISSING)} (apt-get install chromium chromium-driver)",
)

RECORD_SCREEN = """
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


@contextlib.contextmanager
def serve(
    paths: list[Path], cwd: Path, *options: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``lovia-tui serve PATHS OPTIONS`` as started on a host: (the printed URL,
    the server); stopped with Ctrl+C at the end."""
    server = subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", "serve", *map(str, paths),
         "--port", str(free_port()), *options],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert server.stdout is not None
    url = ""
    for line in server.stdout:
        if "open http" in line:
            url = line.split("open ", 1)[1].strip()
            break
    assert url.startswith("http://127.0.0.1:"), url
    try:
        yield url, server
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        server.stdout.close()


def next_url(server: subprocess.Popen[str], timeout: float = 30) -> str:
    """The next URL a :func:`serve` server prints: a start URL lets one browser
    in once, and the server then prints a new one for the next browser."""
    assert server.stdout is not None
    stdout = server.stdout

    def read() -> str:
        for line in stdout:
            if "open http" in line:
                return line.split("open ", 1)[1].strip()
        raise AssertionError("the server ended without printing another URL")

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(read).result(timeout=timeout)
    finally:
        pool.shutdown(wait=False)  # a read still waiting ends with the server


def browser(profile: Path, downloads: Path | None = None):
    """A headless chromium that records what the app sends (see the module)."""
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
        "Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_SCREEN}
    )
    return driver


def until(
    check: Callable[[], object], what: str, timeout: float = 60, poll: float = 0.1
) -> None:
    """Poll ``check`` every ``poll`` seconds until it is true (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll)  # bounded by the deadline
    raise AssertionError(f"{what} within {timeout:g} s")


def screen(driver) -> str:
    """Everything the app has sent this page so far."""
    return driver.execute_script("return window.__screen || ''")


def wait_for(driver, text: str, timeout: float = 60, *, after: int = 0) -> int:
    """Wait until ``text`` reaches the page (past offset ``after``); where it ends."""
    found = [-1]

    def arrived() -> bool:
        found[0] = screen(driver).find(text, after)
        return found[0] >= 0

    until(arrived, f"{text!r} never reached the browser", timeout)
    return found[0] + len(text)


def keys(driver, *typed: str) -> None:
    """Type into the app's terminal, as a person at the page does (no click:
    a click is a mouse event in the app, which moves its focus)."""
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("document.querySelector('.xterm-helper-textarea').focus()")
    chain = ActionChains(driver)
    for text in typed:
        chain = chain.send_keys(text)
    chain.perform()


def children(pid: int) -> set[int]:
    """The processes ``pid`` started that are still alive (from /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found |= {int(p) for p in (task / "children").read_text().split()}
    return found
