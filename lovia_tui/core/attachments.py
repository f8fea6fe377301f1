"""Attachments and opaque provider data, described without their bytes.

lovia stores an image or file part (``ImagePart``, ``FilePart``: in an input's
content or a tool result's ``parts``) with its bytes inline as base64
(``data``), or as a ``url``; a provider's encrypted reasoning is base64 in the
entry's ``metadata``. A person needs the name, type, size and address; the
base64 itself never reaches a screen (a 5 MB image is 7 MB of letters).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from lovia_tui.core.formatting import size

ATTACHMENT_TYPES = ("image", "file")
SHOWN_CHARS = 100
"""Longest stored string of opaque data (a URL, a signature) shown as it is."""
_DEPTH = 64
"""Nesting walked when eliding; deeper (only a hostile row nests so) is left."""


def decoded_size(data: str) -> int:
    """Bytes that base64 ``data`` decodes to, without decoding it (lovia's own
    count in ``lovia.parts``: 3/4 of its length less the padding)."""
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def is_attachment(part: Any) -> bool:
    kind = part.get("type") if isinstance(part, dict) else None
    return isinstance(kind, str) and kind in ATTACHMENT_TYPES


def _data_url(url: str) -> tuple[str, int] | None:
    """A ``data:`` URL's mime type and decoded size: its base64 is data too."""
    if not url.startswith("data:"):
        return None
    head, _, payload = url.partition(",")
    return head[5:].split(";")[0], decoded_size(payload)


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def attachment_facts(part: dict[str, Any]) -> list[str]:
    """What an attachment is: its file name, mime type, size, URL and detail."""
    facts = []
    for key in ("filename", "mime_type"):
        if isinstance(part.get(key), str) and part[key]:
            facts.append(_short(part[key]))
    data, url = part.get("data"), part.get("url")
    if isinstance(data, str):
        facts.append(size(decoded_size(data)))
    if isinstance(url, str):
        inline = _data_url(url)
        if inline is None:
            facts.append(_short(url))
        else:
            mime, inline_size = inline
            if mime and mime not in facts:
                facts.append(_short(mime))
            facts.append(f"{size(inline_size)} inline (data: URL)")
    if isinstance(part.get("detail"), str):
        facts.append(f"detail {part['detail']}")
    return facts


def part_label(part: Any) -> str:
    """A content part as text: a text part's text; an attachment in brackets
    with what it is (``[image image/png · 2.9 KB]``), never its bytes."""
    if not isinstance(part, dict):
        return f"[{type(part).__name__}]"
    kind = part.get("type", "part")
    if kind == "text":
        return str(part.get("text", ""))
    if not is_attachment(part):
        return f"[{kind}]"
    facts = attachment_facts(part)
    return f"[{kind}{' ' if facts else ''}{' · '.join(facts)}]"


IMAGE_DRAWN_BYTES = 3 << 20
"""Largest inline image drawn on screen (decoded); a larger one is told by its facts."""


def image_bytes(part: dict[str, Any]) -> bytes | str:
    """An attachment's image bytes to draw, or why it is told by its facts only.

    Only bytes stored in the file are drawn: a URL from a model or a user is
    never fetched.
    """
    if part.get("type") != "image":
        return "a file, not an image"
    data, url = part.get("data"), part.get("url")
    if not isinstance(data, str) and isinstance(url, str):
        if _data_url(url) is None:
            return "stored as a URL, which lovia-tui does not fetch"
        data = url.partition(",")[2]
    if data is None:
        return "no bytes stored with it"
    if not isinstance(data, str):
        return "its bytes are too large to draw here"  # kept stored (huge_text)
    if decoded_size(data) > IMAGE_DRAWN_BYTES:
        return f"larger than {size(IMAGE_DRAWN_BYTES)}, not drawn"
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "its data is not valid base64"


def attachments(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """An entry's attachments: in an input's content, or a tool result's parts."""
    held = entry.get("parts") if entry.get("type") == "tool_result" else None
    if entry.get("type") == "input":
        held = entry.get("content")
    return (
        [part for part in held if is_attachment(part)] if isinstance(held, list) else []
    )


def encrypted_reasoning(entry: dict[str, Any]) -> str | None:
    """How a reasoning entry with no readable text reads instead: who encrypted
    it and how much (Anthropic's redacted thinking is stored so, its base64 in
    ``metadata``); None for an entry with text."""
    if entry.get("type") != "reasoning" or entry.get("content"):
        return None
    provider = entry.get("provider")
    by = f" · {_short(str(provider))}" if provider else ""
    metadata = entry.get("metadata")
    blobs = [
        value
        for value in (metadata.values() if isinstance(metadata, dict) else ())
        if isinstance(value, str) and value
    ]
    if not blobs:
        return f"[reasoning with no text stored{by}]"
    return f"[encrypted reasoning{by} · {size(sum(map(decoded_size, blobs)))}]"


def _elided(text: str, what: str) -> str:
    return f"‹{what}: {size(decoded_size(text))} as {len(text):,} base64 characters, not shown›"


def without_blobs(value: Any, depth: int = 0) -> Any:
    """A copy of stored JSON with the bytes no one reads replaced by their
    size: each attachment's base64 ``data`` (and a ``data:`` URL), and a
    reasoning entry's long opaque metadata (encrypted reasoning, signatures)."""
    if depth > _DEPTH:
        return value
    if isinstance(value, list):
        return [without_blobs(item, depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    copy = {key: without_blobs(item, depth + 1) for key, item in value.items()}
    if is_attachment(value):
        if isinstance(value.get("data"), str):
            copy["data"] = _elided(value["data"], "base64 data")
        url = value.get("url")
        if isinstance(url, str) and _data_url(url) is not None:
            copy["url"] = _elided(url.partition(",")[2], "data: URL")
    if value.get("type") == "reasoning" and isinstance(value.get("metadata"), dict):
        copy["metadata"] = {
            key: _elided(item, "opaque provider data")
            if isinstance(item, str) and len(item) > SHOWN_CHARS
            else item
            for key, item in value["metadata"].items()
        }
    return copy
