"""Errors the core raises for the user: each carries one readable line."""


class LoviaTuiError(Exception):
    """A problem to show the user as one line (never a traceback)."""


class OpenError(LoviaTuiError):
    """A path could not be opened as a lovia database."""


class DamagedError(OpenError):
    """SQLite calls the file damaged (a page that does not read, a header that
    is not SQLite's, a quick check that fails): never shown as if it were
    empty, never changed by an action."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(
            f"{path}: damaged ({reason}); `lovia-tui doctor --integrity {path}` "
            "says which store"
        )
        self.path = path
        self.reason = reason


class ActionError(LoviaTuiError):
    """An action was refused or failed; the message says why."""


class LiveRunError(ActionError):
    """Refused because a run looks live; the user may force it once sure."""


class RowsChangedError(ActionError):
    """Refused because the rows moved on since the preview: nothing was done,
    and previewing again shows what the action would do now."""


def os_error_text(exc: OSError) -> str:
    """An OSError as one line naming its file: "/x/out.md: Permission denied"."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"
