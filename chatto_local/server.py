"""``LocalChatto``: an in-process Chatto 0.5 subset on one loopback port, plus a driver
API for tests and the demo.

The Starlette app (ConnectRPC JSON under ``/api/connect``, realtime WebSocket at
``/api/realtime``) runs on uvicorn in a background thread with its own event loop, so
synchronous driver calls from tests and asyncio clients in the test's loop both work.
Driver methods are synchronous and thread-safe; realtime fan-out from them is handed to
the server loop with ``loop.call_soon_threadsafe``.

Typical use::

    srv = LocalChatto.demo()
    base_url = await srv.start()            # http://127.0.0.1:<free port>
    w = srv.world                           # ids + credentials of the demo world
    srv.post(w.alice_id, w.general_id, "@helper_bot hi")
    await srv.stop()

Behaviour imitates Chatto 0.5.0-beta.20 (realtime protocol 4): the rules are in the
docstrings of :mod:`~chatto_local.rpc`, :mod:`~chatto_local.realtime`,
:mod:`~chatto_local.events` and :mod:`~chatto_local.state`; the facts and their Chatto
sources are in docs/chatto-0.5.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import tempfile
import threading
from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_chatto.wire.proto import chatto_pb2 as pb
from hermes_chatto.wire.types import ChattoMessage, message_from_pb, user_from_pb

from . import events as EV
from . import render as R
from .admission import Admission
from .realtime import (
    AUTHENTICATION_REQUIRED,
    PROTOCOL_VERSION,
    SESSION_TERMINATED,
    Conn,
    Hub,
    close_code,
    close_frame,
    realtime_endpoint,
    ws_code_for,
)
from .rpc import api_not_found, connect_endpoint
from .state import BOT_USUAL_PERMISSIONS, PRESENCE_TTL_NS, ChattoState, Clock, MsgRec, UserRec

if TYPE_CHECKING:  # pragma: no cover - uvicorn is imported when the server starts
    import uvicorn

    from .assets import AssetStore

#: One recorded RPC: ``method`` is the procedure path after ``/api/connect/``
#: (e.g. ``"chatto.api.v1.MessageService/CreateMessage"``), ``token`` the bearer or ``None``.
RecordedRequest = namedtuple("RecordedRequest", "method token")
#: One realtime catch-up: ``path`` is ``"reset"``, ``"replay"`` or ``"closed"`` (an unusable
#: cursor with ``invalid_cursor_close``); ``reason`` why (``"no_cursor"``, ``"invalid_cursor"``,
#: ``"cursor_expired"``, ``"authorization_changed"``, ``"replay_limit"``, ``"replay"``).
CatchUp = namedtuple("CatchUp", "user_id path reason")

_ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
#: The version string this server reports (``ServerPublicProfile.version``).
DEFAULT_VERSION = "0.5.0-beta.20"
#: Version strings for :meth:`LocalChatto.set_protocol_version` (the releases that spoke it).
_VERSIONS = {1: "0.4.20", 2: "0.5.0-alpha.5", 4: DEFAULT_VERSION}


class _NoWireDumps(logging.Filter):
    """Drops DEBUG records: uvicorn's WebSocket layer (the ``websockets`` library, logging to
    ``uvicorn.error``) dumps every frame and header at DEBUG, the subscribe's bearer token and
    the upgrade's ``Authorization`` header included. The server never logs a key."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


_NO_WIRE_DUMPS = _NoWireDumps()


def _quiet_wire_dumps() -> None:
    for name in ("uvicorn.error", "websockets.server", "websockets.protocol"):
        logger = logging.getLogger(name)
        if _NO_WIRE_DUMPS not in logger.filters:
            logger.addFilter(_NO_WIRE_DUMPS)


@dataclass
class RpcFault:
    """An injected failure of the ``nth`` next call of ``procedure`` (see :meth:`LocalChatto.fail_rpc`)."""

    procedure: str
    nth: int
    code: str
    message: str = ""
    after_write: bool = False
    hang_seconds: float = 30.0
    seen: int = 0


@dataclass
class DemoWorld:
    """Ids and credentials of the demo world (:meth:`LocalChatto.demo`)."""

    alice_id: str
    bot_id: str
    general_id: str
    dm_id: str
    bot_key: str = field(repr=False)
    alice_token: str = field(repr=False)
    bot_login: str = "helper_bot"


class LocalChatto:
    """Protocol-faithful local Chatto server (subset of 0.5) with a test driver.

    Args:
        server_name: ``ServerPublicProfile.name``.
        version: software version in ``GetServerProfile`` / ``GetServer`` and the realtime
            snapshot (default ``"0.5.0-beta.20"``).
        protocol_version: the realtime protocol accepted (4; a subscribe with another
            version is closed ``UNSUPPORTED_PROTOCOL``).
        heartbeat_interval: seconds between heartbeats after ``caught_up`` (Chatto: 15).
        subscribe_timeout: seconds the server waits for the ``RealtimeSubscribe`` (10).
        cursor_lifetime: seconds a resume cursor stays usable (Chatto: 15 minutes).
        replay_scan_limit / replay_event_limit: resume limits (10,000 sequence numbers back,
            2,000 events); beyond them the catch-up is a reset.
        state_path: JSON file to load state from (if it exists) and save to on every change
            (written with mode 0600: it holds the bots' keys).
    """

    def __init__(
        self,
        *,
        server_name: str = "Chatto (local)",
        version: str | None = None,
        protocol_version: int = PROTOCOL_VERSION,
        heartbeat_interval: float = 15.0,
        subscribe_timeout: float = 10.0,
        cursor_lifetime: float = EV.CURSOR_LIFETIME_S,
        replay_scan_limit: int = EV.REPLAY_SCAN_LIMIT,
        replay_event_limit: int = EV.REPLAY_EVENT_LIMIT,
        state_path: str | os.PathLike | None = None,
    ):
        self.clock = Clock()
        self._version_explicit = version is not None
        self.state = ChattoState(clock=self.clock, server_name=server_name, version=version or DEFAULT_VERSION)
        self.protocol_version = protocol_version
        if not self._version_explicit:
            self.state.version = _VERSIONS.get(protocol_version, DEFAULT_VERSION)
        self.heartbeat_interval = float(heartbeat_interval)
        #: seconds a resume cursor stays usable (``realtimeCursorLifetime``, 15 min)
        self.cursor_lifetime = float(cursor_lifetime)
        self.replay_scan_limit = int(replay_scan_limit)
        self.replay_event_limit = int(replay_event_limit)
        #: an unusable cursor closes ``INVALID_REQUEST`` (realtime.go's guard) instead of a reset
        self.invalid_cursor_close = False
        #: seconds between presence sweeps (lapsed presence → ``presence_changed`` OFFLINE)
        self.presence_sweep_s = 1.0
        #: seconds a SetPresence/RefreshPresence holds (the presence TTL, 60 s)
        self.presence_ttl = PRESENCE_TTL_NS / 1e9
        self.auth_backend_down = False  #: fault: RPC → unavailable, realtime subscribe → TEMPORARILY_UNAVAILABLE
        self.bot_keys_enabled = True  #: False = a server without bot accounts (Chatto < 0.5)
        self.subscribe_timeout = float(subscribe_timeout)
        self.requests: list[RecordedRequest] = []
        self.realtime_hellos: list[tuple[str | None, str | None]] = []  # (user_id or None, "bot"/"human"/None)
        self.catchups: list[CatchUp] = []
        self.world: DemoWorld | None = None
        #: catch-up admission (realtime_catchup.go; see :mod:`.admission`)
        self.admission = Admission(self.clock.now)
        #: live frames a socket may have queued but not yet written before the server drops it
        #: as a slow consumer (256 prepared events per stream, my_events_model.go; the socket
        #: then gets ``close{TEMPORARILY_UNAVAILABLE, "event stream closed", reconnect}``)
        self.subscriber_buffer = 256
        #: seconds one frame's write must have waited for the queue to count as the client's
        #: (below that, a long queue is this server's own loop being busy)
        self.slow_write_s = 2.0
        #: sockets dropped as slow consumers
        self.slow_disconnects = 0
        self.hub = Hub(self)
        self.state.listeners.append(self.hub.publish)
        self.state.listeners.append(self._on_facts)
        self.state.transient_listeners.append(self.hub.transient)
        self._faults: list[RpcFault] = []
        self._fault_lock = threading.Lock()
        self._cond = threading.Condition()
        self._live: dict[int, Conn] = {}
        self._thread: threading.Thread | None = None
        self._uvicorn: uvicorn.Server | None = None
        self.host: str | None = None
        self.port: int | None = None
        #: asset URLs absolute on this server's origin (Chatto with ``webserver.url``); False: bare paths
        self.absolute_asset_urls = True
        self.state_path = os.fspath(state_path) if state_path is not None else None
        #: Bearer key of the admin HTTP API (:mod:`.admin`, used by the CLI); ``None`` = no admin API.
        self.admin_key: str | None = None
        #: Callbacks ``(op, user_id)`` after an admin change the CLI's ``serve`` reports (new/revoked keys).
        self.admin_listeners: list = []
        if self.state_path and os.path.exists(self.state_path):
            with open(self.state_path, encoding="utf-8") as fh:
                self.state.load_json(json.load(fh))
        if self.state_path:
            self.state.change_listeners.append(self.save_state)
        self.app = self._build_app()

    # ------------------------------------------------------------------ app and lifecycle

    def _build_app(self):
        from starlette.applications import Starlette
        from starlette.routing import Route, WebSocketRoute

        from .admin import ADMIN_PREFIX, admin_endpoint
        from .assets import asset_file_endpoint

        app = Starlette(
            routes=[
                Route(ADMIN_PREFIX + "/{op}", admin_endpoint, methods=_ALL_METHODS),
                Route("/api/connect/{procedure:path}", connect_endpoint, methods=_ALL_METHODS),
                WebSocketRoute("/api/realtime", realtime_endpoint),
                Route("/assets/files/{asset_id}", asset_file_endpoint, methods=["GET"]),
                Route("/api", api_not_found, methods=_ALL_METHODS),
                Route("/api/{rest:path}", api_not_found, methods=_ALL_METHODS),
            ]
        )
        app.state.local = self
        return app

    @property
    def base_url(self) -> str:
        """``http://host:port`` (no trailing slash); valid after :meth:`start`."""
        if self.port is None:
            raise RuntimeError("LocalChatto is not started")
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def ws_url(self) -> str:
        """``ws://host:port/api/realtime``."""
        return "ws" + self.base_url[4:] + "/api/realtime"

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start_sync(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start serving (blocking until ready); returns :attr:`base_url`.

        ``port=0`` picks a free port on the first start and reuses the previous port on a
        later start (so clients can reconnect after :meth:`stop`/:meth:`start`).
        Raises ``OSError`` when the port cannot be bound.
        """
        if self._thread is not None:
            return self.base_url
        if port == 0 and self.port and host == self.host:
            port = self.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on an accepted socket only when
        # its proto says TCP (base_events._set_nodelay), and accepted sockets inherit the
        # listener's. Without it every response after a connection's first waited ~40 ms
        # (Nagle's algorithm holding the body behind the headers until the client's delayed
        # ACK). Chatto is a Go server: Go's net package turns Nagle off on every TCP
        # connection (net/tcpsock.go, SetNoDelay "the default is true").
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            raise
        self.host, self.port = host, sock.getsockname()[1]
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(sock, ready, failure), daemon=True, name=f"local-chatto:{self.port}"
        )
        self._thread.start()
        if not ready.wait(15) or failure:
            self._thread = None
            raise RuntimeError(f"local Chatto server failed to start: {failure[:1]}")
        if self.absolute_asset_urls:
            self.assets.base_url = self.base_url  # Chatto with webserver.url set: absolute
        return self.base_url

    def _run(self, sock: socket.socket, ready: threading.Event, failure: list) -> None:
        import uvicorn

        _quiet_wire_dumps()

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            log_config=None,
            access_log=False,
            ws_ping_interval=None,
            ws_max_size=64 * 1024,
            timeout_graceful_shutdown=1,
            # Idle keep-alive connections live 60 s (Go servers' usual IdleTimeout). At uvicorn's
            # 5 s a client that waited ~5 s (a test restarting its gateway under a CPU hog) could
            # reuse a connection in the instant the server closed it: an ambiguous write error.
            timeout_keep_alive=60,
        )
        server = uvicorn.Server(config)
        self._uvicorn = server
        self.hub.loop = loop

        async def sweep_presence():
            while True:
                await asyncio.sleep(self.presence_sweep_s)
                self.state.sweep_presence()

        async def main():
            sweeper = asyncio.create_task(sweep_presence())
            task = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not task.done():
                await asyncio.sleep(0.005)
            if task.done() and not server.started:
                exc = task.exception()
                failure.append(exc or RuntimeError("uvicorn exited"))
            ready.set()
            try:
                await task
            finally:
                sweeper.cancel()

        try:
            loop.run_until_complete(main())
        except BaseException as exc:  # pragma: no cover - reported through ready/failure
            failure.append(exc)
        finally:
            self.hub.loop = None
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                try:
                    sock.close()
                except OSError:
                    pass
                with self._cond:
                    self._live.clear()
                    self._cond.notify_all()
                ready.set()

    def stop_sync(self) -> None:
        """Stop serving; open sockets are dropped (no close frame), state is kept."""
        thread = self._thread
        if thread is None:
            return

        def shutdown():
            for conn in list(self.hub.conns):
                conn.abort()
            if self._uvicorn is not None:
                self._uvicorn.should_exit = True

        self.hub._call(shutdown)
        thread.join(20)
        self._thread = None
        self._uvicorn = None

    def restart_sync(self) -> str:
        """Down and up again on the same host/port, state kept."""
        host, port = self.host or "127.0.0.1", self.port or 0
        self.stop_sync()
        return self.start_sync(host, port)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Async wrapper of :meth:`start_sync`; returns the base URL."""
        return await asyncio.to_thread(self.start_sync, host, port)

    async def stop(self) -> None:
        """Async wrapper of :meth:`stop_sync`."""
        await asyncio.to_thread(self.stop_sync)

    async def restart(self) -> str:
        """Async wrapper of :meth:`restart_sync`."""
        return await asyncio.to_thread(self.restart_sync)

    down = stop  #: alias: take the server down (state kept)
    up = start  #: alias: bring it up again (same port by default)

    async def __aenter__(self) -> LocalChatto:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def __enter__(self) -> LocalChatto:
        self.start_sync()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_sync()

    def save_state(self) -> None:
        """Write the state to ``state_path`` atomically (no-op without a path)."""
        if not self.state_path:
            return
        data = self.state.to_json()
        d = os.path.dirname(os.path.abspath(self.state_path))
        fd, tmp = tempfile.mkstemp(prefix=".chatto-state-", dir=d)  # mode 0600: it holds keys
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self.state_path)

    # ------------------------------------------------------------------ hooks used by rpc/realtime

    def authenticate(self, token: str | None) -> str | None:
        """User id for a bearer token, honouring :attr:`bot_keys_enabled`."""
        if token and token.startswith("cht_BK_") and not self.bot_keys_enabled:
            return None
        return self.state.authenticate(token)

    def _record(self, procedure: str, token: str | None) -> None:
        self.requests.append(RecordedRequest(procedure, token))

    def _record_hello(self, token: str | None, user_id: str | None) -> None:
        kind = None
        if user_id is not None:
            kind = "bot" if token and token.startswith("cht_BK_") else "human"
        self.realtime_hellos.append((user_id, kind))

    def _record_catchup(self, user_id: str, path: str, reason: str) -> None:
        self.catchups.append(CatchUp(user_id, path, reason))

    def _conn_caught_up(self, conn) -> None:
        with self._cond:
            if conn.closing:
                return
            self._live[conn.id] = conn
            self._cond.notify_all()

    def _forget_live(self, user_id: str | None = None) -> None:
        """Sockets about to be closed by a driver fault stop counting as connected at once,
        so ``wait_connected`` after e.g. ``drop_sockets`` waits for the *new* socket."""
        with self._cond:
            for cid, c in list(self._live.items()):
                if user_id is None or c.user_id == user_id:
                    del self._live[cid]
            self._cond.notify_all()

    def _forget_conn(self, conn) -> None:
        with self._cond:
            self._live.pop(conn.id, None)
            self._cond.notify_all()

    def _on_facts(self, facts) -> None:
        if any(f.rbac for f in facts):
            self._forget_live(None)  # every socket gets RESYNC_REQUIRED

    def _conn_closed(self, conn) -> None:
        with self._cond:
            self._live.pop(conn.id, None)
            self._cond.notify_all()

    def _take_fault(self, procedure: str) -> RpcFault | None:
        with self._fault_lock:
            for f in self._faults:
                if f.procedure == procedure:
                    f.seen += 1
                    if f.seen >= f.nth:
                        self._faults.remove(f)
                        return f
                    break
            return None

    # ------------------------------------------------------------------ introspection

    def requests_for(self, method_suffix: str) -> list[RecordedRequest]:
        """Recorded requests whose method ends with ``method_suffix`` (e.g. ``"/CreateMessage"``)."""
        return [r for r in list(self.requests) if r.method.endswith(method_suffix)]

    def connections(self, user_id: str | None = None) -> list[dict]:
        """Caught-up realtime sockets: dicts with id, user_id, key_id, path ("reset"/"replay"),
        recovery (``RealtimeRecovery`` value), initial_state, frames_sent, events_sent."""
        with self._cond:
            return [c.info() for c in self._live.values() if user_id is None or c.user_id == user_id]

    def wait_connected_sync(self, user_id: str | None = None, count: int = 1, timeout: float = 10.0) -> bool:
        """Block until ≥ ``count`` caught-up sockets (of ``user_id``) exist; False on timeout."""

        def ok():
            return sum(1 for c in self._live.values() if user_id is None or c.user_id == user_id) >= count

        with self._cond:
            return self._cond.wait_for(ok, timeout)

    async def wait_connected(self, user_id: str | None = None, count: int = 1, timeout: float = 10.0) -> bool:
        """Async :meth:`wait_connected_sync`."""
        return await asyncio.to_thread(self.wait_connected_sync, user_id, count, timeout)

    def wait_disconnected_sync(self, user_id: str | None = None, timeout: float = 10.0) -> bool:
        """Block until no caught-up socket (of ``user_id``) is left; False on timeout."""

        def ok():
            return not any(user_id is None or c.user_id == user_id for c in self._live.values())

        with self._cond:
            return self._cond.wait_for(ok, timeout)

    async def wait_disconnected(self, user_id: str | None = None, timeout: float = 10.0) -> bool:
        return await asyncio.to_thread(self.wait_disconnected_sync, user_id, timeout)

    # ------------------------------------------------------------------ driver: users, rooms, permissions

    def create_user(self, login: str, display_name: str = "", is_bot: bool = False) -> UserRec:
        """Create a human (default permissions + one bearer token) or a bot (no
        permissions). Returns the record (``.id``, ``.login``, ``.is_bot``)."""
        return self.state.create_user(login, display_name, is_bot)

    def create_bot(self, login: str, display_name: str = "", *, owner: str = "") -> tuple[UserRec, str]:
        """Create a bot account; returns ``(user, key)`` with key ``cht_BK_<userId>.<secret>``.
        ``owner``: the human owner's id; the bot's grants then work only while the owner
        holds them, and the key only while the owner exists (Chatto's
        core/permission_resolver.go, core/bots.go). Without one the bot is not capped."""
        u = self.state.create_user(login, display_name, True, owner_id=owner)
        return u, u.bot_key

    def delete_user(self, user_id: str) -> None:
        """Delete an account (``user_account_deleted``); its tokens and the keys of the bots
        it owns stop authenticating, and their open sockets are closed
        ``AUTHENTICATION_REQUIRED`` (no reconnect)."""
        self.state.delete_user(user_id)

    def key_of(self, bot_id: str) -> str:
        """The bot's oldest valid key (``""`` when every key was revoked)."""
        with self.state.lock:
            return self.state.user(bot_id).bot_key

    def bot_keys(self, bot_id: str) -> list[dict]:
        """The bot's valid keys as ``{"id", "name", "created_at"}`` (no secrets)."""
        with self.state.lock:
            return [
                {"id": k["id"], "name": k["name"], "created_at": k["created_ns"] / 1e9}
                for k in self.state.user(bot_id).bot_keys
            ]

    def create_bot_key(self, bot_id: str, name: str = "key") -> tuple[str, str]:
        """``BotService/CreateBotApiKey``: a new named key (the others stay valid); returns
        ``(key_id, key)``."""
        meta, token = self.state.create_bot_key(bot_id, name)
        self._admin_event("create-key", bot_id)
        return meta["id"], token

    def revoke_bot_key(self, bot_id: str, key_id: str) -> None:
        """``BotService/RevokeBotApiKey``: the key stops authenticating at once and the
        sockets opened with it get ``close{AUTHENTICATION_REQUIRED, "bot API key is no longer
        valid", reconnect=false}`` + WS 1008 (realtime.go watches key revocation); sockets of
        the bot's other keys stay up."""
        self.state.revoke_bot_key(bot_id, key_id)
        self._key_revoked(bot_id, key_id)

    def _key_revoked(self, bot_id: str, key_id: str) -> None:
        if self.world is not None and self.world.bot_id == bot_id:
            self.world.bot_key = self.key_of(bot_id)
        frame = close_frame(AUTHENTICATION_REQUIRED, "bot API key is no longer valid", reconnect=False)

        def close(c: Conn) -> None:
            if c.key_id == key_id and not c.closing:
                self._forget_conn(c)
                c.close(frame, 1008)

        self.hub.for_user(bot_id, close)
        self._admin_event("revoke-key", bot_id)

    def rotate_key(self, bot_id: str, name: str = "key") -> str:
        """What an operator does on 0.5 to replace a bot's key: ``CreateBotApiKey``, then
        ``RevokeBotApiKey`` of every older key (their sockets are closed
        ``AUTHENTICATION_REQUIRED``). Returns the new key."""
        key_id, token = self.create_bot_key(bot_id, name)
        for k in self.bot_keys(bot_id):
            if k["id"] != key_id:
                self.revoke_bot_key(bot_id, k["id"])
        return token

    def _admin_event(self, op: str, user_id: str) -> None:
        for cb in list(self.admin_listeners):
            cb(op, user_id)

    def user_token(self, user_id: str) -> str:
        """A bearer token for a human (the first issued one)."""
        with self.state.lock:
            u = self.state.user(user_id)
            return u.tokens[0] if u.tokens else self.state.issue_token(user_id)

    def create_channel(self, name: str, members: Iterable[str] = (), **kw) -> str:
        """Create a channel with ``members``; returns its room id."""
        return self.state.create_channel(name, members, **kw).id

    def open_dm(self, user_a: str, user_b: str) -> str:
        """``StartDM`` as ``user_a`` with ``user_b`` (create or return); returns the room id."""
        return self.state.start_dm(user_a, [user_b], driver=True).id

    def add_member(self, room_id: str, user_id: str) -> None:
        self.state.add_member(room_id, user_id)

    def remove_member(self, room_id: str, user_id: str, *, ban: bool = False) -> None:
        """Remove or ban ``user_id`` from a channel (see ``ChattoState.remove_member``)."""
        self.state.remove_member(room_id, user_id, ban=ban)

    def grant(self, room_id: str | None, user_id: str, *permissions: str) -> None:
        """Grant permissions in a room (or at server scope with ``room_id=None``). Like
        any RBAC change on Chatto this closes open sockets with ``RESYNC_REQUIRED`` and
        makes the next resume a reset."""
        self.state.grant(room_id, user_id, *permissions)

    def revoke(self, room_id: str | None, user_id: str, *permissions: str) -> None:
        """Revoke permissions (room or server scope); an RBAC change like :meth:`grant`."""
        self.state.revoke(room_id, user_id, *permissions)

    def set_slow_mode(self, room_id: str, seconds: int) -> None:
        self.state.set_slow_mode(room_id, seconds)

    def archive_room(self, room_id: str, archived: bool = True) -> None:
        self.state.set_archived(room_id, archived)

    # ------------------------------------------------------------------ driver: messages

    def _message(self, m: MsgRec, viewer: str) -> ChattoMessage:
        with self.state.lock:
            mp = R.message_pb(m, viewer, self.state)
            users = {u.id: user_from_pb(R.user_pb(u)) for u in self.state.users.values()}
        return message_from_pb(mp, users)

    def post(
        self,
        user_id: str,
        room_id: str,
        body: str,
        *,
        thread_root_event_id: str = "",
        also_send_to_channel: bool = False,
        in_reply_to: str = "",
        created_at: float | None = None,
        attachment_asset_ids: Iterable[str] = (),
    ) -> ChattoMessage:
        """Post as ``user_id`` with the same rules as ``CreateMessage`` (raises the
        ``hermes_chatto.wire.errors`` class of the Connect code). ``created_at`` (epoch
        seconds) backdates the message, e.g. to test the 3 h edit window.
        ``attachment_asset_ids``: assets from :meth:`upload` by the same user."""
        m = self.state.create_message(
            user_id,
            room_id,
            body,
            thread_root_event_id=thread_root_event_id,
            in_reply_to=in_reply_to,
            also_send_to_channel=also_send_to_channel,
            attachment_asset_ids=list(attachment_asset_ids),
            created_ns=int(created_at * 1e9) if created_at is not None else None,
        )
        return self._message(m, user_id)

    @property
    def assets(self) -> AssetStore:
        """Uploads, assets and served downloads (:mod:`chatto_local.assets`)."""
        from .assets import store_of

        return store_of(self.state)

    def upload(self, user_id: str, room_id: str, filename: str, data: bytes, content_type: str = "") -> str:
        """Upload ``data`` as ``user_id`` into ``room_id`` with the ``AssetUploadService``
        rules (one chunk per 512 KiB); returns the completed asset id for :meth:`post`."""
        import hashlib

        from .assets import MAX_CHUNK_BYTES, store_of

        st = store_of(self.state)
        with self.state.lock:
            up = st.create_upload(
                user_id,
                pb.CreateUploadRequest(
                    room_id=room_id,
                    filename=filename,
                    content_type=content_type,
                    size=len(data),
                    sha256=hashlib.sha256(data).hexdigest(),
                ),
            )
            for off in range(0, len(data), MAX_CHUNK_BYTES):
                part = data[off : off + MAX_CHUNK_BYTES]
                st.upload_chunk(
                    user_id,
                    pb.UploadChunkRequest(
                        upload_id=up.id, offset=off, content=part, chunk_sha256=hashlib.sha256(part).hexdigest()
                    ),
                )
            return st.complete_upload(user_id, up.id)[1].id

    def reply(self, user_id: str, room_id: str, root_event_id: str, body: str, **kw) -> ChattoMessage:
        """Thread reply (``post`` with ``thread_root_event_id``)."""
        return self.post(user_id, room_id, body, thread_root_event_id=root_event_id, **kw)

    def edit(self, user_id: str, room_id: str, event_id: str, body: str) -> ChattoMessage:
        return self._message(self.state.update_message(user_id, room_id, event_id, body), user_id)

    def delete(self, user_id: str, room_id: str, event_id: str) -> None:
        self.state.delete_message(user_id, room_id, event_id)

    def react(self, user_id: str, room_id: str, event_id: str, emoji: str) -> bool:
        """Add a reaction (gemoji shortcode); returns False when it already existed."""
        return self.state.react(user_id, room_id, event_id, emoji, True)[0]

    def unreact(self, user_id: str, room_id: str, event_id: str, emoji: str) -> bool:
        return self.state.react(user_id, room_id, event_id, emoji, False)[0]

    def typing(self, user_id: str, room_id: str, thread_root_event_id: str = "") -> None:
        """``RefreshTypingIndicator`` as ``user_id``: a transient ``user_typing`` to the room's
        other members who can read it."""
        self.state.typing(user_id, room_id, thread_root_event_id)

    def set_presence(self, user_id: str, status: int | str) -> None:
        """``SetPresence`` as ``user_id``: ``status`` a ``PresenceStatus`` value or name
        (``"ONLINE"``, ``"away"`` …); OFFLINE clears. Others get ``presence_changed``."""
        if isinstance(status, str):
            name = status.upper()
            status = pb.PresenceStatus.Value(name if name.startswith("PRESENCE_STATUS_") else "PRESENCE_STATUS_" + name)
        self.state.set_presence(user_id, int(status), ttl_ns=int(self.presence_ttl * 1e9))

    def presence_of(self, user_id: str) -> str:
        """``"ONLINE"``, ``"AWAY"``, ``"DO_NOT_DISTURB"`` or ``"OFFLINE"`` (lapsed or never set)."""
        with self.state.lock:
            value = self.state.presence_status(user_id)
        return pb.PresenceStatus.Name(value).removeprefix("PRESENCE_STATUS_")

    def update_profile(self, user_id: str, display_name: str) -> None:
        """Change a display name (``user_profile_changed`` to every socket)."""
        self.state.update_profile(user_id, display_name=display_name)

    def update_room(self, room_id: str, *, name: str | None = None, description: str | None = None) -> None:
        """Rename / describe a room (``room_updated`` to its members)."""
        self.state.update_room(room_id, name=name, description=description)

    def get_message(self, room_id: str, event_id: str, viewer: str | None = None) -> ChattoMessage:
        """Any message (incl. tombstones) as ``viewer`` sees it (default: its author)."""
        with self.state.lock:
            m = self.state.messages.get(event_id)
            if m is None or m.room_id != room_id:
                raise KeyError(event_id)
            return self._message(m, viewer or m.actor_id)

    def room_messages(self, room_id: str, viewer: str = "") -> list[ChattoMessage]:
        """All room-timeline messages (roots and echo rows, oldest first)."""
        with self.state.lock:
            room = self.state.room(room_id)
            return [self._message(self.state.messages[i], viewer) for i in room.timeline if i in self.state.messages]

    def thread_messages(self, room_id: str, root_event_id: str, viewer: str = "") -> list[ChattoMessage]:
        """Replies of a thread (incl. tombstones), oldest first."""
        with self.state.lock:
            root = self.state.messages[root_event_id]
            if root.room_id != room_id:
                raise KeyError(root_event_id)
            return [self._message(self.state.messages[i], viewer) for i in root.replies]

    # ------------------------------------------------------------------ driver: faults

    def drop_sockets(self, user_id: str | None = None) -> None:
        """Drop realtime TCP connections now (no close frame)."""
        self._forget_live(user_id)
        self.hub.for_user(user_id, lambda c: c.abort())

    def send_close(
        self,
        user_id: str | None,
        code: int | str,
        reconnect: bool = True,
        retry_after_ms: int | None = None,
        message: str = "",
    ) -> None:
        """Send ``close{code, message, reconnect, retry_after}`` then close the WebSocket (WS
        code from ``ws_code_for``). ``code``: a ``RealtimeCloseCode`` value or name
        (``"RESYNC_REQUIRED"``, ``"temporarily_unavailable"`` …)."""
        name = pb.RealtimeCloseCode.Name(close_code(code)).removeprefix("REALTIME_CLOSE_CODE_")
        retry = retry_after_ms / 1000 if retry_after_ms is not None else None
        frame = close_frame(code, message or name.lower().replace("_", " "), reconnect=reconnect, retry_after_s=retry)
        ws = ws_code_for(code, 1000)
        self._forget_live(user_id)
        self.hub.for_user(user_id, lambda c: c.close(frame, ws))

    def send_session_terminated(self, user_id: str | None, reason: str = "session terminated") -> None:
        """``close{SESSION_TERMINATED, reconnect=false}`` (a terminated session)."""
        self.send_close(user_id, SESSION_TERMINATED, reconnect=False, message=reason)

    def fail_rpc(
        self,
        method: str,
        nth: int = 1,
        code: str = "unavailable",
        message: str = "",
        *,
        after_write: bool = False,
        hang_seconds: float = 30.0,
    ) -> None:
        """Make the ``nth`` next call of ``method`` fail.

        ``method`` is a procedure path (``"chatto.api.v1.MessageService/CreateMessage"``)
        or just ``"Service/Method"``/``"Method"`` (resolved against known procedures).
        ``code``: a Connect code (error body + HTTP status), ``"disconnect"`` (TCP reset
        without a response) or ``"hang"`` (no answer for ``hang_seconds``, then
        ``deadline_exceeded``). ``after_write=True`` applies the call first (the write
        lands) and fails only the response — an ambiguous write.
        """
        from .rpc import METHODS

        proc = method
        if proc not in METHODS:
            matches = [p for p in METHODS if p.endswith(("/" + method, "." + method))]
            if len(matches) != 1:
                raise ValueError(f"unknown or ambiguous method {method!r}")
            proc = matches[0]
        with self._fault_lock:
            self._faults.append(RpcFault(proc, max(1, int(nth)), code, message, after_write, hang_seconds))

    def fail_create_message(
        self, nth: int = 1, code: str = "unavailable", message: str = "", *, after_write: bool = False
    ) -> None:
        """Fail the ``nth`` next ``CreateMessage`` with ``code`` (see :meth:`fail_rpc`)."""
        self.fail_rpc("MessageService/CreateMessage", nth, code, message, after_write=after_write)

    def force_resync(self) -> None:
        """An RBAC fact (nothing else changes): every live socket gets
        ``close{RESYNC_REQUIRED, "authorization changed", reconnect=true}`` and the next
        resume across it is a reset (snapshot / live-only)."""
        self.state.rbac_fence()

    force_projection_reset = force_resync  #: the protocol-2 name

    def set_protocol_version(self, version: int, *, bot_keys: bool = True) -> None:
        """Accept only realtime protocol ``version`` from now on (4 = Chatto 0.5 beta; 1 = behave
        like 0.4.x, 2 = 0.5.0-alpha) and report that release's version string (unless one was
        given explicitly). ``bot_keys=False`` also rejects ``cht_BK_`` keys (0.4.x has no bot
        accounts)."""
        self.protocol_version = int(version)
        self.bot_keys_enabled = bool(bot_keys)
        if not self._version_explicit:
            self.state.version = _VERSIONS.get(int(version), DEFAULT_VERSION)

    def set_resume_window(
        self, seconds: float | None = None, *, scan_limit: int | None = None, event_limit: int | None = None
    ) -> None:
        """Shrink (or restore) the resume limits: cursor lifetime in seconds, how many log
        sequence numbers a cursor may be behind, how many events a replay may hold."""
        if seconds is not None:
            self.cursor_lifetime = float(seconds)
        if scan_limit is not None:
            self.replay_scan_limit = int(scan_limit)
        if event_limit is not None:
            self.replay_event_limit = int(event_limit)

    def set_auth_backend_down(self, down: bool = True) -> None:
        """Fault: authenticated RPCs answer ``unavailable`` and realtime subscribes get
        ``close{TEMPORARILY_UNAVAILABLE, reconnect, 1 s}`` (WS 1013) until called with ``False``
        (what Chatto answers while its auth backend is down)."""
        self.auth_backend_down = bool(down)

    def set_heartbeat_interval(self, seconds: float) -> None:
        """Heartbeat period for sockets that connect from now on (and running loops' next tick)."""
        self.heartbeat_interval = float(seconds)

    def advance_clock(self, seconds: float) -> None:
        """Move the server clock forward (edit window, slow mode, cursor expiry)."""
        self.clock.advance(seconds)

    # ------------------------------------------------------------------ demo world

    def _w(self) -> DemoWorld:
        if self.world is None:
            raise AttributeError("no demo world (use LocalChatto.demo())")
        return self.world

    alice_id = property(lambda self: self._w().alice_id, doc="demo world: alice's user id")
    bot_id = property(lambda self: self._w().bot_id, doc="demo world: the bot's user id")
    general_id = property(lambda self: self._w().general_id, doc="demo world: channel general")
    dm_id = property(lambda self: self._w().dm_id, doc="demo world: DM alice ↔ bot")
    bot_key = property(lambda self: self.key_of(self._w().bot_id), doc="demo world: the bot's current key")
    alice_token = property(lambda self: self._w().alice_token, doc="demo world: alice's bearer token")

    @classmethod
    def demo(cls, **kw) -> LocalChatto:
        """Server with the demo world: human ``alice``, bot ``helper_bot`` ("Ops Helper")
        with the usual bot permissions (``message.post``, ``message.post-in-thread``,
        ``message.react``, ``message.attach``, ``room.join``, ``room.list``), channel
        ``general`` (alice + bot) and the DM alice ↔ bot. With ``state_path`` pointing at an
        existing file the saved world is reused (same ids and keys)."""
        srv = cls(**kw)
        srv.world = srv._find_world() or srv._build_demo()
        return srv

    def _build_demo(self) -> DemoWorld:
        alice = self.create_user("alice", "Alice")
        bot, key = self.create_bot("helper_bot", "Ops Helper", owner=alice.id)
        self.state.grant(None, bot.id, *BOT_USUAL_PERMISSIONS)
        general = self.create_channel("general", [alice.id, bot.id], created_by=alice.id)
        self.state.grant(general, bot.id, *BOT_USUAL_PERMISSIONS)
        dm = self.open_dm(alice.id, bot.id)
        return DemoWorld(
            alice_id=alice.id,
            bot_id=bot.id,
            general_id=general,
            dm_id=dm,
            bot_key=key,
            alice_token=self.user_token(alice.id),
        )

    def _find_world(self) -> DemoWorld | None:
        s = self.state
        with s.lock:
            try:
                alice, bot = s.user_by_login("alice"), s.user_by_login("helper_bot")
            except Exception:
                return None
            general = next((r for r in s.rooms.values() if r.kind == "channel" and r.name == "general"), None)
            dm = next((r for r in s.rooms.values() if r.is_dm and set(r.members) == {alice.id, bot.id}), None)
            if general is None or dm is None:
                return None
            return DemoWorld(
                alice_id=alice.id,
                bot_id=bot.id,
                general_id=general.id,
                dm_id=dm.id,
                bot_key=bot.bot_key,
                alice_token=self.user_token(alice.id),
            )
