"""Secrets kept out of error text quoted from a user's agent or provider.

A provider's exception often repeats the request that failed: its headers,
its URL, the key it was given. Whatever lovia-tui shows or prints from such
an exception (resume and replay, ``--agent``/``--deps`` imports, the live
console, lovia's log lines) passes through :func:`redact` first.
"""

from __future__ import annotations

import os
import re

HIDDEN = "‹redacted›"
SECRET_NAMES = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.I)
"""Environment variables whose values are secrets (``OPENAI_API_KEY``, ``GH_TOKEN``…)."""
MIN_SECRET = 8
"""Shorter environment values are not searched for (``DEBUG_TOKEN=1`` is no secret)."""
_PATTERNS = (
    # OpenAI / Anthropic / most providers' keys: sk-…, sk-proj-…, sk-ant-…
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    # HTTP authorization headers, and the schemes that carry a credential.
    re.compile(r"(?i)(\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{8,}"),
    # key=value / "api_key": "value" as a URL query, a repr or JSON shows them
    re.compile(
        r"""(?ix)(\b[\w-]*(?:api[_-]?key|token|secret|password|passwd)["']?\s*[:=]\s*["']?)"""
        r"""[^\s"',;&)}\]]{6,}"""
    ),
)


def _environment_secrets() -> list[str]:
    values = {
        value
        for name, value in os.environ.items()
        if SECRET_NAMES.search(name) and len(value) >= MIN_SECRET
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with anything that looks like a credential replaced by ‹redacted›:
    the values of ``*_KEY``/``*_TOKEN``/``*_SECRET`` environment variables,
    ``sk-…`` keys, ``Bearer …`` tokens and ``api_key=…`` style assignments."""
    for value in _environment_secrets():
        text = text.replace(value, HIDDEN)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + HIDDEN, text)
    return text


def error_line(error: dict) -> str:
    """A run's stored error (``{"type", "message"}``) as one line to show, its
    message redacted: lovia stores the provider's exception text as it was."""
    return f"{error.get('type', '')}: {redact(str(error.get('message', '')))}"
