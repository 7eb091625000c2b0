"""RealtimeSession over REAL loopback WebSockets against a small scripted protocol-2 server
(``support.realtime.FakeChatto``).

Each test scripts what the server does per connection (the full local Chatto server is a
separate test kit). No fixed sleeps: tests wait on conditions with timeouts; timeouts and
delays are shrunk through constructor parameters.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from hermes_chatto.wire.errors import ChattoCredentialError, ChattoProtocolError, ChattoRealtimeFatal
from hermes_chatto.wire.events import (
    CaughtUp,
    CursorAdvanced,
    Ignored,
    NewMessage,
    ProjectionReset,
    RoomUpdated,
)
from hermes_chatto.wire.frames import Classifier, FrameDecodeError, decode_server_frame, encode_subscribe
from hermes_chatto.wire.proto import chatto_pb2 as pb
from hermes_chatto.wire.realtime import RealtimeSession, realtime_url

from support.realtime import (
    BOT,
    ROOM,
    TOKEN,
    Conn,
    FakeChatto,
    f_caught_up,
    f_close,
    f_error,
    f_heartbeat,
    f_hello,
    f_message,
    f_reset,
    f_room_upsert,
    f_unknown_op,
    server_frame,
)
from support.waits import until

pytestmark = pytest.mark.timeout(60)


class Client:
    """A RealtimeSession plus recorded events/cursors/states."""

    def __init__(self, server: FakeChatto, **kw):
        self.events: list = []
        self.cursors: list[str] = []
        self.states: list[str] = []
        self.gate: Callable[[object], Awaitable[None]] | None = None
        kw.setdefault("stall_timeout", 5.0)
        kw.setdefault("reconnect_delay", 30.0)  # so that only the immediate first retry / retry_after can pass
        kw.setdefault("handshake_timeout", 3.0)
        self.session = RealtimeSession(
            server.base_url,
            kw.pop("token", TOKEN),
            on_event=self._on_event,
            on_cursor=self.cursors.append,
            on_state=self.states.append,
            **kw,
        )
        self.task: asyncio.Task | None = None

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
    assert s._delay(1, 0.0) == 0.0  # projection_reset_required: retry_after_ms 0
    for _ in range(50):
        assert 4.0 <= s._delay(2, None) <= 6.0
        assert 8.0 <= s._delay(3, None) <= 12.0
        assert s._delay(20, None) <= 72.0
        assert 2.5 <= s._delay(1, 2.5) <= 2.75  # server retry_after_ms wins, small jitter on top
    assert TOKEN not in repr(s)


def test_encode_subscribe_refuses_what_the_server_would_reject():
    with pytest.raises(ValueError):
        encode_subscribe(None, [f"R{i}" for i in range(65)])
    with pytest.raises(ValueError):
        encode_subscribe(None, [""])
    with pytest.raises(ValueError):
        encode_subscribe(None, ["R" * 257])


def test_decode_rejects_garbage_and_text():
    good = f_message("Eabc", "hello", "C1")
    with pytest.raises(FrameDecodeError):
        decode_server_frame(good[: len(good) // 2])
    with pytest.raises(FrameDecodeError):
        decode_server_frame("text")
    with pytest.raises(FrameDecodeError):
        decode_server_frame(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")


def test_classifier_unknown_operation_counted_and_known_memory_bounded():
    clf = Classifier(bot_user_id=BOT, known_limit=3)
    evs = clf.classify(decode_server_frame(f_unknown_op("C9")))
    assert evs == [
        Ignored("unknown_operation", detail="Eunknown"),
        CursorAdvanced(cursor="C9", projection_id="Eunknown"),
    ]
    assert clf.counters["unknown_operations"] == 1
    for i in range(10):
        clf.classify(decode_server_frame(f_message(f"E{i:03d}", "x", f"C{i}")))
    assert clf.known_count == 3
    assert clf.is_known("E009") and not clf.is_known("E000")
    own = clf.classify(decode_server_frame(f_message("Eown", "mine", "C10", author=BOT)))
    assert [e for e in own if isinstance(e, NewMessage)][0].is_self


# ----------------------------------------------------------------------------- handshake & catch-up


async def test_handshake_catch_up_live_and_cursor_after_processing():
    async def script(c: Conn):
        hello, sub = await c.handshake()
        c.hello, c.sub = hello, sub
        await c.send(f_reset())
        await c.send(f_caught_up("CU0"))
        await c.send(f_heartbeat())
        await c.send(f_message("Em1", "hi @bot", "C1"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv, retained_rooms=lambda: [ROOM, "", "R" * 300, ROOM, "Rdm000000000001"]).start()
        await until(lambda: cl.of(NewMessage), what="live message")
        await until(lambda: cl.session.resume_cursor == "C1")
        c = srv.conns[0]
        # protocol facts on the wire
        assert c.path == "/api/realtime"
        assert "Origin" not in c.headers
        assert c.hello.hello.protocol_version == 2 and c.hello.hello.bearer_token == TOKEN
        assert not c.sub.subscribe_events.HasField("resume_cursor")
        assert list(c.sub.subscribe_events.retained_room_ids) == [ROOM, "Rdm000000000001"]
        # events in order, cursor stored after the frame's events
        assert isinstance(cl.events[0], ProjectionReset) and cl.events[1] == CaughtUp(cursor="CU0")
        assert cl.cursors == ["CU0", "C1"]
        assert cl.session.caught_up.is_set() and cl.session.connected
        assert cl.states[:4] == ["connecting", "handshaking", "catching_up", "live"]
        assert cl.session.stats["heartbeats"] == 1 and cl.session.stats["connects"] == 1
        assert cl.session.server_version == "0.5.0-test"
        assert sorted(cl.session.retained_room_ids) == sorted([ROOM, "Rdm000000000001"])
        await cl.stop()
        assert cl.states[-1] == "stopped"
    assert not srv.errors


async def test_resume_with_cursor_and_reconnect_resends_latest_cursor():
    async def first(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.send(f_message("Em1", "replayed", "C1"))
        await c.send(f_caught_up("C2"))
        await c.send(f_message("Em2", "live", "C3"))
        await c.send(f_close("stream_closed", reconnect=True, retry_after_ms=20))

    async def second(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.send(f_caught_up("C4"))
        await c.idle()

    async with FakeChatto(first, second) as srv:
        cl = Client(srv, resume_cursor="C0").start()
        await until(lambda: len(srv.conns) == 2 and hasattr(srv.conns[1], "sub"), what="reconnect")
        assert srv.conns[0].sub.subscribe_events.resume_cursor == "C0"
        assert srv.conns[1].sub.subscribe_events.resume_cursor == "C3"
        await until(lambda: cl.session.resume_cursor == "C4")
        assert cl.cursors == ["C1", "C2", "C3", "C4"]
        assert cl.session.stats["reconnects"] == 1 and cl.session.stats["closes"] == 1
        await cl.stop()


async def test_disconnect_and_reconnect_are_logged_at_info_without_the_key(caplog):
    """An operator sees each drop (close code and reason, or the exception class when the
    socket just died), each reconnect attempt with its wait, and "reconnected"; never the key."""
    caplog.set_level(logging.INFO, logger="hermes_plugins.chatto.wire.realtime")

    async def closes_with_a_code(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await asyncio.sleep(0.2)  # live longer than reconnect_delay: the backoff starts over
        await c.ws.close(1012, "service restart")

    async def drops_without_a_close_frame(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C2"))
        await asyncio.sleep(0.2)
        c.ws.transport.abort()

    async def stays(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C3"))
        await c.idle()

    async with FakeChatto(closes_with_a_code, drops_without_a_close_frame, stays) as srv:
        cl = Client(srv, reconnect_delay=0.05).start()
        await until(lambda: cl.session.resume_cursor == "C3" and cl.session.caught_up.is_set(), what="third socket")
        await cl.stop()
    ours = [r for r in caplog.records if r.name == "hermes_plugins.chatto.wire.realtime"]
    infos = [r.getMessage() for r in ours if r.levelno == logging.INFO]
    assert "chatto realtime: connected (server 0.5.0-test), live" in infos
    assert "chatto realtime: disconnected (socket closed (1012 service restart))" in infos
    assert any(m.startswith("chatto realtime: disconnected (socket closed without a close frame (") for m in infos), (
        infos
    )
    attempts = [m for m in infos if m.startswith("chatto realtime: reconnect attempt ")]
    assert attempts == ["chatto realtime: reconnect attempt 1 in 0.0 s"] * 2, infos
    assert infos.count("chatto realtime: reconnected after 1 attempt(s); live again") == 2
    assert TOKEN not in caplog.text and "never-log-this-secret" not in caplog.text


async def test_stall_after_caught_up_reconnects_immediately():
    async def silent(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.idle()  # never sends another frame

    async with FakeChatto(silent) as srv:
        cl = Client(srv, stall_timeout=0.3, reconnect_delay=30.0).start()
        await until(lambda: len(srv.conns) >= 2, timeout=10, what="reconnect after stall")
        assert cl.session.stats["stalls"] >= 1
        assert "reconnecting" in cl.states
        await cl.stop()


async def test_heartbeats_keep_a_live_socket_alive():
    async def beating(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        for _ in range(8):
            await c.send(f_heartbeat())
            await asyncio.sleep(0.1)
        await c.send(f_message("Em1", "still here", "C2"))
        await c.idle()

    async with FakeChatto(beating) as srv:
        cl = Client(srv, stall_timeout=0.5).start()
        await until(lambda: cl.of(NewMessage), what="message after heartbeats")
        assert len(srv.conns) == 1 and cl.session.stats["stalls"] == 0
        await cl.stop()


# ----------------------------------------------------------------------------- errors and closes

RECONNECT_CLOSES = [
    ("catch_up_in_progress", 20),
    ("catch_up_rate_limited", 20),
    ("catch_up_server_busy", 20),
    ("catch_up_timeout", 20),
    ("stream_closed", 20),
    ("projection_mapping_failed", 0),
    ("room_hydration_failed", 0),
]


@pytest.mark.parametrize("code,retry_ms", RECONNECT_CLOSES)
async def test_close_with_reconnect_keeps_cursor_and_reconnects(code, retry_ms):
    async def closing(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.send(f_close(code, reconnect=True, retry_after_ms=retry_ms))

    async def calm(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.idle()

    async with FakeChatto(closing, calm) as srv:
        cl = Client(srv).start()
        await until(lambda: len(srv.conns) == 2 and hasattr(srv.conns[1], "sub"), what=f"reconnect after {code}")
        assert srv.conns[1].sub.subscribe_events.resume_cursor == "C1"
        await cl.stop()


async def test_projection_reset_required_reconnects_at_once_without_the_stale_cursor():
    """Any RBAC fact closes every socket with ``projection_reset_required``; a resume across
    it is a reset anyway (Chatto's core/realtime_replay.go) and a stale cursor would draw
    from the metered catch-up bucket of 3 per 20 s (realtime_catchup.go): reconnect
    cursorless (the general bucket, 20 at 1/s)."""

    async def closing(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.send(f_close("projection_reset_required", reconnect=True))

    async def calm(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.idle()

    async with FakeChatto(closing, calm) as srv:
        cl = Client(srv).start()
        await until(lambda: len(srv.conns) == 2 and hasattr(srv.conns[1], "sub"), what="reconnect")
        assert not srv.conns[1].sub.subscribe_events.HasField("resume_cursor")
        assert cl.session.stats["cursor_drops"] == 1
        await cl.stop()


RECONNECT_ERRORS = ["temporarily_unavailable", "subscribe_failed", "replay_unavailable", "some_future_fatal_code"]


@pytest.mark.parametrize("code", RECONNECT_ERRORS)
async def test_fatal_retryable_error_reconnects(code):
    async def failing(c: Conn):
        await c.handshake()
        await c.send(f_error(code, fatal=True, retry_after_ms=10))
        await c.ws.close(1011)

    async def calm(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.idle()

    async with FakeChatto(failing, calm) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.caught_up.is_set(), what=f"recovery after {code}")
        assert len(srv.conns) == 2 and cl.session.stats["errors"] == 1
        await cl.stop()


@pytest.mark.parametrize("code", ["invalid_cursor", "cursor_expired", "replay_limit_exceeded"])
async def test_cursor_errors_drop_the_cursor_and_reconnect(code):
    async def failing(c: Conn):
        await c.handshake()
        await c.send(f_error(code, fatal=True))
        await c.ws.close(1008)

    async def calm(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.send(f_caught_up("Cfresh"))
        await c.idle()

    async with FakeChatto(failing, calm) as srv:
        cl = Client(srv, resume_cursor="Cstale").start()
        await until(lambda: cl.session.resume_cursor == "Cfresh", what="fresh cursor")
        assert not srv.conns[1].sub.subscribe_events.HasField("resume_cursor")
        assert cl.session.stats["cursor_drops"] == 1
        await cl.stop()


async def test_abrupt_socket_drop_reconnects():
    async def dropping(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        c.ws.transport.abort()

    async def calm(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C2"))
        await c.idle()

    async with FakeChatto(dropping, calm) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.session.resume_cursor == "C2", what="recovery after drop")
        await cl.stop()


@pytest.mark.parametrize("mode", ["error_at_handshake", "close_on_live_socket"])
async def test_revoked_key_raises_credential_error_without_reconnect_storm(mode, caplog):
    caplog.set_level(logging.DEBUG)

    async def revoked(c: Conn):
        if mode == "error_at_handshake":
            await c.recv()
            await c.send(f_error("authentication_required", fatal=True))
            await c.ws.close(1008)
        else:
            await c.handshake()
            await c.send(f_caught_up("C1"))
            await c.send(f_close("authentication_required", reconnect=False))
            await c.ws.close(1008)

    async with FakeChatto(revoked) as srv:
        cl = Client(srv, reconnect_delay=0.01).start()
        exc = await cl.raised()
        assert isinstance(exc, ChattoCredentialError)
        assert cl.session.stats["connects"] == 1 and len(srv.conns) == 1
        assert cl.states[-1] == "failed"
        assert TOKEN not in str(exc) and "never-log-this-secret" not in caplog.text
        assert TOKEN not in repr(cl.session)


async def test_protocol_1_server_gets_one_clear_error():
    async def v1(c: Conn):
        hello = await c.recv()
        assert hello.hello.protocol_version == 2
        await c.send(f_error("unsupported_protocol", fatal=True))
        await c.ws.close(1002)

    async with FakeChatto(v1) as srv:
        cl = Client(srv, reconnect_delay=0.01).start()
        exc = await cl.raised()
        assert isinstance(exc, ChattoProtocolError)
        text = str(exc)
        assert "protocol 1" in text and "0.4" in text and "0.5.0" in text
        assert cl.session.stats["connects"] == 1


async def test_server_hello_with_protocol_1_is_a_protocol_error():
    async def v1hello(c: Conn):
        await c.recv()
        await c.send(f_hello(version=1))
        await c.idle()

    async with FakeChatto(v1hello) as srv:
        cl = Client(srv).start()
        exc = await cl.raised()
        assert isinstance(exc, ChattoProtocolError) and "0.5.0" in str(exc)


@pytest.mark.parametrize(
    "frame",
    [
        f_error("bad_subscribe", fatal=True),
        f_error("bad_hello", fatal=True),
        f_close("some_unknown_final_close", reconnect=False),
    ],
)
async def test_client_bug_and_final_closes_are_fatal(frame):
    async def script(c: Conn):
        await c.handshake()
        await c.send(frame)
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv, reconnect_delay=0.01).start()
        exc = await cl.raised()
        assert isinstance(exc, ChattoRealtimeFatal)
        assert len(srv.conns) == 1


async def test_session_terminated_event_reconnects():
    async def terminated(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        env = pb.RealtimeEventEnvelope(id="Eterm")
        env.session_terminated.reason = "revoked"
        await c.send(server_frame(event=env))
        await c.idle()

    async def calm(c: Conn):
        await c.handshake()
        await c.idle()

    async with FakeChatto(terminated, calm) as srv:
        cl = Client(srv).start()
        await until(lambda: len(srv.conns) == 2, what="reconnect after session_terminated")
        await cl.stop()


# ----------------------------------------------------------------------------- malformed frames


async def test_mutated_truncated_and_unknown_frames_are_skipped_and_stream_continues():
    good = f_message("Em1", "after the garbage", "C9")

    async def script(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.send(good[:-7])  # truncated
        await c.send(b"\x0a\xff\xff\xff\xff\x0f")  # length beyond the buffer
        mutated = bytearray(good)
        mutated[len(mutated) // 2] = 0xFF  # a flipped byte in the middle
        await c.send(bytes(mutated))
        await c.send("a text frame")  # servers never send text
        await c.send(b"\xd2\x02\x00")  # frame kind this subset does not know (tag 42)
        await c.send(f_unknown_op("C5"))  # unknown operation tag
        await c.send(good)
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.of(NewMessage), what="message after garbage")
        st = cl.session.stats
        assert st["decode_errors"] >= 3 and st["unknown_frames"] >= 1
        assert st["unknown_operations"] == 1
        assert len(srv.conns) == 1, "garbage must not cost the connection"
        await until(lambda: cl.session.resume_cursor == "C9")
        assert "C5" in cl.cursors  # skipping an unknown op is the pragmatic choice (spec §3.5)
        await cl.stop()


# ----------------------------------------------------------------------------- cursor discipline


async def test_cursor_only_stored_after_on_event_returned():
    release = asyncio.Event()
    entered = asyncio.Event()

    async def script(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.send(f_message("Eslow", "slow handler", "C2"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv)

        async def gate(ev):
            if isinstance(ev, NewMessage):
                entered.set()
                await release.wait()

        cl.gate = gate
        cl.start()
        await asyncio.wait_for(entered.wait(), 5)
        assert cl.session.resume_cursor == "C1" and cl.cursors == ["C1"]
        release.set()
        await until(lambda: cl.session.resume_cursor == "C2")
        assert cl.cursors == ["C1", "C2"]
        await cl.stop()


async def test_failing_handler_does_not_advance_that_frames_cursor():
    async def script(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.send(f_message("Eboom", "handler raises", "C2"))
        await c.send(f_message("Eok", "handler ok", "C3"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv)

        async def gate(ev):
            if isinstance(ev, NewMessage) and ev.message.event_id == "Eboom":
                raise RuntimeError("handler bug")

        cl.gate = gate
        cl.start()
        await until(lambda: cl.session.resume_cursor == "C3")
        assert cl.cursors == ["C1", "C3"]
        assert cl.session.stats["handler_errors"] == 1 and len(srv.conns) == 1
        await cl.stop()


# ----------------------------------------------------------------------------- hydrate, ping, size


async def test_hydrate_room_retries_after_rate_limit():
    async def script(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        first = await c.recv()
        assert first.hydrate_room.room_id == "Rops"
        await c.send(f_error("room_hydration_rate_limited", fatal=False, retry_after_ms=30, room_id="Rops"))
        second = await c.recv()
        assert second.hydrate_room.room_id == "Rops"
        await c.send(f_room_upsert("Rops"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await asyncio.wait_for(cl.session.caught_up.wait(), 5)
        assert await cl.session.hydrate_room("Rops") is True
        await until(lambda: any(isinstance(e, RoomUpdated) and e.room.id == "Rops" for e in cl.events))
        assert cl.session.stats["hydrate_retries"] == 1 and cl.session.stats["hydrate_sent"] == 2
        assert len(srv.conns) == 1 and not srv.errors
        assert await cl.session.hydrate_room("Rops") is True  # already retained: no-op
        assert cl.session.stats["hydrate_sent"] == 2
        await cl.stop()


async def test_retained_rooms_capped_at_64_and_hydrate_refused_beyond():
    rooms = [f"R{i:014d}" for i in range(70)]

    async def script(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.send(f_caught_up("C1"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv, retained_rooms=lambda: rooms).start()
        await asyncio.wait_for(cl.session.caught_up.wait(), 5)
        assert list(srv.conns[0].sub.subscribe_events.retained_room_ids) == rooms[:64]
        assert await cl.session.hydrate_room("Rextra") is False
        assert cl.session.stats["hydrate_refused"] == 1 and cl.session.stats["hydrate_sent"] == 0
        await cl.stop()


async def test_ping_pong_round_trip():
    async def script(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        ping = await c.recv()
        await c.send(server_frame(pong=pb.RealtimePong(nonce=ping.ping.nonce)))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await asyncio.wait_for(cl.session.caught_up.wait(), 5)
        rtt = await cl.session.ping(timeout=5)
        assert rtt >= 0 and cl.session.stats["pongs"] == 1
        await cl.stop()


async def test_frames_larger_than_websockets_default_are_accepted():
    big = "x" * (3 * 1024 * 1024)  # 3 MiB > websockets' 1 MiB default max_size

    async def script(c: Conn):
        await c.handshake()
        await c.send(f_caught_up("C1"))
        await c.send(f_message("Ebig", big, "C2"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv).start()
        await until(lambda: cl.of(NewMessage), what="big frame")
        assert len(cl.of(NewMessage)[0].message.body) == len(big)
        assert len(srv.conns) == 1
        await cl.stop()


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
    assert attempts[0] == "ws://127.0.0.1:9/api/realtime"


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


async def test_rooms_hydrated_while_offline_are_subscribed_on_connect():
    async def script(c: Conn):
        _, sub = await c.handshake()
        c.sub = sub
        await c.send(f_caught_up("C1"))
        await c.idle()

    async with FakeChatto(script) as srv:
        cl = Client(srv, retained_rooms=lambda: [ROOM])
        assert await cl.session.hydrate_room("Rlater") is True  # not connected yet: remembered
        cl.start()
        await asyncio.wait_for(cl.session.caught_up.wait(), 5)
        assert list(srv.conns[0].sub.subscribe_events.retained_room_ids) == [ROOM, "Rlater"]
        assert cl.session.stats["hydrate_sent"] == 0
        cl.session.forget_room("Rlater")
        await cl.stop()


def test_hydration_pacer_follows_the_servers_bucket():
    """Chatto's realtime_catchup.go: 20 hydrations at once, then one per second; a refusal's
    retry_after pauses the pacer, rate_limited also empties it."""
    from hermes_chatto.wire.realtime import HydrationPacer

    now = [100.0]
    p = HydrationPacer(lambda: now[0], burst=20, interval=1.0)
    for _ in range(20):
        assert p.wait() == 0.0
        p.take()
    assert p.wait() == pytest.approx(1.0)
    now[0] += 0.5
    assert p.wait() == pytest.approx(0.5)
    now[0] += 0.5
    assert p.wait() == 0.0
    p.pause(3.0, empty=True)
    assert p.wait() == pytest.approx(3.0)
    now[0] += 3.0
    assert p.wait() == 0.0  # refilled to 3 tokens meanwhile (the bucket was emptied at the pause)
    now[0] += 100.0
    for _ in range(20):
        p.take()
    assert p.wait() > 0  # capped at the burst


async def test_the_socket_has_no_library_keepalive_that_could_close_a_busy_bot():
    """Pitfall (bench P8): websockets' keepalive ping (20 s) waits for a pong that queues behind
    every frame the bot has not read yet; a bot busy for 20 s closed its own healthy socket
    with 1011 ("socket closed without a close frame") and resumed into a gap. Dead sockets
    are found by Chatto's heartbeats instead (``stall_timeout``)."""
    from hermes_chatto.wire.realtime import default_connect

    async def script(c: Conn):
        await c.idle()

    async with FakeChatto(script) as srv:
        ws = await default_connect(realtime_url(srv.base_url))
        try:
            assert ws.ping_interval is None and ws.keepalive_task is None
        finally:
            await ws.close()
