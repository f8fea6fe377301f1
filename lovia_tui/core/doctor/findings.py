"""What the doctor reports: findings, their severity and the suggested fix.

Plain frozen records shared by the checks (:mod:`~lovia_tui.core.doctor.checkpoints`,
:mod:`~lovia_tui.core.doctor.segments`), the CLI and the Doctor view.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from lovia_tui.core.formatting import program, shell_words
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.stored import non_text

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
SEVERITY_STYLES: dict[str, str] = {
    "error": "bold red",
    "warning": "yellow",
    "info": "dim",
}
"""How the CLI table and the Doctor view show each severity (rich styles)."""
FixAction = Literal[
    "replay", "resume", "finalize", "delete-run", "clear-pointer", "rewind", "clear",
    "undo",
]  # fmt: skip
Progress = Callable[[str, float], None]
"""Called with what is being scanned and the fraction of it done."""
MAX_PER_KIND = 200
"""Findings of one kind kept per file; the rest are counted in one summary finding."""
UNREADABLE_ROW = "unreadable-row"
"""A segment or checkpoint lovia cannot load (segments and checkpoints report it)."""
UNPAIRED_TOOL_CALL = "unpaired-tool-call"
"""A tool call without its result, or a result without its call, in a segment."""


@dataclass(frozen=True)
class Fix:
    """The suggested way out: an action (previewed, confirmed, journaled) or a run.

    ``session_id`` is the session a replay, resume or finalize goes into;
    ``None`` for finalize means nothing links the run and the user must choose.
    ``keep_entries`` is a rewind's cut; ``journal_entry`` the entry an undo undoes.
    """

    action: FixAction
    text: str
    session_id: str | None = None
    keep_entries: int | None = None
    journal_entry: int | None = None


@dataclass(frozen=True)
class Finding:
    """One inconsistency: what, how bad, where, why in one line, and the way out."""

    kind: str
    severity: Severity
    file: Path
    message: str
    run_id: str | None = None
    session_id: str | None = None
    fix: Fix | None = None

    def as_dict(self) -> dict[str, Any]:
        """Exactly the keys ``doctor --json`` promises; ``fix`` is its one line, or null."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "file": str(self.file),
            "run_id": self.run_id,
            "session_id": self.session_id,
            "message": self.message,
            "fix": self.fix.text if self.fix else None,
        }


def _without_impossible_fix(finding: Finding) -> Finding:
    """A fix on an id lovia's methods cannot take is refused, so none is offered:
    the finding says why instead."""
    fix = finding.fix
    if fix is None:
        return finding
    reason = (
        non_text("run", finding.run_id)
        or non_text("session", finding.session_id)
        or non_text("session", fix.session_id)
    )
    if reason is None:
        return finding
    return replace(finding, message=f"{finding.message}; no fix: {reason}", fix=None)


class FindingList:
    """Findings as they are found, at most :data:`MAX_PER_KIND` per kind and file,
    so a hostile file with a million bad rows cannot exhaust memory."""

    def __init__(self) -> None:
        self.items: list[Finding] = []
        self._counts: dict[tuple[Path, str], int] = {}
        self._samples: dict[tuple[Path, str], Finding] = {}

    def add(self, finding: Finding) -> None:
        finding = _without_impossible_fix(finding)
        key = (finding.file, finding.kind)
        self._counts[key] = self._counts.get(key, 0) + 1
        if self._counts[key] <= MAX_PER_KIND:
            self.items.append(finding)
            self._samples[key] = finding

    def tally(self, file: Path, kind: str) -> None:
        """Count one more finding of a kind already :meth:`full`, without making it
        (a fleet's file can hold a million of one kind)."""
        self._counts[(file, kind)] += 1

    def full(self, file: Path, kind: str) -> bool:
        """Whether findings of this kind are only counted from now on."""
        return self._counts.get((file, kind), 0) >= MAX_PER_KIND

    def has_run(self, run_id: str) -> bool:
        return any(f.run_id == run_id for f in self.items)

    def finished(self) -> list[Finding]:
        """The kept findings worst first, then per kind over the limit one saying how many more."""
        rank = {severity: n for n, severity in enumerate(SEVERITIES)}
        kept = sorted(
            self.items,
            key=lambda f: (
                rank[f.severity],
                f.kind,
                str(f.file),
                f.session_id or "",
                f.run_id or "",
            ),
        )
        return kept + [
            Finding(
                sample.kind, sample.severity, sample.file,
                f"{self._counts[key] - MAX_PER_KIND:,} more findings of this kind in "
                f"{sample.file.name} (only the first {MAX_PER_KIND} are listed)",
            )
            for key, sample in self._samples.items()
            if self._counts[key] > MAX_PER_KIND
        ]  # fmt: skip


def summary(findings: Iterable[Finding]) -> str:
    """Counts by severity, e.g. ``2 errors, 1 warning``; empty when there is nothing."""
    counts = Counter(f.severity for f in findings)
    return ", ".join(
        f"{counts[s]} {s}" + ("s" if counts[s] != 1 and s != "info" else "")
        for s in SEVERITIES
        if counts[s]
    )


OPEN_FILES = "\0files"
"""Where a suggested command names the files: :func:`with_open_files` puts
the real ones there once the audit knows them."""
PROGRAM = "\0program"
"""Where it names lovia-tui: filled in with how this one is started
(:func:`~lovia_tui.core.formatting.program`) in the process that shows it."""


AGENT = "\0agent"
"""Where a suggested resume names its entry agent: the one lovia-tui was
started with (``--agent``, and its ``--deps``), else ``MODULE:ATTR`` to fill in."""
STALE_AFTER = "\0stale-after"
"""Where a suggested command says the staleness the audit used, if not the default."""
WITHOUT_STALE_AFTER = frozenset({"undo", "replay"})
"""Commands that judge no run live or stale: they take no ``--stale-after``."""


def command(verb: str, *args: str) -> str:
    """How to do it from a shell, the open files still to be filled in."""
    stale = [] if verb in WITHOUT_STALE_AFTER else [STALE_AFTER]
    return " ".join([PROGRAM, verb, OPEN_FILES, *args, *stale, "--yes"])


def with_open_files(
    finding: Finding,
    paths: Iterable[Path],
    stale_after: float = DEFAULT_STALE_AFTER,
    agent: tuple[str | None, str | None] = (None, None),
) -> Finding:
    """``finding`` with the files the doctor read in its suggested command
    (quoted for a shell), and the staleness it judged runs by: ``PATH...``
    told a person nothing to paste, and without ``--stale-after`` the
    command refused the run the doctor had called stale; and the ``agent``
    (spec, deps) lovia-tui was started with, where a resume needs one."""
    if finding.fix is None or OPEN_FILES not in finding.fix.text:
        return finding
    files = shell_words(*paths)
    stale = (
        "" if stale_after == DEFAULT_STALE_AFTER else f"--stale-after {stale_after:g}"
    )
    spec, deps = agent
    named = shell_words(spec or "MODULE:ATTR") + (
        f" --deps {shell_words(deps)}" if deps else ""
    )
    text = finding.fix.text.replace(OPEN_FILES, files).replace(PROGRAM, program())
    text = text.replace(AGENT, named)
    text = text.replace(f" {STALE_AFTER}", f" {stale}" if stale else "")
    return replace(finding, fix=replace(finding.fix, text=text))
