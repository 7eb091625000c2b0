"""The loop breaker's state unit (adapter/loops.py, issue 24 finding 3): counts per thread and
per room, reset by a person, one WARNING per trip."""

from __future__ import annotations

import logging

from hermes_chatto.adapter.loops import BotLoopBreaker
from hermes_chatto.counters import Counters
from hermes_chatto.wire.types import ChattoMessage, ChattoUser

BOT = ChattoUser(id="Uother000000000", login="other_bot", is_bot=True)
ALICE = ChattoUser(id="Ualice000000000", login="alice")


def _m(eid: str, root: str = "ROOT", room: str = "R1", author: ChattoUser = BOT) -> ChattoMessage:
    return ChattoMessage(
        event_id=eid, room_id=room, author_id=author.id, body="hi", thread_root_event_id=root, author=author
    )


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "loop breaker" in r.getMessage()]


def test_a_thread_budget_stops_bots_there_until_a_person_writes_and_says_so_once(caplog):
    caplog.set_level(logging.WARNING, logger="hermes_plugins.chatto")
    c = Counters()
    b = BotLoopBreaker(c, thread_budget=3, room_budget=100)
    assert [b.admit(_m(f"E{i}"), "all") for i in range(3)] == [None, None, None]
    assert b.admit(_m("E3"), "all") == "bot_loop_thread"
    assert b.admit(_m("E4"), "all") == "bot_loop_thread"
    assert len(_warnings(caplog)) == 1 and "thread ROOT of room R1" in _warnings(caplog)[0]
    assert c["dropped_bot_loop"] == 2 and c["bot_loop_trips"] == 1
    # another thread of the room has its own budget
    assert b.admit(_m("F1", root="OTHER"), "all") is None
    assert b.watching(_m("x")) and b.watching(_m("y", root="OTHER"))
    # a person writes in the thread: bots are answered there again, and a new trip is told again
    b.person_spoke(_m("P1", author=ALICE))
    assert [b.admit(_m(f"G{i}"), "mentions") for i in range(3)] == [None, None, None]
    assert b.admit(_m("G3"), "mentions") == "bot_loop_thread"
    assert len(_warnings(caplog)) == 2


def test_a_room_budget_counts_every_thread_and_top_level_and_resets_on_a_person_anywhere_in_it(caplog):
    caplog.set_level(logging.WARNING, logger="hermes_plugins.chatto")
    b = BotLoopBreaker(Counters(), thread_budget=100, room_budget=4)
    # a flat loop: every bot message is a new top-level message (its own thread)
    assert [b.admit(_m(f"E{i}", root=""), "all") for i in range(4)] == [None] * 4
    assert b.admit(_m("E4", root=""), "all") == "bot_loop_room"
    assert b.admit(_m("E5", root="T"), "all") == "bot_loop_room"
    assert len(_warnings(caplog)) == 1 and "room R1" in _warnings(caplog)[0]
    # another room is not affected
    assert b.admit(_m("Z", room="R2"), "all") is None
    b.person_spoke(_m("P", root="T", author=ALICE))
    assert b.admit(_m("E6", root=""), "all") is None


def test_zero_budgets_mean_no_limit_and_the_maps_are_bounded():
    b = BotLoopBreaker(Counters(), thread_budget=0, room_budget=0, capacity=8)
    assert all(b.admit(_m(f"E{i}", root=f"T{i % 20}"), "all") is None for i in range(200))
    assert len(b._threads) <= 8 and len(b._rooms) <= 8
