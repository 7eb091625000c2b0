"""adapter.resume.RestartResume: the host's startup auto-resume becomes the interrupted
trigger (a real MessageEvent with its id) or nothing, from the InflightStore's record."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from gateway.config import Platform
from gateway.platforms.base import MessageEvent, MessageType, ProcessingOutcome
from gateway.session import SessionSource

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.resume import RestartResume, is_startup_resume
from hermes_chatto.store import InflightStore


class Sessions:
    def __init__(self):
        self.cleared = []

    def clear_resume_pending(self, key):
        self.cleared.append(key)
        return True


def _source(root: str) -> SessionSource:
    return SessionSource(
        platform=Platform.TELEGRAM,
        chat_id="R1",
        chat_type="group",
        user_id="U1",
        user_name="Alice",
        thread_id=root,
    )


def _unit(tmp_path):
    host = SimpleNamespace(config=SimpleNamespace(extra={}), _session_store=Sessions())
    conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
    store = InflightStore(tmp_path / "state.sqlite3")
    return RestartResume(host, conn, ErrorBoundary(logging.getLogger("t.resume"), conn.counters), store=store), host


def _resume_event(root: str) -> MessageEvent:
    return MessageEvent(text="", message_type=MessageType.TEXT, source=_source(root), internal=True)


def test_answered_session_is_declined_and_its_flag_cleared(tmp_path):
    async def body():
        unit, host = _unit(tmp_path)
        trig = MessageEvent(text="hi", message_type=MessageType.TEXT, source=_source("E1"), message_id="E1")
        await unit.started(trig)
        await unit.finished(trig, ProcessingOutcome.SUCCESS)
        assert await unit.rewrite(_resume_event("E1")) is None
        assert len(host._session_store.cleared) == 1
        assert unit._conn.counters["restart_resume_declined"] == 1

    asyncio.run(body())


def test_interrupted_turn_is_replayed_once_as_itself(tmp_path):
    async def body():
        unit, host = _unit(tmp_path)
        trig = MessageEvent(
            text="[Alice] deploy?",
            message_type=MessageType.TEXT,
            source=_source("E2"),
            message_id="E3",
            channel_context="[Earlier in this thread]\n…",
        )
        await unit.started(trig)
        await unit.finished(trig, ProcessingOutcome.CANCELLED)  # killed / drained: still owed
        ev = await unit.rewrite(_resume_event("E2"))
        assert ev is not None and not ev.internal
        assert (ev.message_id, ev.text, ev.channel_context) == ("E3", "[Alice] deploy?", "[Earlier in this thread]\n…")
        assert ev.source.thread_id == "E2"
        assert host._session_store.cleared == []
        assert await unit.rewrite(_resume_event("E2")) is None  # once

    asyncio.run(body())


def test_other_events_pass_through(tmp_path):
    async def body():
        unit, _ = _unit(tmp_path)
        real = MessageEvent(text="hello", message_type=MessageType.TEXT, source=_source("E4"), message_id="E4")
        bg = MessageEvent(text="process done", message_type=MessageType.TEXT, source=_source("E4"), internal=True)
        assert not is_startup_resume(real) and not is_startup_resume(bg)
        assert await unit.rewrite(real) is real
        assert await unit.rewrite(bg) is bg

    asyncio.run(body())


class _Turns:
    def __init__(self):
        self.triggers = {}

    def remember_trigger(self, event_id, key):
        self.triggers[event_id] = key

    def session_of(self, trigger_id):
        return self.triggers.get(trigger_id)

    async def session_id(self, key):
        return "S1"


class _Recovery:
    def __init__(self):
        self.reruns = []

    async def rerun_turn(self, *args):
        self.reruns.append(args)


def test_a_rerun_is_recorded_in_the_frontier_and_drops_a_block_the_transcript_holds(tmp_path):
    """Issue 24, finding 7: the rerun is mapped to its session and staged in the frontier (its
    reply then commits the row); its recorded block is not sent again when the host's transcript
    already ends with the interrupted attempt, and is when it does not."""

    async def body(transcript, expect_block):
        unit, host = _unit(tmp_path / str(expect_block))
        host.turns = _Turns()
        host.session_key_for = lambda source: "agent:main:chatto:group:R1:E2"
        host._session_store.load_transcript = lambda sid: transcript
        recovery = _Recovery()
        unit._conn.frontier = SimpleNamespace(recovery=recovery, ledger=lambda key: None)
        trig = MessageEvent(
            text="[Alice] deploy?",
            message_type=MessageType.TEXT,
            source=_source("E2"),
            message_id="E3",
            channel_context="[Earlier in this thread]\n> Bob: x",
        )
        await unit.started(trig)
        ev = await unit.rewrite(_resume_event("E2"))
        assert ev is not None and ev.message_id == "E3"
        assert ev.channel_context == ("[Earlier in this thread]\n> Bob: x" if expect_block else None)
        assert host.turns.triggers == {"E3": "agent:main:chatto:group:R1:E2"}
        ((key, sid, thread, mid, text, block, delivered),) = recovery.reruns
        assert (key, sid, tuple(thread), mid, text, block) == (
            "agent:main:chatto:group:R1:E2",
            "S1",
            ("R1", "E2"),
            "E3",
            "[Alice] deploy?",
            ev.channel_context,
        )

    held = [{"role": "user", "content": "[Earlier in this thread]\n> Bob: x\n\n[New message]\n[Alice] deploy?"}]
    asyncio.run(body(held, False))
    asyncio.run(body([{"role": "user", "content": "[Alice] an older question"}], True))
