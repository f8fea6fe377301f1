"""The search language, turned into an FTS5 expression that cannot inject.

``order A-1001`` (every word must match, in the same entry), ``"quoted
phrase"``, ``refund*`` (a prefix), ``tool:refund_payment`` (a call to that
tool, or its result), ``error:`` (an error result; ``error:timeout`` one that
says timeout), ``run:ID`` and ``session:ID`` (only that run or session).
Every piece of text reaches FTS5 as a double-quoted string, so nothing a user
types is read as FTS5 syntax; a word with punctuation (``A-1001``) becomes
the phrase of its tokens, as the index stored it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lovia_tui.core.errors import LoviaTuiError

_PIECE = re.compile(r'(\w+):("[^"]*"?|\S*)|"([^"]*)"?|(\S+)')
_TOKEN = re.compile(r"[^\W_]+")
FIELDS = ("tool", "error", "run", "session")
OPERATORS = ("OR", "AND", "NOT")
"""Words other search boxes read as operators; here every word must match,
so a bare one, or a bare ``-word``, is refused rather than searched for."""
TAG = "lt"
"""Prefix of the index's ``tag`` and ``tool`` tokens (see :mod:`~lovia_tui.core.search.text`)."""


class QueryError(LoviaTuiError):
    """A query with nothing to search for."""


@dataclass(frozen=True)
class Query:
    """A parsed query: the FTS5 ``match``, the id filters, and the words
    (lowercase) that a snippet is centred on and a scan looks for first."""

    text: str
    match: str
    session_id: str | None = None
    run_id: str | None = None
    words: tuple[str, ...] = ()


def quoted(text: str, prefix: bool = False) -> str:
    """``text`` as an FTS5 string (a prefix with ``prefix``): never read as syntax."""
    return '"' + text.replace('"', '""') + '"' + (" *" if prefix else "")


def _phrase(column: str, text: str) -> str | None:
    """``column : "text"`` (a prefix if it ends with ``*``), or None when
    ``text`` holds no token (punctuation only)."""
    prefix = text.endswith("*")
    body = text.rstrip("*")
    if not _TOKEN.search(body):
        return None
    return f"{column} : {quoted(body, prefix)}"


def _tool(name: str) -> str | None:
    """``tool : "ltrefundpayment"`` (a prefix with ``*``), as the index stores names."""
    tokens = "".join(words_of(name.rstrip("*")))
    if not tokens:
        return None
    return f"tool : {quoted(TAG + tokens, name.endswith('*'))}"


def words_of(text: str) -> list[str]:
    """The tokens of ``text`` as FTS5's unicode61 tokenizer finds them (ASCII-exact)."""
    return [token.lower() for token in _TOKEN.findall(text)]


def parse_query(text: str) -> Query:
    """Parse ``text`` (raises :class:`QueryError` when nothing is left to match)."""
    parts: list[str] = []
    words: list[str] = []
    filters: dict[str, str] = {}
    for field, value, quoted, bare in _PIECE.findall(text):
        value = value[1:].rstrip('"') if value.startswith('"') else value
        if field.lower() in FIELDS:
            field = field.lower()
            if field in ("run", "session"):
                if value:
                    filters[field] = value
                continue
            if field == "error":
                parts.append(f'tag : "{TAG}error"')
                phrase = _phrase("body", value) if value else None
            else:
                phrase = _tool(value)
            if phrase:
                parts.append(phrase)
                words += words_of(value)
            continue
        if bare in OPERATORS or (bare.startswith("-") and _TOKEN.match(bare[1:])):
            raise QueryError(
                f"{bare!r}: the search has no operators (every word must match, "
                "in one entry); put it in quotes to look for it as text"
            )
        piece = f"{field}:{value}" if field else bare or quoted
        phrase = _phrase("body", piece)
        if phrase:
            parts.append(phrase)
            words += words_of(piece)
    if not parts:
        raise QueryError(f"nothing to search for in {text!r}: give a word")
    return Query(
        text=text,
        match=" AND ".join(parts),
        session_id=filters.get("session"),
        run_id=filters.get("run"),
        words=tuple(dict.fromkeys(words)),
    )
