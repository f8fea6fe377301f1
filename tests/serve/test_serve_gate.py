"""The locked-down server without a browser: aiohttp's test client, real app processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import ClientSession, CookieJar, WSServerHandshakeError, test_utils
from support.lovia_factory import SCRIPTS, write_session
from support.ports import free_port

from lovia_tui.cli import main
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.serve import gate
from lovia_tui.serve.gate import COOKIE, Gate, add_user, read_users
from lovia_tui.serve.server import LockedServer, app_argv

ROUTES = ["/", "/ws", "/static/css/xterm.css", "/download/anything", "/nope"]


@pytest.fixture
async def db(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    await write_session(path, "s", SCRIPTS[:1])
    return path


async def _client(server: LockedServer) -> test_utils.TestClient:
    client = test_utils.TestClient(
        test_utils.TestServer(await server.web_app(), port=server.port)
    )
    await client.start_server()
    return client


def _server(paths: list[Path], **options) -> LockedServer:
    port = free_port()
    return LockedServer(
        app_argv([str(p) for p in paths], readonly=False),
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        **options,
    )


@pytest.fixture
async def served(db: Path) -> AsyncIterator[tuple[LockedServer, test_utils.TestClient]]:
    server = _server([db], max_sessions=1)
    client = await _client(server)
    yield server, client
    await client.close()


async def _enter(server: LockedServer, client: test_utils.TestClient) -> None:
    response = await client.get(f"/?token={server.gate.token}", allow_redirects=False)
    assert response.status == 303


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_no_cookie_is_401_on_every_route(served) -> None:
    _, client = served
    for route in ROUTES:
        response = await client.get(route, allow_redirects=False)
        assert response.status == 401, route


async def test_token_swapped_for_a_strict_cookie_and_stripped_from_the_url(
    served,
) -> None:
    server, client = served
    response = await client.get(f"/?token={server.gate.token}", allow_redirects=False)
    assert response.status == 303
    assert response.headers["Location"] == f"{server.public_url}/"
    cookie = response.headers["Set-Cookie"]
    assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie and server.gate.token not in cookie
    page = await client.get("/")
    assert page.status == 200 and "ws://" in await page.text()
    assert (await client.get("/static/css/xterm.css")).status == 200


async def test_wrong_token_is_401_and_sets_no_cookie(served) -> None:
    server, client = served
    wrong = server.gate.token[:-1] + ("A" if server.gate.token[-1] != "A" else "B")
    response = await client.get(f"/?token={wrong}", allow_redirects=False)
    assert response.status == 401 and "Set-Cookie" not in response.headers
    assert (await client.get("/")).status == 401


async def test_the_start_url_lets_one_browser_in_once(served) -> None:
    """A used URL (browser history, a chat, a screenshot) lets no one else in
    and says what to do; the server prints a new one for the next browser,
    and a browser already in that meets a token URL is just sent on."""
    server, client = served
    used = server.gate.token
    server.console.begin_capture()
    await _enter(server, client)
    printed = server.console.end_capture()
    fresh = server.gate.token
    assert fresh != used and f"open {server.public_url}/?token={fresh}\n" in printed
    # Other browsers: their own cookie jars, on the same server.
    other, third = (ClientSession(cookie_jar=CookieJar(unsafe=True)) for _ in "ab")
    try:
        response = await other.get(
            client.make_url(f"/?token={used}"), allow_redirects=False
        )
        assert response.status == 401 and "Set-Cookie" not in response.headers
        why = await response.text()
        assert "used already" in why and "open the newest URL the server printed" in why
        assert why.count("\n") == 1
        response = await other.get(client.make_url("/"), allow_redirects=False)
        assert response.status == 401
        # The one already in keeps its session, and spends no token on the way.
        again = await client.get(f"/?token={used}", allow_redirects=False)
        assert again.status == 303 and "Set-Cookie" not in again.headers
        assert again.headers["Location"] == f"{server.public_url}/"
        assert server.gate.token == fresh
        assert (await client.get("/")).status == 200
        # The newest printed URL lets one more in, once.
        response = await other.get(
            client.make_url(f"/?token={fresh}"), allow_redirects=False
        )
        assert response.status == 303
        response = await other.get(client.make_url("/"), allow_redirects=False)
        assert response.status == 200
        response = await third.get(
            client.make_url(f"/?token={fresh}"), allow_redirects=False
        )
        assert response.status == 401 and "used already" in await response.text()
    finally:
        await other.close()
        await third.close()


async def test_old_token_and_cookie_refused_after_restart(db: Path) -> None:
    first = _server([db])
    client = await _client(first)
    old_token = first.gate.token
    await _enter(first, client)
    old_cookie = client.session.cookie_jar
    cookies = {c.key: c.value for c in old_cookie}
    await client.close()

    restarted = _server([db])
    assert restarted.gate.token != old_token
    client = await _client(restarted)
    try:
        response = await client.get(f"/?token={old_token}", allow_redirects=False)
        assert response.status == 401
        response = await client.get("/", cookies=cookies, allow_redirects=False)
        assert response.status == 401
    finally:
        await client.close()


async def test_foreign_origin_on_ws_is_403(served) -> None:
    server, client = served
    await _enter(server, client)
    for origin in ("http://evil.example", "http://localhost:1", None):
        headers = {"Origin": origin} if origin else {}
        with pytest.raises(WSServerHandshakeError) as refused:
            await client.ws_connect("/ws", headers=headers)
        assert refused.value.status == 403, origin
    assert server.services == set()


async def test_max_sessions_503_and_every_app_process_ends(served) -> None:
    server, client = served
    await _enter(server, client)
    origin = {"Origin": server.public_url}
    tab = await client.ws_connect("/ws?width=80&height=24", headers=origin)
    await asyncio.wait_for(tab.receive(), 30)  # the app's first screen bytes
    (service,) = server.services
    pid = service.pid
    assert pid is not None and _alive(pid)
    with pytest.raises(WSServerHandshakeError) as refused:
        await client.ws_connect("/ws", headers=origin)
    assert refused.value.status == 503
    await tab.close()  # the closed tab ends its app process
    for _ in range(200):
        if not server.services:
            break
        await asyncio.sleep(0.05)  # bounded: 200 polls
    assert server.services == set() and not _alive(pid)


async def test_stopping_the_server_ends_its_app_processes(db: Path) -> None:
    server = _server([db], max_sessions=2)
    client = await _client(server)
    await _enter(server, client)
    origin = {"Origin": server.public_url}
    tabs = [await client.ws_connect("/ws", headers=origin) for _ in range(2)]
    for tab in tabs:
        await asyncio.wait_for(tab.receive(), 30)
    pids = [s.pid for s in server.services]
    assert len(pids) == 2 and all(pid and _alive(pid) for pid in pids)
    await client.close()  # shuts the server down with its tabs still open
    assert not any(pid and _alive(pid) for pid in pids)


def test_other_host_without_users_is_refused_at_start(db: Path) -> None:
    for host in ("0.0.0.0", "::", "192.168.1.10"):
        with pytest.raises(LoviaTuiError, match="only loopback"):
            LockedServer(app_argv([str(db)], readonly=True), host=host)
    LockedServer(app_argv([str(db)], readonly=True), host="::1")


def test_cli_refuses_other_host_without_users(db: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lovia_tui", "serve", str(db), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "only loopback" in result.stderr


async def test_hostile_paths_stay_paths_and_create_nothing(
    tmp_path: Path, monkeypatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    hostile = tmp_path / "a b 'q\" ; $(touch pwned) `touch pwned2`"
    hostile.mkdir()
    db = hostile / "s; $(touch pwned3).db"
    await write_session(db, "s", SCRIPTS[:1])
    server = _server([db])
    assert server.argv[-1] == str(db)
    client = await _client(server)
    try:
        await _enter(server, client)
        tab = await client.ws_connect("/ws", headers={"Origin": server.public_url})
        await asyncio.wait_for(tab.receive(), 30)
        (service,) = server.services
        cmdline = Path(f"/proc/{service.pid}/cmdline").read_bytes().split(b"\0")
        assert str(db).encode() in cmdline
        await tab.close()
    finally:
        await client.close()
    assert not list(tmp_path.rglob("pwned*"))
    assert not list(work.iterdir())


def test_users_file_must_be_private(tmp_path: Path) -> None:
    users = tmp_path / "users"
    add_user(users, "alice", "correct horse")
    assert users.stat().st_mode & 0o777 == 0o600
    assert set(read_users(users)) == {"alice"}
    users.chmod(0o640)
    with pytest.raises(LoviaTuiError, match="readable by others"):
        read_users(users)
    link = tmp_path / "link"
    link.symlink_to(users)
    with pytest.raises(LoviaTuiError, match="not a regular file"):
        read_users(link)
    with pytest.raises(LoviaTuiError, match="not a regular file"):
        add_user(link, "bob", "pw")
    assert link.is_symlink()


def test_a_users_file_of_another_user_is_refused(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It chooses who may sign in: someone else's is never used, nor rewritten
    (as the journal, index and caches of another user are refused)."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    users = tmp_path / "users"
    add_user(users, "alice", "correct horse")
    os.chown(users, 65534, -1)
    before = users.read_bytes()
    for act in (lambda: read_users(users), lambda: add_user(users, "bob", "pw")):
        with pytest.raises(
            LoviaTuiError, match=r"belongs to another user \(uid 65534\)"
        ):
            act()
    assert main(["serve", str(db), "--users", str(users), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "belongs to another user" in err, err
    assert users.read_bytes() == before and users.stat().st_uid == 65534


def test_add_user_changes_only_a_users_file(tmp_path: Path) -> None:
    """Another private file of ``a:b`` lines is never rewritten as one; a
    known name's password is changed, and said so."""
    users = tmp_path / "users"
    assert add_user(users, "alice", "one") is False
    first = read_users(users)["alice"]
    assert add_user(users, "alice", "two") is True
    assert read_users(users)["alice"] != first
    pgpass = tmp_path / ".pgpass"
    pgpass.write_text("db1:5432:app:admin:SECRET1\n")
    pgpass.chmod(0o600)
    with pytest.raises(LoviaTuiError, match="line 1 is not a `name:scrypt"):
        add_user(pgpass, "bob", "pw")
    assert pgpass.read_text() == "db1:5432:app:admin:SECRET1\n"
    binary = tmp_path / "logins"
    binary.write_bytes(b"\x00\xff\xfe")
    binary.chmod(0o600)
    with pytest.raises(LoviaTuiError, match="not text: not a users file"):
        add_user(binary, "bob", "pw")
    with pytest.raises(LoviaTuiError, match="named as a database: not used"):
        add_user(tmp_path / "sessions.db-wal", "bob", "pw")
    for name, password, said in [
        ("token", "pw", "the journal's name"),
        ("a:b", "pw", "bad user name"),
        ("bob", "", "empty password"),
    ]:
        with pytest.raises(LoviaTuiError, match=said):
            add_user(users, name, password)
    assert set(read_users(users)) == {"alice"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".pgpass",
        "logins",
        "users",
    ]


async def test_a_password_is_checked_off_the_loop_at_one_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A known name and an unknown one cost one scrypt each (the timing tells
    no names), run in a thread while the server's loop goes on."""
    users = tmp_path / "users"
    add_user(users, "alice", "correct horse")
    door = Gate(read_users(users))
    checked: list[str] = []
    matches = gate.password_matches

    def slow(password: str, stored: str) -> bool:
        checked.append(stored)
        time.sleep(0.2)
        return matches(password, stored)

    monkeypatch.setattr(gate, "password_matches", slow)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    try:
        assert await door.login("alice", "correct horse")
        assert not await door.login("nobody", "correct horse")
        assert not await door.login("alice", "wrong")
    finally:
        ticker.cancel()
    assert len(checked) == 3 and ticks >= 30  # the loop ran through 0.6 s of checks


async def test_a_login_posted_from_another_site_is_403(
    db: Path, tmp_path: Path
) -> None:
    users = tmp_path / "users"
    add_user(users, "mallory", "pw")
    server = _server([db], users=read_users(users))
    client = await _client(server)
    try:
        form = {"name": "mallory", "password": "pw"}
        foreign = await client.post(
            "/login", data=form, headers={"Origin": "http://evil.example"},
            allow_redirects=False,
        )  # fmt: skip
        assert foreign.status == 403
        assert not [c for c in client.session.cookie_jar if c.key == COOKIE]
        own = await client.post(
            "/login", data=form, headers={"Origin": server.public_url},
            allow_redirects=False,
        )  # fmt: skip
        assert own.status == 303
    finally:
        await client.close()


async def test_login_names_the_person(db: Path, tmp_path: Path) -> None:
    users = tmp_path / "users"
    add_user(users, "alice", "correct horse")
    server = _server([db], users=read_users(users))
    client = await _client(server)
    try:
        assert (await client.get(f"/?token={server.gate.token}")).status == 401
        assert (await client.get("/login")).status == 200
        wrong = await client.post("/login", data={"name": "alice", "password": "x"})
        assert wrong.status == 401 and (await client.get("/")).status == 401
        right = await client.post(
            "/login",
            data={"name": "alice", "password": "correct horse"},
            allow_redirects=False,
        )
        assert right.status == 303
        assert (await client.get("/")).status == 200
        (cookie,) = [c.value for c in client.session.cookie_jar if c.key == COOKIE]
        assert server.gate.who(cookie) == "alice"
    finally:
        await client.close()


async def test_a_tab_gets_at_most_the_largest_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever size a page asks for at its start or in a resize."""
    from textual_serve.app_service import AppService

    from lovia_tui.serve.server import MOST_COLUMNS, MOST_ROWS, ArgvAppService

    asked: list[tuple[int, int]] = []

    async def record(self, width: int, height: int) -> None:
        asked.append((width, height))

    monkeypatch.setattr(AppService, "set_terminal_size", record)
    monkeypatch.setattr(AppService, "start", record)
    service = ArgvAppService(["app"], "alice", write_bytes=None, write_str=None,
                             close=None, download_manager=None)  # fmt: skip
    await service.start(5_000, 5_000)
    for width, height in [(120, 40), (10**30, -5), ("wide", 1.5), (0, 10**6)]:
        await service.set_terminal_size(width, height)  # type: ignore[arg-type]
    assert asked == [
        (MOST_COLUMNS, MOST_ROWS),
        (120, 40),
        (MOST_COLUMNS, 1),
        (80, 1),
        (1, MOST_ROWS),
    ]


def test_port_0_serves_on_the_port_it_got(db: Path, tmp_path: Path) -> None:
    """The printed URL, its redirect and the page name the port bound."""
    import re
    import signal
    import urllib.request

    server = subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", "serve", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"open (http://127\.0\.0\.1:(\d+))/\?token=\S+", line)
        assert found and found[2] != "0", line
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(line.split("open ", 1)[1].strip(), timeout=30) as page:
            assert page.status == 200 and page.url == f"{found[1]}/"
            assert f"ws://127.0.0.1:{found[2]}/ws" in page.read().decode()
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)


def test_every_address_needs_the_url_browsers_open(db: Path, tmp_path: Path) -> None:
    users = tmp_path / "users"
    add_user(users, "alice", "pw")
    for host in ("0.0.0.0", "::"):
        with pytest.raises(LoviaTuiError, match="give --public-url"):
            LockedServer(
                app_argv([str(db)], readonly=True), host=host, users=read_users(users)
            )
    served = LockedServer(
        app_argv([str(db)], readonly=True), host="::", users=read_users(users),
        public_url="https://lovia.example/",
    )  # fmt: skip
    assert served.start_url == "https://lovia.example/login"
    assert LockedServer(
        app_argv([str(db)], readonly=True), host="::1"
    ).start_url.startswith("http://[::1]:8000/?token=")
