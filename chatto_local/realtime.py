"""Realtime WebSocket of the local Chatto server: ``GET /api/realtime``, binary protobuf
``RealtimeClientFrame`` up / ``RealtimeServerFrame`` down (Chatto's realtime protocol 2,
cli/internal/http_server/realtime.go).

Handshake: ``hello`` (version checked before auth: ≠ configured version →
fatal ``unsupported_protocol`` + WS close 1002; bad credential → fatal
``authentication_required`` + 1008) → server ``hello`` → ``subscribe_events`` must be the
second frame (else fatal ``bad_subscribe``; > 64 retained ids, an empty id or one over 256
bytes also) → ``subscribed{start_cursor}`` → catch-up (reset path in Chatto's order, or replay
of missed facts from a valid resume cursor) → reconciliation → ``caught_up{cursor}`` →
live: projection events, typing envelopes, heartbeats every interval, ``pong`` for
``ping``, ``hydrate_room`` (cap 64 → non-fatal ``too_many_retained_rooms``). A text frame
or an undecodable frame is fatal ``bad_frame``. Catch-ups and hydrations pass the admission
of :mod:`.admission` (realtime_catchup.go): a refused catch-up gets ``close{code,
reconnect=true, retry_after_ms}`` + WS 1013 before ``subscribed``; a refused hydration a
non-fatal room error with ``retry_after_ms`` (the room is not retained).

Threading: sockets live on the server's event loop. Facts published by the state (from
any thread, under the state lock) are handed over with ``loop.call_soon_threadsafe`` and
rendered per connection in order; a connection ignores facts at or below the sequence it
caught up to, so catch-up and live delivery never overlap or leave gaps.
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

from . import projection as P
from . import render as R
from .cursors import new_id
from .rpc import abort_transport
from .state import MAX_RETAINED_ROOMS, Fact

if TYPE_CHECKING:  # pragma: no cover
    from .server import LocalChatto

log = logging.getLogger("chatto_local.realtime")

_ORIGIN_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://[^/?#@\s]+$")

#: WebSocket close code sent after a fatal error / close frame with this realtime code.
WS_CODES = {
    "bad_hello": 1002,
    "bad_subscribe": 1002,
    "unsupported_protocol": 1002,
    "bad_frame": 1003,
    "authentication_required": 1008,
    "invalid_cursor": 1008,
    "cursor_expired": 1008,
    "replay_limit_exceeded": 1008,
    "temporarily_unavailable": 1013,
    "subscribe_failed": 1011,
    "catch_up_in_progress": 1013,
    "catch_up_rate_limited": 1013,
    "catch_up_server_busy": 1013,
}


def ws_code_for(code: str, default: int = 1000) -> int:
    return WS_CODES.get(code, default)


def error_frame(
    code: str, message: str, *, fatal: bool, retry_after_ms: int | None = None, room_id: str | None = None
) -> bytes:
    e = pb.RealtimeError(code=code, message=message, fatal=fatal)
    if retry_after_ms is not None:
        e.retry_after_ms = retry_after_ms
    if room_id is not None:
        e.room_id = room_id
    return pb.RealtimeServerFrame(error=e).SerializeToString()


def close_frame(code: str, message: str, *, reconnect: bool, retry_after_ms: int = 0) -> bytes:
    return pb.RealtimeServerFrame(
        close=pb.RealtimeClose(code=code, message=message, reconnect=reconnect, retry_after_ms=retry_after_ms)
    ).SerializeToString()


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
        self.protocol = 0
        self.retained: list[str] = []
        self.boundary = 0
        self.live = False
        self.caught_up = False
        self.path = ""
        self.closing = False
        self.queue: asyncio.Queue = asyncio.Queue()
        self.frames_sent = 0
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

    def abort(self) -> None:
        """Drop the TCP connection now (no close frame); falls back to a 1011 close."""
        self.closing = True
        abort_transport(getattr(self.ws, "_receive", None))
        self.queue.put_nowait(_Close(1011, "dropped"))

    def deliver(self, facts: list[Fact]) -> None:
        state = self.hub.server.state
        viewer = self.user_id
        if viewer is None:  # a socket goes live only after an authenticated hello
            return
        server = self.hub.server
        with state.lock:
            for f in facts:
                if f.seq <= self.boundary:
                    continue
                frame = P.fact_frame(state, f, viewer, self.retained)
                if frame is None:
                    continue
                if self.queue.qsize() >= server.subscriber_buffer and self._write_blocked(server.slow_write_s):
                    self._slow_consumer()
                    return
                self.send(frame.SerializeToString())

    def _write_blocked(self, seconds: float) -> bool:
        """The writer has waited at least ``seconds`` on one frame: the client is not reading
        (its TCP window and this socket's buffers are full). A queue that is only long because
        this server's own loop is busy is not the client's fault: Chatto's Go writer drains its
        queue at once, until a write blocks."""
        started = self.send_started
        return started is not None and time.monotonic() - started >= seconds

    def _slow_consumer(self) -> None:
        """Chatto drops a subscriber whose live queue is full (``enqueueSubscriberLocked`` in
        cli/internal/core/my_events_hub.go: "Slow myEvents subscriber filled event queue");
        the socket writes what it holds, then ``close{stream_closed, reconnect, 1000 ms}``
        (realtime.go, the events channel closed). The client resumes from its cursor."""
        if self.closing:
            return
        self.hub.server.slow_disconnects += 1
        log.warning("local chatto: slow realtime consumer %s dropped (%d frames queued)", self.id, self.queue.qsize())
        self.close(close_frame("stream_closed", "event stream closed", reconnect=True, retry_after_ms=1000), 1000)

    def info(self) -> dict:
        return {
            "id": self.id,
            "user_id": self.user_id,
            "retained": list(self.retained),
            "live": self.live,
            "caught_up": self.caught_up,
            "path": self.path,
            "protocol": self.protocol,
            "frames_sent": self.frames_sent,
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
        rbac = any(f.rbac for f in facts)
        for conn in list(self.conns):
            if not conn.live or conn.protocol != 2:
                continue
            conn.deliver(facts)
            if rbac:
                conn.close(close_frame("projection_reset_required", "authorization changed", reconnect=True), 1000)

    def _transient(self, kind: str, payload: dict) -> None:
        if kind == "notifications":
            self._notifications(payload["user_id"])
            return
        if kind != "typing":
            return
        env = pb.RealtimeEventEnvelope(
            id=new_id("E"),
            created_at=R.ts(payload["created_ns"]),
            actor_id=payload["actor_id"],
            user_typing=pb.RealtimeTypingEvent(room_id=payload["room_id"]),
        )
        if payload["thread_root_event_id"]:
            env.user_typing.thread_root_event_id = payload["thread_root_event_id"]
        data = pb.RealtimeServerFrame(event=env).SerializeToString()
        for conn in list(self.conns):
            if conn.live and conn.protocol == 2 and conn.user_id in payload["audience"]:
                conn.send(data)

    def _notifications(self, user_id: str) -> None:
        """Live ``notification_occurrences_replace`` (NotificationOccurrencesInvalidated:
        a live event, no resume cursor) to every live socket of ``user_id``."""
        state = self.server.state
        with state.lock:
            ev = P.synthetic_event(
                state, [P.Op(notification_occurrences_replace=P.notifications_replace(state, user_id))]
            )
        data = ev.SerializeToString()
        for conn in list(self.conns):
            if conn.live and conn.protocol == 2 and conn.user_id == user_id:
                conn.send(data)

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
    """Next client message: ``bytes``, ``str`` (text frame) or ``None`` (disconnected/timeout)."""
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
        if heartbeat is not None or conn.protocol:
            while True:
                data = await _recv(ws, None)
                if data is None:
                    break
                if not _handle_live(server, conn, data):
                    break
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


def _fatal(conn: Conn, code: str, message: str, ws_code: int | None = None) -> None:
    conn.close(error_frame(code, message, fatal=True), ws_code if ws_code is not None else ws_code_for(code, 1011))


async def _expect_frame(
    server: LocalChatto, conn: Conn, kind: str, code: str, wrong: str
) -> pb.RealtimeClientFrame | None:
    """Read one handshake frame that must be ``kind``; on timeout, a text frame, garbage or
    another frame kind, queue the fatal error the real server sends (``code`` /
    ``bad_frame``) and return ``None``."""
    data = await _recv(conn.ws, server.hello_timeout)
    if data is None:
        return None
    if isinstance(data, TimeoutError):
        _fatal(conn, code, f"timed out waiting for {kind}")
        return None
    if isinstance(data, str):
        _fatal(conn, "bad_frame", "text frames are not supported")
        return None
    frame = pb.RealtimeClientFrame()
    try:
        frame.ParseFromString(data)
    except DecodeError:
        _fatal(conn, "bad_frame", "malformed frame")
        return None
    if frame.WhichOneof("frame") != kind:
        _fatal(conn, code, wrong)
        return None
    return frame


async def _session(server: LocalChatto, conn: Conn) -> asyncio.Task | None:
    """Handshake + catch-up. Returns the heartbeat task once live, ``None`` when the
    socket is being closed (the close is already queued)."""
    ws, state = conn.ws, server.state
    frame = await _expect_frame(server, conn, "hello", "bad_hello", "first frame must be hello")
    if frame is None:
        return None
    hello = frame.hello
    if hello.protocol_version != server.protocol_version:
        _fatal(conn, "unsupported_protocol", f"unsupported realtime protocol version {hello.protocol_version}", 1002)
        return None
    token = hello.bearer_token if hello.HasField("bearer_token") else None
    if token is None:
        h = ws.headers.get("authorization")
        token = h[len("Bearer ") :] if h and h.startswith("Bearer ") else None
    if server.auth_backend_down:
        _fatal(conn, "temporarily_unavailable", "authentication backend unavailable", 1013)
        return None
    user_id = server.authenticate(token)
    server._record_hello(token, user_id)
    if user_id is None:
        _fatal(conn, "authentication_required", "authentication required", 1008)
        return None
    conn.user_id, conn.token, conn.protocol = user_id, token, server.protocol_version
    caps = P.CAPABILITIES_V2 if conn.protocol == 2 else P.CAPABILITIES_V1
    conn.send(
        pb.RealtimeServerFrame(
            hello=pb.RealtimeServerHello(
                protocol_version=conn.protocol,
                server_version=state.version,
                heartbeat_interval_seconds=server.advertised_heartbeat,
                capabilities=list(caps),
            )
        ).SerializeToString()
    )

    frame = await _expect_frame(
        server, conn, "subscribe_events", "bad_subscribe", "second frame must be subscribe_events"
    )
    if frame is None:
        return None
    sub = frame.subscribe_events
    ids = list(sub.retained_room_ids)
    if len(ids) > MAX_RETAINED_ROOMS:
        _fatal(conn, "bad_subscribe", f"at most {MAX_RETAINED_ROOMS} retained rooms")
        return None
    if any(not i or len(i.encode()) > 256 for i in ids):
        _fatal(conn, "bad_subscribe", "invalid retained room id")
        return None
    conn.retained = list(dict.fromkeys(ids))

    if conn.protocol != 2:  # protocol 1 (0.4.x): plain subscription, no projection/cursors
        conn.send(pb.RealtimeServerFrame(subscribed=pb.RealtimeSubscribed()).SerializeToString())
        conn.live = conn.caught_up = True
        server._conn_caught_up(conn)
        return asyncio.create_task(_heartbeats(server, conn))

    cursor = sub.resume_cursor if sub.HasField("resume_cursor") else None
    # admission (realtime.go: after subscribe_events, before subscribed; realtime_catchup.go):
    # a cursor that is not at the current boundary is a metered stale-cursor replay
    metered = cursor is not None and cursor != "" and not _at_boundary(state, cursor, user_id)
    refused = server.admission.acquire_catchup(user_id, metered=metered)
    if refused is not None:
        conn.close(
            close_frame(
                refused.code,
                "realtime catch-up capacity is temporarily unavailable",
                reconnect=True,
                retry_after_ms=refused.retry_after_ms,
            ),
            1013,
            refused.code,
        )
        return None
    try:
        _catch_up(server, conn, cursor)
    finally:
        server.admission.release_catchup(user_id)
    server._conn_caught_up(conn)
    return asyncio.create_task(_heartbeats(server, conn))


def _at_boundary(state, cursor: str, viewer: str) -> bool:
    """``RealtimeCursorAtCurrentBoundary``: the cursor opens for ``viewer`` at the newest fact."""
    try:
        seq, _issued = state.sealer.open_resume_cursor(cursor, viewer)
    except ValueError:
        return False
    return seq == state.seq


def _catch_up(server: LocalChatto, conn: Conn, cursor: str | None) -> None:
    """Reset or replay path, reconciliation and ``caught_up`` (queued in one step)."""
    state, user_id = server.state, conn.user_id
    assert user_id is not None
    # catch-up is computed and the socket registered for live facts atomically (state lock,
    # no await), so live facts continue exactly after the catch-up boundary.
    with state.lock:
        force = server._consume_forced_reset(user_id)
        facts, reason = P.replay_facts(state, user_id, cursor, force_reset=force)
        conn.boundary = state.seq
        now = state.now_ns()
        if facts is None:
            conn.path = "reset"
            start = state.sealer.resume_cursor(user_id, state.seq, now)
            frames = P.reset_frames(state, user_id, conn.retained)
        else:
            conn.path = "replay"
            assert cursor is not None  # replay_facts answers None (a reset) without a cursor
            start = cursor
            frames = [f for f in (P.fact_frame(state, x, user_id, conn.retained) for x in facts) if f is not None]
        frames.append(P.reconciliation(state, user_id, replay=facts is not None))
        caught = pb.RealtimeServerFrame(
            caught_up=pb.RealtimeCaughtUp(cursor=state.sealer.resume_cursor(user_id, state.seq, now))
        )
        conn.send(pb.RealtimeServerFrame(subscribed=pb.RealtimeSubscribed(start_cursor=start)).SerializeToString())
        for f in frames:
            conn.send(f.SerializeToString())
        conn.send(caught.SerializeToString())
        conn.live = conn.caught_up = True
        server._record_catchup(user_id, conn.path, reason)


async def _heartbeats(server: LocalChatto, conn: Conn) -> None:
    while not conn.closing:
        await asyncio.sleep(server.heartbeat_interval)
        if conn.closing:
            return
        conn.send(
            pb.RealtimeServerFrame(
                heartbeat=pb.RealtimeHeartbeat(id=new_id("E"), created_at=R.ts(server.state.now_ns()))
            ).SerializeToString()
        )


def _handle_live(server: LocalChatto, conn: Conn, data) -> bool:
    """One client frame after subscription; False ends the read loop."""
    if isinstance(data, TimeoutError):
        return True
    if isinstance(data, str):
        _fatal(conn, "bad_frame", "text frames are not supported")
        return True  # keep reading until the close completes
    frame = pb.RealtimeClientFrame()
    try:
        frame.ParseFromString(data)
    except DecodeError:
        _fatal(conn, "bad_frame", "malformed frame")
        return True
    kind = frame.WhichOneof("frame")
    if kind == "ping":
        conn.send(pb.RealtimeServerFrame(pong=pb.RealtimePong(nonce=frame.ping.nonce)).SerializeToString())
    elif kind == "hydrate_room" and conn.protocol == 2:
        _hydrate(server, conn, frame.hydrate_room.room_id)
    return True


def _hydrate(server: LocalChatto, conn: Conn, room_id: str) -> None:
    """``hydrate_room``: room_upsert (full membership) + room_timeline_replace."""
    if room_id in conn.retained:
        return
    if len(conn.retained) >= MAX_RETAINED_ROOMS:
        conn.send(
            error_frame(
                "too_many_retained_rooms",
                f"at most {MAX_RETAINED_ROOMS} retained rooms per connection",
                fatal=False,
                room_id=room_id,
            )
        )
        return
    assert conn.user_id is not None
    refused = server.admission.acquire_hydration(conn.user_id)
    if refused is not None:  # realtime.go: writeRoomError(code, ..., roomID, retryAfter); not retained
        conn.send(
            error_frame(
                refused.code,
                "room hydration capacity is temporarily unavailable",
                fatal=False,
                retry_after_ms=refused.retry_after_ms,
                room_id=room_id,
            )
        )
        return
    try:
        _hydrate_admitted(server, conn, room_id)
    finally:
        server.admission.release_hydration(conn.user_id)
    server.hydrations.append((conn.user_id, room_id))


def _hydrate_admitted(server: LocalChatto, conn: Conn, room_id: str) -> None:
    state = server.state
    conn.retained.append(room_id)
    with state.lock:
        room = state.rooms.get(room_id)
        if room is None or conn.user_id not in room.members:
            conn.send(error_frame("room_unavailable", "room is not available", fatal=False, room_id=room_id))
            return
        ev = P.synthetic_event(
            state,
            [
                P.room_upsert(state, room, conn.user_id, with_members=True),
                P.timeline_replace(state, room, conn.user_id),
            ],
        )
        conn.send(ev.SerializeToString())
