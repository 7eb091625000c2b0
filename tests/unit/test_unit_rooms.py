"""adapter.rooms: the room directory (protocol 4: no retained set), find_member_room."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.rooms import RoomDirectory, find_member_room
from hermes_chatto.wire.types import ChattoRoom


def _settings(**kw):
    return SimpleNamespace(free_response_rooms=kw.get("free", []))


class Client:
    def __init__(self, rooms):
        self.rooms = {r.id: r for r in rooms}
        self.reads = []

    async def get_room(self, room_id):
        self.reads.append(room_id)
        return self.rooms[room_id]


def _dir(client=None, **kw):
    return RoomDirectory(Conn(_settings(**kw), client=client))


def test_reset_keeps_member_rooms_and_dms_and_resolves_free_rooms():
    d = _dir(free=["b"])
    d.reset(
        [
            ChattoRoom(id="Ra", kind="channel", name="a", is_member=True),
            ChattoRoom(id="Rdm", kind="dm", is_member=True),
            ChattoRoom(id="Rb", kind="channel", name="b", is_member=True),
            ChattoRoom(id="Rx", kind="channel", name="x", is_member=False),
        ]
    )
    assert set(d.rooms) == {"Ra", "Rdm", "Rb"}
    assert d.free == {"Rb"} and d.is_dm("Rdm") and not d.is_dm("Ra") and not d.is_dm("Rnope")


def test_a_changed_room_is_read_again_once_then_cached():
    """A ``room_*`` event (or the bot's own join) makes the entry stale: the next use reads
    ``GetRoom`` once; without a change the directory answers without a read."""
    left = ChattoRoom(id="Ra", kind="channel", name="a", is_member=False)
    client = Client([left])
    d = _dir(client)
    d.reset([ChattoRoom(id="Ra", kind="channel", name="a", is_member=True)])
    assert asyncio.run(d.fetch("Ra")).is_member and client.reads == []
    d.changed("Ra")
    assert asyncio.run(d.fetch("Ra")) is left and client.reads == ["Ra"]
    assert d.is_lost("Ra")
    asyncio.run(d.fetch("Ra"))
    assert client.reads == ["Ra"]
    d.remove("Ra")
    assert d.get("Ra") is None


def test_find_member_room_by_id_or_unique_name():
    rooms = [
        ChattoRoom(id="R1", kind="channel", name="General", is_member=True),
        ChattoRoom(id="R2", kind="channel", name="dup", is_member=True),
        ChattoRoom(id="R3", kind="channel", name="dup", is_member=True),
        ChattoRoom(id="R4", kind="channel", name="outside", is_member=False),
    ]
    assert find_member_room(rooms, "R1").id == "R1"
    assert find_member_room(rooms, "#general").id == "R1"
    assert find_member_room(rooms, "dup") is None and find_member_room(rooms, "outside") is None


def test_a_snapshot_replaces_the_rooms_and_forgets_those_the_bot_left():
    d = _dir(free=["b"])
    d.reset([ChattoRoom(id="Ra", kind="channel", name="a", is_member=True)])
    d.changed("Ra")
    d.snapshot(
        [
            ChattoRoom(id="Rb", kind="channel", name="b", is_member=True),
            ChattoRoom(id="Rx", kind="channel", name="x", is_member=False),
        ]
    )
    assert set(d.rooms) == {"Rb"} and d.free == {"Rb"} and not d.stale
    d.snapshot([])  # no rooms at all: nothing is forgotten on that word alone
    assert set(d.rooms) == {"Rb"}
