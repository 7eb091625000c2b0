"""Own replies racing the next trigger, and a gateway restart that resumes from the
persisted realtime cursor — LocalChatto over real loopback sockets ↔ real ChattoClient /
RealtimeSession ↔ ChattoAdapter ↔ real GatewayRunner (only ``_run_agent`` is stubbed).

* A reply's ids belong to its session from the moment ``CreateMessage`` returns them,
  however the realtime echo, a person's quick answer and the next block read are ordered
  around that response (the server commits and broadcasts before it answers).
* A restarted gateway subscribes with the cursor the previous one persisted (the replay
  path, chatto-protocol §3.2): what was posted while it was down reaches ingress exactly
  once (no extra ``GetMessage`` round for ``room_activity`` of a retained room during the
  replay); what was handled before is dropped by the persistent seen-store, own posts
  are never turns.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from support.host import bot_replies, world_ids
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)

HEAD = "[Earlier in this thread]"


# ---------------------------------------------------------------------------------
# requirement 1: a quick answer to the bot's reply never gets that reply quoted back


async def test_quick_answer_racing_the_reply_response_does_not_get_the_reply_in_a_block(gateway, chatto_world):
    """The e2e "4th turn: no duplicate block" race, made deterministic: the reply is
    committed on the server (its echo and alice's quick answer reach the bot's socket)
    but its ``CreateMessage`` response is held back until the next turn's block read has
    its page. That page carries the reply; the session must still not get it back."""
    gw = await gateway(allow_all=False, allowed_users=world_ids(chatto_world)["alice"])
    w, ids = gw.world, gw.ids
    room, alice = ids["general"], ids["alice"]
    root = w.post(alice, room, "@helper_bot let's plan the database migration").event_id
    await idle(gw, turns=1)
    await wait_for(lambda: len(bot_replies(gw, room, root)) == 1, what="first reply")
    w.reply(alice, room, root, "Step one: freeze writes at 22:00.")
    await idle(gw, turns=2)
    await wait_for(lambda: len(bot_replies(gw, room, root)) == 2, what="second reply")

    client, frontier = gw.adapter._client, gw.adapter._frontier
    real_create, real_fetch = client.create_message, frontier._fetch
    page_read = asyncio.Event()
    held_back: list[str] = []

    async def create_message(room_id, body, **kw):
        msg = await real_create(room_id, body, **kw)  # committed, echo broadcast
        if body.startswith("pong:") and "OK, what is still open?" in body:
            held_back.append(msg.event_id)
            try:  # the response "arrives" only once the racing turn has read its page
                await asyncio.wait_for(page_read.wait(), timeout=8)
            except TimeoutError:
                pass
        return msg

    async def fetch_page(*a, **kw):
        page = await real_fetch(*a, **kw)
        if held_back:
            # set before returning: the held-back send resumes only at the frontier's
            # next await, i.e. after it has decided what this page delivers
            page_read.set()
        return page

    client.create_message = create_message
    frontier._fetch = fetch_page
    w.reply(alice, room, root, "OK, what is still open?")
    await wait_for(lambda: held_back and len(bot_replies(gw, room, root)) == 3, what="third reply committed")
    # alice answers the reply she sees at once (the bot has not got its response yet)
    w.reply(alice, room, root, "Thanks, that's all.")
    await idle(gw, turns=4)
    assert page_read.is_set(), "the 4th turn made no thread read: the race was not exercised"

    fourth = gw.agent.calls[3]
    assert fourth.message.endswith("Thanks, that's all."), fourth.message
    assert HEAD not in fourth.message and "pong:" not in fourth.message, fourth.message
    assert frontier.counters["send_waits"] == 1 and frontier.counters["send_wait_timeouts"] == 0
    key = gw.adapter.session_key_for(fourth.source)
    assert held_back[0] in frontier.snapshot(key)["held"] or frontier.snapshot(key)["cursor"]
    # and the next quiet turn still gets nothing
    w.reply(alice, room, root, "One more thing.")
    await idle(gw, turns=5)
    assert HEAD not in gw.agent.calls[4].message, gw.agent.calls[4].message


# ---------------------------------------------------------------------------------
# requirement 2: a restart resumes from the persisted cursor; what was missed arrives once


def _record_ingress(monkeypatch) -> Counter:
    from hermes_chatto.adapter.inbound import Inbound

    seen: Counter = Counter()
    real = Inbound.on_new_message

    async def on_new_message(self, msg, *a, **kw):
        seen[msg.event_id] += 1
        return await real(self, msg, *a, **kw)

    monkeypatch.setattr(Inbound, "on_new_message", on_new_message)
    return seen


async def _open_thread_and_stop(gw):
    w, ids = gw.world, gw.ids
    w.post(ids["alice"], ids["dm"], "before the restart")
    await idle(gw, turns=1)
    root = w.post(ids["alice"], ids["general"], "@helper_bot open a thread").event_id
    await idle(gw, turns=2)
    await wait_for(lambda: bot_replies(gw, ids["general"], root), what="thread reply")
    await gw.stop()
    return root


def _post_while_down(w, ids, root):
    # The bot's own post goes in before the thread reply: a block holds only messages
    # positioned before its trigger (a later message may become a turn of its own), so
    # the own post reaches the thread reply's block only when it precedes the reply.
    own = w.reply(ids["bot"], ids["general"], root, "ops script: window booked (bot key)")
    down = [
        w.post(ids["alice"], ids["dm"], "while down: a DM"),
        w.post(ids["alice"], ids["general"], "@helper_bot while down: a mention"),
        w.reply(ids["alice"], ids["general"], root, "while down: a thread reply"),
    ]
    return down, own


def _which(messages, posted) -> list[int]:
    """Index in ``posted`` of the message each turn text ends with (-1: none)."""
    return [next((i for i, m in enumerate(posted) if text.endswith(m.body)), -1) for text in messages]


async def _restart_after_missed(gateway, w, ids, root, monkeypatch):
    """While the gateway is down: post the missed messages (:func:`_post_while_down`),
    count ingress (:func:`_record_ingress`); then start a new gateway. Returns
    ``(gw2, down, own, ingress, the bot's catch-ups during the restart)``."""
    down, own = _post_while_down(w, ids, root)
    ingress = _record_ingress(monkeypatch)
    n_catchups = len(w.catchups)
    gw2 = await gateway()
    return gw2, down, own, ingress, [c for c in w.catchups[n_catchups:] if c.user_id == ids["bot"]]


async def _turns_after_restart(gw2) -> list[str]:
    """Wait for the 3 missed turns, post a late DM (anything late would come before it),
    wait for its turn; returns the texts of ``gw2``'s turns."""
    await idle(gw2, turns=3)
    gw2.world.post(gw2.ids["alice"], gw2.ids["dm"], "after the restart")
    await idle(gw2, turns=4)
    return [c.message for c in gw2.agent.calls]


async def test_restart_resumes_from_persisted_cursor_and_missed_messages_arrive_once(
    gateway, chatto_world, monkeypatch
):
    from hermes_chatto.store import ResumeCursorStore

    gw = await gateway()
    w, ids = gw.world, gw.ids
    root = await _open_thread_and_stop(gw)
    store = ResumeCursorStore()
    try:
        assert store.load(ids["bot"]), "disconnect did not persist the resume cursor"
    finally:
        store.close()
    gw2, down, own, ingress, bot_catchups = await _restart_after_missed(gateway, w, ids, root, monkeypatch)
    assert [c.path for c in bot_catchups] == ["replay"], bot_catchups
    msgs = await _turns_after_restart(gw2)
    assert sorted(_which(msgs[:3], down)) == [0, 1, 2] and msgs[3].endswith("after the restart"), msgs
    for m in down + [own]:
        assert ingress[m.event_id] == 1, (m.body, ingress[m.event_id])
    assert gw2.adapter.stats.get("gap_recovered", 0) == 0  # replayed by the server, nothing recovered by reads
    thread_turn = next(c for c in gw2.agent.calls if c.message.endswith("while down: a thread reply"))
    assert "ops script: window booked" in thread_turn.message and "(you)" in thread_turn.message


async def test_restart_after_lost_cursor_writes_replays_handled_messages_once(gateway, chatto_world, monkeypatch):
    """A crash loses the cursor writes of the last seconds: the older stored cursor makes
    the server replay messages that were already handled — the persistent seen-store
    drops them, own posts are never turns, the missed ones are turns exactly once."""
    from hermes_chatto.store import ResumeCursorStore

    gw = await gateway()
    w, ids = gw.world, gw.ids
    early = gw.adapter._realtime.resume_cursor
    assert early
    root = await _open_thread_and_stop(gw)
    store = ResumeCursorStore()
    try:
        store.save(ids["bot"], early)  # as if the writes after the first connect were lost
    finally:
        store.close()
    gw2, down, own, ingress, bot_catchups = await _restart_after_missed(gateway, w, ids, root, monkeypatch)
    assert [c.path for c in bot_catchups] == ["replay"]
    msgs = await _turns_after_restart(gw2)
    assert sorted(_which(msgs[:3], down)) == [0, 1, 2] and msgs[3].endswith("after the restart"), msgs
    assert all(ingress[m.event_id] == 1 for m in down + [own])
    assert gw2.adapter.stats.get("gap_recovered", 0) == 0  # replayed by the server, nothing recovered by reads
