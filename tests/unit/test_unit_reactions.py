"""adapter.reactions: accepted → done / failed, the accepted one taken back."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.reactions import LifecycleReactions


class Ops:
    def __init__(self):
        self.calls = []

    async def react(self, event, emoji, *, remove=False):
        self.calls.append(("-" if remove else "+") + emoji)
        return True


def _unit(**settings):
    s = SimpleNamespace(ack_reaction="eyes", done_reaction="white_check_mark", failed_reaction="x")
    for k, v in settings.items():
        setattr(s, k, v)
    ops = Ops()
    return LifecycleReactions(Conn(s), ops), ops


def test_success_failure_and_cancel():
    from gateway.platforms.base import ProcessingOutcome as O

    ev = SimpleNamespace(message_id="E1")
    for outcome, expected in (
        (O.SUCCESS, ["+eyes", "-eyes", "+white_check_mark"]),
        (O.FAILURE, ["+eyes", "-eyes", "+x"]),
        (O.CANCELLED, ["+eyes", "-eyes"]),
    ):
        unit, ops = _unit()
        asyncio.run(unit.accepted(ev))
        asyncio.run(unit.finished(ev, outcome))
        assert ops.calls == expected, outcome
    unit, ops = _unit(ack_reaction="", done_reaction="")
    asyncio.run(unit.accepted(ev))
    asyncio.run(unit.finished(ev, O.SUCCESS))
    assert ops.calls == []
