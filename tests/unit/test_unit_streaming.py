"""adapter.streaming: a streamed answer's preview, its final split, failed edits, slow mode."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from chatto_local.scripted_model import long_reply
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.rooms import RoomDirectory
from hermes_chatto.adapter.send import SendPath
from hermes_chatto.adapter.streaming import PREVIEW_MORE, StreamingReplies, preview_of
from hermes_chatto.adapter.threads import ThreadIndex
from hermes_chatto.delivery import split_body
from hermes_chatto.wire.errors import ChattoFailedPrecondition, ChattoResourceExhausted
from hermes_chatto.wire.types import MAX_BODY_BYTES

from support.fakes import CreateRecorder


class Client(CreateRecorder):
    """CreateRecorder plus edits and deletes; ``bodies`` is what a person sees."""

    def __init__(self, fail_at=None, edit_error=None):
        super().__init__(fail_at)
        self.bodies: dict[str, str] = {}
        self.edit_error = edit_error
        self.edits = 0
        self.deleted: list[str] = []

    async def create_message(self, room_id, body, **kw):
        m = await super().create_message(room_id, body, **kw)
        self.bodies[m.event_id] = body
        return m

    async def update_message(self, room_id, event_id, body):
        self.edits += 1
        if self.edit_error is not None:
            raise self.edit_error
        self.bodies[event_id] = body
        return SimpleNamespace(event_id=event_id)

    async def delete_message(self, room_id, event_id):
        self.deleted.append(event_id)
        return self.bodies.pop(event_id, None) is not None


def _unit(client):
    conn = Conn(SimpleNamespace(), client=client, bot_user_id="Ubot")
    rooms, threads = RoomDirectory(conn), ThreadIndex(conn)
    path = SendPath(conn, rooms, threads, ErrorBoundary(logging.getLogger("t"), conn.counters))
    slept: list[float] = []

    async def sleep(s):
        slept.append(s)

    return conn, threads, StreamingReplies(conn, path.deliver, sleep=sleep), slept


def _open(unit, text, final=False):
    return asyncio.run(unit.open("R", text, root="Eroot", session_key="S", turn_trigger="Et", final=final))


def test_preview_is_one_message_then_the_final_split_edits_it_and_posts_the_rest():
    client = Client()
    conn, threads, unit, _ = _unit(client)
    text = long_reply("u")
    r = _open(unit, text[:12_000])
    assert r.success and r.message_id == "E1" and not r.continuation_message_ids
    assert client.bodies["E1"].endswith(PREVIEW_MORE) and len(client.bodies["E1"].encode()) <= MAX_BODY_BYTES
    r = asyncio.run(unit.edit("E1", text[:20_000], finalize=False))
    assert r.success and r.message_id == "E1" and len(client.bodies) == 1
    r = asyncio.run(unit.edit("E1", text, finalize=True))
    chunks = split_body(text)
    assert r.success and r.message_id == f"E{len(chunks)}"
    assert list(r.continuation_message_ids) == [f"E{i}" for i in range(1, len(chunks))]
    assert [client.bodies[f"E{i + 1}"] for i in range(len(chunks))] == chunks
    assert all(f"E{i + 1}" in threads.own for i in range(len(chunks)))  # own, for the frontier
    edits = client.edits
    again = asyncio.run(unit.edit(r.message_id, text, finalize=True))  # the host's second finalize
    assert again.success and client.edits == edits and len(client.calls) == len(chunks)
    assert conn.counters["stream_final_noop"] == 1


def test_a_whole_answer_in_the_first_send_is_split_at_once():
    client = Client()
    _conn, _t, unit, _ = _unit(client)
    text = long_reply("first")
    r = _open(unit, text, final=True)
    n = len(split_body(text))
    assert r.success and r.message_id == f"E{n}" and len(r.continuation_message_ids) == n - 1
    asyncio.run(unit.edit(r.message_id, text, finalize=True))
    assert client.edits == 0 and len(client.calls) == n


def test_a_failed_edit_freezes_the_preview_and_the_final_text_arrives_once():
    client = Client(edit_error=ChattoFailedPrecondition("edit window has expired"))
    conn, _t, unit, _ = _unit(client)
    text = long_reply("frozen")
    _open(unit, "LONG-ANSWER frozen\nL001 starting")
    r = asyncio.run(unit.edit("E1", text[:3000], finalize=False))
    assert r.success and conn.counters["stream_edit_failures"] == 1
    asyncio.run(unit.edit("E1", text[:6000], finalize=False))
    assert client.edits == 1  # frozen: no more preview edits
    r = asyncio.run(unit.edit("E1", text, finalize=True))
    assert r.success and client.deleted == ["E1"]
    assert "".join(client.bodies[k] for k in sorted(client.bodies, key=lambda k: int(k[1:]))) == "".join(
        split_body(text)
    )


def test_slow_mode_during_the_final_split_waits_for_the_deadline_and_resumes():
    slow = ChattoResourceExhausted("slow mode is active until …", retry_after=2.5)
    client = Client(fail_at={2: slow, 4: slow})
    conn, _t, unit, slept = _unit(client)
    text = long_reply("slow")
    _open(unit, text[:500])
    r = asyncio.run(unit.edit("E1", text, finalize=True))
    chunks = split_body(text)
    assert r.success and slept == [2.5, 2.5] and conn.counters["stream_slow_mode_waits"] == 2
    visible = [client.bodies[k] for k in sorted(client.bodies, key=lambda k: int(k[1:]))]
    assert visible == chunks and len(client.calls) == len(chunks)  # each chunk once, in order


def test_preview_of_short_text_is_the_text():
    assert preview_of("hello") == "hello"
    long = "x" * 20_000
    p = preview_of(long)
    assert p.endswith(PREVIEW_MORE) and len(p.encode()) <= 9_000
