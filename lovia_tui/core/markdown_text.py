"""Stored text placed in a Markdown document so that it stays what it is.

An export is read in Markdown viewers, and CommonMark passes raw HTML
through: a tool output holding three backticks closed its code fence and
carried a live ``<img onerror=…>``. So every piece of stored text goes in as
one of three things: a code block fenced longer than any backtick run in it,
a one-line code span (ids, tool names), or escaped plain text (titles,
errors); a message's own Markdown is kept only when it holds no raw HTML and
leaves no block open behind it. Stored text may hold huge strings by token
(:mod:`lovia_tui.core.huge_text`): their pieces are measured, never joined.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from lovia_tui.core.formatting import printable
from lovia_tui.core.huge_text import HUGE_ABOVE, expand, holds_huge

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_TICKS = re.compile("`+")
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
"""ASCII punctuation: CommonMark lets a backslash make any of it literal."""
_MAYBE_ACTIVE = re.compile(r"<|```|~~~")
"""Without these, Markdown text can hold neither raw HTML nor a fence."""
_HTML_START = re.compile(r"<[A-Za-z/!?]")
"""Where CommonMark's raw HTML (a tag, comment, declaration) can begin."""
_FENCE = re.compile(r"([ \t>*+\-0-9.)]*)(`{3,}|~{3,})(.*)")
"""A line that may be a code fence, with what may put it in a container."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_END = "lovia-tui-end-of-text"
MARKDOWN_CHECK_CHARS = HUGE_ABOVE // 12
"""A message longer than this is fenced rather than parsed to be checked. A
huge string (fenced unread) is longer: 12 stored bytes at most make one
character (an escaped surrogate pair), so an export is the same whether a
long text was read whole or in pieces."""


def longest_backtick_run(text: str) -> int:
    """The longest run of backticks in ``text`` (huge strings' pieces included,
    a run carried across the cut between two pieces)."""
    longest = carry = 0
    for part in expand(text, str):
        if "`" not in part:
            carry = 0
            continue
        runs = [len(run) for run in _TICKS.findall(part)]
        if part[0] == "`":
            runs[0] += carry
        longest = max(longest, *runs)
        carry = runs[-1] if part[-1] == "`" else 0
    return longest


def fenced(text: str, info: str = "") -> str:
    """``text`` as a code block whose fence no line of it can close."""
    fence = "`" * max(3, longest_backtick_run(text) + 1)
    return f"{fence}{info}\n{text}\n{fence}\n\n"


def code_span(value: object) -> str:
    """``value`` as inline code on one line (line breaks and controls shown as
    symbols), delimited by more backticks than any run inside it."""
    text = printable(str(value))
    if not text:
        return "` `"  # CommonMark has no empty code span
    ticks = "`" * (longest_backtick_run(text) + 1)
    # CommonMark strips one space each side: the padding lets a value start
    # or end with a backtick.
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def plain(text: object) -> str:
    """``text`` on one line, every character shown as itself (no markup, no HTML)."""
    return _PUNCTUATION.sub(r"\\\1", printable(str(text)))


def message(text: str) -> str:
    """A message's text as a block: its own Markdown when that is inert,
    otherwise fenced (shown literally)."""
    return f"{text}\n\n" if _is_inert(text) else fenced(text)


@functools.cache
def _parser(inline: bool) -> MarkdownIt:
    """CommonMark (raw HTML on); ``inline`` False: block structure only."""
    from markdown_it import MarkdownIt  # ships with rich; loaded only to export

    parser = MarkdownIt("commonmark")
    return parser if inline else parser.disable("inline")


def _is_inert(text: str) -> bool:
    """Whether ``text``, placed between blank lines, renders no raw HTML and
    leaves nothing open (an unclosed fence or HTML block would swallow the
    rest of the document, fences included)."""
    if holds_huge(text) or len(text) > MARKDOWN_CHECK_CHARS:
        return False
    if not _MAYBE_ACTIVE.search(text) or _plainly_inert(text):
        return True
    blocks = _parser(inline=False).parse(f"{text}\n\n{_END}\n")
    tail = blocks[-3:]
    if not (
        [token.type for token in tail]
        == ["paragraph_open", "inline", "paragraph_close"]
        and tail[0].level == 0
        and tail[1].content == _END
    ):
        return False
    for token in blocks:
        if token.type == "html_block":
            return False
        # Inline HTML only where a tag can start: most text is never parsed inline.
        if token.type == "inline" and _HTML_START.search(token.content):
            [line] = _parser(inline=True).parseInline(token.content)
            if any(child.type == "html_inline" for child in line.children or ()):
                return False
    return True


def _plainly_inert(text: str) -> bool:
    """True when a line scan proves ``text`` inert, saving the parse (a
    millisecond a message): no raw HTML can start, and every code fence
    opens and closes at the very start of a line (a fence inside a list or
    quote ends with it, which only the parser can tell; a fence line at the
    start of a line always starts or ends a fence, in a paragraph too).
    False means "ask the parser"."""
    if _HTML_START.search(text):
        return False
    fence = ""
    for line in _LINE_BREAK.split(text):
        match = _FENCE.match(line)
        if match is None:
            continue
        prefix, run, rest = match.groups()
        if prefix:
            return False
        if fence:
            closes = run[0] == fence[0] and len(run) >= len(fence)
            if closes and not rest.strip(" \t"):
                fence = ""
        elif not (run[0] == "`" and "`" in rest):  # else not a fence: inline code
            fence = run
    return not fence
