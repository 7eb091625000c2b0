"""Adapter follow-ups to the frontier (H12) — LocalChatto over real loopback sockets ↔ real
ChattoClient / RealtimeSession ↔ ChattoAdapter ↔ real ``GatewayRunner`` (only the model
call is stubbed).

* Host notices posted into a thread during a turn (hermes-agent 0.19.0's one-time
  "📬 No home channel is set for Chatto…", sent through ``adapter.send()`` without a
  ``reply_to``) belong to the session whose turn is running there: the next turn's
  ``[Earlier in this thread]`` block never quotes them back to the model as "(you)".
"""

from __future__ import annotations

import pytest

from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)

HEAD = "[Earlier in this thread]"
NOTICE = "No home channel is set"


def thread_bodies(gw, room: str, root: str, author: str) -> list[str]:
    return [m.body or "" for m in gw.world.thread_messages(room, root) if m.author_id == author]


async def test_home_channel_notice_is_held_by_the_thread_session(gateway, chatto_world):
    """Fresh user, no home channel configured: the first mention in a channel opens a
    thread, the runner posts its "No home channel" notice into that thread (no
    ``reply_to``) and the agent answers. The next turn in the thread gets no block: the
    notice and the reply are both the session's own."""
    gw = await gateway(env={"CHATTO_HOME_CHANNEL": ""})
    ids, w = gw.ids, gw.world
    room, alice, bot = ids["general"], ids["alice"], ids["bot"]
    root = w.post(alice, room, "@helper_bot hello, first time here").event_id
    await idle(gw, turns=1)
    await wait_for(lambda: len(thread_bodies(gw, room, root, bot)) >= 2, what="notice and reply in the thread")
    own = thread_bodies(gw, room, root, bot)
    assert any(NOTICE in b for b in own), f"the runner posted no home-channel notice into the thread: {own}"

    w.reply(alice, room, root, "thanks, and what next?")
    await idle(gw, turns=2)
    second = gw.agent.calls[1].message
    assert second.endswith("thanks, and what next?"), second
    assert NOTICE not in second and HEAD not in second, second
    # a third turn stays quiet as well (nothing unheld is left in the thread)
    w.reply(alice, room, root, "one more")
    await idle(gw, turns=3)
    assert HEAD not in gw.agent.calls[2].message, gw.agent.calls[2].message


async def test_post_into_a_thread_with_no_running_turn_is_not_attributed(gateway, chatto_world):
    """A post into a thread while no turn runs there (a cron report sent through the live
    adapter) belongs to no session: the thread's next turn shows it, marked "(you)"."""
    gw = await gateway()
    ids, w = gw.ids, gw.world
    room, alice = ids["general"], ids["alice"]
    root = w.post(alice, room, "@helper_bot start the nightly thread").event_id
    await idle(gw, turns=1)
    res = await gw.adapter.send(room, "cron: nightly build green", metadata={"thread_id": root})
    assert res.success, res.error
    w.reply(alice, room, root, "anything from the nightly?")
    await idle(gw, turns=2)
    second = gw.agent.calls[1].message
    assert HEAD in second and "cron: nightly build green" in second and "(you)" in second, second
