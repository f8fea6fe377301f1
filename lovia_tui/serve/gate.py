"""Who may use the served inspector: the start token, logins, session cookies.

``textual-serve`` has no authentication; everything here is ours. Secrets are
compared in constant time, cookies are HttpOnly and SameSite=Strict, and the
users file must be private (it holds password hashes).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from lovia_tui.core.errors import LoviaTuiError

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


def read_users(path: Path) -> dict[str, str]:
    """Name → hash from a ``name:hash`` file; refused if others may read it."""
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        raise LoviaTuiError(f"users file {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(mode):
        raise LoviaTuiError(f"users file {path} is not a regular file")
    if mode & 0o077:
        raise LoviaTuiError(
            f"users file {path} is readable by others (mode {stat.S_IMODE(mode):o}): "
            "chmod 600 it"
        )
    users: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, hashed = line.strip().partition(":")
        if sep and name:
            users[name] = hashed
    if not users:
        raise LoviaTuiError(f"users file {path} has no `name:hash` line")
    return users


def add_user(path: Path, name: str, password: str) -> None:
    """Append (or replace) one user; the file is created 0600, never via a symlink."""
    if not name or ":" in name or name != name.strip() or not name.isprintable():
        raise LoviaTuiError(
            f"bad user name {name!r}: printable, no ':' or spaces around"
        )
    users = read_users(path) if path.exists() else {}
    users[name] = hash_password(password)
    text = "".join(f"{n}:{h}\n" for n, h in users.items())
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


class Gate:
    """The start token, the users (if any), and the live session cookies."""

    def __init__(self, users: dict[str, str] | None = None) -> None:
        self.token = secrets.token_urlsafe(16)  # 128 bits, new at every start
        self.users = users
        self._sessions: dict[str, str] = {}

    def open_session(self, who: str) -> str:
        cookie = secrets.token_urlsafe(32)
        self._sessions[cookie] = who
        return cookie

    def token_matches(self, offered: str) -> bool:
        return self.users is None and hmac.compare_digest(
            offered.encode(), self.token.encode()
        )

    def login(self, name: str, password: str) -> bool:
        stored = (self.users or {}).get(name)
        if stored is None:
            password_matches(password, hash_password("timing"))  # same cost either way
            return False
        return password_matches(password, stored)

    def who(self, cookie: str | None) -> str | None:
        """The person behind a cookie, compared in constant time; None if unknown."""
        if not cookie:
            return None
        found = None
        for known, who in self._sessions.items():
            if hmac.compare_digest(known.encode(), cookie.encode()):
                found = who
        return found
