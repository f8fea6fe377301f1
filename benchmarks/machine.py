"""A description of the machine a benchmark ran on, stored with its results."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
from pathlib import Path


def compile_app() -> None:
    """Write lovia_tui's bytecode, as installing the package does: the
    editable checkout has none where ``PYTHONDONTWRITEBYTECODE`` is set (it is
    on this machine), and every start would then compile ~130 modules anew
    (~300 ms), a cost no installed copy pays."""
    import compileall

    compileall.compile_dir(
        Path(__file__).resolve().parents[1] / "lovia_tui", quiet=1, force=False
    )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return 0.0


def _disk(path: Path) -> str:
    """The filesystem holding ``path`` and whether its device says it rotates."""
    try:
        out = (
            subprocess.run(
                ["df", "-hT", str(path)], capture_output=True, text=True, check=True
            )
            .stdout.splitlines()[-1]
            .split()
        )
        device, fstype, size = out[0], out[1], out[2]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"
    name = Path(device).name.rstrip("0123456789")
    rotational = Path(f"/sys/block/{name}/queue/rotational")
    kind = ""
    if rotational.exists():
        kind = (
            ", reports rotational" if rotational.read_text().strip() == "1" else ", SSD"
        )
    return f"{device} {fstype} {size}{kind}"


def describe(path: Path) -> dict[str, object]:
    import textual

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gb": _ram_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "textual": textual.__version__,
        "disk": _disk(path),
    }


EVICT = """
import os, sys
for name in sys.argv[1:]:
    try:
        fd = os.open(name, os.O_RDONLY)
    except FileNotFoundError:
        continue
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
"""
"""Drops a file's pages from the page cache (no root needed). In a process of
its own: closing a descriptor on a database drops the POSIX locks every
SQLite connection of the same process holds on it."""


def evict_page_cache(path: Path) -> None:
    """A cold page cache for the database at ``path`` (its ``-wal`` too)."""
    subprocess.run([sys.executable, "-c", EVICT, str(path), f"{path}-wal"], check=True)
