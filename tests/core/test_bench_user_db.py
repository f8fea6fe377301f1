"""``benchmarks/run_all.py --db``: what it finds in a user's file, and what it refuses.

The measures themselves take minutes (they are scripts, not tests); here only
the choice of giant session and needle, on a file lovia wrote, and the
argument handling, which must never create or write a file.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from pathlib import Path

from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import user_db  # noqa: E402

COMMON = "deployment pipeline finished with warnings"


async def _write(path: Path) -> None:
    store = SQLiteSession(path)
    for session, runs in (("small", 2), ("largest", 5), ("middle", 3)):
        for number in range(runs):
            words = COMMON + (
                " xylophonist" if session == "middle" and number == 1 else ""
            )
            await store.append(
                session,
                [InputEntry("user", f"{words} #{number}"), AssistantTextEntry(COMMON)],
            )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_describe_finds_the_largest_session_and_a_rare_word(tmp_path: Path) -> None:
    path = tmp_path / "user.db"
    asyncio.run(_write(path))
    before = _digest(path)
    info = user_db.describe(path)
    assert (info["giant_session"], info["giant_runs"]) == ("largest", 5)
    assert (info["segments"], info["sessions"]) == (10, 3)
    assert info["needle"] == "xylophonist"
    given = user_db.describe(path, giant="middle", needle="pipeline")
    assert (given["giant_session"], given["giant_runs"], given["needle"]) == (
        "middle",
        3,
        "pipeline",
    )
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user.db"]


def _run_all(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run_all.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_db_arguments_refused_before_anything_runs(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    done = _run_all("--db", str(missing))
    assert done.returncode != 0 and "no such file" in done.stderr
    assert not missing.exists()
    done = _run_all("--giant", "x")
    assert done.returncode == 2 and "go with --db" in done.stderr
    path = tmp_path / "user.db"
    asyncio.run(_write(path))
    before = _digest(path)
    done = _run_all("--db", str(path), "--only", "writer")
    assert done.returncode != 0 and "appends to the file" in done.stderr
    done = _run_all("--db", str(path), "--giant", "nobody")
    assert done.returncode != 0 and "no session 'nobody'" in done.stderr
    assert _digest(path) == before
