"""The locked-down ``textual-serve`` server: gate, origin check, no shell, a cap.

``textual-serve``'s :class:`Server` lets anyone in, accepts any ``Origin`` on
``/ws`` (any web page could drive the app) and starts the app through a shell.
:class:`LockedServer` puts the :class:`~.gate.Gate` in front of every route,
refuses foreign origins and runs the app from an argument list, one process per
tab, at most ``max_sessions`` at once, every one of them ended at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import ipaddress
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from lovia_tui.core.actions.actor import SERVE_USER_ENV
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.serve.gate import COOKIE, TOKEN_USER, Gate

DEFAULT_MAX_SESSIONS = 4
MOST_COLUMNS, MOST_ROWS = 1_000, 500
"""The largest terminal a tab may ask for: the app draws every cell (a
5000×5000 one took 522 MB and sent the browser 120 MB a frame)."""
_STOP_GRACE = 5.0
"""Seconds an app gets to quit when asked before it is killed."""

WHO = web.RequestKey("who", str)
"""The person behind a request's cookie (set by the gate)."""
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def app_argv(paths: list[str], *, readonly: bool) -> list[str]:
    """The app's command line: absolute paths, so none reads as an option or subcommand."""
    argv = [
        sys.executable,
        "-m",
        "lovia_tui",
        *(str(Path(p).absolute()) for p in paths),
    ]
    return [*argv, "--readonly"] if readonly else argv


def check_host(host: str, *, authenticated: bool) -> None:
    """Refuse to listen beyond loopback without per-person logins."""
    if authenticated or host == "localhost":
        return
    address = _address(host)
    if address is None or not address.is_loopback:
        raise LoviaTuiError(
            f"refusing to listen on {host}: only loopback without --users FILE"
        )


def cells(value: object, default: int, most: int) -> int:
    """A terminal dimension a browser asked for, as a whole number of 1 to ``most``."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return default
    return max(1, min(number, most))


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None  # a name, such as localhost


def own_url(host: str, port: int) -> str:
    """The URL of a server listening on ``host``:``port`` (an IPv6 address in brackets)."""
    address = _address(host)
    return f"http://{f'[{host}]' if address and address.version == 6 else host}:{port}"


class ArgvAppService(AppService):
    """One app process, started from an argument list with who/where in its
    env, at a terminal size kept within ``MOST_COLUMNS`` × ``MOST_ROWS``."""

    def __init__(self, argv: list[str], who: str, **kwargs: Any) -> None:
        super().__init__(" ".join(argv), **kwargs)
        self.argv, self.who = argv, who

    async def start(self, width: int, height: int) -> None:
        await super().start(
            cells(width, 80, MOST_COLUMNS), cells(height, 24, MOST_ROWS)
        )

    async def set_terminal_size(self, width: int, height: int) -> None:
        await super().set_terminal_size(
            cells(width, 80, MOST_COLUMNS), cells(height, 24, MOST_ROWS)
        )

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width, height)
        environment[SERVE_USER_ENV] = self.who
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width, height),
        )
        self._stdin = process.stdin
        return process

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def end(self) -> None:
        """Ask the app to quit; kill it if it has not within the grace period."""
        with contextlib.suppress(TimeoutError, ConnectionError):
            await asyncio.wait_for(self.stop(), _STOP_GRACE)
        process = self._process
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()


class LockedServer(Server):
    """``textual-serve`` with a gate on every route and no shell."""

    def __init__(
        self,
        argv: list[str],
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        public_url: str | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        users: dict[str, str] | None = None,
    ) -> None:
        check_host(host, authenticated=users is not None)
        address = _address(host)
        if public_url is None and address is not None and address.is_unspecified:
            raise LoviaTuiError(
                f"listening on every address ({host}): give --public-url, the URL "
                "browsers open (the page only talks to the address it was opened at)"
            )
        super().__init__(
            " ".join(argv),
            host=host,
            port=port,
            title="lovia-tui",
            public_url=public_url or own_url(host, port),
        )
        self.public_url = self.public_url.rstrip("/")
        self._own_url = public_url is None
        self.argv = argv
        self.max_sessions = max_sessions
        self.gate = Gate(users)
        self.services: set[ArgvAppService] = set()
        self._open = 0
        self._ending: set[asyncio.Future[None]] = set()
        """Open tabs (counted from before the socket is ready: no race past the cap)."""

    @property
    def start_url(self) -> str:
        """The URL to open: with the token, or the login page."""
        if self.gate.users is not None:
            return f"{self.public_url}/login"
        return f"{self.public_url}/?token={self.gate.token}"

    async def web_app(self) -> web.Application:
        """The aiohttp application, gated (also what the tests serve)."""
        app = await self._make_app()
        app.middlewares.append(self._guard)
        app.router.add_get("/login", self._login_page)
        app.router.add_post("/login", self._login)
        return app

    def serve(self, debug: bool = False) -> None:
        """Listen, then serve until Ctrl+C. Bound first, so that port 0 (any
        free one) is known before the URL to open is printed."""
        self.debug = debug
        self.initialize_logging()
        family = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)[0][0]
        listening = socket.create_server((self.host, self.port), family=family)
        self.port = listening.getsockname()[1]
        if self._own_url:
            self.public_url = own_url(self.host, self.port)
        web.run_app(self.web_app(), sock=listening, print=lambda *_: None)

    async def on_startup(self, app: web.Application) -> None:
        self.console.print(f"lovia-tui serve: open {self.start_url}", highlight=False)
        self.console.print("Press Ctrl+C to stop (every app process it started ends).")

    async def on_shutdown(self, app: web.Application) -> None:
        await asyncio.gather(
            *(self._end(service) for service in list(self.services)), *self._ending
        )

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: _Handler
    ) -> web.StreamResponse:
        if request.path == "/login" and self.gate.users is not None:
            return await handler(request)
        offered = request.query.get("token")
        who = self.gate.who(request.cookies.get(COOKIE))
        if offered is not None and who is not None:
            # In already (a URL from the history): the token is not looked at.
            raise web.HTTPSeeOther(location=f"{self.public_url}{request.path}")
        if offered is not None:
            raise self._swap_token(request, offered)
        if who is None:
            raise web.HTTPUnauthorized(text="lovia-tui serve: open the printed URL\n")
        request[WHO] = who
        return await handler(request)

    def _swap_token(self, request: web.Request, offered: str) -> web.HTTPSeeOther:
        """The start token becomes a cookie, and the URL loses it; the token is
        spent, and the server prints a new URL for the next browser."""
        if self.gate.token_spent(offered):
            raise web.HTTPUnauthorized(
                text="lovia-tui serve: this URL was used already (each printed URL "
                "lets one browser in, once): open the newest URL the server printed\n"
            )
        if not self.gate.token_matches(offered):
            raise web.HTTPUnauthorized(text="lovia-tui serve: wrong or expired token\n")
        self.gate.spend_token()
        self.console.print(
            f"lovia-tui serve: that URL is used; for another browser, open {self.start_url}",
            highlight=False,
            soft_wrap=True,  # the URL whole on one line, to copy
        )
        return self._enter(request.path, TOKEN_USER)

    def _enter(self, path: str, who: str) -> web.HTTPSeeOther:
        """A session cookie for ``who``, and a redirect to ``path`` (no query)."""
        response = web.HTTPSeeOther(location=f"{self.public_url}{path}")
        response.set_cookie(
            COOKIE,
            self.gate.open_session(who),
            httponly=True,
            samesite="Strict",
            secure=self.public_url.startswith("https"),
            path="/",
        )
        return response

    async def _login_page(
        self, request: web.Request, problem: str = ""
    ) -> web.Response:
        note = f"<p>{html.escape(problem)}</p>" if problem else ""
        return web.Response(
            content_type="text/html",
            text=(
                "<!doctype html><title>lovia-tui</title><h1>lovia-tui</h1>"
                f'{note}<form method="post" action="{self.public_url}/login">'
                '<input name="name" autocomplete="username" placeholder="name">'
                '<input name="password" type="password" autocomplete="current-password">'
                "<button>Sign in</button></form>"
            ),
        )

    async def _login(self, request: web.Request) -> web.StreamResponse:
        # A browser names the page a form was posted from: another site's page
        # would sign its visitor in as the attacker (whose actions they'd take).
        if request.headers.get("Origin", self._own_origin()) != self._own_origin():
            raise web.HTTPForbidden(text="lovia-tui serve: foreign origin\n")
        form = await request.post()
        name, password = str(form.get("name", "")), str(form.get("password", ""))
        if not await self.gate.login(name, password):
            response = await self._login_page(request, "wrong name or password")
            response.set_status(401)
            return response
        raise self._enter("/", name)

    def _own_origin(self) -> str:
        public = urlsplit(self.public_url)
        return f"{public.scheme}://{public.netloc}"

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One app process per tab; ends with the tab (or the server)."""
        if request.headers.get("Origin") != self._own_origin():
            raise web.HTTPForbidden(text="lovia-tui serve: foreign origin\n")
        if self._open >= self.max_sessions:
            raise web.HTTPServiceUnavailable(
                text=f"lovia-tui serve: {self.max_sessions} sessions already open\n"
            )
        self._open += 1
        try:
            return await self._run_tab(request)
        finally:
            self._open -= 1

    async def _run_tab(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        service = ArgvAppService(
            self.argv,
            f"{request[WHO]} from {request.remote}",
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
        )
        self.services.add(service)
        try:
            await service.start(
                to_int(request.query.get("width", "80"), 80),
                to_int(request.query.get("height", "24"), 24),
            )
            await self._process_messages(websocket, service)
        finally:
            # aiohttp cancels this handler once the tab's connection drops: the
            # ending runs as its own task so the app process is ended regardless.
            ending = asyncio.ensure_future(self._end(service))
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)
            await asyncio.shield(ending)
        return websocket

    async def _end(self, service: ArgvAppService) -> None:
        try:
            await service.end()
        finally:
            self.services.discard(service)
