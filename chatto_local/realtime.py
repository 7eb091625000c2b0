"""Realtime WebSocket of the local Chatto server, protocol 4 (Chatto 0.5.0-beta.10 … beta.20):
``GET /api/realtime``, one binary ``RealtimeSubscribe`` up, ``RealtimeServerFrame`` down.

Modelled on cli/internal/http_server/realtime.go (facts and sources: docs/chatto-0.5.md §1):

* The first client message must arrive within the subscribe timeout (10 s), binary, a
  decodable ``RealtimeSubscribe``; else ``close{INVALID_REQUEST}`` + WS 1002.
  ``protocol_version`` ≠ 4 → ``UNSUPPORTED_PROTOCOL`` (1002); ``initial_state`` not
  LIVE_ONLY/SNAPSHOT → ``INVALID_REQUEST`` (1002); a bad or absent credential →
  ``AUTHENTICATION_REQUIRED`` (1008); an auth backend outage → ``TEMPORARILY_UNAVAILABLE``,
  retry 1 s (1013); a refused catch-up admission (realtime_catchup.go) →
  ``TEMPORARILY_UNAVAILABLE`` with the limiter's ``retry_after`` (1013, reason = the code).
  None of these closes asks for a reconnect except the temporary ones.
* Catch-up (:func:`chatto_local.events.plan_replay`): a resume replays the missed events,
  each with its ``cursor``, then ``caught_up{cursor, RESUMED}``; a reset sends one
  ``snapshot`` (initial_state SNAPSHOT) then ``caught_up{cursor, SNAPSHOT}``, or just
  ``caught_up{cursor, LIVE_ONLY}``. An unusable cursor is a reset by default; with
  ``LocalChatto.invalid_cursor_close`` the socket is closed ``INVALID_REQUEST`` (1008
  "replay unavailable") instead, the guard path realtime.go keeps.
* Live: durable events with a cursor, transient ones (``user_typing``, ``presence_changed``,
  ``notification_occurrences_changed``) without; ``heartbeat{cursor}`` every interval (15 s)
  whose cursor covers every durable fact processed, delivered or filtered out. Facts at or
  below the catch-up boundary are not sent twice.
* Mid-stream closes: an RBAC fact → ``RESYNC_REQUIRED`` (reconnect); a revoked bot key or a
  credential that stops validating → ``AUTHENTICATION_REQUIRED`` (1008, no reconnect); a slow
  consumer (256 queued, my_events_model.go) → ``TEMPORARILY_UNAVAILABLE`` "event stream
  closed", reconnect, retry 1 s; any client message after the subscribe → ``INVALID_REQUEST``.

Threading: sockets live on the server's event loop. Facts published by the state (any
thread, state lock held) are handed over with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from typing import TYPE_CHECKING

from google.protobuf.message import DecodeError
from starlette.websockets import WebSocket, WebSocketDisconnect

from hermes_chatto.wire.proto import chatto_pb2 as pb

from . import events as EV
from .rpc import abort_transport
from .state import Fact

if TYPE_CHECKING:  # pragma: no cover
    from .server import LocalChatto

log = logging.getLogger("chatto_local.realtime")

PROTOCOL_VERSION = 4  #: ``realtimeProtocolVersion``
_ORIGIN_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://[^/?#@\s]+$")

INVALID_REQUEST = pb.REALTIME_CLOSE_CODE_INVALID_REQUEST
UNSUPPORTED_PROTOCOL = pb.REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL
TEMPORARILY_UNAVAILABLE = pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE
AUTHENTICATION_REQUIRED = pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED
SESSION_RENEWAL_REQUIRED = pb.REALTIME_CLOSE_CODE_SESSION_RENEWAL_REQUIRED
RESYNC_REQUIRED = pb.REALTIME_CLOSE_CODE_RESYNC_REQUIRED
SESSION_TERMINATED = pb.REALTIME_CLOSE_CODE_SESSION_TERMINATED
PRIVILEGED_MODE_EXPIRED = pb.REALTIME_CLOSE_CODE_PRIVILEGED_MODE_EXPIRED

#: WebSocket close code after a ``close`` frame with this realtime code (realtime.go).
WS_CODES = {
    INVALID_REQUEST: 1002,
    UNSUPPORTED_PROTOCOL: 1002,
    AUTHENTICATION_REQUIRED: 1008,
    TEMPORARILY_UNAVAILABLE: 1013,
}


def close_code(code: int | str) -> int:
    """A ``RealtimeCloseCode`` value from an int or a name (``"RESYNC_REQUIRED"``,
    ``"resync_required"`` or the full ``REALTIME_CLOSE_CODE_…``)."""
    if isinstance(code, int):
        return code
    name = code.upper()
    if not name.startswith("REALTIME_CLOSE_CODE_"):
        name = "REALTIME_CLOSE_CODE_" + name
    return int(pb.RealtimeCloseCode.Value(name))


def ws_code_for(code: int | str, default: int = 1000) -> int:
    return WS_CODES.get(close_code(code), default)  # type: ignore[call-overload]


def close_frame(code: int | str, message: str, *, reconnect: bool, retry_after_s: float | None = None) -> bytes:
    """A serialized ``RealtimeServerFrame{close}``; ``retry_after_s`` → ``retry_after`` Duration."""
    c = pb.RealtimeClose(code=close_code(code), message=message, reconnect=reconnect)  # type: ignore[arg-type]
    if retry_after_s is not None:
        secs = int(retry_after_s)
        c.retry_after.seconds = secs
        c.retry_after.nanos = int(round((retry_after_s - secs) * 1e9))
    return pb.RealtimeServerFrame(close=c).SerializeToString()


class _Close:
    __slots__ = ("ws_code", "reason")

    def __init__(self, ws_code: int, reason: str = ""):
        self.ws_code, self.reason = ws_code, reason


class Conn:
    """One realtime socket (server side). Mutated only on the server loop."""

    _ids = itertools.count(1)

    def __init__(self, hub: Hub, ws: WebSocket):
        self.id = next(self._ids)
        self.hub = hub
        self.ws = ws
        self.user_id: str | None = None
        self.token: str | None = None
        self.key_id: str | None = None  #: the bot key this socket authenticated with
        self.initial_state = 0
        self.boundary = 0  #: newest log sequence processed (delivered or filtered out)
        self.live = False
        self.recovery = 0  #: ``RealtimeRecovery`` of the catch-up
        self.path = ""  #: "reset" | "replay"
        self.closing = False
        self.queue: asyncio.Queue = asyncio.Queue()
        self.frames_sent = 0
        self.events_sent = 0
        #: ``time.monotonic()`` when the writer began the frame it is still sending, else None
        self.send_started: float | None = None

    # -- outgoing (server loop only)

    def send(self, data: bytes) -> None:
        if not self.closing:
            self.queue.put_nowait(data)

    def close(self, frame: bytes | None, ws_code: int, reason: str = "") -> None:
        if self.closing:
            return
        if frame is not None:
            self.queue.put_nowait(frame)
        self.closing = True
        self.queue.put_nowait(_Close(ws_code, reason))

    def close_with(self, code: int | str, message: str, *, reconnect: bool, retry_after_s: float | None = None) -> None:
        self.close(
            close_frame(code, message, reconnect=reconnect, retry_after_s=retry_after_s), ws_code_for(code, 1000)
        )

    def abort(self) -> None:
        """Drop the TCP connection now (no close frame); falls back to a 1011 close."""
        self.closing = True
        abort_transport(getattr(self.ws, "_receive", None))
        self.queue.put_nowait(_Close(1011, "dropped"))

    def send_event(self, ev: pb.RealtimeEvent) -> bool:
        """Queue one event; False (and the socket closed) when the client is a slow consumer."""
        server = self.hub.server
        if self.queue.qsize() >= server.subscriber_buffer and self._write_blocked(server.slow_write_s):
            self._slow_consumer()
            return False
        self.send(pb.RealtimeServerFrame(event=ev).SerializeToString())
        self.events_sent += 1
        return True

    def deliver(self, facts: list[Fact]) -> None:
        """Live durable facts (server loop): RBAC → ``RESYNC_REQUIRED`` (the cursor stays
        before the fact, so the reconnect's replay resets); each other fact advances the
        boundary and is sent when the viewer may see it, with a fresh cursor."""
        viewer = self.user_id
        if viewer is None or not self.live or self.closing:
            return
        state = self.hub.server.state
        with state.lock:
            for f in facts:
                if f.seq <= self.boundary:
                    continue
                if f.rbac:
                    self.close_with(RESYNC_REQUIRED, "authorization changed", reconnect=True)
                    return
                self.boundary = f.seq
                ev = EV.event_for(state, f, viewer)
                if ev is None:
                    continue
                ev.cursor = EV.cursor_at(state, viewer, f.seq)
                if not self.send_event(ev):
                    return

    def _write_blocked(self, seconds: float) -> bool:
        """The writer has waited at least ``seconds`` on one frame: the client is not reading.
        A queue that is only long because this server's own loop is busy is not the client's
        fault: Chatto's Go writer drains its queue at once, until a write blocks."""
        started = self.send_started
        return started is not None and time.monotonic() - started >= seconds

    def _slow_consumer(self) -> None:
        """Chatto ends a stream whose live queue is full (``liveDispatchSubscriberSlow``,
        my_events_model.go): ``close{TEMPORARILY_UNAVAILABLE, "event stream closed",
        reconnect, retry 1 s}`` (realtime.go, the events channel closed)."""
        if self.closing:
            return
        self.hub.server.slow_disconnects += 1
        log.warning("local chatto: slow realtime consumer %s dropped (%d frames queued)", self.id, self.queue.qsize())
        self.close_with(TEMPORARILY_UNAVAILABLE, "event stream closed", reconnect=True, retry_after_s=1.0)

    def info(self) -> dict:
        return {
            "id": self.id,
            "user_id": self.user_id,
            "key_id": self.key_id,
            "live": self.live,
            "path": self.path,
            "recovery": self.recovery,
            "initial_state": self.initial_state,
            "protocol": PROTOCOL_VERSION,
            "frames_sent": self.frames_sent,
            "events_sent": self.events_sent,
        }


class Hub:
    """Registry of sockets + thread-safe entry points for fan-out and faults."""

    def __init__(self, server: LocalChatto):
        self.server = server
        self.conns: set[Conn] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def _call(self, fn, *args) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # loop shutting down
            pass

    # called by the state, lock held, any thread
    def publish(self, facts: list[Fact]) -> None:
        self._call(self._deliver, facts)

    def transient(self, kind: str, payload: dict) -> None:
        self._call(self._transient, kind, payload)

    def _deliver(self, facts: list[Fact]) -> None:
        for conn in list(self.conns):
            conn.deliver(facts)
        if any(f.kind == "user_deleted" for f in facts):
            self.revalidate()

    def revalidate(self, user_id: str | None = None) -> None:
        """Close sockets whose credential no longer authenticates (a revoked key, a deleted
        account or bot owner): ``AUTHENTICATION_REQUIRED``, no reconnect (realtime.go)."""
        server = self.server
        for conn in list(self.conns):
            if conn.user_id is None or conn.closing or (user_id is not None and conn.user_id != user_id):
                continue
            if server.authenticate(conn.token) != conn.user_id:
                server._forget_conn(conn)
                msg = "bot API key is no longer valid" if conn.key_id else "authentication required"
                conn.close_with(AUTHENTICATION_REQUIRED, msg, reconnect=False)

    def _transient(self, kind: str, payload: dict) -> None:
        if kind == "typing":
            ev = EV.typing_event(payload)
            targets = [c for c in self.conns if c.user_id in payload["audience"]]
        elif kind == "presence":
            ev = EV.presence_event(payload)
            targets = list(self.conns)
        elif kind == "notifications":
            ev = EV.notifications_event(payload)
            targets = [c for c in self.conns if c.user_id == payload["user_id"]]
        else:
            return
        for conn in targets:
            if conn.live and not conn.closing:
                conn.send_event(ev)

    # fault / driver entry points (any thread)
    def for_user(self, user_id: str | None, fn) -> None:
        def run():
            for conn in list(self.conns):
                if user_id is None or conn.user_id == user_id:
                    fn(conn)

        self._call(run)


def _valid_origin(origin: str) -> bool:
    return bool(_ORIGIN_RE.match(origin))


async def _recv(ws: WebSocket, timeout: float | None):
    """Next client message: ``bytes``, ``str`` (text frame), ``TimeoutError()`` or ``None``
    (disconnected)."""
    try:
        msg = await asyncio.wait_for(ws.receive(), timeout) if timeout else await ws.receive()
    except TimeoutError:
        return TimeoutError()
    except (WebSocketDisconnect, RuntimeError):
        return None
    if msg["type"] == "websocket.disconnect":
        return None
    if msg.get("bytes") is not None:
        return msg["bytes"]
    return msg.get("text") or ""


async def realtime_endpoint(ws: WebSocket) -> None:
    """Starlette WebSocket endpoint for ``/api/realtime``."""
    server: LocalChatto = ws.app.state.local
    hub: Hub = server.hub
    origin = ws.headers.get("origin")
    if origin is not None and not _valid_origin(origin):
        await ws.close(code=1008)  # before accept → HTTP 403
        return
    await ws.accept()
    conn = Conn(hub, ws)
    hub.conns.add(conn)
    writer = asyncio.create_task(_writer(conn))
    heartbeat: asyncio.Task | None = None
    try:
        heartbeat = await _session(server, conn)
        while heartbeat is not None and not conn.closing:
            data = await _recv(ws, None)
            if data is None:
                break
            # realtime.go: the client sends nothing after the subscribe
            conn.close_with(INVALID_REQUEST, "unexpected client message after subscribe", reconnect=False)
        if not conn.closing:
            conn.close(None, 1000)
        await asyncio.wait_for(asyncio.shield(writer), 5)
    except (TimeoutError, WebSocketDisconnect):
        pass
    finally:
        conn.live = False
        hub.conns.discard(conn)
        if heartbeat is not None:
            heartbeat.cancel()
        writer.cancel()
        server._conn_closed(conn)


async def _writer(conn: Conn) -> None:
    ws = conn.ws
    try:
        while True:
            item = await conn.queue.get()
            if isinstance(item, _Close):
                try:
                    await ws.close(code=item.ws_code, reason=item.reason)
                except Exception:
                    pass
                return
            conn.send_started = time.monotonic()
            await ws.send_bytes(item)
            conn.send_started = None
            conn.frames_sent += 1
    except asyncio.CancelledError:
        raise
    except Exception:
        conn.closing = True
        return


def _read_subscribe(conn: Conn, data) -> pb.RealtimeSubscribe | None:
    """The subscribe message, or ``None`` with ``close{INVALID_REQUEST}`` queued."""
    if isinstance(data, TimeoutError):
        conn.close_with(INVALID_REQUEST, "timed out waiting for subscribe", reconnect=False)
        return None
    if isinstance(data, str):
        conn.close_with(INVALID_REQUEST, "subscribe must be a binary frame", reconnect=False)
        return None
    sub = pb.RealtimeSubscribe()
    try:
        sub.ParseFromString(data)
    except DecodeError:
        conn.close_with(INVALID_REQUEST, "malformed subscribe", reconnect=False)
        return None
    return sub


async def _session(server: LocalChatto, conn: Conn) -> asyncio.Task | None:
    """Subscribe validation + catch-up. Returns the heartbeat task once live, ``None`` when
    the socket is being closed (the close is already queued) or the client went away."""
    data = await _recv(conn.ws, server.subscribe_timeout)
    if data is None:
        return None
    sub = _read_subscribe(conn, data)
    if sub is None:
        return None
    if sub.protocol_version != server.protocol_version:
        conn.close_with(
            UNSUPPORTED_PROTOCOL,
            f"unsupported realtime protocol version {sub.protocol_version}; this server speaks {server.protocol_version}",
            reconnect=False,
        )
        return None
    if sub.initial_state not in (pb.REALTIME_INITIAL_STATE_LIVE_ONLY, pb.REALTIME_INITIAL_STATE_SNAPSHOT):
        conn.close_with(INVALID_REQUEST, "initial_state must be LIVE_ONLY or SNAPSHOT", reconnect=False)
        return None
    token = sub.bearer_token if sub.HasField("bearer_token") else None
    if token is None:
        h = conn.ws.headers.get("authorization")
        token = h[len("Bearer ") :] if h and h.startswith("Bearer ") else None
    if server.auth_backend_down:
        conn.close_with(
            TEMPORARILY_UNAVAILABLE, "authentication backend unavailable", reconnect=True, retry_after_s=1.0
        )
        return None
    user_id = server.authenticate(token)
    server._record_hello(token, user_id)
    if user_id is None:
        conn.close_with(AUTHENTICATION_REQUIRED, "authentication required", reconnect=False)
        return None
    conn.user_id, conn.token = user_id, token
    conn.key_id = server.state.key_id_of(token)
    conn.initial_state = int(sub.initial_state)

    cursor = sub.resume_cursor if sub.HasField("resume_cursor") else None
    state = server.state
    with state.lock:
        metered = bool(cursor) and not EV.at_boundary(state, cursor or "", user_id)
    refused = server.admission.acquire_catchup(user_id, metered=metered)
    if refused is not None:
        conn.close(
            close_frame(
                TEMPORARILY_UNAVAILABLE,
                "realtime catch-up capacity is temporarily unavailable",
                reconnect=True,
                retry_after_s=refused.retry_after_ms / 1000,
            ),
            1013,
            refused.code,
        )
        return None
    try:
        ok = _catch_up(server, conn, cursor)
    finally:
        server.admission.release_catchup(user_id)
    if not ok:
        return None
    server._conn_caught_up(conn)
    return asyncio.create_task(_heartbeats(server, conn))


def _catch_up(server: LocalChatto, conn: Conn, cursor: str | None) -> bool:
    """Plan, snapshot/replay and ``caught_up``, queued in one step under the state lock so
    live facts continue exactly after the boundary. False when the socket was closed."""
    state, viewer = server.state, conn.user_id
    assert viewer is not None
    with state.lock:
        plan = EV.plan_replay(
            state,
            viewer,
            cursor,
            lifetime_s=server.cursor_lifetime,
            scan_limit=server.replay_scan_limit,
            event_limit=server.replay_event_limit,
        )
        if plan.reset and plan.reason in ("invalid_cursor", "cursor_expired") and server.invalid_cursor_close:
            server._record_catchup(viewer, "closed", plan.reason)
            frame = close_frame(INVALID_REQUEST, "replay unavailable", reconnect=False, retry_after_s=1.0)
            conn.close(frame, 1008, "replay unavailable")
            return False
        conn.boundary = state.seq
        if plan.reset:
            conn.path = "reset"
            if conn.initial_state == pb.REALTIME_INITIAL_STATE_SNAPSHOT:
                conn.recovery = pb.REALTIME_RECOVERY_SNAPSHOT
                conn.send(pb.RealtimeServerFrame(snapshot=EV.snapshot(state, viewer)).SerializeToString())
            else:
                conn.recovery = pb.REALTIME_RECOVERY_LIVE_ONLY
        else:
            conn.path = "replay"
            conn.recovery = pb.REALTIME_RECOVERY_RESUMED
            for seq, ev in plan.events:
                ev.cursor = EV.cursor_at(state, viewer, seq)
                conn.send(pb.RealtimeServerFrame(event=ev).SerializeToString())
                conn.events_sent += 1
        caught = pb.RealtimeCaughtUp(cursor=EV.cursor_at(state, viewer, state.seq), recovery=conn.recovery)
        conn.send(pb.RealtimeServerFrame(caught_up=caught).SerializeToString())
        conn.live = True
        server._record_catchup(viewer, conn.path, plan.reason)
        return True


async def _heartbeats(server: LocalChatto, conn: Conn) -> None:
    """``heartbeat{cursor}`` every ``heartbeat_interval`` (``MyEventsHeartbeatInterval``,
    15 s): the cursor covers every durable fact this socket has processed."""
    while not conn.closing:
        await asyncio.sleep(server.heartbeat_interval)
        if conn.closing or conn.user_id is None:
            return
        with server.state.lock:
            cur = EV.cursor_at(server.state, conn.user_id, conn.boundary)
        conn.send(pb.RealtimeServerFrame(heartbeat=pb.RealtimeHeartbeat(cursor=cur)).SerializeToString())
