"""adapter.turns.TurnTracker: host turn hooks → frontier calls, and send ownership."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.turns import TurnTracker


class Host:
    """The bits of a BasePlatformAdapter the tracker reads (through compat)."""

    def __init__(self):
        self._active_sessions = {}
        self._pending_messages = {}
        self._session_tasks = {}

    def _event_session_key(self, ev):
        return "g:" + ev.source.chat_id + ":" + (ev.source.thread_id or "")


class Frontier:
    def __init__(self):
        self.calls = []

    def turn_started(self, key, trigger, text, context=None):
        self.calls.append(("started", key, trigger))

    def turn_finished(self, key, trigger, ok):
        self.calls.append(("finished", key, trigger, ok))

    def turn_handled(self, key, trigger):
        self.calls.append(("handled", key, trigger))


def _event(mid, chat="R", thread="Eroot", text="hi"):
    return SimpleNamespace(
        message_id=mid, text=text, channel_context=None, source=SimpleNamespace(chat_id=chat, thread_id=thread)
    )


def _tracker():
    host, conn = Host(), Conn(SimpleNamespace())
    conn.frontier = Frontier()
    return host, conn, TurnTracker(host, conn, ErrorBoundary(logging.getLogger("t"), conn.counters))


def test_start_finish_and_untracked_triggers():
    host, conn, t = _tracker()
    ev = _event("E1")
    t.started(ev)  # not a thread trigger: nothing told
    assert conn.frontier.calls == [] and t.processing == {"g:R:Eroot": ev}
    t.remember_trigger("E1", "S")
    t.frontier_turn(ev, None)
    key, drained = t.released(ev)
    t.finished(ev, drained, True)
    assert key == "g:R:Eroot" and drained is None and t.processing == {}
    assert conn.frontier.calls == [("started", "S", "E1"), ("finished", "S", "E1", True)]


def test_drained_follow_up_and_send_owner():
    host, conn, t = _tracker()
    outer, follow = _event("E1"), _event("E2")
    t.remember_trigger("E1", "S")
    t.remember_trigger("E2", "S")
    t.started(outer)
    host._active_sessions["g:R:Eroot"] = object()
    t.pending_taken("g:R:Eroot", follow)
    assert t.drained == {"g:R:Eroot": follow}
    assert conn.frontier.calls[-2:] == [("finished", "S", "E1", True), ("started", "S", "E2")]
    # the reply anchored to the outer trigger is the follow-up's
    assert t.send_owner("R", "Eroot", "E1") == ("S", "E2")
    assert t.send_owner("R", "Eroot", None) == ("S", None)  # the one session running there
    assert t.send_owner("R", "Eother", None) == (None, None)
    assert t.inflight_key("E1") == "g:R:Eroot" and t.inflight_key("E2") is None
    key, drained = t.released(outer)
    t.finished(outer, drained, False)
    assert conn.frontier.calls[-2:] == [("finished", "S", "E1", False), ("finished", "S", "E2", False)]


def test_interrupt_marks_the_discard_that_follows():
    host, conn, t = _tracker()
    t.remember_trigger("E2", "S")

    async def body():
        t.interrupted("g:R:Eroot")
        t.pending_taken("g:R:Eroot", _event("E2"))  # the host discarding the queue
        assert conn.frontier.calls == [("finished", "S", "E2", False)]
        t.interrupted("g:R:Eroot")
        await asyncio.sleep(0)
        assert t.discarding == set()  # cleared on the next loop iteration

    asyncio.run(body())


def test_frontier_failure_is_counted_not_raised_and_no_frontier_is_fine():
    host, conn, t = _tracker()
    t.remember_trigger("E1", "S")

    class Broken:
        def turn_started(self, key, trigger, text):  # the stale _NullFrontier signature
            pass

    conn.frontier = Broken()
    t.frontier_turn(_event("E1"), None)
    assert conn.counters["hook_errors.frontier.turn_hook"] == 1
    conn.frontier = None
    t.frontier_turn(_event("E1"), None)
    t.command_handled("E1")
    assert asyncio.run(t.start_turn("S", None, True)) == (None, False)


class _StartFrontier:
    enabled = True

    def __init__(self):
        self.sids = []

    async def start_turn(self, key, sid, trigger, streamed):
        from hermes_chatto.frontier.service import TurnStart

        self.sids.append(sid)
        return TurnStart(None)


def test_a_quiet_turn_looks_its_session_up_without_a_thread_hop(tmp_path, monkeypatch):
    """Issue 27: the session lookup of a thread turn ran in ``asyncio.to_thread`` every time
    (~100 µs of CPU per message). Now only the first turn of a session reads off the loop;
    the next ones read the store's memory. With thread context off nothing is looked up."""
    from gateway.config import GatewayConfig, Platform
    from gateway.session import SessionSource, SessionStore

    from hermes_chatto.adapter import turns as T
    from hermes_chatto.wire.types import ChattoMessage

    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    store = SessionStore(tmp_path / "sessions", GatewayConfig())
    src = SessionSource(platform=Platform.TELEGRAM, chat_id="R1", chat_type="group", user_id="U1", thread_id="T1")
    entry = store.get_or_create_session(src)
    host = Host()
    host._session_store = store
    conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
    conn.frontier = _StartFrontier()
    hops = []
    real = asyncio.to_thread

    async def counted(fn, *a, **kw):
        hops.append(fn.__name__)
        return await real(fn, *a, **kw)

    monkeypatch.setattr(T.asyncio, "to_thread", counted)
    tracker = TurnTracker(host, conn, ErrorBoundary(logging.getLogger("t"), conn.counters))
    trigger = ChattoMessage(event_id="E1", room_id="R1", author_id="U1", body="hi", thread_root_event_id="T1")

    async def body():
        for _ in range(3):
            await tracker.start_turn(entry.session_key, trigger, True)

    asyncio.run(body())
    assert conn.frontier.sids == [entry.session_id] * 3
    assert hops == ["session_lookup"]  # the first turn only: the lineage is then known
    assert conn.counters["session_lookups_inline"] == 2
    conn.frontier.enabled = False  # thread context off
    asyncio.run(body())
    assert hops == ["session_lookup"] and len(conn.frontier.sids) == 3
