"""A small scripted protocol-2 realtime server for ``RealtimeSession`` tests:
:class:`FakeChatto` (a ``websockets`` server on 127.0.0.1:0 running one script per
connection), :class:`Conn` (the server side of one connection) and the ``f_*`` builders of
the server frames the scripts send. Not the local Chatto server (``chatto_local``):
it does exactly what a test scripts, so a test can send what a real server never would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import websockets
import websockets.asyncio.server

from hermes_chatto.wire.proto import chatto_pb2 as pb

TOKEN = "cht_BK_Ubot00000000001.never-log-this-secret"
BOT = "Ubot00000000001"
ALICE = "Ualice000000001"
ROOM = "Rgeneral0000001"


# ----------------------------------------------------------------------------- frame builders


def server_frame(**kw) -> bytes:
    """A serialized ``RealtimeServerFrame`` with the given fields."""
    return pb.RealtimeServerFrame(**kw).SerializeToString()


def f_hello(version: int = 2) -> bytes:
    return server_frame(
        hello=pb.RealtimeServerHello(
            protocol_version=version,
            server_version="0.5.0-test",
            heartbeat_interval_seconds=15,
            capabilities=["chatto.realtime.projection.v1"],
        )
    )


def f_subscribed(cursor: str = "S0") -> bytes:
    return server_frame(subscribed=pb.RealtimeSubscribed(start_cursor=cursor))


def f_caught_up(cursor: str) -> bytes:
    return server_frame(caught_up=pb.RealtimeCaughtUp(cursor=cursor))


def f_error(code: str, *, fatal: bool, retry_after_ms: int | None = None, room_id: str | None = None) -> bytes:
    e = pb.RealtimeError(code=code, message=f"{code} (test)", fatal=fatal)
    if retry_after_ms is not None:
        e.retry_after_ms = retry_after_ms
    if room_id is not None:
        e.room_id = room_id
    return server_frame(error=e)


def f_close(code: str, *, reconnect: bool, retry_after_ms: int = 0) -> bytes:
    return server_frame(
        close=pb.RealtimeClose(code=code, message="test", reconnect=reconnect, retry_after_ms=retry_after_ms)
    )


def f_heartbeat() -> bytes:
    return server_frame(heartbeat=pb.RealtimeHeartbeat(id="Ehb"))


def f_reset(pid: str = "Ereset") -> bytes:
    pe = pb.RealtimeProjectionEvent(id=pid)
    pe.operations.add().reset.SetInParent()
    return server_frame(projection_event=pe)


def f_message(
    pid: str, body: str, cursor: str | None, *, author: str = ALICE, room: str = ROOM, thread_root: str = ""
) -> bytes:
    pe = pb.RealtimeProjectionEvent(id=pid, actor_id=author)
    if cursor is not None:
        pe.resume_cursor = cursor
    pe.operations.add().room_activity.room_id = room
    up = pe.operations.add().room_timeline_event_upsert
    up.room_id = room
    up.event.id = pid
    up.event.actor_id = author
    m = up.event.message_posted.message
    m.id, m.room_id, m.actor_id, m.body, m.thread_root_event_id = pid, room, author, body, thread_root
    up.includes.users[author].CopyFrom(pb.User(id=author, login=author.lower(), is_bot=author == BOT))
    up.event_cursor = f"tl:{pid}"
    return server_frame(projection_event=pe)


def f_room_upsert(room_id: str, pid: str = "Eroom") -> bytes:
    pe = pb.RealtimeProjectionEvent(id=pid)
    r = pe.operations.add().room_upsert
    r.room.room.id = room_id
    r.room.room.kind = pb.ROOM_KIND_CHANNEL
    r.room.viewer_state.is_member = True
    return server_frame(projection_event=pe)


def f_unknown_op(cursor: str) -> bytes:
    """A projection event whose only operation uses a tag our subset does not declare (99)."""
    pe = pb.RealtimeProjectionEvent(id="Eunknown", resume_cursor=cursor)
    op_bytes = bytes([0x9A, 0x06, 0x02, 0x08, 0x01])  # field 99, LEN 2: {field 1 varint 1}
    raw = pe.SerializeToString() + bytes([0x2A, len(op_bytes)]) + op_bytes  # operations (field 5)
    return bytes([0x4A, len(raw)]) + raw  # RealtimeServerFrame.projection_event (field 9)


# ----------------------------------------------------------------------------- scripted server


class Conn:
    """Server side of one client connection."""

    def __init__(self, ws, index: int):
        self.ws = ws
        self.index = index
        self.received: list[pb.RealtimeClientFrame] = []
        self.text_frames = 0

    @property
    def headers(self):
        return self.ws.request.headers

    @property
    def path(self) -> str:
        return self.ws.request.path

    async def recv(self, timeout: float = 5.0) -> pb.RealtimeClientFrame:
        data = await asyncio.wait_for(self.ws.recv(), timeout)
        if isinstance(data, str):
            self.text_frames += 1
            raise AssertionError("client sent a text frame")
        f = pb.RealtimeClientFrame()
        f.ParseFromString(data)
        self.received.append(f)
        return f

    async def send(self, data: bytes | str) -> None:
        await self.ws.send(data)

    async def handshake(self, start_cursor: str = "S0") -> tuple[pb.RealtimeClientFrame, pb.RealtimeClientFrame]:
        hello = await self.recv()
        assert hello.WhichOneof("frame") == "hello"
        await self.send(f_hello())
        sub = await self.recv()
        assert sub.WhichOneof("frame") == "subscribe_events"
        await self.send(f_subscribed(start_cursor))
        return hello, sub

    async def idle(self) -> None:
        """Keep the socket open (reading client frames) until the client goes away."""
        try:
            while True:
                await self.recv(timeout=30)
        except (websockets.ConnectionClosed, TimeoutError):
            pass


Script = Callable[[Conn], Awaitable[None]]


class FakeChatto:
    """A websockets server on 127.0.0.1:0 running ``scripts[i]`` for the i-th connection
    (the last script repeats)."""

    def __init__(self, *scripts: Script):
        self.scripts = list(scripts)
        self.conns: list[Conn] = []
        self.errors: list[BaseException] = []
        self._server = None
        self.base_url = ""

    async def __aenter__(self):
        self._server = await websockets.asyncio.server.serve(self._handler, "127.0.0.1", 0, max_size=None)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc):
        self._server.close()
        await self._server.wait_closed()

    async def _handler(self, ws) -> None:
        conn = Conn(ws, len(self.conns))
        self.conns.append(conn)
        script = self.scripts[min(conn.index, len(self.scripts) - 1)]
        try:
            await script(conn)
        except websockets.ConnectionClosed:
            pass
        except BaseException as exc:  # surfaced by the tests
            self.errors.append(exc)
            raise
