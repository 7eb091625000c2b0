"""The local Chatto server judged by a client nobody here wrote: chattolib 0.5.0b20 (an
independent Python library generated from Chatto v0.5.0-beta.20's protos), its realtime
client (``chattolib.realtime``) and its ConnectRPC client (``chattolib.client``), over a real
loopback socket. Every frame here is decoded by chattolib's own generated classes
(``chattolib._pb``), never by ours.

What each test models is named in its docstring (cli/internal/http_server/realtime.go and
friends; docs/chatto-0.5.md).
"""

from __future__ import annotations

import asyncio

import pytest

from chatto_local import LocalChatto

chattolib = pytest.importorskip("chattolib")
realtime = pytest.importorskip("chattolib.realtime")
from chattolib.client import ChattoClient  # noqa: E402
from chattolib.realtime import (  # noqa: E402
    INITIAL_STATE_LIVE_ONLY,
    INITIAL_STATE_SNAPSHOT,
    ChattoRealtimeCloseError,
    RealtimeConnection,
    RealtimeEvent,
    RealtimeSnapshot,
    stream_events,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
async def srv():
    s = LocalChatto.demo(heartbeat_interval=15)
    await s.start()
    yield s
    await s.stop()


def client(srv, token: str | None = None) -> ChattoClient:
    return ChattoClient(srv.world.bot_key if token is None else token, base_url=srv.base_url)


async def until_caught_up(conn: RealtimeConnection, timeout: float = 5.0) -> list:
    """Frames chattolib yields up to caught_up (which it consumes silently, setting
    ``last_cursor``): the snapshot and replayed events. A caught_up is recognised by the
    cursor it leaves behind with nothing else arriving."""
    got: list = []
    it = conn.events().__aiter__()
    while True:
        try:
            frame = await asyncio.wait_for(it.__anext__(), 0.5)
        except TimeoutError:
            if conn.last_cursor:
                return got
            timeout -= 0.5
            if timeout <= 0:
                raise
            continue
        got.append(frame)


async def next_of(conn: RealtimeConnection, kind: str, timeout: float = 5.0) -> RealtimeEvent:
    async def go() -> RealtimeEvent:
        async for frame in conn.events():
            if isinstance(frame, RealtimeEvent) and frame.kind == kind:
                return frame
        raise AssertionError("stream ended")

    return await asyncio.wait_for(go(), timeout)


async def test_subscribe_and_a_persons_post_arrives_as_message_posted(srv):
    """realtime.go + realtime_event_projection.go: after the subscribe, a person's post is one
    message_posted event with envelope id = the message's id, actor_id = the author and a
    cursor; its payload names the room (thin payload, body_plaintext, room_kind)."""
    w = srv.world
    async with client(srv) as c:
        conn = RealtimeConnection(c, initial_state=INITIAL_STATE_LIVE_ONLY)
        await conn.connect()
        try:
            assert await until_caught_up(conn) == []
            caught_up_cursor = conn.last_cursor
            m = srv.post(w.alice_id, w.general_id, "@helper_bot hello from alice")
            ev = await next_of(conn, "message_posted")
        finally:
            await conn.close()
    assert (ev.id, ev.actor_id, ev.payload.room_id) == (m.event_id, w.alice_id, w.general_id)
    assert ev.cursor and ev.cursor != caught_up_cursor and ev.created_at is not None
    assert ev.payload.body_plaintext == "@helper_bot hello from alice"
    assert ev.raw.DESCRIPTOR.full_name == "chatto.realtime.v1.RealtimeEvent"  # chattolib's class
    mention = ev.payload.mentions[0]
    assert mention.WhichOneof("cause") == "direct" and mention.direct.user_id == w.bot_id and mention.includes_viewer


async def test_snapshot_comes_before_caught_up(srv):
    """realtime.go frame order: with initial_state SNAPSHOT and no cursor, one snapshot
    (server profile, rooms with viewer state, users) precedes caught_up."""
    w = srv.world
    async with client(srv) as c:
        conn = RealtimeConnection(c, initial_state=INITIAL_STATE_SNAPSHOT)
        await conn.connect()
        try:
            frames = await until_caught_up(conn)
        finally:
            await conn.close()
    assert len(frames) == 1 and isinstance(frames[0], RealtimeSnapshot)
    snap = frames[0]
    assert snap.server.version == "0.5.0-beta.20"
    rooms = {r.room.id: r for r in snap.rooms}
    assert rooms[w.general_id].viewer_state.is_member
    assert w.bot_id in rooms[w.general_id].member_user_ids
    bot = next(u.user for u in snap.users if u.user.id == w.bot_id)
    assert bot.HasField("bot") and bot.bot.owner_user_id == w.alice_id
    assert conn.last_cursor  # caught_up's cursor, kept by chattolib


async def test_resume_replays_a_gap_in_order(srv):
    """realtime_replay.go: resuming with a cursor replays the durable events after it, in log
    order, each with its own cursor; then live delivery continues."""
    w = srv.world
    async with client(srv) as c:
        conn = RealtimeConnection(c)
        await conn.connect()
        await until_caught_up(conn)
        cursor = conn.last_cursor
        await conn.close()
        posted = [srv.post(w.alice_id, w.general_id, f"missed {i}").event_id for i in range(3)]
        srv.react(w.alice_id, w.general_id, posted[0], "eyes")
        conn = RealtimeConnection(c, resume_cursor=cursor, initial_state=INITIAL_STATE_SNAPSHOT)
        await conn.connect()
        try:
            replayed = await until_caught_up(conn)
            live = srv.post(w.alice_id, w.general_id, "live again")
            after = await next_of(conn, "message_posted")
        finally:
            await conn.close()
    assert not any(isinstance(f, RealtimeSnapshot) for f in replayed)
    assert [(f.kind, f.id if f.kind == "message_posted" else f.payload.message_event_id) for f in replayed] == [
        ("message_posted", posted[0]),
        ("message_posted", posted[1]),
        ("message_posted", posted[2]),
        ("reaction_added", posted[0]),
    ]
    assert all(f.cursor for f in replayed) and len({f.cursor for f in replayed}) == 4
    assert after.id == live.event_id


async def test_wrong_protocol_version_is_refused_without_reconnect(srv):
    """realtime.go: protocol_version != 4 → close UNSUPPORTED_PROTOCOL, reconnect=false."""
    async with client(srv) as c:
        with pytest.raises(ChattoRealtimeCloseError) as exc:
            async for _ in stream_events(c, protocol_version=3):
                pass
    assert (exc.value.code, exc.value.reconnect) == ("UNSUPPORTED_PROTOCOL", False)


async def test_wrong_key_is_refused_without_reconnect(srv):
    """realtime.go: a bad bearer → close AUTHENTICATION_REQUIRED, reconnect=false."""
    async with client(srv, srv.world.bot_key[:-2] + "zz") as c:
        with pytest.raises(ChattoRealtimeCloseError) as exc:
            async for _ in stream_events(c):
                pass
    assert (exc.value.code, exc.value.reconnect) == ("AUTHENTICATION_REQUIRED", False)


async def test_revoked_key_closes_the_stream(srv):
    """realtime.go: a revoked bot API key closes its socket AUTHENTICATION_REQUIRED,
    reconnect=false (BotService/RevokeBotApiKey)."""
    w = srv.world
    key_id = srv.bot_keys(w.bot_id)[0]["id"]
    async with client(srv) as c:
        conn = RealtimeConnection(c)
        await conn.connect()
        try:
            await until_caught_up(conn)
            srv.revoke_bot_key(w.bot_id, key_id)
            with pytest.raises(ChattoRealtimeCloseError) as exc:
                await next_of(conn, "message_posted")
        finally:
            await conn.close()
    assert (exc.value.code, exc.value.reconnect) == ("AUTHENTICATION_REQUIRED", False)


async def test_connect_client_reads_a_thread_and_a_message(srv):
    """connectapi ThreadService/GetThreadEvents (root first without a cursor, then the
    replies, paging with ``after``) and MessageService/GetMessage, decoded by chattolib's
    ConnectRPC client (binary protobuf)."""
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "@helper_bot a question")
    r1 = srv.reply(w.alice_id, w.general_id, root.event_id, "first reply")
    r2 = srv.reply(w.alice_id, w.general_id, root.event_id, "second reply")
    async with client(srv) as c:
        page = await c.get_thread_events(w.general_id, root.event_id, limit=50)
        msg = await c.get_message(w.general_id, r1.event_id)
        r3 = srv.reply(w.alice_id, w.general_id, root.event_id, "third reply")
        newer = await c.get_thread_events(w.general_id, root.event_id, after=page.end_cursor)
        raw = await c.services.messages.batch_get_messages(
            _pb_request("messages_pb2", "BatchGetMessagesRequest", room_id=w.general_id, event_ids=[r2.event_id]),
            headers=c._headers(),
        )
    ids = [e.id for e in page.events]
    assert ids == [root.event_id, r1.event_id, r2.event_id]
    assert msg is not None and msg.id == r1.event_id and msg.body == "first reply"
    assert msg.thread_root_event_id == root.event_id
    assert [e.id for e in newer.events] == [r3.event_id]
    assert [m.id for m in raw.messages] == [r2.event_id]


def _pb_request(module: str, name: str, **kw):
    import importlib

    mod = importlib.import_module(f"chattolib._pb.chatto.api.v1.{module}")
    return getattr(mod, name)(**kw)


async def test_frame_order_decoded_with_chattolib_classes(srv):
    """realtime.go frame order, byte for byte through chattolib's generated
    ``chatto.realtime.v1`` classes: the subscribe encoded by them, then snapshot, replayed
    events, caught_up{cursor, recovery}, live event, in that order."""
    import websockets
    from chattolib._pb.chatto.realtime.v1 import realtime_pb2 as rpb

    w = srv.world

    async def frames_until(ws, kind: str) -> list:
        out = []
        while True:
            f = rpb.RealtimeServerFrame()
            f.ParseFromString(await asyncio.wait_for(ws.recv(), 5))
            out.append(f)
            if f.WhichOneof("frame") == kind:
                return out

    sub = rpb.RealtimeSubscribe(
        protocol_version=4, bearer_token=w.bot_key, initial_state=rpb.REALTIME_INITIAL_STATE_SNAPSHOT
    )
    async with websockets.connect(srv.ws_url) as ws:
        await ws.send(sub.SerializeToString())
        first = await frames_until(ws, "caught_up")
        srv.post(w.alice_id, w.general_id, "live")
        live = await frames_until(ws, "event")
    assert [f.WhichOneof("frame") for f in first] == ["snapshot", "caught_up"]
    caught = first[-1].caught_up
    assert caught.recovery == rpb.REALTIME_RECOVERY_SNAPSHOT and caught.cursor
    assert live[-1].event.WhichOneof("event") == "message_posted" and live[-1].event.HasField("cursor")
    sub.resume_cursor = caught.cursor
    srv.post(w.alice_id, w.general_id, "missed")
    async with websockets.connect(srv.ws_url) as ws:
        await ws.send(sub.SerializeToString())
        resumed = await frames_until(ws, "caught_up")
    assert [f.WhichOneof("frame") for f in resumed] == ["event", "event", "caught_up"]
    assert resumed[-1].caught_up.recovery == rpb.REALTIME_RECOVERY_RESUMED
