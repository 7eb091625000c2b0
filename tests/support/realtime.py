"""A small scripted protocol-4 realtime server for ``RealtimeSession`` tests:
:class:`FakeChatto` (a ``websockets`` server on 127.0.0.1:0 running one script per
connection), :class:`Conn` (the server side of one connection) and the ``f_*`` builders of the
server frames the scripts send. Not the local Chatto server (``chatto_local``): it does exactly
what a test scripts, so a test can send what a real server never would.

Every frame is encoded, and every client frame decoded, with **chattolib 0.5.0b20's generated
classes** (Chatto v0.5.0-beta.20's own schema), never with the plugin's ``chatto_pb2``: the
session is checked against the real wire format, not against itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

import websockets
import websockets.asyncio.server
from chattolib._pb.chatto.realtime.v1 import realtime_pb2 as up

TOKEN = "cht_BK_Ubot00000000001.never-log-this-secret"
BOT = "Ubot00000000001"
ALICE = "Ualice000000001"
BOB = "Ubob00000000001"
ROOM = "Rgeneral0000001"
DM = "Rdm000000000001"

CLOSE = {name.removeprefix("REALTIME_CLOSE_CODE_"): v for name, v in up.RealtimeCloseCode.items()}
RECOVERY = {name.removeprefix("REALTIME_RECOVERY_"): v for name, v in up.RealtimeRecovery.items()}
_ROOM_KIND_ENUM = up.RealtimeSnapshot.DESCRIPTOR.fields_by_name["rooms"].message_type.fields_by_name["room"]
ROOM_KIND = {
    v.name.removeprefix("ROOM_KIND_"): v.number
    for v in _ROOM_KIND_ENUM.message_type.fields_by_name["kind"].enum_type.values
}


# ----------------------------------------------------------------------------- frame builders


def server_frame(**kw) -> bytes:
    """A serialized upstream ``chatto.realtime.v1.RealtimeServerFrame`` with the given fields."""
    return up.RealtimeServerFrame(**kw).SerializeToString()


def f_caught_up(cursor: str, recovery: str = "RESUMED") -> bytes:
    return server_frame(caught_up=up.RealtimeCaughtUp(cursor=cursor, recovery=RECOVERY[recovery]))


def f_heartbeat(cursor: str | None = None) -> bytes:
    hb = up.RealtimeHeartbeat()
    if cursor is not None:
        hb.cursor = cursor
    return server_frame(heartbeat=hb)


def f_close(code: str, *, reconnect: bool, retry_after: float | None = None, message: str = "test") -> bytes:
    c = up.RealtimeClose(code=CLOSE[code], message=message, reconnect=reconnect)
    if retry_after is not None:
        c.retry_after.seconds = int(retry_after)
        c.retry_after.nanos = round((retry_after - int(retry_after)) * 1e9)
    return server_frame(close=c)


def f_snapshot(
    rooms: Iterable[tuple[str, str, str]] = ((ROOM, "CHANNEL", "general"),),
    users: Iterable[tuple[str, str, bool]] = ((ALICE, "alice", False), (BOT, "helper_bot", True)),
    version: str = "0.5.0-beta.20",
    members: dict[str, list[str]] | None = None,
) -> bytes:
    """``snapshot``: ``rooms`` as ``(id, "CHANNEL"|"DM", name)`` (the bot a member of each),
    ``users`` as ``(id, login, is_bot)``."""
    s = up.RealtimeSnapshot()
    s.server.name = "Test Chatto"
    s.server.version = version
    for rid, kind, name in rooms:
        r = s.rooms.add()
        r.room.id, r.room.name = rid, name
        r.room.kind = ROOM_KIND[kind]
        r.viewer_state.is_member = True
        p = r.viewer_state.permissions.add()
        p.permission, p.granted = "message.post", True
        r.member_user_ids.extend((members or {}).get(rid, []))
    for uid, login, is_bot in users:
        m = s.users.add()
        m.user.id, m.user.login, m.user.display_name = uid, login, login.title()
        if is_bot:
            m.user.bot.owner_user_id = ALICE
    return server_frame(snapshot=s)


def envelope(eid: str, cursor: str | None, actor: str | None = ALICE, created: int = 1_790_000_000):
    """An upstream ``RealtimeEvent`` with the envelope fields set (add the oneof member)."""
    ev = up.RealtimeEvent(id=eid)
    ev.created_at.seconds = created
    if actor is not None:
        ev.actor_id = actor
    if cursor is not None:
        ev.cursor = cursor
    return ev


def f_event(ev) -> bytes:
    return server_frame(event=ev)


def f_posted(
    eid: str,
    cursor: str | None,
    *,
    body: str | None = "hello",
    actor: str = ALICE,
    room: str = ROOM,
    thread_root: str = "",
    room_kind: str = "CHANNEL",
    direct: Iterable[str] = (),
    role: Iterable[tuple[str, bool]] = (),
    here: bool = False,
    all_: bool = False,
    echo_of: str = "",
) -> bytes:
    """``message_posted``: ``direct`` user ids (``includes_viewer`` when it is the bot),
    ``role`` mentions as ``(role, includes_viewer)``, ``@here`` / ``@all``."""
    ev = envelope(eid, cursor, actor)
    mp = ev.message_posted
    mp.room_id, mp.thread_root_event_id, mp.echo_of_event_id = room, thread_root, echo_of
    mp.room_kind = ROOM_KIND[room_kind]
    if body is not None:
        mp.body_plaintext = body
    for uid in direct:
        m = mp.mentions.add()
        m.direct.user_id = uid
        m.includes_viewer = uid == BOT
    for name, includes in role:
        m = mp.mentions.add()
        m.role.role_name = name
        m.includes_viewer = includes
    if here:
        mp.mentions.add(includes_viewer=True).here.SetInParent()
    if all_:
        mp.mentions.add(includes_viewer=True).all.SetInParent()
    return f_event(ev)


def f_edited(eid: str, target: str, cursor: str | None, *, actor: str = ALICE, room: str = ROOM) -> bytes:
    ev = envelope(eid, cursor, actor)
    ev.message_edited.room_id, ev.message_edited.message_event_id = room, target
    return f_event(ev)


def f_retracted(eid: str, target: str, cursor: str | None, *, actor: str = ALICE, room: str = ROOM) -> bytes:
    ev = envelope(eid, cursor, actor)
    ev.message_retracted.room_id, ev.message_retracted.message_event_id = room, target
    return f_event(ev)


def f_reaction(
    eid: str, target: str, emoji: str, cursor: str | None, *, added: bool = True, actor: str = ALICE
) -> bytes:
    ev = envelope(eid, cursor, actor)
    r = ev.reaction_added if added else ev.reaction_removed
    r.room_id, r.message_event_id, r.emoji = ROOM, target, emoji
    return f_event(ev)


def f_thread_created(eid: str, root: str, cursor: str | None) -> bytes:
    ev = envelope(eid, cursor)
    ev.thread_created.room_id, ev.thread_created.thread_root_event_id = ROOM, root
    return f_event(ev)


def f_thread_state(eid: str, root: str, following: bool, cursor: str | None) -> bytes:
    ev = envelope(eid, cursor, BOT)
    t = ev.thread_viewer_state_changed
    t.room_id, t.thread_root_event_id, t.is_following = ROOM, root, following
    return f_event(ev)


def f_notifications(eid: str, created: str | None) -> bytes:
    ev = envelope(eid, None, None)
    n = ev.notification_occurrences_changed
    n.SetInParent()
    if created is not None:
        n.created_notification_id = created
    return f_event(ev)


def f_typing(eid: str, root: str | None = None, actor: str = ALICE) -> bytes:
    ev = envelope(eid, None, actor)
    ev.user_typing.room_id = ROOM
    if root is not None:
        ev.user_typing.thread_root_event_id = root
    return f_event(ev)


def f_voice_call_started(eid: str, cursor: str) -> bytes:
    """A durable event our schema subset leaves out (``voice_call_started`` = 22)."""
    ev = envelope(eid, cursor)
    ev.voice_call_started.room_id, ev.voice_call_started.call_id = ROOM, "Ccall0000000001"
    return f_event(ev)


def _len_field(num: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([(num << 3) | 2, len(payload)]) + payload


def f_protocol2_error(code: str = "bad_hello", message: str = "first frame must be hello") -> bytes:
    """What a protocol-2 server (Chatto 0.5.0-alpha.1 … alpha.5, main before 2026-08-31) answers
    a ``RealtimeSubscribe`` with: ``RealtimeServerFrame{error(5){code, message, fatal: true}}``,
    written by hand from its realtime.proto (field numbers of the 2026-08-22 snapshot)."""
    err = _len_field(1, code.encode()) + _len_field(2, message.encode()) + bytes([0x18, 0x01])
    return _len_field(5, err)


def f_protocol2_close(code: str = "authentication_required") -> bytes:
    """A protocol-2 ``close{code, message, reconnect: false}`` (field 6): no protocol-4 frame kind."""
    return _len_field(6, _len_field(1, code.encode()) + _len_field(2, b"bye"))


# ----------------------------------------------------------------------------- scripted server


class Conn:
    """Server side of one client connection. ``received`` holds every client frame, each
    parsed as upstream ``RealtimeSubscribe``."""

    def __init__(self, ws, index: int):
        self.ws = ws
        self.index = index
        self.received: list = []
        self.raw: list[bytes] = []
        self.text_frames = 0

    @property
    def headers(self):
        return self.ws.request.headers

    @property
    def path(self) -> str:
        return self.ws.request.path

    async def recv(self, timeout: float = 5.0):
        data = await asyncio.wait_for(self.ws.recv(), timeout)
        if isinstance(data, str):
            self.text_frames += 1
            raise AssertionError("client sent a text frame")
        self.raw.append(data)
        sub = up.RealtimeSubscribe.FromString(data)
        self.received.append(sub)
        return sub

    async def send(self, data: bytes | str) -> None:
        await self.ws.send(data)

    async def subscribe(self):
        """Read the client's one ``RealtimeSubscribe`` (upstream class) and return it."""
        return await self.recv()

    async def idle(self) -> None:
        """Keep the socket open until the client goes away (a protocol-4 client sends nothing
        after its subscribe: anything it does send lands in ``received``)."""
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
