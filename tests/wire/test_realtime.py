"""RealtimeSession (protocol 4) over REAL loopback WebSockets against a small scripted server
(``support.realtime.FakeChatto``), plus the pure frame functions of ``wire/frames.py``.

Every server frame here is encoded, and the client's subscribe decoded, with chattolib
0.5.0b20's generated classes (Chatto v0.5.0-beta.20's schema), never with the plugin's own
``chatto_pb2``. No fixed sleeps: tests wait on conditions with timeouts; timeouts and delays
are shrunk through constructor parameters, the reconnect wait is an injected ``sleep``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from hermes_chatto.wire.errors import ChattoCredentialError, ChattoProtocolError, ChattoRealtimeFatal
from hermes_chatto.wire.events import (
    CaughtUp,
    Ignored,
    MessageEdited,
    MessagePosted,
    MessageRetracted,
    NotificationsChanged,
    PermissionsChanged,
    ReactionChanged,
    RoomChanged,
    RoomRemoved,
    Snapshot,
    ThreadCreated,
    ThreadFollowChanged,
    Typing,
    UserChanged,
)
from hermes_chatto.wire.frames import (
    FrameDecodeError,
    decode_server_frame,
    encode_subscribe,
    event_of,
    legacy_frame_hint,
    plausible_before_caught_up,
    snapshot_of,
)
from hermes_chatto.wire.realtime import (
    DEFAULT_STALL_TIMEOUT,
    RealtimeSession,
    default_connect,
    realtime_url,
)

from support.realtime import (
    ALICE,
    BOB,
    BOT,
    DM,
    ROOM,
    TOKEN,
    Conn,
    FakeChatto,
    envelope,
    f_caught_up,
    f_close,
    f_edited,
    f_event,
    f_heartbeat,
    f_notifications,
    f_posted,
    f_protocol2_close,
    f_protocol2_error,
    f_reaction,
    f_retracted,
    f_snapshot,
    f_thread_created,
    f_thread_state,
    f_typing,
    f_voice_call_started,
    up,
)
from support.waits import until

pytestmark = pytest.mark.timeout(60)

SECRET = TOKEN.split(".", 1)[1]


class Client:
    """A RealtimeSession plus recorded events/cursors/states/reconnect waits."""

    def __init__(self, server: FakeChatto, **kw):
        self.events: list = []
        self.cursors: list[str] = []
        self.states: list[str] = []
        self.sleeps: list[float] = []
        self.gate: Callable[[object], Awaitable[None]] | None = None
        kw.setdefault("stall_timeout", 5.0)
        kw.setdefault("reconnect_delay", 30.0)  # so that only the immediate first retry / retry_after can pass
        kw.setdefault("handshake_timeout", 3.0)
        kw.setdefault("bot_user_id", BOT)
        kw.setdefault("sleep", self._sleep)
        self.session = RealtimeSession(
            server.base_url,
            kw.pop("token", TOKEN),
            on_event=self._on_event,
            on_cursor=self.cursors.append,
            on_state=self.states.append,
            **kw,
        )
        self.task: asyncio.Task | None = None

    async def _sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)

    async def _on_event(self, ev) -> None:
        if self.gate is not None:
            await self.gate(ev)
        self.events.append(ev)

    def start(self) -> Client:
        self.task = asyncio.get_running_loop().create_task(self.session.run())
        return self

    def of(self, cls) -> list:
        return [e for e in self.events if isinstance(e, cls)]

    async def stop(self) -> None:
        await self.session.stop()
        if self.task is not None:
            await asyncio.wait_for(self.task, 5)

    async def raised(self, timeout: float = 5.0) -> BaseException:
        assert self.task is not None
        with pytest.raises(BaseException) as info:
            await asyncio.wait_for(self.task, timeout)
        return info.value


def _pb_event(frame_bytes: bytes):
    return decode_server_frame(frame_bytes).event


# ----------------------------------------------------------------------------- pure helpers


def test_realtime_url_derivation():
    assert realtime_url("http://127.0.0.1:8080") == "ws://127.0.0.1:8080/api/realtime"
    assert realtime_url("https://chat.example.com/") == "wss://chat.example.com/api/realtime"
    assert realtime_url("https://example.com/chatto") == "wss://example.com/chatto/api/realtime"
    assert realtime_url("wss://x.example/api/realtime") == "wss://x.example/api/realtime"
    with pytest.raises(ValueError):
        realtime_url("ftp://example.com")


def test_backoff_first_retry_immediate_then_delay_with_jitter_or_server_value():
    s = RealtimeSession(
        "http://127.0.0.1:1", TOKEN, on_event=lambda e: None, reconnect_delay=5.0, max_reconnect_delay=60.0
    )
    assert s._delay(1, None) == 0.0
    for _ in range(50):
        assert 4.0 <= s._delay(2, None) <= 6.0
        assert 8.0 <= s._delay(3, None) <= 12.0
        assert s._delay(20, None) <= 72.0
        assert 2.5 <= s._delay(1, 2.5) <= 2.75  # server retry_after wins, small jitter on top
    assert TOKEN not in repr(s) and SECRET not in repr(s)


def test_default_stall_timeout_is_three_heartbeats():
    """Chatto sends a heartbeat every 15 s (MyEventsHeartbeatInterval): one late or lost
    heartbeat must not end a healthy socket."""
    assert DEFAULT_STALL_TIMEOUT == 45.0
    s = RealtimeSession("http://127.0.0.1:1", TOKEN, on_event=lambda e: None)
    assert s.stall_timeout == 45.0 and s.initial_state == "snapshot"


def test_subscribe_decodes_with_chattolibs_class():
    sub = up.RealtimeSubscribe.FromString(encode_subscribe(TOKEN, "CURSOR-1", "live_only"))
    assert sub.protocol_version == 4
    assert sub.bearer_token == TOKEN
    assert sub.HasField("resume_cursor") and sub.resume_cursor == "CURSOR-1"
    assert sub.initial_state == up.REALTIME_INITIAL_STATE_LIVE_ONLY
    sub = up.RealtimeSubscribe.FromString(encode_subscribe(TOKEN, None))
    assert not sub.HasField("resume_cursor") and sub.initial_state == up.REALTIME_INITIAL_STATE_SNAPSHOT
    sub = up.RealtimeSubscribe.FromString(encode_subscribe(None, ""))
    assert not sub.HasField("bearer_token") and not sub.HasField("resume_cursor")
    with pytest.raises(ValueError):
        encode_subscribe(TOKEN, None, "everything")  # type: ignore[arg-type]


def test_decode_rejects_text_garbage_and_empty_frames():
    good = f_posted("Eabc", "C1")
    with pytest.raises(FrameDecodeError):
        decode_server_frame(good[: len(good) // 2])
    with pytest.raises(FrameDecodeError):
        decode_server_frame("text")
    with pytest.raises(FrameDecodeError):
        decode_server_frame(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
    with pytest.raises(FrameDecodeError):
        decode_server_frame(b"")  # no frame kind
    with pytest.raises(FrameDecodeError):
        decode_server_frame(bytes([0x32, 0x00]))  # field 6: a frame kind protocol 4 does not have
    assert decode_server_frame(bytearray(good)).event.id == "Eabc"


# ----------------------------------------------------------------------------- event mapping


def test_message_posted_maps_envelope_body_kind_and_mentions():
    ev = event_of(
        _pb_event(f_posted("Em1", "C1", body="hi @bot", direct=[BOT, BOB, BOT], room_kind="CHANNEL", thread_root="Er")),
        BOT,
    )
    assert isinstance(ev, MessagePosted)
    assert (ev.room_id, ev.event_id, ev.actor_id, ev.cursor) == (ROOM, "Em1", ALICE, "C1")
    assert ev.body_plaintext == "hi @bot" and ev.room_kind == "channel" and ev.thread_root_event_id == "Er"
    assert ev.created_at == 1_790_000_000.0
    assert ev.mentions_viewer and not ev.mentions_everyone
    assert ev.mentioned_user_ids == (BOT, BOB)
    dm = event_of(_pb_event(f_posted("Em2", "C2", body=None, room=DM, room_kind="DM")), BOT)
    assert isinstance(dm, MessagePosted)
    assert dm.body_plaintext is None and dm.room_kind == "dm" and not dm.mentions_viewer


@pytest.mark.parametrize(
    ("kw", "viewer", "everyone"),
    [
        ({"direct": [BOB]}, False, False),
        ({"direct": [BOT]}, True, False),
        ({"role": [("ops", True)]}, True, False),  # a role the bot holds
        ({"role": [("admins", False)]}, False, False),
        ({"here": True}, False, True),  # includes_viewer on @here is not a mention of the bot
        ({"all_": True}, False, True),
    ],
)
def test_mention_kinds(kw, viewer, everyone):
    ev = event_of(_pb_event(f_posted("Em", "C", **kw)), BOT)
    assert isinstance(ev, MessagePosted)
    assert (ev.mentions_viewer, ev.mentions_everyone) == (viewer, everyone)


def test_direct_mention_of_the_bot_counts_even_without_includes_viewer():
    pe = up.RealtimeServerFrame.FromString(f_posted("Em", "C"))
    m = pe.event.message_posted.mentions.add()
    m.direct.user_id = BOT  # includes_viewer left false
    ev = event_of(decode_server_frame(pe.SerializeToString()).event, BOT)
    assert isinstance(ev, MessagePosted) and ev.mentions_viewer


def test_every_event_kind_maps_to_its_typed_event():
    cases = [
        (f_edited("Ee", "Em1", "C1"), MessageEdited(ROOM, "Em1", ALICE, "C1")),
        (f_retracted("Ed", "Em1", "C2"), MessageRetracted(ROOM, "Em1", ALICE, "C2")),
        (f_reaction("Er", "Em1", "tada", "C3"), ReactionChanged(ROOM, "Em1", "tada", ALICE, True, "C3")),
        (f_reaction("Er2", "Em1", "tada", "C4", added=False), ReactionChanged(ROOM, "Em1", "tada", ALICE, False, "C4")),
        (f_thread_created("Et", "Em1", "C5"), ThreadCreated(ROOM, "Em1", ALICE, "C5")),
        (f_thread_state("Ef", "Em1", True, "C6"), ThreadFollowChanged(ROOM, "Em1", True, "C6")),
        (f_notifications("En", "Nnew0000000001"), NotificationsChanged("Nnew0000000001", None)),
        (f_notifications("En2", None), NotificationsChanged("", None)),
        (f_typing("Ety", "Em1"), Typing(ROOM, "Em1", ALICE)),
        (f_typing("Ety2"), Typing(ROOM, "", ALICE)),
        (f_voice_call_started("Ev", "C7"), Ignored("other_event", "", "C7")),
    ]
    for frame, want in cases:
        assert event_of(_pb_event(frame), BOT) == want


def test_room_user_and_permission_events():
    ev = envelope("Erc", "C1")
    ev.room_created.room_id, ev.room_created.name, ev.room_created.kind = "Rnew", "ops", 1
    got = event_of(_pb_event(f_event(ev)), BOT)
    assert isinstance(got, RoomChanged) and got.kind == "room_created" and got.room_id == "Rnew"
    assert got.room is not None and got.room.name == "ops" and got.room.kind == "channel" and got.cursor == "C1"

    ev = envelope("Ej", "C2", BOT)
    ev.user_joined_room.room_id = ROOM
    assert event_of(_pb_event(f_event(ev)), BOT) == RoomChanged("user_joined_room", ROOM, BOT, None, "C2")

    ev = envelope("Edel", "C3")
    ev.room_deleted.room_id = ROOM
    assert event_of(_pb_event(f_event(ev)), BOT) == RoomRemoved(ROOM, "C3")

    ev = envelope("Eu", "C4")
    ev.user_account_created.user_id, ev.user_account_created.is_bot = "Unewbot00000001", True
    assert event_of(_pb_event(f_event(ev)), BOT) == UserChanged("user_account_created", "Unewbot00000001", True, "C4")

    ev = envelope("Ep", "C5")
    ev.viewer_permissions_changed.SetInParent()
    assert event_of(_pb_event(f_event(ev)), BOT) == PermissionsChanged("viewer_permissions_changed", "C5")

    ev = envelope("Epr", None)
    ev.presence_changed.status = 1
    assert event_of(_pb_event(f_event(ev)), BOT) == Ignored("other_event", "presence_changed", None)


def test_snapshot_maps_rooms_users_and_version():
    snap = snapshot_of(
        decode_server_frame(
            f_snapshot(
                rooms=[(ROOM, "CHANNEL", "general"), (DM, "DM", "")],
                users=[(ALICE, "alice", False), (BOT, "helper_bot", True)],
                members={DM: [ALICE, BOT]},
            )
        ).snapshot
    )
    assert isinstance(snap, Snapshot) and snap.server_version == "0.5.0-beta.20"
    assert [(r.id, r.kind, r.name, r.is_member) for r in snap.rooms] == [
        (ROOM, "channel", "general", True),
        (DM, "dm", "", True),
    ]
    assert snap.rooms[0].granted("message.post") and snap.rooms[1].member_user_ids == (ALICE, BOT)
    assert [(u.id, u.login, u.is_bot) for u in snap.users] == [(ALICE, "alice", False), (BOT, "helper_bot", True)]


def test_protocol_2_frames_are_recognised_and_never_plausible():
    assert legacy_frame_hint(f_protocol2_error()) == "protocol 2 (error bad_hello)"
    assert legacy_frame_hint(f_protocol2_close()) == "protocol 2 (close authentication_required)"
    assert legacy_frame_hint(f_posted("Em", "C")) == ""
    assert legacy_frame_hint("text") == ""
    # this protocol-2 error happens to parse as a protocol-4 snapshot of empty rooms
    odd = f_protocol2_error("authentication_required", "authentication required")
    frame = decode_server_frame(odd)
    assert frame.WhichOneof("frame") == "snapshot" and not plausible_before_caught_up(frame)
    for good in (
        f_snapshot(),
        f_caught_up("C1", "SNAPSHOT"),
        f_posted("Em", "C"),
        f_close("RESYNC_REQUIRED", reconnect=True),
    ):
        assert plausible_before_caught_up(decode_server_frame(good))
    assert not plausible_before_caught_up(decode_server_frame(f_caught_up("C1", "UNSPECIFIED")))


# ----------------------------------------------------------------------------- session: happy path


async def test_subscribe_snapshot_catch_up_live_and_cursor_after_processing():
    async def script(c: Conn):
        c.sub = await c.subscribe()
        await c.send(f_snapshot())
        await c.send(f_caught_up("C0", "SNAPSHOT"))
        await c.send(f_posted("Em1", "C1", body="hello bot", direct=[BOT]))
        await c.send(f_typing("Ety"))
        await c.send(f_edited("Ee", "Em1", "C2"))
        await c.send(f_heartbeat("C3"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.resume_cursor == "C3", what="heartbeat cursor")
        sub = srv.conns[0].sub
        assert sub.protocol_version == 4 and sub.bearer_token == TOKEN
        assert not sub.HasField("resume_cursor") and sub.initial_state == up.REALTIME_INITIAL_STATE_SNAPSHOT
        assert [type(e) for e in cl.events] == [Snapshot, CaughtUp, MessagePosted, Typing, MessageEdited]
        assert cl.events[1] == CaughtUp("C0", "snapshot")
        posted = cl.events[2]
        assert posted.mentions_viewer and posted.body_plaintext == "hello bot"
        assert cl.cursors == ["C0", "C1", "C2", "C3"]
        assert cl.session.connected and cl.session.caught_up.is_set() and cl.session.state == "live"
        assert cl.session.server_version == "0.5.0-beta.20"
        assert cl.states[:4] == ["connecting", "subscribing", "catching_up", "live"]
        assert cl.session.stats["heartbeats"] == 1 and cl.session.stats["snapshots"] == 1
        assert len(srv.conns[0].received) == 1  # the subscribe and nothing else
        await cl.stop()
    assert cl.session.state == "stopped" and not cl.session.connected


async def test_resume_sends_the_stored_cursor_and_replay_advances_it():
    async def first(c: Conn):
        c.sub = await c.subscribe()
        await c.send(f_posted("Er1", "C11"))  # replayed before caught_up
        await c.send(f_caught_up("C12", "RESUMED"))
        await c.send(f_posted("Em2", "C13"))
        await until(lambda: cl.session.resume_cursor == "C13", what="live cursor")
        await c.ws.close(1001, "going away")

    async def second(c: Conn):
        c.sub = await c.subscribe()
        await c.send(f_caught_up("C13", "RESUMED"))
        await c.idle()

    async with FakeChatto(first, second) as srv:
        cl = Client(srv, resume_cursor="C10", initial_state="live_only").start()
        await until(lambda: len(srv.conns) == 2 and cl.session.caught_up.is_set(), what="second socket live")
        a, b = srv.conns[0].sub, srv.conns[1].sub
        assert a.resume_cursor == "C10" and a.initial_state == up.REALTIME_INITIAL_STATE_LIVE_ONLY
        assert b.resume_cursor == "C13" and b.initial_state == up.REALTIME_INITIAL_STATE_LIVE_ONLY
        assert cl.cursors == ["C11", "C12", "C13"]  # C13 again at the second caught_up: not repeated
        assert cl.sleeps == [0.0]  # the first retry is immediate
        await cl.stop()


async def test_cursor_only_stored_after_on_event_returned():
    release = asyncio.Event()

    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C0"))
        await c.send(f_posted("Em1", "C1"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv)

        async def gate(ev):
            if isinstance(ev, MessagePosted):
                await release.wait()

        cl.gate = gate
        cl.start()
        await until(lambda: cl.session.stats["events"] == 2, what="message handler entered")
        assert cl.session.resume_cursor == "C0" and cl.cursors == ["C0"]
        release.set()
        await until(lambda: cl.session.resume_cursor == "C1", what="cursor after handler")
        assert cl.cursors == ["C0", "C1"]
        await cl.stop()


async def test_a_raising_handler_keeps_the_old_cursor(caplog):
    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C0"))
        await c.send(f_posted("Em1", "C1", body="boom"))
        await c.send(f_typing("Ety"))  # transient: no cursor
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv)

        async def gate(ev):
            if isinstance(ev, MessagePosted):
                raise RuntimeError("handler bug")

        cl.gate = gate
        cl.start()
        await until(lambda: cl.of(Typing), what="stream continues after a handler error")
        assert cl.session.resume_cursor == "C0" and cl.cursors == ["C0"]
        assert cl.session.stats["handler_errors"] == 1
        assert "on_event failed for MessagePosted" in caplog.text
        await cl.stop()


async def test_snapshot_is_discarded_when_the_socket_closes_before_caught_up():
    async def first(c: Conn):
        await c.subscribe()
        await c.send(f_snapshot(rooms=[("Rold00000000001", "CHANNEL", "old")]))
        await c.ws.close(1011, "boom")

    async def second(c: Conn):
        await c.subscribe()
        await c.send(f_snapshot())
        await c.send(f_caught_up("C1", "SNAPSHOT"))
        await c.idle()

    async with FakeChatto(first, second) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.caught_up.is_set(), what="live")
        snaps = cl.of(Snapshot)
        assert len(snaps) == 1 and snaps[0].rooms[0].id == ROOM
        await cl.stop()


async def test_frames_larger_than_websockets_default_are_accepted():
    users = [(f"U{i:014d}", f"user{i}" + "x" * 200, False) for i in range(6000)]  # ~1.5 MB snapshot

    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_snapshot(users=users))
        await c.send(f_caught_up("C1", "SNAPSHOT"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.of(Snapshot), what="big snapshot")
        assert len(cl.of(Snapshot)[0].users) == 6000 and len(srv.conns) == 1
        await cl.stop()


# ----------------------------------------------------------------------------- liveness


async def test_stall_after_caught_up_reconnects():
    async def silent(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        await c.idle()  # never sends another frame

    async with FakeChatto(silent) as srv:
        cl = Client(srv, stall_timeout=0.3).start()
        # the second socket's subscribe too: the server lists a connection before its first frame
        await until(lambda: len(srv.conns) >= 2 and srv.conns[1].received, timeout=10, what="reconnect after stall")
        assert cl.session.stats["stalls"] >= 1 and "reconnecting" in cl.states
        assert srv.conns[1].received[0].resume_cursor == "C1"
        await cl.stop()


async def test_heartbeats_keep_a_live_socket_alive():
    async def beating(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        for i in range(8):
            await c.send(f_heartbeat(f"H{i}"))
            await asyncio.sleep(0.1)
        await c.send(f_posted("Em1", "C2"))
        await c.idle()

    async with FakeChatto(beating) as srv:
        cl = Client(srv, stall_timeout=0.5).start()
        await until(lambda: cl.of(MessagePosted), what="message after heartbeats")
        assert len(srv.conns) == 1 and cl.session.stats["stalls"] == 0
        assert cl.cursors == ["C1", *[f"H{i}" for i in range(8)], "C2"]
        await cl.stop()


async def test_no_first_frame_within_the_handshake_timeout_reconnects():
    async def mute(c: Conn):
        await c.subscribe()
        await c.idle()

    async with FakeChatto(mute) as srv:
        cl = Client(srv, handshake_timeout=0.2).start()
        await until(lambda: len(srv.conns) >= 2, what="reconnect after a silent server")
        await cl.stop()


# ----------------------------------------------------------------------------- closes


@pytest.mark.parametrize(
    ("code", "retry_after"),
    [("TEMPORARILY_UNAVAILABLE", 2.5), ("TEMPORARILY_UNAVAILABLE", None), ("SESSION_RENEWAL_REQUIRED", None)],
)
async def test_close_with_reconnect_keeps_cursor_and_honours_retry_after(code, retry_after):
    async def closes(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        await c.send(f_close(code, reconnect=True, retry_after=retry_after))
        await c.idle()

    async def stays(c: Conn):
        c.sub = await c.subscribe()
        await c.send(f_caught_up("C2"))
        await c.idle()

    async with FakeChatto(closes, stays) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.resume_cursor == "C2", what="reconnected")
        assert srv.conns[1].sub.resume_cursor == "C1"
        assert cl.session.stats["closes"] == 1
        (slept,) = cl.sleeps
        if retry_after is None:
            assert slept == 0.0
        else:
            assert retry_after <= slept <= retry_after * 1.1
        await cl.stop()


async def test_retry_after_before_caught_up_is_honoured_too():
    async def busy(c: Conn):
        await c.subscribe()
        await c.send(f_close("TEMPORARILY_UNAVAILABLE", reconnect=True, retry_after=7, message="catch-up capacity"))
        await c.idle()

    async def stays(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C2", "LIVE_ONLY"))
        await c.idle()

    async with FakeChatto(busy, stays) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.caught_up.is_set(), what="admitted")
        assert 7.0 <= cl.sleeps[0] <= 7.7
        await cl.stop()


async def test_resync_required_drops_the_cursor_and_asks_for_a_snapshot():
    async def resync(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        await c.send(f_close("RESYNC_REQUIRED", reconnect=True, message="realtime authorization changed"))
        await c.idle()

    async def stays(c: Conn):
        c.sub = await c.subscribe()
        await c.send(f_snapshot())
        await c.send(f_caught_up("C2", "SNAPSHOT"))
        await c.idle()

    async with FakeChatto(resync, stays) as srv:
        cl = Client(srv, initial_state="live_only").start()
        await until(lambda: cl.session.resume_cursor == "C2", what="resynced")
        sub = srv.conns[1].sub
        assert not sub.HasField("resume_cursor") and sub.initial_state == up.REALTIME_INITIAL_STATE_SNAPSHOT
        assert cl.session.stats["cursor_drops"] == 1 and cl.sleeps == [0.0]
        assert len(cl.of(Snapshot)) == 1
        await cl.stop()


@pytest.mark.parametrize("when", ["at_subscribe", "mid_stream"])
async def test_revoked_key_raises_credential_error_without_reconnect_storm(when, caplog):
    caplog.set_level(logging.DEBUG)

    async def refuses(c: Conn):
        await c.subscribe()
        if when == "mid_stream":
            await c.send(f_caught_up("C1"))
        await c.send(f_close("AUTHENTICATION_REQUIRED", reconnect=False, message="the bot API key is no longer valid"))
        await c.ws.close(1008, "authentication required")

    async with FakeChatto(refuses) as srv:
        cl = Client(srv).start()
        err = await cl.raised()
        assert isinstance(err, ChattoCredentialError) and err.code == "authentication_required"
        assert len(srv.conns) == 1 and cl.sleeps == []
        assert cl.session.state == "failed"
        assert TOKEN not in str(err) and SECRET not in str(err) and SECRET not in caplog.text


async def test_expired_access_token_close_with_reconnect_reconnects():
    async def expires(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        await c.send(f_close("AUTHENTICATION_REQUIRED", reconnect=True, message="the access token has expired"))

    async def stays(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C2"))
        await c.idle()

    async with FakeChatto(expires, stays) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.resume_cursor == "C2", what="reconnected")
        await cl.stop()


def _one_line_protocol_error(err: BaseException) -> str:
    assert isinstance(err, ChattoProtocolError) and err.code == "unsupported_protocol"
    text = str(err)
    assert "\n" not in text
    assert "realtime protocol 4" in text and "0.5.0-beta.10" in text and "beta.20" in text
    assert TOKEN not in text
    return text


async def test_unsupported_protocol_close_is_one_clear_line():
    async def refuses(c: Conn):
        await c.subscribe()
        await c.send(f_close("UNSUPPORTED_PROTOCOL", reconnect=False, message="unsupported realtime protocol version"))
        await c.ws.close(1002, "unsupported protocol")

    async with FakeChatto(refuses) as srv:
        cl = Client(srv).start()
        text = _one_line_protocol_error(await cl.raised())
        assert "UNSUPPORTED_PROTOCOL: unsupported realtime protocol version" in text
        assert len(srv.conns) == 1


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        (f_protocol2_error(), "protocol 2 (error bad_hello)"),
        (f_protocol2_error("authentication_required", "authentication required"), "protocol 2 (error"),
        (f_protocol2_close(), "protocol 2 (close authentication_required)"),
        (b"\xff\xff\xff", "undecodable"),
        ("a text frame", "text frame"),
    ],
)
async def test_a_server_that_does_not_speak_protocol_4_is_refused_in_one_line(frame, says):
    """A protocol-2 Chatto (0.5.0-alpha / main before 2026-08-31) answers the subscribe with its
    own error frame and a 1002 close; nothing crashes and no reconnect loop starts."""

    async def legacy(c: Conn):
        await c.subscribe()
        await c.send(frame)
        await c.ws.close(1002, "bad hello")

    async with FakeChatto(legacy) as srv:
        cl = Client(srv).start()
        text = _one_line_protocol_error(await cl.raised())
        assert says in text, text
        assert len(srv.conns) == 1 and cl.session.stats["decode_errors"] == 1


async def test_invalid_request_is_fatal_without_a_cursor():
    async def refuses(c: Conn):
        await c.subscribe()
        await c.send(f_close("INVALID_REQUEST", reconnect=False, message="initial_state is required"))

    async with FakeChatto(refuses) as srv:
        cl = Client(srv).start()
        err = await cl.raised()
        assert isinstance(err, ChattoRealtimeFatal) and err.code == "invalid_request"
        assert "initial_state is required" in str(err) and len(srv.conns) == 1


async def test_invalid_request_for_a_stale_cursor_starts_over_once_without_it():
    """realtime.go's guard closes INVALID_REQUEST for a cursor it cannot replay: the session
    retries once without the cursor (the server then sends the initial state) instead of
    failing forever on a stored cursor."""

    async def refuses_cursor(c: Conn):
        c.sub = await c.subscribe()
        if c.sub.HasField("resume_cursor"):
            await c.send(
                f_close("INVALID_REQUEST", reconnect=False, message="the realtime resume cursor is no longer retained")
            )
            return
        await c.send(f_snapshot())
        await c.send(f_caught_up("C1", "SNAPSHOT"))
        await c.idle()

    async with FakeChatto(refuses_cursor) as srv:
        cl = Client(srv, resume_cursor="Cstale").start()
        await until(lambda: cl.session.resume_cursor == "C1", what="fresh start")
        assert [c.sub.HasField("resume_cursor") for c in srv.conns] == [True, False]
        assert cl.session.stats["cursor_drops"] == 1
        await cl.stop()


@pytest.mark.parametrize("code", ["SESSION_TERMINATED", "TEMPORARILY_UNAVAILABLE"])
async def test_other_closes_without_reconnect_are_fatal(code):
    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        await c.send(f_close(code, reconnect=False, message="session terminated: admin"))

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        err = await cl.raised()
        assert isinstance(err, ChattoRealtimeFatal) and err.code == code.lower()
        assert len(srv.conns) == 1


async def test_abrupt_socket_drop_reconnects():
    async def drops(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        c.ws.transport.abort()

    async def stays(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C2"))
        await c.idle()

    async with FakeChatto(drops, stays) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.resume_cursor == "C2", what="reconnected")
        await cl.stop()


# ----------------------------------------------------------------------------- malformed frames


async def test_garbage_after_caught_up_is_skipped_counted_and_the_stream_continues():
    good = f_posted("Em1", "C1")

    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C0"))
        await c.send(good[: len(good) // 2])  # truncated
        await c.send(b"\xff\xff\xff\xff")  # garbage
        await c.send("text frame")
        await c.send(bytes([0x32, 0x00]))  # a frame kind protocol 4 does not have
        await c.send(good)
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.of(MessagePosted), what="message after garbage")
        assert cl.session.stats["decode_errors"] == 4 and len(srv.conns) == 1
        assert cl.session.resume_cursor == "C1"
        await cl.stop()


async def test_an_unknown_event_kind_counts_its_cursor():
    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C0"))
        await c.send(f_voice_call_started("Ev", "C1"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.resume_cursor == "C1", what="cursor of an ignored event")
        assert cl.of(Ignored) == [Ignored("other_event", "", "C1")]
        assert cl.session.stats["other_events"] == 1
        await cl.stop()


# ----------------------------------------------------------------------------- logs, keys, sockets


async def test_disconnect_and_reconnect_are_logged_at_info_without_the_key(caplog):
    """An operator sees each drop (close code and reason, or the exception class when the
    socket just died), each reconnect attempt with its wait, and "reconnected"; never the key
    (not even with every logger, websockets' included, at DEBUG)."""
    caplog.set_level(logging.DEBUG)

    async def closes_with_a_code(c: Conn):
        await c.subscribe()
        await c.send(f_snapshot())
        await c.send(f_caught_up("C1", "SNAPSHOT"))
        await asyncio.sleep(0.2)  # live longer than reconnect_delay: the backoff starts over
        await c.ws.close(1012, "service restart")

    async def drops_without_a_close_frame(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C2"))
        await asyncio.sleep(0.2)
        c.ws.transport.abort()

    async def stays(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C3"))
        await c.idle()

    async with FakeChatto(closes_with_a_code, drops_without_a_close_frame, stays) as srv:
        cl = Client(srv, reconnect_delay=0.05).start()
        await until(lambda: cl.session.resume_cursor == "C3" and cl.session.caught_up.is_set(), what="third socket")
        await cl.stop()
    ours = [r for r in caplog.records if r.name == "hermes_plugins.chatto.wire.realtime"]
    infos = [r.getMessage() for r in ours if r.levelno == logging.INFO]
    assert "chatto realtime: connected (server 0.5.0-beta.20), live" in infos
    assert "chatto realtime: disconnected (socket closed (1012 service restart))" in infos
    assert any(m.startswith("chatto realtime: disconnected (socket closed without a close frame (") for m in infos), (
        infos
    )
    attempts = [m for m in infos if m.startswith("chatto realtime: reconnect attempt ")]
    assert attempts == ["chatto realtime: reconnect attempt 1 in 0.0 s"] * 2, infos
    assert infos.count("chatto realtime: reconnected after 1 attempt(s); live again") == 2
    assert TOKEN not in caplog.text and SECRET not in caplog.text
    assert SECRET not in repr(cl.session)


async def test_connect_failure_retries_first_immediately():
    """Nothing listens at first: the session keeps trying (first retry immediate), no crash."""
    attempts: list[str] = []

    async def refusing_connect(url, **kw):
        attempts.append(url)
        raise OSError("connection refused")

    s = RealtimeSession(
        "http://127.0.0.1:9", TOKEN, on_event=lambda e: None, connect=refusing_connect, reconnect_delay=30.0
    )
    task = asyncio.get_running_loop().create_task(s.run())
    await until(lambda: len(attempts) >= 2, what="immediate first retry")
    assert s.state == "reconnecting" and len(attempts) == 2  # the third waits ~30 s
    await s.stop()
    await asyncio.wait_for(task, 5)
    assert attempts[0] == "ws://127.0.0.1:9/api/realtime" and s.state == "stopped"


async def test_injected_connect_receives_max_size_and_no_origin():
    seen: dict = {}

    async def spy_connect(url, **kw):
        seen.update(kw)
        raise OSError("stop here")

    s = RealtimeSession(
        "https://chat.example.com", TOKEN, on_event=lambda e: None, connect=spy_connect, reconnect_delay=30.0
    )
    task = asyncio.get_running_loop().create_task(s.run())
    await until(lambda: bool(seen))
    await s.stop()
    await asyncio.wait_for(task, 5)
    assert seen["max_size"] == 64 * 1024 * 1024 and seen["origin"] is None


async def test_the_socket_has_no_library_keepalive_that_could_close_a_busy_bot():
    """Pitfall (bench P8): websockets' keepalive ping (20 s) waits for a pong that queues behind
    every frame the bot has not read yet; a bot busy for 20 s closed its own healthy socket.
    Dead sockets are found by Chatto's heartbeats instead (``stall_timeout``)."""

    async def script(c: Conn):
        await c.idle()

    async with FakeChatto(script) as srv:
        ws = await default_connect(realtime_url(srv.base_url))
        try:
            assert ws.ping_interval is None and ws.keepalive_task is None
        finally:
            await ws.close()


async def test_a_close_message_that_echoes_the_key_is_redacted():
    """Issue 24 finding 5: a realtime close whose text echoes the bearer token; the fatal
    error and the log hold no key material (redacted before the text is cut to one line)."""

    async def script(c: Conn):
        await c.subscribe()
        await c.send(f_caught_up("C1"))
        await c.send(
            f_close("SESSION_TERMINATED", reconnect=False, message=f"terminated for Bearer {TOKEN} ({SECRET})")
        )

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        err = await cl.raised()
        assert isinstance(err, ChattoRealtimeFatal)
        assert TOKEN not in str(err) and SECRET not in str(err), str(err)
        assert "Bearer ***" in str(err)
