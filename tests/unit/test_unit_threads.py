"""adapter.threads.ThreadIndex and the one thread-root resolver (adapter.routing)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.routing import resolve_thread_root, route_reply
from hermes_chatto.adapter.threads import ThreadIndex
from hermes_chatto.wire.errors import ChattoNotFound
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom, ThreadKey

BOT = "Ubot"


class Client:
    def __init__(self, *msgs):
        self.msgs = {m.event_id: m for m in msgs}
        self.calls = 0

    async def get_message(self, room_id, event_id):
        self.calls += 1
        if event_id not in self.msgs:
            raise ChattoNotFound("no such message")
        return self.msgs[event_id]


def _msg(eid, root="", author="Ualice", replies=0):
    return ChattoMessage(
        event_id=eid, room_id="R", author_id=author, body="x", thread_root_event_id=root, reply_count=replies
    )


def _index(client=None):
    return ThreadIndex(Conn(SimpleNamespace(), client=client, bot_user_id=BOT), capacity=4, roots_capacity=4)


def test_roots_are_remembered_and_bounded():
    idx = _index()
    idx.remember_root(_msg("E2", root="E1"))
    assert idx.cached_root("E2") == "E1" and idx.cached_root("E1") == ""
    for i in range(10):
        idx.remember_root(_msg(f"Ex{i}"))
    assert len(idx.roots) == 4 and idx.cached_root("E2") is None


def test_root_of_uses_the_index_then_one_get_message():
    client = Client(_msg("Ereply", root="Eroot"))
    idx = _index(client)
    assert asyncio.run(idx.root_of("R", "Ereply")) == "Eroot" and client.calls == 1
    assert asyncio.run(idx.root_of("R", "Ereply")) == "Eroot" and client.calls == 1  # cached
    assert asyncio.run(idx.root_of("R", "Emissing")) == "Emissing"


def test_joined_threads_and_own_roots_use_thread_keys():
    client = Client(_msg("Ebotroot", author=BOT), _msg("Ehuman"))
    idx = _index(client)
    key = ThreadKey("R", "Et")
    assert not idx.takes_part(key)
    idx.join(key)
    assert idx.is_joined(key) and idx.takes_part(key)
    idx.note_posted("Eown", "")
    assert idx.takes_part(ThreadKey("R", "Eown"))

    async def no_session():
        return False

    assert asyncio.run(idx.bot_in_thread(ThreadKey("R", "Ebotroot"), no_session)) is True
    assert ThreadKey("R", "Ebotroot") in idx.joined
    assert asyncio.run(idx.bot_in_thread(ThreadKey("R", "Ehuman"), no_session)) is False
    calls = client.calls
    assert asyncio.run(idx.root_is_own(ThreadKey("R", "Ehuman"))) is False and client.calls == calls  # cached


def test_reply_counts_page_rows_and_live_replies():
    idx = _index()
    idx.note_reply_count(_msg("Eroot", replies=2))
    idx.note_reply_count(_msg("Er1", root="Eroot"))
    idx.note_reply_count(_msg("Er1", root="Eroot"))  # counted once
    assert idx.reply_count(ThreadKey("R", "Eroot")) == 3
    idx.note_reply_count(_msg("Eroot", replies=1), page=False)  # a replayed row: known, kept
    assert idx.reply_count(ThreadKey("R", "Eroot")) == 3
    idx.note_reply_count(_msg("Eroot", replies=7))  # a page row sets it
    assert idx.reply_count(ThreadKey("R", "Eroot")) == 7


def test_route_reply_rules():
    roots = {"Ereply": "Eroot", "Eroot": "Eroot"}

    async def root_of(room_id, event_id):
        return roots.get(event_id, event_id)

    ch, dm = ChattoRoom(id="R", kind="channel"), ChattoRoom(id="D", kind="dm")

    def route(room, **kw):
        kw.setdefault("thread_id", "")
        kw.setdefault("reply_to", None)
        kw.setdefault("reply_in_thread", True)
        return asyncio.run(route_reply(room.id, room, root_of=root_of, **kw))

    assert route(dm, thread_id="Ereply") == ""
    assert route(ch, thread_id="Ereply") == "Eroot"
    assert route(ch, reply_to="Ereply", reply_in_thread=False) == "Eroot"  # stays in its thread
    assert route(ch, reply_to="Eroot") == "Eroot" and route(ch, reply_to="Eroot", reply_in_thread=False) == ""
    assert route(ch) == ""


def test_resolve_thread_root_for_the_standalone_sender():
    client = Client(_msg("Ereply", root="Eroot"))
    ch, dm = ChattoRoom(id="R", kind="channel"), ChattoRoom(id="D", kind="dm")
    assert asyncio.run(resolve_thread_root(client, ch, "Ereply")) == "Eroot"
    assert asyncio.run(resolve_thread_root(client, ch, "Egone")) == "Egone"
    assert asyncio.run(resolve_thread_root(client, dm, "Ereply")) == ""
    assert asyncio.run(resolve_thread_root(client, ch, None)) == ""


def test_a_sender_without_a_session_is_asked_once_per_thread_until_the_bot_joins():
    """A reply not for the bot in a thread it is not in asks the host's session store once per
    sender and thread; "cannot tell" is asked again; a turn there (join) answers at once."""
    idx = _index(Client(_msg("Ehuman")))
    key = ThreadKey("R", "Ehuman")
    asked: list[str] = []
    answer: dict[str, bool | None] = {"Ubob": False, "Ucarol": None}

    def has_session(who):
        async def ask():
            asked.append(who)
            return answer[who]

        return ask

    for _ in range(3):
        assert asyncio.run(idx.bot_in_thread(key, has_session("Ubob"), "Ubob")) is False
        assert asyncio.run(idx.bot_in_thread(key, has_session("Ucarol"), "Ucarol")) is False
    assert asked.count("Ubob") == 1  # remembered
    assert asked.count("Ucarol") == 3  # cannot tell: not remembered
    answer["Ucarol"] = True  # the store was wired meanwhile and has her session
    assert asyncio.run(idx.bot_in_thread(key, has_session("Ucarol"), "Ucarol")) is True
    assert asyncio.run(idx.bot_in_thread(key, has_session("Ubob"), "Ubob")) is True  # joined: everyone
    assert asked.count("Ubob") == 1
