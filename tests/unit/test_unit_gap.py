"""adapter.gap.GapRecovery: history first, then roots posted in a gap and moved threads."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.gap import GapRecovery
from hermes_chatto.adapter.rooms import RoomDirectory
from hermes_chatto.adapter.threads import ThreadIndex
from hermes_chatto.wire.types import ChattoMessage, ThreadKey, TimelinePage


def _m(eid, root="", replies=0):
    return ChattoMessage(
        event_id=eid, room_id="R", author_id="Ualice", body=eid, thread_root_event_id=root, reply_count=replies
    )


class Client:
    def __init__(self, replies):
        self.replies = replies
        self.reads = []

    async def get_thread_events(self, room_id, root_id, *, limit):
        self.reads.append((root_id, limit))
        return TimelinePage(messages=tuple(self.replies))


def _gap(client=None):
    conn = Conn(SimpleNamespace(), client=client, seen=set())
    rooms, threads = RoomDirectory(conn), ThreadIndex(conn)
    got = []

    async def ingest(msg, projection_id, **kw):
        got.append(msg.event_id)
        conn.seen.add(msg.event_id)

    gaps = []
    conn.frontier = SimpleNamespace(realtime_gap=gaps.append)
    return (
        conn,
        threads,
        got,
        gaps,
        GapRecovery(conn, rooms, threads, ingest, ErrorBoundary(logging.getLogger("t"), conn.counters)),
    )


def test_first_replace_is_history_later_unseen_roots_are_new():
    conn, threads, got, gaps, gap = _gap()
    asyncio.run(gap.timeline_replaced("R", (_m("E1"),)))
    assert got == [] and "E1" in conn.seen and gap.baselined == {"R"}
    asyncio.run(gap.timeline_replaced("R", (_m("E1"), _m("E2"))))
    assert got == ["E2"] and gaps == ["R"] and conn.counters["gap_recovered"] == 1
    gap.new_socket()
    assert gap.baselined == set()


def test_moved_thread_the_bot_is_in_is_read_once():
    replies = [_m("Er1", root="Eroot"), _m("Er2", root="Eroot")]
    client = Client(replies)
    conn, threads, got, gaps, gap = _gap(client)
    asyncio.run(gap.timeline_replaced("R", (_m("Eroot", replies=0), _m("Eother", replies=0))))
    threads.join(ThreadKey("R", "Eroot"))
    asyncio.run(gap.timeline_replaced("R", (_m("Eroot", replies=2), _m("Eother", replies=5))))
    assert client.reads == [("Eroot", 2)] and got == ["Er1", "Er2"]
    assert conn.counters["reset_thread_reads"] == 1 and threads.reply_count(ThreadKey("R", "Eroot")) == 2
