"""adapter.rooms: the room directory, the retained set, find_member_room."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.rooms import RoomDirectory, find_member_room
from hermes_chatto.wire.types import MAX_RETAINED_ROOMS, ChattoRoom


def _settings(**kw):
    return SimpleNamespace(retained_rooms=kw.get("retained", []), free_response_rooms=kw.get("free", []))


def _dir(**kw):
    return RoomDirectory(Conn(_settings(**kw)))


def test_reset_keeps_members_and_orders_retained_dms_first():
    d = _dir(free=["Rb"])
    d.reset(
        [
            ChattoRoom(id="Ra", kind="channel", name="a", is_member=True),
            ChattoRoom(id="Rdm", kind="dm", is_member=True),
            ChattoRoom(id="Rb", kind="channel", name="b", is_member=True),
            ChattoRoom(id="Rx", kind="channel", name="x", is_member=False),
        ]
    )
    assert set(d.rooms) == {"Ra", "Rdm", "Rb"} and d.retained == ["Rdm", "Ra", "Rb"]
    assert d.free == {"Rb"} and d.is_dm("Rdm") and not d.is_dm("Ra") and not d.is_dm("Rnope")


def test_retained_set_is_capped_and_hydration_tracked():
    d = _dir()
    d.reset(
        [
            ChattoRoom(id=f"R{i:03d}", kind="channel", name=f"c{i}", is_member=True)
            for i in range(MAX_RETAINED_ROOMS + 3)
        ]
    )
    assert len(d.retained) == MAX_RETAINED_ROOMS
    new = ChattoRoom(id="Rnew", kind="channel", name="new", is_member=True)
    assert asyncio.run(d.updated(new, False)) is False  # full: stays out
    d.remove(d.retained[0])
    assert asyncio.run(d.updated(new, False)) is True and d.is_retained("Rnew")
    d.hydrating.add("Rnew")
    assert not d.is_covered("Rnew") and "Rnew" not in d.covered()
    d.hydrated("Rnew")
    assert d.is_covered("Rnew")


def test_partial_update_of_a_left_room_leaves_the_retained_set():
    d = _dir()
    d.reset([ChattoRoom(id="Ra", kind="channel", name="a", is_member=True)])
    assert asyncio.run(d.updated(ChattoRoom(id="Ra", is_member=False), True)) is False
    assert d.retained == [] and d.rooms["Ra"].is_member is False and d.rooms["Ra"].name == "a"


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


def test_lost_room_is_released_and_a_waiting_room_refills_the_slot_empty_dms_wait():
    d = _dir()
    rooms = [
        ChattoRoom(id=f"R{i:03d}", kind="channel", name=f"c{i}", is_member=True) for i in range(MAX_RETAINED_ROOMS + 1)
    ]
    d.reset(rooms)
    waiting = rooms[-1].id
    assert not d.is_retained(waiting)
    gone = ChattoRoom(id="R000", kind="channel", name="c0", is_member=False)  # room_upsert after removal
    assert asyncio.run(d.updated(gone, False)) is False
    assert d.take_released() == ["R000"] and d.take_released() == [] and d.is_lost("R000")
    assert d.refill() == [waiting] and d.is_retained(waiting) and not d.is_retained("R000")
    d.remove("R001")  # room_remove (archive)
    assert d.take_released() == ["R001"] and d.refill() == []
    empty_dm = ChattoRoom(id="Rdm", kind="dm", is_member=True)  # in the snapshot, not in ListRooms
    assert asyncio.run(d.updated(empty_dm, False)) is False and "Rdm" in d.dormant
    assert d.refill() == []  # dormant DMs wait for their first message
    assert d.wake("Rdm") is True and d.is_retained("Rdm") and d.wake("Rdm") is False
