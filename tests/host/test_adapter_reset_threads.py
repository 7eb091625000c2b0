"""Thread replies posted while the realtime socket was down for longer than Chatto's resume
window (protocol 4: the stored cursor has expired, so the reconnect is a reset with nothing
replayed). Gap recovery (``adapter/gap.py``) reads the bot's notifications: a reply in a
thread the bot takes part in (it follows the thread) becomes one turn; a reply in a thread it
takes no part in produces no notification, no read and no turn. Real LocalChatto over
loopback sockets, real ``GatewayRunner`` (only ``_run_agent`` stubbed by ``FakeAgent``)."""

from __future__ import annotations

import pytest

from hermes_chatto.wire.types import ThreadKey

from support.host import bot_replies
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(90)


def _said(gw) -> list[str]:
    """Agent call messages without a block, the ``[Name] `` prefix and the bot's mention."""
    out = []
    for c in gw.agent.calls:
        m = c.message
        m = m.partition("\n\n[New message]\n")[2] or m
        if m.startswith("["):
            m = m.split("] ", 1)[-1]
        out.append(m.removeprefix("@helper_bot "))
    return out


def _get_message_reads(srv) -> int:
    return sum(1 for r in srv.requests if r.method.endswith("/GetMessage"))


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
    # both of bob's thread messages went through ingress (dropped: not for the bot)
    await wait_for(lambda: ad.stats["dropped"] >= 2, what="bob's thread handled")
    assert ad.threads.is_joined(ThreadKey(general, trig.event_id))
    assert not ad.threads.is_joined(ThreadKey(general, other.event_id))
    assert _said(gw) == ["how do I rotate the logs?"]
    start = len(srv.catchups)
    reads = _get_message_reads(srv)

    # a network outage longer than the cursor's lifetime: the server clock moves past it,
    # the socket drops, and both replies are written before the event loop runs again (so
    # the old socket is already closed: nothing delivered live, nothing replayed)
    srv.advance_clock(srv.cursor_lifetime + 60)
    srv.drop_sockets(bot)
    gap = srv.reply(alice, general, trig.event_id, "and what about the rotated ones?")
    srv.reply(bob, general, other.event_id, "unrelated chatter in bob's thread")

    await wait_for(
        lambda: [(c.path, c.reason) for c in srv.catchups[start:] if c.user_id == bot] == [("reset", "cursor_expired")],
        timeout=20,
        what="the bot's reset catch-up (expired cursor)",
    )
    await wait_for(lambda: len(gw.agent.calls) >= 2, timeout=20, what="a turn for the gap reply")
    await wait_for(lambda: ad.gap.task is not None and ad.gap.task.done(), timeout=20, what="the recovery finished")
    await idle(gw, timeout=15.0)
    assert len(gw.agent.calls) == 2 and ad.stats["gap_recovered"] == 1
    call = gw.agent.calls[1]
    assert _said(gw)[1] == "and what about the rotated ones?"
    assert call.source.thread_id == trig.event_id
    assert _get_message_reads(srv) == reads + 1, "one read: the notified reply in the joined thread only"
    assert ad.conn.seen is not None and gap.event_id in ad.conn.seen
    await wait_for(lambda: len(bot_replies(gw, general, trig.event_id)) == 2, what="the answer to the gap reply")

    # a live follow-up is the next turn: the gap reply is neither a turn again nor a block line
    srv.reply(alice, general, trig.event_id, "thanks")
    await wait_for(lambda: len(gw.agent.calls) >= 3, what="the live follow-up turn")
    await idle(gw, timeout=15.0)
    msgs = _said(gw)
    assert msgs == ["how do I rotate the logs?", "and what about the rotated ones?", "thanks"], msgs
    assert "rotated ones" not in (gw.agent.calls[2].message or "")
    assert not any("chatter" in m for m in msgs)
    assert len(bot_replies(gw, general, other.event_id)) == 0
