"""What stdout holds when a command fails (docs/cli.md): nothing, or with
``--json`` the error object whose words are the line on stderr."""

from __future__ import annotations

import json
from typing import Any


def without_json_error(argv: list[Any], out: str, err: str) -> str:
    """``out`` less the JSON error object a failing ``--json`` (or ``--jsonl``)
    command ends it with, checked against its one line on stderr: what is
    left is what the command printed besides (nothing, for a refusal)."""
    if not ({"--json", "--jsonl"} & {str(arg) for arg in argv}):
        return out
    message = err.removeprefix("lovia-tui: ").removesuffix("\n")
    lines = out.rstrip("\n").split("\n")
    try:
        found, left = json.loads(out), ""
    except json.JSONDecodeError:  # one object per line: the error is the last
        found, left = json.loads(lines[-1]), "".join(f"{x}\n" for x in lines[:-1])
    assert found["error"]["message"] == message, (found, err)
    assert set(found) == {"error"} and found["error"]["exit"] == 2, found
    return left
