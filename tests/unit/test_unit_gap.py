"""adapter.gap.GapRecovery: downtime beyond the resume window, one turn per conversation."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter import gap as G
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.gap import GapRecovery
from hermes_chatto.adapter.rooms import RoomDirectory
from hermes_chatto.ingress import IngressContext, decide
from hermes_chatto.wire.notices import MessageNotice
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom, TimelinePage

BOT = "Ubot"
NOW = 1_800_000_000.0


def _m(eid, room="Rc", root="", t=0.0, body=None, author="Ualice"):
    return ChattoMessage(
        event_id=eid,
        room_id=room,
        author_id=author,
        body=body if body is not None else f"@helper {eid}",
        thread_root_event_id=root,
        created_at=NOW - 3600 + t,
    )


def _n(m, kind="direct_mention_received"):
    return MessageNotice(kind, m.room_id, m.event_id, m.thread_root_event_id, m.author_id, True, m.created_at)


class Client:
    def __init__(self, messages, notices, room_pages=None):
        self.messages = {m.event_id: m for m in messages}
        self.notices = notices  # newest first, like the server
        self.room_pages = room_pages or {}
        self.calls = []

    async def list_notifications(self, *, offset=0, limit=100):
        self.calls.append(("list", offset))
        page = self.notices[offset : offset + limit]
        return tuple(page), offset + limit < len(self.notices)

    async def get_message(self, room_id, event_id):
        self.calls.append(("get", event_id))
        return self.messages[event_id]

    async def get_room_events(self, room_id, *, limit):
        self.calls.append(("room", room_id))
        return TimelinePage(messages=tuple(self.room_pages.get(room_id, ())))


def _gap(client, rooms=None, seen=()):
    settings = SimpleNamespace(free_response_rooms=[], require_mention=True, recovery_horizon_s=7 * 24 * 3600)
    conn = Conn(settings, client=client, seen=set(seen), bot_user_id=BOT, bot_login="helper")
    directory = RoomDirectory(conn)
    directory.reset(rooms or [ChattoRoom(id="Rc", kind="channel", name="c", is_member=True)])
    got = []

    async def ingest(msg, *, thin=False, context=None):
        got.append((msg.event_id, context))
        conn.seen.add(msg.event_id)

    async def dispatches(msg):
        room = directory.get(msg.room_id)
        ctx = IngressContext(bot_user_id=BOT, bot_login="helper", room_kind=room.kind if room else "")
        return decide(msg, ctx, None, mark_seen=False).dispatch

    gaps = []
    conn.frontier = SimpleNamespace(realtime_gap=gaps.append)
    g = GapRecovery(
        conn,
        directory,
        ErrorBoundary(logging.getLogger("t"), conn.counters),
        ingest=ingest,
        dispatches=dispatches,
        render=lambda msgs: "EARLIER:" + ",".join(m.event_id for m in msgs),
        clock=lambda: NOW,
    )
    return conn, g, got, gaps


def test_a_resumed_stream_recovers_nothing_and_reads_nothing():
    client = Client([], [])
    conn, g, got, gaps = _gap(client)
    g.caught_up("resumed", NOW - 10)
    assert g.task is None and gaps == [] and client.calls == []


def test_a_bot_that_never_ran_here_reads_nothing_but_the_frontier_hears_of_the_gap():
    client = Client([], [])
    conn, g, got, gaps = _gap(client)
    g.caught_up("snapshot", None)
    assert g.task is None and gaps == [None] and client.calls == []


def test_one_turn_per_conversation_the_newest_addressed_message_earlier_ones_marked_seen():
    """Three mentions in one thread while the bot was down: one turn (the newest); the
    others are marked seen (the frontier's block carries them). A DM with two messages: one
    turn with the first in its context. A message handled before the crash (seen) and one
    older than the gap are not answered again."""
    t1, t2, t3 = _m("Et1", root="Eroot", t=10), _m("Et2", root="Eroot", t=20), _m("Et3", root="Eroot", t=30)
    d1, d2 = _m("Ed1", room="Rdm", t=15, body="hello"), _m("Ed2", room="Rdm", t=25, body="are you there")
    handled = _m("Eold", t=5)
    before = _m("Ebefore", t=-7200)
    client = Client(
        [t1, t2, t3, d1, d2, handled, before],
        [_n(t3), _n(d2, "direct_message_received"), _n(t2), _n(d1, "direct_message_received"), _n(t1)]
        + [_n(handled), _n(before)],
    )
    rooms = [
        ChattoRoom(id="Rc", kind="channel", name="c", is_member=True),
        ChattoRoom(id="Rdm", kind="dm", is_member=True),
    ]
    conn, g, got, gaps = _gap(client, rooms, seen={"Eold"})
    turns = asyncio.run(g.recover(NOW - 3600))
    assert turns == 2
    assert got == [("Ed2", "EARLIER:Ed1"), ("Et3", None)]
    assert {"Et1", "Et2", "Ed1"} <= conn.seen
    assert ("get", "Ebefore") not in client.calls and ("get", "Eold") not in client.calls
    assert conn.counters["gap_recovered"] == 2


def test_rooms_read_in_full_are_dms_and_free_rooms_roots_since_the_gap():
    root = _m("Er", room="Rdm", t=5, body="ping")
    old = _m("Eo", room="Rdm", t=-7200, body="old")
    client = Client([], [], room_pages={"Rdm": [old, root]})
    rooms = [
        ChattoRoom(id="Rc", kind="channel", name="c", is_member=True),
        ChattoRoom(id="Rdm", kind="dm", is_member=True),
    ]
    conn, g, got, gaps = _gap(client, rooms)
    assert asyncio.run(g.recover(NOW - 3600)) == 1
    assert got == [("Er", None)] and ("room", "Rc") not in client.calls


def test_the_horizon_bounds_how_far_back_a_gap_is_answered():
    client = Client([], [])
    conn, g, got, gaps = _gap(client)
    g.horizon_s = 3600.0
    seen_since = []

    async def recover(since):
        seen_since.append(since)
        return 0

    g.recover = recover

    async def run():
        g.caught_up("live_only", NOW - 30 * 86400)
        await g.task

    asyncio.run(run())
    assert seen_since == [NOW - 3600.0]


def test_at_most_max_recovery_turns_per_room_are_answered_newest_kept(caplog, monkeypatch):
    monkeypatch.setattr(G, "MAX_RECOVERY_TURNS_PER_ROOM", 2)
    roots = [_m(f"E{i}", t=i) for i in range(4)]
    client = Client(roots, [_n(m) for m in reversed(roots)])
    conn, g, got, gaps = _gap(client)
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(g.recover(NOW - 3600)) == 2
    assert [e for e, _ in got] == ["E2", "E3"]
    assert "answering the newest 2 (at most 2 per room" in caplog.text and "not the 2 oldest" in caplog.text


def test_a_followed_thread_notice_makes_a_plain_reply_there_the_threads_turn():
    """After a restart the thread index is empty; a ``followed_thread_activity`` occurrence says
    the bot takes part in the thread, so its plain reply (no mention) is that thread's turn."""
    reply = _m("Ereply", root="Eroot", t=10, body="step two failed")
    n = MessageNotice("followed_thread_activity", "Rc", "Ereply", "Eroot", "Ualice", True, reply.created_at)
    client = Client([reply], [n])
    conn, g, got, gaps = _gap(client)
    joined = []
    g._join = joined.append
    asyncio.run(g.recover(NOW - 3600))
    assert [str(k.root_id) for k in joined] == ["Eroot"]


def test_a_gap_noticed_while_a_recovery_runs_gets_a_pass_of_its_own():
    """Two gaps in a row (an RBAC resync, then an expired cursor): the second ``caught_up``
    arrives while the first recovery still reads. Its messages may have been posted after the
    first pass read the notifications, so a second pass runs (found by the fault suite: a
    mention posted during the second gap was never answered)."""
    client = Client([], [])
    conn, g, got, gaps = _gap(client)
    passes = []
    release = asyncio.Event()

    async def recover(since):
        passes.append(since)
        if len(passes) == 1:
            await release.wait()
        return 0

    g.recover = recover

    async def run():
        g.caught_up("snapshot", NOW - 100)
        await asyncio.sleep(0)
        g.caught_up("snapshot", NOW - 50)
        g.caught_up("live_only", NOW - 70)
        release.set()
        await g.task

    asyncio.run(run())
    assert passes == [NOW - 100 - G.MARGIN_S, NOW - 70 - G.MARGIN_S]


def test_the_dm_block_carries_every_missed_message_whatever_the_thread_context_window():
    """The window bounds a thread's context; a DM's missed messages are owed (bench P9 lost the
    9 oldest of 30 when the block kept only the newest 20)."""
    from hermes_chatto.wire.types import ChattoUser

    conn = Conn(SimpleNamespace(thread_context_window=2, thread_context_max_bytes=8000), bot_user_id=BOT)
    alice = ChattoUser(id="Ualice", login="alice", display_name="Alice")
    msgs = [_m(f"E{i}", room="Rdm", t=i, body=f"line {i}") for i in range(5)]
    msgs = [type(m)(**{**{f: getattr(m, f) for f in m.__dataclass_fields__}, "author": alice}) for m in msgs]
    text = G.render_earlier(conn)(msgs)
    assert all(text.count(f"line {i}") == 1 for i in range(5)) and "not shown" not in text and "Alice" in text
    conn.settings.thread_context_window = 0
    assert G.render_earlier(conn)(msgs) == text
