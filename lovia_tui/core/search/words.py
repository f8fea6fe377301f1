"""The index's own list of the words it holds, to spell out a prefix.

A query's ``shi*`` is answered as an OR of the words the index holds that
start so (FTS5 would merge their postings whole). Listing them through FTS5's
vocabulary table reads every such word's postings to count them: at a million
segments 0.2–0.8 s a prefix. A plain table of words lists them from a b-tree
at once. It is filled from the vocabulary once the rows are all indexed, in
short statements, and kept current from then on: the words of each commit's
new postings are found by the same tokenizer, in a scratch FTS5 table in
memory. Until it is complete, prefixes are spelled through the vocabulary.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from lovia_tui.core.search.index import TOKENIZER

FILL_SECONDS = 0.05
"""What one statement of the fill should take; words per statement adapt to it."""
FILL_MOST = 20_000

_AFTER, _READY = "words_after", "words_ready"
"""Meta keys: the last word the fill listed (absent: not started), and whether it is done."""

_SCRATCH = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_scratch USING fts5("
    f"body, tool, tag, content='', columnsize=0, tokenize='{TOKENIZER}');"
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_scratch_vocab "
    "USING fts5vocab(temp, words_scratch, row)"
)


class Words:
    """The words table of one index connection (writes inside the builder's
    transactions; reads from the search)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.per_statement = 1_000
        self._scratch = False

    def _meta(self, key: str) -> Any:
        row = self.conn.execute(
            "SELECT value FROM meta WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else row[0]

    def _set(self, key: str, value: Any) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value)
        )

    @property
    def ready(self) -> bool:
        return bool(self._meta(_READY))

    def spell(self, stem: str, most: int) -> list[str]:
        """Up to ``most`` words starting with ``stem``: from the list once it is
        complete, else from FTS5's vocabulary (slow at scale, but complete)."""
        table = "words" if self.ready else "vocab"
        return [
            term
            for (term,) in self.conn.execute(
                f"SELECT term FROM {table} WHERE term >= ? AND term < ? "
                "ORDER BY term LIMIT ?",
                (stem, stem + "\U0010ffff", most),
            )
        ]

    def add(self, postings: Iterable[tuple[Any, ...]]) -> None:
        """The words of new ``(rowid, body, tool, tag)`` postings, once the
        fill has begun (inside the caller's transaction)."""
        if self._meta(_AFTER) is None:
            return  # the fill lists them from the vocabulary
        if not self._scratch:
            for statement in _SCRATCH.split(";"):
                self.conn.execute(statement)
            self._scratch = True
        self.conn.executemany(
            "INSERT INTO temp.words_scratch (rowid, body, tool, tag) VALUES (?, ?, ?, ?)",
            postings,
        )
        self.conn.execute(
            "INSERT OR IGNORE INTO words (term) "
            "SELECT term FROM temp.words_scratch_vocab"
        )
        self.conn.execute(
            "INSERT INTO temp.words_scratch (words_scratch) VALUES ('delete-all')"
        )

    def fill(self, deadline: float | None) -> None:
        """List the vocabulary's words into the table until done or ``deadline``
        (``time.monotonic()``), one committed statement at a time."""
        while not self.ready:
            if deadline is not None and time.monotonic() >= deadline:
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                # Made here, not with the schema: an index of this format
                # version written before the list existed gains it in place.
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS words (term TEXT PRIMARY KEY) WITHOUT ROWID"
                )
                after = self._meta(_AFTER) or ""
                started = time.perf_counter()
                listed = self.conn.execute(
                    "SELECT term FROM vocab WHERE term > ? ORDER BY term LIMIT ?",
                    (after, self.per_statement),
                ).fetchall()
                self.conn.executemany(
                    "INSERT OR IGNORE INTO words (term) VALUES (?)", listed
                )
                self._set(_AFTER, listed[-1][0] if listed else after)
                if len(listed) < self.per_statement:
                    self._set(_READY, 1)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            took = time.perf_counter() - started
            if took > FILL_SECONDS * 1.5:
                self.per_statement = max(64, self.per_statement // 2)
            elif took < FILL_SECONDS / 2:
                self.per_statement = min(FILL_MOST, self.per_statement * 2)

    def forget(self) -> None:
        """Start over (inside the caller's transaction): the index is rebuilt."""
        self.conn.execute("DROP TABLE IF EXISTS words")
        self.conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (_AFTER, _READY))
