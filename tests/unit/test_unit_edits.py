"""adapter.edits.EditReplacement: an edit of a running turn's trigger replaces the turn."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.edits import EditReplacement, content_text
from hermes_chatto.adapter.turns import TurnTracker
from hermes_chatto.wire.types import ChattoMessage

KEY = "g:R:Eroot"


@dataclass
class Event:
    message_id: str
    text: str
    source: Any
    raw_message: Any = None
    timestamp: Any = None


class Store:
    def __init__(self, transcript):
        self.transcript = transcript
        self.rewound = []

    def peek_session_id(self, key):
        return "sid"

    def load_transcript(self, sid):
        return self.transcript

    def rewind_session(self, sid, n):
        self.rewound.append((sid, n))


def _setup(transcript=()):
    host = SimpleNamespace(
        _pending_messages={},
        _active_sessions={},
        _session_tasks={},
        _session_store=Store(list(transcript)),
        _event_session_key=lambda ev: "g:" + ev.source.chat_id + ":" + ev.source.thread_id,
    )
    conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
    boundary = ErrorBoundary(logging.getLogger("t"), conn.counters)
    turns = TurnTracker(host, conn, boundary)
    log: list = []

    async def interrupt(key, chat_id, meta):
        log.append(("interrupt", key, meta))

    async def dispatch(ev):
        log.append(("dispatch", ev.text))

    async def rescue(key):
        log.append(("rescue", key, host._pending_messages[key].text))
        return True

    edits = EditReplacement(
        host,
        conn,
        turns,
        boundary,
        base_interrupt=interrupt,
        dispatch=dispatch,
        rescue=rescue,
        session_key_for=lambda src: "S",
    )
    return host, conn, turns, edits, log


def _edit(body, eid="Etrig", author="Ualice"):
    return ChattoMessage(event_id=eid, room_id="R", author_id=author, body=body, thread_root_event_id="Eroot")


def test_edit_of_a_running_trigger_replaces_the_turn():
    host, conn, turns, edits, log = _setup([{"role": "user", "content": [{"type": "text", "text": "old text"}]}])
    old = Event("Etrig", "old text", SimpleNamespace(chat_id="R", thread_id="Eroot"))
    turns.started(old)
    host._active_sessions[KEY] = object()

    async def body():
        await edits.on_edit(_edit("new text"))
        assert log == [("interrupt", KEY, {"thread_id": "Eroot"})] and edits.is_stale(KEY, old)
        assert edits.stale_send("R", "Eroot") and not edits.stale_send("R", "")
        await edits.on_edit(_edit("newer text"))  # a second edit updates the held replacement
        del host._active_sessions[KEY]
        await edits.finish(KEY, old)

    asyncio.run(body())
    assert log[-1] == ("rescue", KEY, "newer text") and not edits
    assert host._session_store.rewound == [("sid", 1)] and conn.counters["edits_rewound"] == 1
    assert conn.counters["edits_replaced"] == 1


def test_edit_of_a_queued_message_rewrites_it_and_old_edits_do_nothing():
    host, conn, turns, edits, log = _setup()
    queued = Event("Eq", "before", SimpleNamespace(chat_id="R", thread_id="Eroot"))
    host._pending_messages[KEY] = queued
    asyncio.run(edits.on_edit(_edit("after", eid="Eq")))
    assert queued.text == "after"
    asyncio.run(edits.on_edit(_edit("whatever", eid="Eold")))
    assert log == [] and not edits


def test_content_text():
    assert content_text("x") == "x"
    assert content_text([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]) == "a\nb"
    assert content_text(None) == ""
