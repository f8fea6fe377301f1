"""Who takes an action, as the journal records it.

In a terminal that is the OS user; ``lovia-tui serve`` runs every browser tab's
app as one OS user, so it passes each person's name and address instead.
"""

from __future__ import annotations

import getpass
import os

from lovia_tui.core.errors import ActionError

SERVE_USER_ENV = "LOVIA_TUI_SERVE_USER"
"""Set by ``lovia-tui serve`` for each app it starts: "NAME from ADDRESS"."""


def serving() -> bool:
    """Whether this app runs in a browser tab of ``lovia-tui serve``."""
    return bool(os.environ.get(SERVE_USER_ENV))


def who_acts(*, explained: bool) -> str:
    """Who acts: the OS user, or the person and address ``serve`` passed on.

    Through ``serve`` many people share one OS user, so their name and address
    are what the journal keeps, and each action must say why (an undo is
    explained by the entry it undoes).
    """
    served = os.environ.get(SERVE_USER_ENV)
    if served:
        if not explained:
            raise ActionError("a reason is required for actions taken through serve")
        return f"{served} (serve)"
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def served_person() -> str | None:
    """The person a served app acts for (their name, not their address); None
    in a terminal, where undo takes the newest action whoever took it."""
    served = os.environ.get(SERVE_USER_ENV)
    return served.rsplit(" from ", 1)[0] if served else None  # a name may say "from"


def acted_by(user: str, person: str) -> bool:
    """Whether a journal entry's ``user`` is ``person`` acting through serve
    (from any address)."""
    suffix = " (serve)"
    return (
        user.endswith(suffix) and user[: -len(suffix)].rsplit(" from ", 1)[0] == person
    )
