"""Who may use the served inspector: the start token, logins, session cookies.

``textual-serve`` has no authentication; everything here is ours. Secrets are
compared in constant time, cookies are HttpOnly and SameSite=Strict, and the
users file must be private (it holds password hashes). A password is checked
off the server's event loop, one at a time, at the same cost whether or not
its name is known: a flood of logins neither stalls the open tabs nor tells
which names exist.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.private_files import COMPANIONS, DATABASE_NAMES, create_new_file

COOKIE = "lovia_tui_session"
TOKEN_USER = "token"
"""The journal's name for whoever opened the start URL in single-token mode."""

_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str) -> str:
    """A salted scrypt hash, stored as ``scrypt$salt$hash`` (hex)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, **_SCRYPT)
    return f"scrypt${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    kind, _, rest = stored.partition("$")
    salt_hex, _, digest_hex = rest.partition("$")
    if kind != "scrypt" or not salt_hex or not digest_hex:
        return False
    digest = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt_hex), **_SCRYPT)
    return hmac.compare_digest(digest.hex(), digest_hex)


def _check_name(name: str) -> None:
    if not name or ":" in name or name != name.strip() or not name.isprintable():
        raise LoviaTuiError(
            f"bad user name {name!r}: printable, no ':' or spaces around"
        )
    if name == TOKEN_USER:
        raise LoviaTuiError(
            f"the user name {TOKEN_USER!r} is the journal's name for whoever used "
            "the start token: choose another"
        )


def _not_a_database(path: Path) -> None:
    """Refuse a users file named as a database or one of SQLite's companions:
    never opened but by SQLite (closing a descriptor of it drops its locks),
    and a ``-wal`` written beside one would be taken for its log."""
    if path.name.endswith((*DATABASE_NAMES, *COMPANIONS)):
        raise LoviaTuiError(f"users file {path} is named as a database: not used")


def _users_text(path: Path) -> str:
    """The users file's text, checked on the file that is read (opened once,
    never through a link): a regular file of this user's that no one else
    may read. Another user's file is refused: it chooses who may sign in."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LoviaTuiError(f"users file {path} is not a regular file") from None
        raise LoviaTuiError(f"users file {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise LoviaTuiError(f"users file {path} is not a regular file")
        if status.st_uid != os.geteuid():
            raise LoviaTuiError(
                f"users file {path} belongs to another user (uid {status.st_uid}): "
                "it says who may sign in, so only your own is used"
            )
        if status.st_mode & 0o077:
            raise LoviaTuiError(
                f"users file {path} is readable by others "
                f"(mode {stat.S_IMODE(status.st_mode):o}): chmod 600 it"
            )
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LoviaTuiError(
            f"users file {path} is not text: not a users file"
        ) from None


def read_users(path: Path) -> dict[str, str]:
    """Name → hash from a ``name:hash`` file; refused if it is someone else's
    or others may read it, or if a line is not a login this command wrote
    (never guessed at: it may be another file)."""
    _not_a_database(path)
    text = _users_text(path)
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, _, hashed = line.partition(":")
        try:
            _check_name(name)
        except LoviaTuiError as exc:
            raise LoviaTuiError(f"users file {path} line {number}: {exc}") from None
        if not _a_hash(hashed) or name in users:
            raise LoviaTuiError(
                f"users file {path} line {number} is not a `name:scrypt$…` login "
                "of its own (written by `lovia-tui serve --add-user`)"
            )
        users[name] = hashed
    if not users:
        raise LoviaTuiError(f"users file {path} has no `name:hash` line")
    return users


def _a_hash(stored: str) -> bool:
    kind, salt, digest = (stored.split("$") + ["", ""])[:3]
    return kind == "scrypt" and all(
        len(part) >= 32 and all(c in "0123456789abcdef" for c in part)
        for part in (salt, digest)
    )


def add_user(path: Path, name: str, password: str) -> bool:
    """Add one user, or change their password (True: they were there); the
    file is replaced whole (a new file renamed over it), 0600, never through
    a symlink; refused if it is not a users file already."""
    _check_name(name)
    _not_a_database(path)
    if not password:
        raise LoviaTuiError("an empty password is refused")
    users = read_users(path) if os.path.lexists(path) else {}
    known = name in users
    users[name] = hash_password(password)
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = create_new_file(fresh)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("".join(f"{n}:{h}\n" for n, h in users.items()))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(fresh, path)
    except BaseException:
        fresh.unlink(missing_ok=True)
        raise
    return known


class Gate:
    """The start token, the users (if any), and the live session cookies."""

    def __init__(self, users: dict[str, str] | None = None) -> None:
        self.token = secrets.token_urlsafe(16)  # 128 bits, new at every start
        self.users = users
        self._spent: list[str] = []
        """Tokens used once already: told apart from wrong ones, never let in."""
        self._sessions: dict[str, str] = {}
        self._unknown = hash_password(secrets.token_hex(16))
        """What an unknown name's password is checked against: the same one scrypt."""
        self._checking = asyncio.Lock()

    def open_session(self, who: str) -> str:
        cookie = secrets.token_urlsafe(32)
        self._sessions[cookie] = who
        return cookie

    def token_matches(self, offered: str) -> bool:
        return self.users is None and hmac.compare_digest(
            offered.encode(), self.token.encode()
        )

    def spend_token(self) -> None:
        """The start token lets one browser in, once: a URL left in a browser's
        history, a chat or a screenshot lets no one else in. A new token takes
        its place, for the next browser the server's owner opens."""
        self._spent.append(self.token)
        self.token = secrets.token_urlsafe(16)

    def token_spent(self, offered: str) -> bool:
        return any(
            hmac.compare_digest(offered.encode(), spent.encode())
            for spent in self._spent
        )

    async def login(self, name: str, password: str) -> bool:
        """Whether ``password`` is ``name``'s: one scrypt in a thread, one login
        at a time (a flood takes one core, and only its own time)."""
        stored = (self.users or {}).get(name)
        async with self._checking:
            matches = await asyncio.to_thread(
                password_matches, password, stored or self._unknown
            )
        return stored is not None and matches

    def who(self, cookie: str | None) -> str | None:
        """The person behind a cookie, compared in constant time; None if unknown."""
        if not cookie:
            return None
        found = None
        for known, who in self._sessions.items():
            if hmac.compare_digest(known.encode(), cookie.encode()):
                found = who
        return found
