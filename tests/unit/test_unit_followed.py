"""adapter.followed.FollowedReplies: replies in followed threads of unstreamed rooms, read once."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.followed import MAX_NOTICE_FETCHES, RESUME_MARGIN_S, FollowedReplies
from hermes_chatto.adapter.rooms import RoomDirectory
from hermes_chatto.ingress import SeenSet
from hermes_chatto.wire.errors import ChattoNotFound, ChattoTransientError
from hermes_chatto.wire.events import FollowedThreadsChanged, MessageNotice, NotificationsReplaced
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom, ThreadKey


class Client:
    def __init__(self, msgs=(), fail=None):
        self.msgs = {m.event_id: m for m in msgs}
        self.fail = fail
        self.reads: list[tuple[str, str]] = []

    async def get_message(self, room_id, event_id):
        self.reads.append((room_id, event_id))
        if self.fail is not None:
            raise self.fail
        if event_id not in self.msgs:
            raise ChattoNotFound("no", code="not_found")
        return self.msgs[event_id]


def _reply(eid, room="Rfar", root="Eroot", author="Ualice"):
    return ChattoMessage(event_id=eid, room_id=room, author_id=author, body=eid, thread_root_event_id=root)


def _unit(client):
    conn = Conn(SimpleNamespace(retained_rooms=[], free_response_rooms=[]))
    conn.client = client
    conn.bot_user_id = "Ubot"
    conn.seen = SeenSet(100)
    rooms = RoomDirectory(conn)
    rooms.reset([ChattoRoom(id="Rnear", kind="channel", name="near", is_member=True)])
    rooms.rooms["Rfar"] = ChattoRoom(id="Rfar", kind="channel", name="far", is_member=True)  # not retained
    got: list[tuple[str, bool]] = []

    async def ingest(msg, pid, *, retained):
        got.append((msg.event_id, retained))
        conn.seen.add(msg.event_id)

    return FollowedReplies(conn, rooms, ingest), got, conn


def _threads(pid, room="Rfar", actor="Ualice", roots=("Eroot",)):
    return FollowedThreadsChanged(tuple((ThreadKey("Rfar", r), True) for r in roots), pid, actor, room)


def test_a_followed_reply_in_an_unretained_room_is_read_once_and_ingested():
    client = Client([_reply("E1")])
    unit, got, conn = _unit(client)
    asyncio.run(unit.on_threads(_threads("E1")))
    asyncio.run(unit.on_threads(_threads("E1")))  # the same signal again (a replay): no second read
    assert got == [("E1", False)] and client.reads == [("Rfar", "E1")]
    assert conn.counters["followed_thread_fetches"] == 1


def test_streamed_rooms_own_posts_other_threads_and_no_room_are_not_read():
    client = Client([_reply("E1"), _reply("E2", root="Eother")])
    unit, got, _ = _unit(client)
    asyncio.run(unit.on_threads(_threads("E0", room="Rnear")))  # retained: the socket streams it
    asyncio.run(unit.on_threads(_threads("E0", room="")))  # reconciliation list / follow change
    asyncio.run(unit.on_threads(_threads("E0", actor="Ubot")))  # the bot's own reply
    asyncio.run(unit.on_threads(_threads("E2")))  # a reply, but not in a followed thread
    assert got == [] and client.reads == [("Rfar", "E2")]


def test_a_failed_read_is_logged_and_may_be_tried_again():
    client = Client(fail=ChattoTransientError("down", code="unavailable"))
    unit, got, _ = _unit(client)
    asyncio.run(unit.on_threads(_threads("E1")))
    client.fail, client.msgs = None, {"E1": _reply("E1")}
    asyncio.run(unit.on_threads(_threads("E1")))
    assert got == [("E1", False)] and len(client.reads) == 2


def _notice(eid, *, created=100.0, room="Rfar", unread=True, actor="Ualice", kind="direct_mention_received"):
    return MessageNotice(kind, room, eid, "Eroot", actor, unread, created)


def test_notifications_count_only_after_the_first_caught_up_and_are_bounded():
    msgs = [_reply(f"E{i:02d}") for i in range(MAX_NOTICE_FETCHES + 5)]
    client = Client(msgs)
    unit, got, _ = _unit(client)
    asyncio.run(unit.on_notices(NotificationsReplaced((_notice("E00", created=10.0),))))  # catch-up: history
    asyncio.run(unit.caught_up(50.0))
    old = _notice("Eold", created=10.0)
    read = _notice("Eread", unread=False)
    near = _notice("Enear", room="Rnear")
    own = _notice("Eown", actor="Ubot")
    new = tuple(_notice(m.event_id) for m in msgs)
    asyncio.run(unit.on_notices(NotificationsReplaced((old, read, near, own, *new))))
    assert [e for e, _ in got] == [f"E{i:02d}" for i in range(MAX_NOTICE_FETCHES)]
    asyncio.run(unit.on_notices(NotificationsReplaced(new)))  # the rest, next time; seen ones skipped
    assert len(got) == len(msgs) and len(client.reads) == len(msgs)


def test_notifications_are_read_oldest_first():
    """Chatto's page is newest first; two people who mentioned the bot are answered in the order
    they wrote."""
    client = Client([_reply("Efirst"), _reply("Esecond"), _reply("Ethird")])
    unit, got, _ = _unit(client)
    asyncio.run(unit.caught_up(50.0))
    page = (_notice("Ethird", created=103.0), _notice("Esecond", created=102.0), _notice("Efirst", created=101.0))
    asyncio.run(unit.on_notices(NotificationsReplaced(page)))
    assert [e for e, _ in got] == ["Efirst", "Esecond", "Ethird"]


def test_after_a_restart_that_resumed_mentions_made_while_down_count():
    """A gateway stopped at t=1000 (its resume cursor stored then) and back at t=5000: a mention
    at t=3000 in an unstreamed channel is read; one from before the last gateway's cursor margin
    is history; without a stored cursor only what comes after the first caught_up counts."""
    client = Client([_reply("Edown"), _reply("Ebefore")])
    unit, got, _ = _unit(client)
    page = (_notice("Edown", created=3000.0), _notice("Ebefore", created=1000.0 - RESUME_MARGIN_S - 1))
    # the catch-up's reconciliation carries the list before caught_up: it is read then
    asyncio.run(unit.on_notices(NotificationsReplaced(page)))
    assert got == []
    asyncio.run(unit.caught_up(5000.0, resumed_from=1000.0))
    assert [e for e, _ in got] == ["Edown"]
    fresh, got2, _ = _unit(Client([_reply("Edown")]))
    asyncio.run(fresh.caught_up(5000.0))  # no stored cursor: a fresh start
    asyncio.run(fresh.on_notices(NotificationsReplaced((_notice("Edown", created=3000.0),))))
    assert got2 == []


def test_a_reaction_or_room_activity_notice_reads_nothing():
    """Chatto makes an occurrence for a reaction to the bot's message and (when a user turns
    it on) for room activity; neither is a message for the bot."""
    client = Client([_reply("E1"), _reply("E2"), _reply("E3")])
    unit, got, _ = _unit(client)
    asyncio.run(unit.caught_up(50.0))
    page = (
        _notice("E1", kind="reaction_received"),
        _notice("E2", kind="followed_room_activity"),
        _notice("E3", kind="followed_thread_activity"),
    )
    asyncio.run(unit.on_notices(NotificationsReplaced(page)))
    assert [e for e, _ in got] == ["E3"] and client.reads == [("Rfar", "E3")]


class PagedClient(Client):
    """``Client`` whose notification list has older pages (newest first, like Chatto's)."""

    def __init__(self, msgs, older):
        super().__init__(msgs)
        self.older = older
        self.pages: list[tuple[int, int]] = []

    async def list_notifications(self, *, offset, limit):
        self.pages.append((offset, limit))
        chunk = self.older[offset - 50 : offset - 50 + limit]
        return tuple(chunk), offset - 50 + limit < len(self.older)


def test_a_full_list_of_news_is_followed_to_older_pages_and_all_is_answered_oldest_first():
    """More than 50 occurrences while the socket was down: Chatto's list holds the newest 50;
    the next pages (ListNotificationOccurrences) hold the rest, back to what was evaluated."""
    from hermes_chatto.adapter.followed import NOTICE_PAGE

    msgs = [_reply(f"E{i:03d}") for i in range(170)]
    notes = [_notice(m.event_id, created=1000.0 + i) for i, m in enumerate(msgs)]  # oldest first
    newest_first = notes[::-1]
    client = PagedClient(msgs, newest_first[NOTICE_PAGE:])
    unit, got, conn = _unit(client)
    asyncio.run(unit.caught_up(999.0))
    asyncio.run(unit.on_notices(NotificationsReplaced(tuple(newest_first[:NOTICE_PAGE]))))
    assert [e for e, _ in got] == [m.event_id for m in msgs]  # every one, in the order written
    assert client.pages == [(50, 100), (150, 100)] and conn.counters["notice_pages"] == 2
    # the next list: one new occurrence on top of 49 evaluated ones reads no older page
    new = _reply("Enew")
    client.msgs["Enew"] = new
    asyncio.run(unit.on_notices(NotificationsReplaced((_notice("Enew", created=2000.0), *newest_first[:49]))))
    assert got[-1][0] == "Enew" and len(client.pages) == 2
