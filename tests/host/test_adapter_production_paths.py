"""Production paths of the real Chatto server that a bot meets and the spec does not show
(issue 13): what a person in the room sees when the adapter runs over the local server that
models them. Real LocalChatto over loopback sockets, real ``GatewayRunner`` (only
``_run_agent`` stubbed by ``FakeAgent``). The server side of each path has its conformance
test in ``tests/server/test_local_server_production.py``."""

from __future__ import annotations

import asyncio

import pytest

from hermes_chatto.bounded import BoundedMap

from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)


def _dm_replies(gw) -> list[str]:
    bot = gw.ids["bot"]
    return [m.body or "" for m in gw.world.room_messages(gw.ids["dm"]) if m.author_id == bot]


# ----------------------------------------------------------------------------- item 8


async def test_edit_of_a_trigger_the_classifier_forgot_still_replaces_the_turn(gateway):
    """The classifier remembers at most 20,000 message ids (and none from before a replay
    resume). An edit of an in-flight trigger it no longer remembers used to be dropped as a
    summary refresh: the person saw an answer to the text they had corrected."""
    gw = await gateway()
    w, ids = gw.world, gw.ids
    clf = gw.adapter._realtime.classifier
    clf._known = BoundedMap(1)  # the memory holds one id: the next message evicts the trigger
    gw.agent.gate = asyncio.Event()
    m = w.post(ids["alice"], ids["dm"], "what is 2+2?")
    await wait_for(lambda: gw.agent.calls, what="turn started")
    w.post(ids["alice"], ids["general"], "unrelated chatter")  # not addressed: no turn
    await wait_for(lambda: not clf.is_known(m.event_id), what="the trigger aged out of the memory")
    w.edit(ids["alice"], ids["dm"], m.event_id, "what is 3+3?")
    await wait_for(lambda: gw.adapter.stats["edits_replaced"] == 1, what="edit seen")
    gw.agent.gate.set()
    await wait_for(lambda: len(gw.agent.calls) == 2, what="replacement turn")
    await idle(gw, timeout=15.0)
    assert "pong: what is 3+3?" in _dm_replies(gw) and "pong: what is 2+2?" not in _dm_replies(gw)
