"""Thread replies posted while a projection reset reconnects the socket (chatto-protocol
§3.7 "After a reset"): ``room_timeline_replace`` pages hold root rows only, so the adapter
reads the threads it takes part in whose reply count moved (one ``GetThreadEvents`` each)
and runs the unseen replies through ingress. Real LocalChatto over loopback sockets, real
``GatewayRunner`` (only ``_run_agent`` stubbed by ``FakeAgent``)."""

from __future__ import annotations

import pytest

from hermes_chatto.wire.types import ThreadKey

from support.host import bot_replies
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(90)


def _said(gw) -> list[str]:
    """Agent call messages without the ``[Name] @mention`` prefix the gateway adds."""
    out = []
    for c in gw.agent.calls:
        m = c.message
        if m.startswith("["):
            m = m.split("] ", 1)[-1]
        out.append(m.removeprefix("@helper_bot "))
    return out


async def test_gap_reply_in_joined_thread_is_one_turn_unjoined_is_none(chatto_world, gateway):
    srv = chatto_world
    bob = srv.create_user("bob", "Bob").id
    srv.add_member(srv.world.general_id, bob)
    gw = await gateway()
    ids, ad = gw.ids, gw.adapter
    general, alice, bot = ids["general"], ids["alice"], ids["bot"]

    # a thread the bot answered in
    trig = srv.post(alice, general, "@helper_bot how do I rotate the logs?")
    await wait_for(lambda: bot_replies(gw, general, trig.event_id), what="the bot's thread answer")
    # a thread the bot takes no part in (bob's root, a reply already there)
    other = srv.post(bob, general, "bob's own topic")
    srv.reply(alice, general, other.event_id, "alice chimes in")
    await idle(gw, timeout=15.0)
    key = ThreadKey(general, trig.event_id)
    await wait_for(lambda: ad.threads.reply_count(key) == 1, what="the bot's own reply seen in realtime")
    await wait_for(
        lambda: ad.threads.reply_count(ThreadKey(general, other.event_id)) == 1,
        what="alice's reply in bob's thread seen in realtime",
    )
    assert _said(gw) == ["how do I rotate the logs?"]
    reads = ad.stats["reset_thread_reads"]
    resets = sum(1 for c in srv.catchups if c.user_id == bot and c.path == "reset")

    # RBAC fence closes the socket; both replies are written before the event loop runs
    # again, so the old socket is already closing (nothing delivered live) and the new one
    # only sees them through its reset catch-up.
    srv.force_projection_reset()
    gap = srv.reply(alice, general, trig.event_id, "and what about the rotated ones?")
    srv.reply(bob, general, other.event_id, "unrelated chatter in bob's thread")

    await wait_for(
        lambda: sum(1 for c in srv.catchups if c.user_id == bot and c.path == "reset") > resets,
        timeout=20,
        what="the bot's reset catch-up",
    )
    await wait_for(lambda: len(gw.agent.calls) >= 2, timeout=20, what="a turn for the gap reply")
    await idle(gw, timeout=15.0)
    call = gw.agent.calls[1]
    assert call.message.endswith("and what about the rotated ones?")
    assert call.source.thread_id == trig.event_id
    assert ad.stats["reset_thread_reads"] == reads + 1, "one read: the moved joined thread only"
    assert ad.conn.seen is not None and gap.event_id in ad.conn.seen
    await wait_for(lambda: len(bot_replies(gw, general, trig.event_id)) == 2, what="the answer to the gap reply")

    # a live follow-up is the next turn: the gap reply is neither a turn again nor a block line
    srv.reply(alice, general, trig.event_id, "thanks")
    await wait_for(lambda: len(gw.agent.calls) >= 3, what="the live follow-up turn")
    await idle(gw, timeout=15.0)
    msgs = _said(gw)
    assert msgs == ["how do I rotate the logs?", "and what about the rotated ones?", "thanks"], msgs
    assert "rotated ones" not in (gw.agent.calls[2].context_prompt or "")
    assert not any("chatter" in m for m in msgs)
