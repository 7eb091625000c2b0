"""A thread turn that ends without an answer (issue 8 case 3's root cause) — LocalChatto
over real loopback sockets ↔ ChattoAdapter ↔ real ``GatewayRunner`` (only the model call
is stubbed).

The frontier counts a turn's trigger as held from the moment its block is computed at
ingress. When the host then cancels that turn before its reply lands (``/stop``'s
``cancel_session_processing``, a shutdown's ``cancel_background_tasks``) or the reply
cannot be delivered, the agent never answered the message: ``on_processing_complete``
reports it and the next turn of the session must carry it in its
``[Earlier in this thread]`` block, once. (Before the fix it was held and never came
again; after a gateway kill the stored row also claimed it.)
"""

from __future__ import annotations

import asyncio

import pytest

from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)

HEAD = "[Earlier in this thread]"


async def thread_with_x_running(gw, x_text: str):
    """Alice opens a thread with the bot, then posts ``x_text`` in it; returns
    ``(room, alice, root, x, session key)`` once X's turn is in flight (the agent's
    ``gate`` holds it)."""
    ids, w = gw.ids, gw.world
    room, alice = ids["general"], ids["alice"]
    root = w.post(alice, room, "@helper_bot new topic").event_id
    await idle(gw, turns=1)
    gw.agent.gate = asyncio.Event()
    x = w.reply(alice, room, root, x_text)
    await wait_for(lambda: len(gw.agent.calls) >= 2, what="the turn of X running")
    return room, alice, root, x, gw.adapter.turns.trigger_keys[x.event_id]


async def test_cancelled_turn_reaches_the_next_block_once(gateway, chatto_world):
    gw = await gateway(reply="ack")
    w = gw.world
    room, alice, root, x, key = await thread_with_x_running(gw, "question that gets cut off")
    await gw.adapter.cancel_session_processing(key)  # what /stop does to the running turn
    gw.agent.gate.set()
    await idle(gw)
    assert gw.adapter._frontier.counters["turns_unanswered"] == 1
    assert not any(m.body == "ack" for m in w.thread_messages(room, root)[2:]), "X was answered after all"

    w.reply(alice, room, root, "next question")
    await idle(gw, turns=3)
    msg = gw.agent.calls[2].message
    assert HEAD in msg and msg.count("question that gets cut off") == 1, msg
    assert msg.endswith("next question"), msg

    w.reply(alice, room, root, "and another")
    await idle(gw, turns=4)
    assert HEAD not in gw.agent.calls[3].message, gw.agent.calls[3].message


async def test_follow_up_discarded_by_the_host_is_owed(gateway, chatto_world):
    """``/stop``-style clearing (0.19.0 ``_interrupt_and_clear_session``: interrupt, then
    ``get_pending_message`` to *discard* the queued follow-up) is not taken for the
    runner draining that follow-up into the running turn: the discarded message comes in
    the next block (review finding 3)."""
    gw = await gateway(reply="ack")
    w = gw.world
    room, alice, root, x, key = await thread_with_x_running(gw, "X question")
    y = w.reply(alice, room, root, "Y follow-up that gets discarded")
    await wait_for(lambda: key in gw.adapter._pending_messages, what="Y queued")
    src = gw.adapter.turns.processing[key].source
    await gw.runner._interrupt_and_clear_session(
        key, src, interrupt_reason="Stop requested", invalidation_reason="stop", release_running_state=False
    )
    await gw.adapter._frontier.flush()  # a busy acknowledgement may still be in flight
    assert key not in gw.adapter._pending_messages and y.event_id in gw.adapter._frontier.ledger(key).turns.owed
    gw.agent.gate.set()
    await idle(gw)
    w.reply(alice, room, root, "Z question")
    await wait_for(lambda: any("Z question" in c.message for c in gw.agent.calls), what="Z's turn")
    await idle(gw)
    z_call = [c for c in gw.agent.calls if "Z question" in c.message][0].message
    assert HEAD in z_call and z_call.count("Y follow-up that gets discarded") == 1, z_call


async def test_follow_ups_merged_by_the_busy_text_debounce(gateway, chatto_world):
    """Busy text mode "queue": 0.19.0's debounce merges Y and W into one event (text
    "Y\\nW", W's id, Y's block) and drops W's block, which carried a cron post. Y and W
    reach the agent once, in that turn; the cron post comes in the next block, once
    (review finding 1)."""
    gw = await gateway(reply="ack", env={"HERMES_GATEWAY_BUSY_TEXT_MODE": "queue"})
    w, bot = gw.world, gw.ids["bot"]
    room, alice, root, x, key = await thread_with_x_running(gw, "X question")
    y = w.reply(alice, room, root, "Y follow-up")
    await wait_for(lambda: y.event_id in gw.adapter.turns.trigger_keys, what="Y ingested")
    w.reply(bot, room, root, "CRON: nightly build red")  # a cron / hermes send post
    wv = w.reply(alice, room, root, "W follow-up")
    await wait_for(lambda: wv.event_id in gw.adapter.turns.trigger_keys, what="W ingested")
    await wait_for(lambda: key in gw.adapter._pending_messages, timeout=10, what="the debounce flushed")
    merged = gw.adapter._pending_messages[key]
    assert merged.message_id == wv.event_id and merged.text == "Y follow-up\nW follow-up", merged
    gw.agent.gate.set()
    await idle(gw, turns=3)
    w.reply(alice, room, root, "Z question")
    await idle(gw, turns=4)
    text = "\n".join(c.message for c in gw.agent.calls)
    assert text.count("CRON: nightly build red") == 1, [c.message for c in gw.agent.calls]
    assert text.count("Y follow-up") == 1 and text.count("W follow-up") == 1, [c.message for c in gw.agent.calls]
    assert "CRON: nightly build red" in gw.agent.calls[3].message
