"""The live kit: a real Chatto server given by the environment, bootstrapped over its own API,
and the e2e harness pointed at it (tests/live).

Environment (all three required, else every live test is skipped with the reason):

* ``CHATTO_LIVE_URL`` — the server's base URL (what a browser opens, no ``/api``);
* ``CHATTO_LIVE_LOGIN`` / ``CHATTO_LIVE_PASSWORD`` — an account holding the server ``owner``
  (or an admin) role: it logs in with ``POST /auth/login`` (Chatto's password login,
  ``cli/internal/http_server/auth.go``; the answer carries a bearer ``token``). It must be
  able to create a bot (``bot.create``), people (test endpoints, or ``CHATTO_LIVE_PEOPLE``),
  channels (``room.create``, ``room.manage``) and grant permissions (``role.manage`` /
  ``user.manage-permissions``), and hold the ``message.*`` permissions it grants the bot: on
  Chatto 0.5 a bot's permissions are capped by its owner's;
* optional ``CHATTO_LIVE_PEOPLE`` — ``login:password,login:password,login:password``: three
  existing person accounts (alice, bob, carol) for a server without Chatto's test endpoints.
  Without it the kit creates them with ``POST /auth/test/create-user``, which exists only in a
  build with the ``test_endpoints`` tag (``cli/internal/http_server/test_endpoints.go``); a
  server with neither skips the live tests.

The server must run Chatto ≥ 0.5.0-beta.10 (realtime protocol 4, :data:`MIN_VERSION`):
:func:`version_gate` reads its version (``ServerDiscoveryService/GetServer`` through the
plugin's :meth:`ChattoClient.get_server`) and tests/live/conftest.py leaves every live test
out, with one line naming the version found, when it is older.

What :meth:`LiveServer.bootstrap` creates, all named ``hc-<tag>-…`` (``tag`` random per run),
and :meth:`LiveServer.stop` removes again (newest first; a failed step is reported, not
raised): the people (``AdminUserService/DeleteUser``), a bot
(``chatto.api.v1.BotService/CreateBot``, owned by the owner account; its first key is the
show-once key of the answer, or a named key from ``BotService/CreateBotApiKey`` when the answer
has none; removed with ``DeleteBot``), its grants (``chatto.admin.v1.AdminPermissionService/
SetUserPermission``: :data:`BOT_GRANTS` at server scope and :data:`BOT_DM_GRANTS` at the
Direct messages scope, because a new bot holds nothing and inherits no DM decision; checked
with the bot's own ``GetViewer``; they go with the bot), channels (``RoomService/CreateRoom``,
members added with ``AddMember``; archived with ``ArchiveRoom``) and alice's DM with the bot
(``StartDM`` as alice: a bot cannot open a DM).

:class:`LiveHarness` is :class:`chatto_local.harness.Harness` on that world: the real
``hermes gateway run`` and the scripted model as in tests/e2e, people acting over the API,
reads over the API as alice (no server state to peek at), no clock to move.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from chatto_local.harness import Harness
from chatto_local.scripted_model import ScriptedModel
from hermes_chatto.wire.connect import ChattoClient
from hermes_chatto.wire.errors import ChattoError
from hermes_chatto.wire.types import ChattoMessage

log = logging.getLogger("tests.live")

URL_ENV, LOGIN_ENV, PASSWORD_ENV, PEOPLE_ENV = (
    "CHATTO_LIVE_URL",
    "CHATTO_LIVE_LOGIN",
    "CHATTO_LIVE_PASSWORD",
    "CHATTO_LIVE_PEOPLE",
)
#: What the bot needs at server scope (Chatto 0.5: a bot holds no roles and nothing until an
#: owner/admin grants it, capped by its owner's own decisions; docs/chatto-0.5.md §5).
BOT_GRANTS = ("message.read", "message.post", "message.post-in-thread", "message.react", "message.attach")
#: What the bot needs at the Direct messages scope (a bot inherits no DM decision).
BOT_DM_GRANTS = ("message.read", "message.post", "message.react", "message.attach")
PEOPLE = ("alice", "bob", "carol")
#: The oldest Chatto the live suite runs against: realtime protocol 4's schema (beta.10 … beta.20).
MIN_VERSION = "0.5.0-beta.10"
SUPPORTED = f"Chatto ≥ {MIN_VERSION} (realtime protocol 4; tested up to 0.5.0-beta.20)"


def version_gate(version: str) -> str:
    """``""`` when a server reporting ``version`` (``ServerPublicProfile.version``) is new
    enough for the live suite, else the one-line reason to skip it. A version that is not
    semver (a ``dev`` build) is let through: its realtime handshake will tell."""
    from hermes_chatto.doctor import version_note

    note = version_note(version)
    if note.kind in ("protocol_1", "protocol_2", "pre_beta"):
        return (
            f"live suite: the server runs Chatto {version or '(no version)'}, older than this suite needs: "
            f"{SUPPORTED}" + (f"; {note.speaks}" if note.speaks else "")
        )
    return ""


async def server_version(url: str) -> str:
    """The server's ``ServerPublicProfile.version`` (public ``GetServer``, no credentials)."""
    async with ChattoClient(url, None, timeout=20.0) as anon:
        return (await anon.get_server()).version


@dataclass(frozen=True)
class LiveConfig:
    """The live server from the environment; ``people`` is ``[(login, password)] * 3`` or ``[]``."""

    url: str
    login: str
    password: str
    people: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> tuple[LiveConfig | None, str]:
        """``(config, "")``, or ``(None, reason to skip)`` when the environment names no server."""
        e = os.environ if env is None else env
        missing = [n for n in (URL_ENV, LOGIN_ENV, PASSWORD_ENV) if not e.get(n)]
        if missing:
            return None, (
                f"live suite: no real Chatto server given ({', '.join(missing)} unset); "
                f"set {URL_ENV}, {LOGIN_ENV} and {PASSWORD_ENV} (an owner/admin account) — see README, "
                '"Check against your own Chatto server"'
            )
        people: list[tuple[str, str]] = []
        raw = e.get(PEOPLE_ENV, "").strip()
        if raw:
            for item in raw.split(","):
                login, _, pw = item.strip().partition(":")
                if not login or not pw:
                    return None, f"live suite: {PEOPLE_ENV} must be login:password,login:password,login:password"
                people.append((login, pw))
            if len(people) < 3:
                return None, f"live suite: {PEOPLE_ENV} names {len(people)} account(s); it needs 3 (alice, bob, carol)"
        return cls(e[URL_ENV].rstrip("/"), e[LOGIN_ENV], e[PASSWORD_ENV], tuple(people[:3])), ""


class LiveApiError(Exception):
    """A refused call: ``status`` (HTTP), ``code`` (Connect code or ``""``) and the message."""

    def __init__(self, what: str, status: int, code: str, message: str) -> None:
        super().__init__(f"{what} -> HTTP {status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


@dataclass
class Person:
    login: str
    user_id: str
    token: str
    created: bool


@dataclass(frozen=True)
class BotAccount:
    """A bot the kit created besides the one the gateway serves (:meth:`LiveServer.create_bot`)."""

    user_id: str
    login: str
    key: str = field(repr=False)


@dataclass
class LiveServer:
    """A real Chatto server, driven over its API as its owner. ``base_url`` and ``ws_url`` as
    on :class:`chatto_local.LocalChatto`; ``people``, ``rooms`` (key → room id),
    ``bot_id`` / ``bot_key`` / ``bot_login`` after :meth:`bootstrap`."""

    cfg: LiveConfig
    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    people: dict[str, Person] = field(default_factory=dict)
    rooms: dict[str, str] = field(default_factory=dict)
    owner: Person | None = None
    bot_id: str = ""
    bot_key: str = ""
    bot_login: str = ""
    test_endpoints: bool | None = None
    cleanup_errors: list[str] = field(default_factory=list)
    _undo: list[tuple[str, Callable[[], Awaitable[Any]]]] = field(default_factory=list)
    _http: httpx.AsyncClient | None = None

    @property
    def base_url(self) -> str:
        return self.cfg.url

    @property
    def ws_url(self) -> str:
        from hermes_chatto.wire.realtime import realtime_url

        return realtime_url(self.cfg.url)

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=20.0)
        return self._http

    # ------------------------------------------------------------------ raw calls
    async def call(self, procedure: str, body: dict | None = None, *, token: str | None = None) -> dict:
        """One ConnectRPC JSON call (``procedure`` like ``chatto.api.v1.BotService/CreateBot``)
        with ``token`` (default: the owner's). Returns the JSON body; raises
        :class:`LiveApiError`."""
        tok = token if token is not None else (self.owner.token if self.owner else "")
        headers = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        r = await self.http.post(f"{self.cfg.url}/api/connect/{procedure}", json=body or {}, headers=headers)
        data: Any = None
        with contextlib.suppress(ValueError):
            data = r.json()
        if r.status_code != 200:
            d = data if isinstance(data, dict) else {}
            raise LiveApiError(procedure, r.status_code, str(d.get("code", "")), str(d.get("message", r.text[:200])))
        return data if isinstance(data, dict) else {}

    async def login(self, login: str, password: str) -> Person:
        """``POST /auth/login`` → a :class:`Person` with the bearer token it hands out."""
        r = await self.http.post(f"{self.cfg.url}/auth/login", json={"login": login, "password": password})
        if r.status_code != 200 or not r.json().get("token"):
            raise LiveApiError(f"/auth/login as {login}", r.status_code, "", r.text[:200])
        d = r.json()
        return Person(login, d["user"]["id"], d["token"], created=False)

    async def create_person(self, key: str, display: str) -> Person:
        """A new person through ``/auth/test/create-user`` (``test_endpoints`` builds only),
        logged in; raises :class:`LiveApiError` (404) on other builds."""
        login, pw = f"hc-{self.tag}-{key}", "hc-" + secrets.token_hex(12)
        r = await self.http.post(
            f"{self.cfg.url}/auth/test/create-user", json={"login": login, "displayName": display, "password": pw}
        )
        if r.status_code != 200:
            raise LiveApiError("/auth/test/create-user", r.status_code, "", r.text[:200])
        p = await self.login(login, pw)
        p.created = True
        self._undo.append((f"delete person {login}", lambda: self._delete_user(p.user_id)))
        return p

    async def _delete_user(self, user_id: str) -> None:
        await self._retry_deletion(
            "chatto.admin.v1.AdminUserService/DeleteUser", {"userId": user_id, "currentPassword": self.cfg.password}
        )

    async def _retry_deletion(self, procedure: str, body: dict) -> None:
        """Delete a user or bot, once more after an ``internal`` answer. Chatto main fails the
        first deletion of an account that attached files: core/user_deletion.go deletes the
        account's message-owned assets (``asset_deleted`` events) and then appends the
        deletion fact waiting on the users projection, which refuses to wait for a subject it
        does not consume (server log: "projection does not consume subject:
        evt.asset.<id>.asset_deleted not matched by filters [evt.user.>]"). The second call
        finds no assets left and goes through, or answers ``not_found`` when the first one had
        deleted the account after all (seen for a person)."""
        try:
            await self.call(procedure, body)
        except LiveApiError as exc:
            if exc.code != "internal":
                raise
            log.info("live cleanup: %s answered internal once (Chatto's asset/user projection race); again", procedure)
            try:
                await self.call(procedure, body)
            except LiveApiError as again:
                if again.code != "not_found":  # the first call did delete it after all
                    raise

    # ------------------------------------------------------------------ bootstrap
    async def bootstrap(self, *, extra_rooms: tuple[str, ...] = ()) -> None:
        """Log in as the owner; people; the bot with its grants; ``#hc-<tag>`` (key
        ``general``) with everyone in it; alice's DM with the bot (key ``dm``, opened by alice:
        a bot cannot ``StartDM``); one channel with everyone per ``extra_rooms`` key."""
        self.owner = await self.login(self.cfg.login, self.cfg.password)
        await self._people()
        acct = await self._new_bot(f"hc{self.tag}_bot", f"HC Live {self.tag}")
        self.bot_id, self.bot_key, self.bot_login = acct.user_id, acct.key, acct.login
        group = await self._room_group()
        members = [p.user_id for p in self.people.values()] + [self.bot_id]
        self.rooms["general"] = await self.create_room(f"hc-{self.tag}", group, members)
        for key in extra_rooms:
            self.rooms[key] = await self.create_room(f"hc-{self.tag}-{key}"[:30], group, members)
        async with self.client("alice") as alice:
            dm = await alice.start_dm([self.bot_id])
        self.rooms["dm"] = dm.id

    async def _people(self) -> None:
        if self.cfg.people:
            for key, (login, pw) in zip(PEOPLE, self.cfg.people, strict=False):
                self.people[key] = await self.login(login, pw)
            self.test_endpoints = None
            return
        for key in PEOPLE:
            self.people[key] = await self.create_person(key, key.capitalize())
        self.test_endpoints = True

    async def set_permission(self, user_id: str, permission: str, decision: str, *, scope: str = "SERVER") -> None:
        """``AdminPermissionService/SetUserPermission``; ``decision`` is ``ALLOW`` / ``DENY`` /
        ``NONE``; ``scope`` ``SERVER`` or ``DM`` (the Direct messages scope; both need no id)."""
        await self.call(
            "chatto.admin.v1.AdminPermissionService/SetUserPermission",
            {
                "userId": user_id,
                "permission": permission,
                "decision": f"PERMISSION_DECISION_{decision}",
                "scope": {"kind": f"PERMISSION_SCOPE_KIND_{scope}"},
            },
        )

    async def _new_bot(self, login: str, display: str) -> BotAccount:
        """``BotService/CreateBot`` (owned by the owner account), a key, :data:`BOT_GRANTS`
        and :data:`BOT_DM_GRANTS`; deleted by :meth:`stop`. Raises :class:`LiveApiError` when
        the bot does not hold its grants afterwards (the owner's ceiling)."""
        bot = await self.call(
            "chatto.api.v1.BotService/CreateBot",
            {"login": login, "displayName": display, "description": "hermes-chatto live suite (removed afterwards)"},
        )
        user = bot["bot"]["user"]
        user_id = str(user["id"])
        self._undo.append(
            (
                f"delete bot {user['login']}",
                lambda: self._retry_deletion("chatto.api.v1.BotService/DeleteBot", {"botUserId": user_id}),
            )
        )
        key = str(bot.get("apiKey") or "")
        if not key:  # 0.5 beta: keys are named, made with CreateBotApiKey
            made = await self.call(
                "chatto.api.v1.BotService/CreateBotApiKey", {"botUserId": user_id, "name": f"hc-{self.tag}"}
            )
            key = str(made["apiKey"])
        for scope, perms in (("SERVER", BOT_GRANTS), ("DM", BOT_DM_GRANTS)):
            for perm in perms:
                try:
                    await self.set_permission(user_id, perm, "ALLOW", scope=scope)
                except LiveApiError as exc:
                    raise LiveApiError(
                        f"granting the bot {perm} at {scope} scope", exc.status, exc.code, exc.message
                    ) from exc
        viewer = await self.call("chatto.api.v1.ViewerService/GetViewer", {}, token=key)
        held = {p["permission"] for p in viewer["viewerPermissions"]["permissions"] if p.get("granted")}
        missing = [p for p in BOT_GRANTS if p not in held]
        if missing:
            raise LiveApiError(
                "bot grants",
                200,
                "",
                f"the bot does not hold {', '.join(missing)} after they were granted: a bot's permissions are "
                f"capped by its owner's, so {self.cfg.login} must hold them too",
            )
        return BotAccount(user_id, str(user["login"]), key)

    async def _room_group(self) -> str:
        rooms = await self.call("chatto.api.v1.RoomDirectoryService/ListRooms", {})
        for r in rooms.get("rooms", []):
            gid = (r.get("room") or {}).get("groupId")
            if gid:
                return str(gid)
        groups = await self.call("chatto.api.v1.RoomDirectoryService/ListRoomGroups", {})
        for g in groups.get("groups", groups.get("roomGroups", [])):
            gid = g.get("id") or (g.get("group") or {}).get("id")
            if gid:
                return str(gid)
        raise LiveApiError("ListRoomGroups", 200, "", "the owner sees no room group to create channels in")

    async def create_room(self, name: str, group: str, members: list[str]) -> str:
        """A channel ``name`` in ``group`` with ``members`` added; archived by :meth:`stop`."""
        room = await self.call(
            "chatto.api.v1.RoomService/CreateRoom",
            {"name": name, "description": "hermes-chatto live suite (removed afterwards)", "groupId": group},
        )
        room_id = str(room["room"]["id"])
        self._undo.append(
            (f"archive #{name}", lambda: self.call("chatto.api.v1.RoomService/ArchiveRoom", {"roomId": room_id}))
        )
        for uid in members:
            if self.owner is None or uid != self.owner.user_id:
                await self.call("chatto.api.v1.RoomService/AddMember", {"roomId": room_id, "userId": uid})
        return room_id

    async def create_bot(self, key: str, display: str, *, rooms: tuple[str, ...] = ()) -> BotAccount:
        """A second bot account (``hc<tag><key>_bot``) with the grants of the first, a member of
        the channels ``rooms`` (keys of :attr:`rooms`); deleted by :meth:`stop`."""
        acct = await self._new_bot(f"hc{self.tag}{key}_bot", display)
        for r in rooms:
            await self.call("chatto.api.v1.RoomService/AddMember", {"roomId": self.rooms[r], "userId": acct.user_id})
        return acct

    def client(self, who: str) -> ChattoClient:
        """A :class:`ChattoClient` holding ``who``'s token (``alice`` …, ``owner`` or ``bot``)."""
        if who == "bot":
            return ChattoClient(self.cfg.url, self.bot_key, timeout=20.0)
        p = self.owner if who == "owner" else self.people[who]
        assert p is not None
        return ChattoClient(self.cfg.url, p.token, timeout=20.0)

    async def stop(self) -> None:
        """Undo what :meth:`bootstrap` created, newest first; failures go to
        :attr:`cleanup_errors` (and the log), never raised."""
        while self._undo:
            what, undo = self._undo.pop()
            try:
                await undo()
            except Exception as exc:  # noqa: BLE001 - clean up as much as possible
                self.cleanup_errors.append(f"{what}: {exc}")
                log.warning("live cleanup: %s failed: %s", what, exc)
        if self._http is not None:
            await self._http.aclose()
            self._http = None


class HoldingModel(ScriptedModel):
    """:class:`ScriptedModel` that, after :meth:`hold_next`, holds the next streaming
    main-loop request (after recording it) until :meth:`release` — so a test can act while
    a turn is provably in flight (the typing indicator, the ack reaction, an edit)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._armed = threading.Event()
        self._release = threading.Event()
        self.held = threading.Event()

    def hold_next(self) -> None:
        self._release.clear()
        self.held.clear()
        self._armed.set()

    def release(self) -> None:
        self._armed.clear()
        self._release.set()

    def _record(self, req: Any) -> None:
        super()._record(req)
        msgs = req.messages
        if self._armed.is_set() and req.is_chat and req.stream and msgs and msgs[-1].get("role") == "user":
            self._armed.clear()
            self.held.set()
            self._release.wait(60)


class LiveHarness(Harness):
    """:class:`Harness` on a :class:`LiveServer` (subprocess gateway, no nethook: the server
    need not be on loopback). ``extra_rooms``: see :meth:`LiveServer.bootstrap`.
    Reads go over the API as alice."""

    can_skip_clock = False

    def __init__(
        self,
        cfg: LiveConfig,
        *,
        extra_rooms: tuple[str, ...] = (),
        **kw: Any,
    ) -> None:
        kw.setdefault("turn_timeout", 60.0)
        # the realtime session's reconnects and resets are INFO lines of the wire loggers
        kw["extra_platform_config"] = {"wire_log_level": "INFO", **(kw.get("extra_platform_config") or {})}
        super().__init__(mode="subprocess", nethook=False, **kw)
        self.cfg, self.extra_rooms = cfg, extra_rooms
        self.live: LiveServer | None = None

    async def start(self, **kw: Any) -> None:  # type: ignore[override]
        kw.setdefault("model", HoldingModel)
        await super().start(**kw)

    @property
    def holding_model(self) -> HoldingModel:
        m = self.started_model
        assert isinstance(m, HoldingModel)
        return m

    async def _start_chatto(self) -> None:
        live = LiveServer(self.cfg)
        self.chatto = self.live = live  # Harness.stop() calls chatto.stop(): the cleanup
        await live.bootstrap(extra_rooms=self.extra_rooms)
        self.bot_id, self._bot_key, self.bot_login = live.bot_id, live.bot_key, live.bot_login
        self.users = {k: p.user_id for k, p in live.people.items()} | {self.bot_login: self.bot_id}
        self.rooms = dict(live.rooms)
        self.names = {uid: login for login, uid in self.users.items()}

    def client(self, login: str = "alice") -> ChattoClient:
        c = self.clients.get(login)
        if c is None:
            assert self.live is not None
            c = self.clients[login] = self.live.client(login)
        return c

    def skip_clock(self, seconds: float) -> None:
        raise RuntimeError("a real Chatto server's clock cannot be moved")

    def _bot_subscribed(self) -> bool:
        # The adapter marks the platform connected only after the realtime caught_up
        # (adapter/lifecycle.py), which _subprocess_ready already waited for.
        return True

    def room_messages(self, room: str) -> list[ChattoMessage]:
        raise RuntimeError("LiveHarness reads over the API: use await read_room()")

    def thread(self, room: str, root_event_id: str) -> list[ChattoMessage]:
        raise RuntimeError("LiveHarness reads over the API: use await read_thread()")

    async def read_room(self, room: str) -> list[ChattoMessage]:
        page = await self.client("alice").get_room_events(self.rooms.get(room, room), limit=100)
        return sorted(page.messages, key=lambda m: (m.created_at or 0.0, m.event_id))

    async def read_thread(self, room: str, root_event_id: str) -> list[ChattoMessage]:
        page = await self.client("alice").get_thread_events(self.rooms.get(room, room), root_event_id, limit=100)
        return sorted(
            (m for m in page.messages if m.event_id != root_event_id), key=lambda m: (m.created_at or 0.0, m.event_id)
        )

    async def delete_as_bot(self, room_id: str, event_id: str) -> None:
        assert self.live is not None
        async with self.live.client("bot") as bot:
            await bot.delete_message(room_id, event_id)

    async def bot_messages_since(self, trigger: ChattoMessage) -> list[ChattoMessage]:
        seen: dict[str, ChattoMessage] = {m.event_id: m for m in await self.read_room(trigger.room_id)}
        root = trigger.thread_root_event_id or trigger.event_id
        with contextlib.suppress(ChattoError):
            for m in await self.read_thread(trigger.room_id, root):
                seen[m.event_id] = m
        t0 = trigger.created_at or 0.0
        out = [
            m
            for m in seen.values()
            if m.author_id == self.bot_id
            and m.event_id != trigger.event_id
            and (m.created_at or 0.0) >= t0
            and not m.is_echo
            and not m.is_deleted
        ]
        return sorted(out, key=lambda m: (m.created_at or 0.0, m.event_id))

    def gateway_log(self) -> str:
        """Hermes' ``$HERMES_HOME/logs/gateway.log`` (where the plugin's ``hermes_plugins.chatto``
        records go), ``""`` before it exists."""
        try:
            return (self.home / "logs" / "gateway.log").read_text(errors="replace")
        except OSError:
            return ""


async def reactions_of(h: LiveHarness, room_id: str, event_id: str) -> list[dict]:
    """The ``reactions`` of one message as alice sees them (``GetMessage`` JSON:
    ``[{"emoji", "count", "hasReacted", "previewUserIds"}]``)."""
    assert h.live is not None
    alice = h.live.people["alice"]
    d = await h.live.call(
        "chatto.api.v1.MessageService/GetMessage", {"roomId": room_id, "eventId": event_id}, token=alice.token
    )
    return list((d.get("message") or {}).get("reactions") or [])


async def wait_held(model: HoldingModel, timeout: float = 60.0) -> None:
    """Wait (off the event loop) until ``model`` holds a request."""
    ok = await asyncio.to_thread(model.held.wait, timeout)
    assert ok, f"the model was not called within {timeout:.0f} s"
