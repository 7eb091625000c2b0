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
