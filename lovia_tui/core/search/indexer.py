"""The app's search indexes, built and kept current by a process of their own.

Building reads and tokenizes every stored byte (minutes at a million
segments). In the app's process that work held the GIL the UI runs on (on
two cores the transcript scrolled 2.4x slower while it ran) and its buffers
were a third of the app's memory (190 MB peak at 1M segments with it, 137
without). So the app starts ``python -m lovia_tui.core.search.indexer`` on
its files (:class:`Indexer`), reads one line of progress per step, asks it to
pause while a search runs, and ends it by closing its input: a child whose
app died (even by SIGKILL) sees its input end and stops too.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.search.build import BuildProgress
from lovia_tui.core.search.file_search import FileSearch

BUILD_STEP = 0.25
"""Seconds of indexing between two progress lines."""
COMMIT_POLL = 0.5
"""Once built, how often the index looks for other processes' commits (and
says it is alive, so the app's reader can notice it was told to stop)."""
PAUSE, RESUME = "pause", "resume"


class IndexBuilder:
    """The indexes of some files, built a step at a time in one thread."""

    def __init__(self, files: list[tuple[Path, bool]]) -> None:
        self.files = files
        """(path, opened immutable) of each file to index."""
        self._builders: dict[Path, FileSearch] = {}
        self._versions: dict[Path, int] = {}

    def step(self, seconds: float) -> BuildProgress:
        """Index for about ``seconds`` across the files; the combined progress."""
        until = time.monotonic() + seconds
        indexed = total = 0
        listing = False
        for path, immutable in self.files:
            builder = self._builders.get(path)
            if builder is None:
                builder = self._builders[path] = FileSearch(path, immutable=immutable)
            done = (
                builder.build(until) if time.monotonic() < until else builder.progress()
            )
            self._versions[path] = _data_version(builder)
            indexed, total = indexed + done.indexed, total + done.total
            listing = listing or done.listing
        return BuildProgress(indexed, total, listing)

    def committed(self) -> bool:
        """Whether another connection committed to any file since the last step."""
        return any(
            _data_version(builder) != self._versions.get(path)
            for path, builder in self._builders.items()
        )

    def close(self) -> None:
        for builder in self._builders.values():
            builder.close()
        self._builders.clear()


def _data_version(search: FileSearch) -> int:
    return search.reader.execute("PRAGMA data_version").fetchone()[0]


# ----- the child: python -m lovia_tui.core.search.indexer [--immutable] PATH ... -----


def serve(files: list[tuple[Path, bool]], commands: IO[str], out: IO[str]) -> None:
    """Build, then follow commits, one progress line a step (a line each poll
    once built), pausing between steps when told, until ``commands`` ends."""
    running, stopped = threading.Event(), threading.Event()
    running.set()

    def listen() -> None:
        for line in commands:
            if line.strip() == PAUSE:
                running.clear()
            elif line.strip() == RESUME:
                running.set()
        stopped.set()
        running.set()

    threading.Thread(target=listen, daemon=True).start()
    builder = IndexBuilder(files)
    try:
        built = False
        while not stopped.is_set():
            running.wait()
            if built and not builder.committed():
                stopped.wait(COMMIT_POLL)
                progress = None
            else:
                progress = builder.step(BUILD_STEP)
                built = progress.done
            line = {} if progress is None else dataclasses.asdict(progress)
            out.write(json.dumps(line) + "\n")
            out.flush()
    finally:
        builder.close()


def main(argv: list[str]) -> int:
    files, immutable = [], False
    for arg in argv:
        if arg == "--immutable":
            immutable = True
            continue
        files.append((Path(arg), immutable))
        immutable = False
    try:
        serve(files, sys.stdin, sys.stdout)
    except BrokenPipeError:
        return 0  # the app went away mid-line
    return 0


# ----- the app's side -----


class Indexer:
    """The indexing process of some files, as the app drives it (blocking:
    read its progress in a thread)."""

    def __init__(self, files: list[tuple[Path, bool]]) -> None:
        argv = [sys.executable, "-m", "lovia_tui.core.search.indexer"]
        for path, immutable in files:
            argv += ["--immutable", str(path)] if immutable else [str(path)]
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def ended(self) -> bool:
        """Whether the process has exited."""
        return self._process.poll() is not None

    def progress(self) -> Iterator[BuildProgress | None]:
        """Each step's progress (None: a poll once built), until it stops;
        raises LoviaTuiError with its last words if it failed."""
        assert self._process.stdout is not None
        for line in self._process.stdout:
            data = json.loads(line)
            yield BuildProgress(**data) if data else None
        if self._process.wait() != 0:
            assert self._process.stderr is not None
            last = (self._process.stderr.read().strip().splitlines() or ["?"])[-1]
            raise LoviaTuiError(f"the search index could not be built: {last}")

    def pause(self, paused: bool) -> None:
        """Leave the CPU to a search (the child stops between two steps)."""
        self._tell(PAUSE if paused else RESUME)

    def stop(self) -> None:
        """End it: its input closes, it finishes its step and exits."""
        with self._lock:
            stdin = self._process.stdin
            if stdin is not None and not stdin.closed:
                stdin.close()

    def _tell(self, command: str) -> None:
        with self._lock:
            stdin = self._process.stdin
            if stdin is None or stdin.closed:
                return
            try:
                stdin.write(command + "\n")
                stdin.flush()
            except BrokenPipeError:
                pass  # it ended: progress() says how


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
