"""JSON on stdout, as every ``--json`` command prints it: exact, with what a
terminal would act on escaped, and streamed where it can be large (a
generator is written as it is consumed; nothing before its first item).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from types import AsyncGeneratorType, GeneratorType
from typing import Any

import orjson

from lovia_tui.core.formatting import printable_json, printable_json_bytes
from lovia_tui.core.huge_text import expand


def _encodes_everything(stream: Any) -> bool:
    """Whether ``stream`` can write any character (a UTF encoding)."""
    try:
        "\U0001f5fe".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def tolerate_narrow_output() -> None:
    """Under a non-UTF-8 locale (``LANG=C``, ``PYTHONIOENCODING=ascii``) print
    what the terminal cannot show as "?" instead of failing on the first emoji."""
    for stream in (sys.stdout, sys.stderr):
        if (
            isinstance(stream, io.TextIOWrapper)
            and stream.errors == "strict"
            and not _encodes_everything(stream)
        ):
            stream.reconfigure(errors="replace")


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """``data`` as JSON to print: exact, with what a terminal would act on
    escaped (\\u escapes also where stdout cannot encode a character)."""
    return printable_json(
        json.dumps(
            data,
            ensure_ascii=not _encodes_everything(sys.stdout),
            indent=indent,
            default=str,
        )
    )


class _Stdout:
    """What this command printed of its JSON so far (an error after a
    document begun would make stdout unreadable: it is left out then)."""

    written = False


def json_started() -> None:
    """A command starts: nothing of its JSON is on stdout yet."""
    _Stdout.written = False


def print_json(data: Any) -> None:
    _Stdout.written = True
    print(json_text(data))


def print_json_line(data: Any) -> None:
    """One compact object on a line of its own (``resume --json``'s events)."""
    _Stdout.written = True
    print(json_text(data, indent=None), flush=True)


def print_json_error(kind: str, message: str, code: int, *, lines: bool) -> None:
    """How a ``--json`` command that fails ends on stdout, beside its line on
    stderr: ``{"error": {"kind", "message", "exit"}}``. Where the output is
    one object per line it is one more line, whatever came before; otherwise
    it is the whole output, unless an object was begun (stdout would not read
    as JSON either way: the stderr line says what happened)."""
    error = {"error": {"kind": kind, "message": message, "exit": code}}
    if lines:
        print_json_line(error)
    elif not _Stdout.written:
        print_json(error)


def _dumper(*, indent: bool) -> Callable[[Any], bytes]:
    """UTF-8 JSON of one item, escaped as :func:`json_text` escapes it: orjson
    (~5x faster, no str copy of a huge output), or :func:`json_text` itself
    where stdout cannot encode a character."""
    if _encodes_everything(sys.stdout):
        option = orjson.OPT_INDENT_2 if indent else 0
        return lambda item: printable_json_bytes(
            orjson.dumps(item, default=str, option=option)
        )
    return lambda item: json_text(item, indent=2 if indent else None).encode()


class _Bytes:
    """stdout as bytes (its buffer, after what was written as text), or as
    text where it has no buffer (a StringIO). ``held``: nothing is written
    before :meth:`release` (a read that fails first leaves no output)."""

    def __init__(self, *, held: bool = False) -> None:
        sys.stdout.flush()
        self._buffer = getattr(sys.stdout, "buffer", None)
        self._held: list[bytes] | None = [] if held else None

    def release(self) -> None:
        """Write what was held, and what comes next as it comes."""
        held, self._held = self._held, None
        for raw in held or ():
            self.write(raw)

    def write(self, data: bytes | memoryview | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        _Stdout.written = _Stdout.written or self._held is None
        if self._held is not None:
            self._held.append(bytes(raw))
        elif self._buffer is None:
            sys.stdout.write(bytes(raw).decode())
        else:
            self._buffer.write(raw)

    def close(self) -> None:
        self.release()
        if self._buffer is not None:
            self._buffer.flush()


async def print_json_lines(items: AsyncIterator[Any]) -> None:
    """Print items as they come, one compact JSON object per line."""
    dump, out = _dumper(indent=False), _Bytes()
    async for item in items:
        out.write(dump(item) + b"\n")
    out.close()


async def print_json_lazy(value: Any) -> None:
    """:func:`print_json`'s text, where any list may be a generator (sync or
    async) written as it is consumed: the whole value never sits in memory.
    Nothing is written before a list's first item is read (a file that
    fails at once leaves no half a document)."""
    out = _Bytes(held=True)
    await _write_lazy(value, 0, _dumper(indent=True), out)
    out.write(b"\n")
    out.close()


LAZY = (GeneratorType, AsyncGeneratorType)


def _lazy(value: Any) -> bool:
    """A generator, or a dict holding one directly: written as it is consumed."""
    return isinstance(value, LAZY) or (
        isinstance(value, dict) and any(isinstance(v, LAZY) for v in value.values())
    )


async def _write_lazy(value: Any, level: int, dump, out: _Bytes) -> None:
    pad, inner = "  " * level, "  " * (level + 1)
    if not _lazy(value):
        # A huge stored string is a token in the dump, written piece by piece.
        for part in expand(dump(value), lambda piece: dump(piece)[1:-1]):
            _write_indented(part, pad.encode(), out)
        return
    if isinstance(value, dict):
        out.write("{")
        for number, (key, item) in enumerate(value.items()):
            out.write(("," if number else "") + f"\n{inner}")
            out.write(dump(key) + b": ")
            await _write_lazy(item, level + 1, dump, out)
        out.write(f"\n{pad}}}" if value else "}")
        return
    first = True
    async for item in _aiter(value):
        out.release()
        out.write(("[" if first else ",") + f"\n{inner}")
        await _write_lazy(item, level + 1, dump, out)
        first = False
    out.release()
    out.write("[]" if first else f"\n{pad}]")


def _write_indented(text: bytes, pad: bytes, out: _Bytes) -> None:
    """``text`` with ``pad`` after each newline; a large one (a dumped 50 MB
    output) in slices, so that it is not copied again to indent it."""
    if len(text) < SLICE_ABOVE:
        out.write(text.replace(b"\n", b"\n" + pad) if pad else text)
        return
    view, start = memoryview(text), 0
    while (end := text.find(b"\n", start)) >= 0:
        out.write(view[start : end + 1])
        out.write(pad)
        start = end + 1
    out.write(view[start:])


SLICE_ABOVE = 1 << 20


async def _aiter(items: Iterator[Any] | AsyncIterator[Any]) -> AsyncIterator[Any]:
    if isinstance(items, AsyncIterator):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
