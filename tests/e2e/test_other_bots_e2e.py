"""Two bots of this plugin in one room (``CHATTO_ALLOW_ALL_USERS=true``), each behind its
own REAL ``hermes gateway run`` and scripted model, on one local Chatto server.

Without ``allow_bots`` both bots answered every thread reply of the other in a thread they
share: the two-bot loop of hermes-agent PR #27127. The default (``none``, as Hermes' own
Slack and Discord adapters) makes it impossible; ``mentions`` lets another bot's
@mention through, once. Another bot is never "self": its posts reach the
``[Earlier in this thread]`` block under its name, marked ``(bot)``, never ``(you)``.

"Nothing more happened" is shown with a fence, not a wait: a later message of a person is
answered by the same gateway, whose realtime socket delivers events in order, so an
earlier bot message that did not start a turn by then never will.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until
from chatto_local.scripted_model import ScriptedModel, is_own_line, split_context

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", allow_all_users=True, turn_timeout=45.0) as harness:
        harness.peer = await harness.start_peer("other_bot", "Other Bot")
        yield harness


def _bot_triggers(model: ScriptedModel) -> list[str]:
    """Turn triggers the model received that are a bot's scripted answer."""
    out = []
    for r in model.turn_requests():
        trigger = split_context(r.user_text)[1]
        if "Scripted reply #" in trigger.split("\n", 1)[0]:
            out.append(trigger[:80])
    return out


async def _peer_answered(h: Harness, since: int, root: str) -> None:
    """Wait until the peer's model answered a turn after request ``since`` and that answer
    is in the thread ``root``."""
    peer = h.peer

    def answer() -> str | None:
        finals = [r.reply for r in peer.model.chat_requests()[since:] if r.stream and r.reply and not r.tool_calls]
        return finals[-1] if finals else None

    text = await wait_until(answer, timeout=45, what="the other bot's model to answer")
    key = "".join(text.split())[:60]
    await wait_until(
        lambda: any(
            m.author_id == peer.bot_id and key in "".join((m.body or "").split()) for m in h.thread("general", root)
        ),
        timeout=45,
        what="the other bot's answer in the thread",
    )
    await wait_until(peer.idle, timeout=45, what="the other bot's gateway to be idle")


async def test_two_bots_in_a_shared_thread_do_not_answer_each_other(h: Harness):
    peer = h.peer
    p0 = len(peer.model.chat_requests())
    t1 = await h.turn("both", "general", "@helper_bot @other_bot hello both, what's up?")
    root = t1.trigger.event_id
    await _peer_answered(h, p0, root)
    # a person's message in the thread: both bots take part, both answer it
    p1 = len(peer.model.chat_requests())
    t2 = await h.turn("thanks", "general", "thanks both, one more question", thread_root=root)
    await _peer_answered(h, p1, root)
    await h.wait_idle()
    assert _bot_triggers(h.started_model) == [] and _bot_triggers(peer.model) == []
    thread = h.thread("general", root)
    # the bots' answers (a host notice such as the busy "⚡ Interrupting" ack when alice
    # wrote while the other bot's turn was still closing is not an answer)
    by_bot = [m for m in thread if m.author_id in (h.bot_id, peer.bot_id) and "Scripted reply #" in (m.body or "")]
    shown = "\n".join(f"{h.label(m.author_id)}: {(m.body or '')[:160]}" for m in thread)
    assert len(by_bot) == 4, shown
    # the other bot's answer reached helper_bot's block under its name, marked as a bot
    other = [ln for ln in t2.block_lines if "Other Bot" in ln.split(": ", 1)[0]]
    assert other and all("(bot)" in ln.split(": ", 1)[0] and not is_own_line(ln) for ln in other), t2.block_lines


async def test_allow_bots_mentions_answers_another_bots_mention_once(h: Harness):
    peer = h.peer
    with open(h.home / ".env", "a", encoding="utf-8") as f:
        f.write("CHATTO_ALLOW_BOTS=mentions\n")
    await h.restart_gateway()
    from hermes_chatto.wire.connect import ChattoClient

    n0 = len(h.started_model.turn_requests())
    async with ChattoClient(h.chatto.base_url, peer.bot_key) as as_other:
        ask = await as_other.create_message(h.rooms["general"], "@helper_bot what is the deploy status?")
    await wait_until(
        lambda: any(m.author_id == h.bot_id for m in h.thread("general", ask.event_id)),
        timeout=45,
        what="helper_bot's answer to the other bot's mention",
    )
    await h.wait_idle()
    # fence: a person asks the other bot in that thread; it answers, so it has processed
    # helper_bot's answer before and did not take it for a turn
    p0 = len(peer.model.chat_requests())
    await h.post("general", "@other_bot ping", thread_root=ask.event_id)
    await _peer_answered(h, p0, ask.event_id)
    await h.wait_idle()
    thread = h.thread("general", ask.event_id)
    from_helper = [m for m in thread if m.author_id == h.bot_id and "Scripted reply #" in (m.body or "")]
    assert len(h.started_model.turn_requests()) - n0 >= 1
    assert _bot_triggers(peer.model) == []
    # helper answered the mention once (its model saw it once), never the other bot's
    # un-mentioned answer
    helper_triggers = [split_context(r.user_text)[1] for r in h.started_model.turn_requests()[n0:]]
    assert sum("deploy status" in t for t in helper_triggers) == 1, helper_triggers
    assert not any("Scripted reply #" in t for t in helper_triggers), helper_triggers
    assert any("deploy status" in (m.body or "") for m in from_helper), [m.body for m in thread]
