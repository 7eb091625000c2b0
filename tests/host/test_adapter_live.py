"""ChattoAdapter end to end over real loopback sockets: LocalChatto (ConnectRPC + realtime
protocol 2) ↔ real ChattoClient/RealtimeSession ↔ ChattoAdapter ↔ real GatewayRunner
(only ``GatewayRunner._run_agent`` is stubbed)."""

from __future__ import annotations

import asyncio
import json

import pytest

from support.text import mixed_text
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)


def bot_msgs(gw, room: str, root: str | None = None):
    w = gw.world
    bot = gw.ids["bot"]
    msgs = w.thread_messages(room, root) if root else w.room_messages(room)
    return [m for m in msgs if m.author_id == bot and not m.echo_of_event_id]


async def test_dm_turn_and_own_echo_is_not_a_turn(gateway):
    gw = await gateway()
    ids = gw.ids
    first = gw.world.post(ids["alice"], ids["dm"], "hello bot")
    await wait_for(lambda: bot_msgs(gw, ids["dm"]), what="DM reply")
    reply = bot_msgs(gw, ids["dm"])[0]
    assert reply.body == "pong: hello bot" and reply.thread_root_event_id == ""
    src = gw.agent.calls[0].source
    assert (src.chat_type, src.chat_id, src.thread_id, src.user_id) == ("dm", ids["dm"], None, ids["alice"])
    assert gw.adapter.session_key_for(src) == gw.runner._session_key_for_source(src)
    # the ack reaction went onto the trigger
    assert gw.world.get_message(ids["dm"], first.event_id)  # still there
    await idle(gw, timeout=15.0)
    # the echo of the reply arrived before this later message; it never became a turn
    gw.world.post(ids["alice"], ids["dm"], "second")
    await wait_for(lambda: len(bot_msgs(gw, ids["dm"])) == 2, what="second reply")
    assert [c.message for c in gw.agent.calls] == ["hello bot", "second"]
    assert reply.event_id in gw.adapter.threads.own


async def test_channel_mention_then_thread_reply_same_session(gateway):
    gw = await gateway()
    ids = gw.ids
    gw.world.post(ids["alice"], ids["general"], "nobody asked the bot")
    trig = gw.world.post(ids["alice"], ids["general"], "@helper_bot how are you?")
    await wait_for(lambda: bot_msgs(gw, ids["general"], trig.event_id), what="threaded reply")
    assert len(gw.agent.calls) == 1
    assert gw.agent.calls[0].source.thread_id == trig.event_id
    assert bot_msgs(gw, ids["general"]) == []  # nothing at top level
    await idle(gw, timeout=15.0)
    gw.world.reply(ids["alice"], ids["general"], trig.event_id, "follow-up without mention")
    await wait_for(lambda: len(bot_msgs(gw, ids["general"], trig.event_id)) == 2, what="follow-up reply")
    s1, s2 = gw.agent.calls[0].source, gw.agent.calls[1].source
    assert gw.runner._session_key_for_source(s1) == gw.runner._session_key_for_source(s2)
    assert gw.agent.calls[1].message.endswith("follow-up without mention")


async def test_stranger_gets_pairing_code(gateway):
    gw = await gateway(allow_all=False, allowed_users="nobody-else")
    w, ids = gw.world, gw.ids
    bob = w.create_user("bob", "Bob")
    dm = w.open_dm(bob.id, ids["bot"])
    await wait_for(lambda: dm in gw.adapter.rooms.rooms, what="new DM known to the adapter")
    w.post(bob.id, dm, "hi, who are you?")
    await wait_for(lambda: bot_msgs(gw, dm), what="pairing answer")
    assert gw.agent.calls == []
    body = bot_msgs(gw, dm)[0].body.lower()
    assert "pair" in body or "code" in body


async def test_other_bot_gets_turn_when_authorised_and_allow_bots_admits_it(gateway):
    gw = await gateway(extra={"allow_bots": "mentions"})
    w, ids = gw.world, gw.ids
    other, _key = w.create_bot("otherbot", "Other Bot")
    w.add_member(ids["general"], other.id)
    w.grant(ids["general"], other.id, "message.post", "message.post-in-thread")
    w.post(other.id, ids["general"], "@helper_bot status report please")
    await wait_for(lambda: gw.agent.calls, what="turn for the other bot")
    assert gw.agent.calls[0].source.is_bot is True
    assert gw.agent.calls[0].source.user_id == other.id


async def test_other_bot_gets_no_turn_by_default(gateway):
    gw = await gateway()
    w, ids = gw.world, gw.ids
    other, _key = w.create_bot("otherbot", "Other Bot")
    w.add_member(ids["general"], other.id)
    w.grant(ids["general"], other.id, "message.post", "message.post-in-thread")
    w.post(other.id, ids["general"], "@helper_bot status report please")
    w.post(ids["alice"], ids["general"], "@helper_bot and mine?")  # a fence: events arrive in order
    await wait_for(lambda: gw.agent.calls, what="alice's turn")
    await idle(gw, timeout=15.0)
    assert [c.source.user_id for c in gw.agent.calls] == [ids["alice"]]


async def test_replayed_event_after_reconnect_is_one_turn(gateway):
    gw = await gateway()
    w, ids = gw.world, gw.ids
    rt = gw.adapter._realtime
    old_cursor = rt.resume_cursor
    assert old_cursor
    w.post(ids["alice"], ids["dm"], "say it once")
    await wait_for(lambda: bot_msgs(gw, ids["dm"]), what="reply")
    await idle(gw, timeout=15.0)
    # rewind the stored cursor and drop the socket: the server replays the message
    rt.resume_cursor = old_cursor
    before = rt.stats["connects"]
    w.drop_sockets(ids["bot"])
    await wait_for(lambda: rt.stats["connects"] > before and rt.caught_up.is_set(), what="reconnected")
    w.post(ids["alice"], ids["dm"], "after reconnect")
    await wait_for(lambda: len(gw.agent.calls) >= 2, what="live turn after reconnect")
    await idle(gw, timeout=15.0)
    assert [c.message for c in gw.agent.calls] == ["say it once", "after reconnect"]


async def test_edit_of_in_flight_trigger_replaces_turn(gateway):
    gw = await gateway()
    w, ids = gw.world, gw.ids
    gw.agent.gate = asyncio.Event()
    m = w.post(ids["alice"], ids["dm"], "what is 2+2?")
    await wait_for(lambda: gw.agent.calls, what="turn started")
    w.edit(ids["alice"], ids["dm"], m.event_id, "what is 3+3?")
    await wait_for(lambda: gw.adapter.stats["edits_replaced"] == 1, what="edit seen")
    gw.agent.gate.set()
    await wait_for(lambda: len(gw.agent.calls) == 2, what="replacement turn")
    await idle(gw, timeout=15.0)
    bodies = [x.body for x in bot_msgs(gw, ids["dm"])]
    assert "pong: what is 3+3?" in bodies and "pong: what is 2+2?" not in bodies


async def test_25k_reply_chunked_in_one_thread(gateway):
    text = mixed_text(25_000, seed=21)
    gw = await gateway(reply=text)
    ids = gw.ids
    trig = gw.world.post(ids["alice"], ids["general"], "@helper_bot give me the long version")
    await idle(gw, timeout=30, turns=1)
    msgs = bot_msgs(gw, ids["general"], trig.event_id)
    assert len(msgs) >= 3
    assert all(len(m.body.encode("utf-8")) <= 10_000 for m in msgs)
    assert "".join(m.body for m in msgs) == text
    assert bot_msgs(gw, ids["general"]) == []


async def test_chunk_two_of_three_fails_chunk_one_not_resent(gateway):
    text = mixed_text(25_000, seed=22)
    gw = await gateway(reply=text)
    w, ids = gw.world, gw.ids
    w.fail_create_message(nth=2, code="permission_denied", message="no post-in-thread right now")
    trig = w.post(ids["alice"], ids["general"], "@helper_bot long again")
    await wait_for(lambda: len(bot_msgs(gw, ids["general"], trig.event_id)) >= 3, timeout=30, what="resumed")
    await idle(gw, timeout=30)
    msgs = bot_msgs(gw, ids["general"], trig.event_id)
    assert len(msgs) == 3 and "".join(m.body for m in msgs) == text  # chunk 1 exactly once
    first = gw.adapter.last_reports[0]
    assert first.failed_index == 1 and "chunk 2 of 3 failed" in first.describe()


async def test_slow_mode_retry_after(gateway):
    gw = await gateway()
    w, ids = gw.world, gw.ids
    w.set_slow_mode(ids["general"], 60)
    ok = await gw.adapter.send(ids["general"], "first post")
    assert ok.success
    res = await gw.adapter.send(ids["general"], "second post too soon")
    assert not res.success and res.error_kind == "rate_limited" and res.retryable
    assert res.retry_after is not None and 0 < res.retry_after <= 61


async def test_agent_tool_and_standalone_send_same_chunks_as_reply(gateway):
    from gateway.config import Platform

    import hermes_chatto
    from hermes_chatto.tools import chatto_send_message

    text = mixed_text(25_000, seed=23)
    gw = await gateway(reply=text)
    w, ids = gw.world, gw.ids
    trig = w.post(ids["alice"], ids["general"], "@helper_bot long")
    await idle(gw, timeout=30, turns=1)
    reply_chunks = [m.body for m in bot_msgs(gw, ids["general"], trig.event_id)]
    out = json.loads(
        await asyncio.to_thread(chatto_send_message, {"room": "general", "text": text, "thread_id": trig.event_id})
    )
    assert out.get("ok"), out
    pconfig = gw.runner.config.platforms[Platform("chatto")]
    res = await hermes_chatto._standalone_send(pconfig, ids["general"], text, thread_id=trig.event_id)
    assert res.get("success"), res
    by_id = {m.event_id: m for m in w.thread_messages(ids["general"], trig.event_id)}
    tool_chunks = [by_id[i].body for i in out["message_ids"]]
    standalone_chunks = [by_id[i].body for i in res["message_ids"]]
    assert reply_chunks == tool_chunks == standalone_chunks
    assert len(reply_chunks) >= 3


async def test_thread_turn_gets_earlier_messages_once(gateway):
    """Frontier hooks: the first thread turn carries the thread's earlier messages in
    channel_context (never the trigger); a quiet follow-up carries nothing again."""
    gw = await gateway()
    w, ids = gw.world, gw.ids
    root = w.post(ids["alice"], ids["general"], "deploy notes for today")
    w.reply(ids["alice"], ids["general"], root.event_id, "step one went fine")
    trig = w.reply(ids["alice"], ids["general"], root.event_id, "@helper_bot what happened so far?")
    await wait_for(lambda: bot_msgs(gw, ids["general"], root.event_id), what="thread reply")
    msg1 = gw.agent.calls[0].message
    assert "[Earlier in this thread]" in msg1
    block = msg1.split("[New message]")[0]
    assert "step one went fine" in block and "deploy notes for today" in block
    assert "what happened so far" not in block  # never the trigger
    assert gw.agent.calls[0].source.thread_id == root.event_id
    await idle(gw, timeout=15.0)
    w.reply(ids["alice"], ids["general"], root.event_id, "thanks, and next?")
    await wait_for(lambda: len(gw.agent.calls) == 2, what="follow-up turn")
    assert "[Earlier in this thread]" not in gw.agent.calls[1].message  # quiet turn: nothing new
    assert trig.event_id


async def test_own_post_from_another_path_reaches_next_thread_turn(gateway):
    """A bot post made outside the session (cron / hermes send) is shown, marked as the
    bot's own, to the next turn of that thread — its echo was dropped as own."""
    from gateway.config import Platform

    import hermes_chatto

    gw = await gateway()
    w, ids = gw.world, gw.ids
    trig = w.post(ids["alice"], ids["general"], "@helper_bot start a build thread")
    await wait_for(lambda: bot_msgs(gw, ids["general"], trig.event_id), what="first reply")
    await idle(gw, timeout=15.0)
    pconfig = gw.runner.config.platforms[Platform("chatto")]
    res = await hermes_chatto._standalone_send(
        pconfig, ids["general"], "BUILD REPORT: all green", thread_id=trig.event_id
    )
    assert res.get("success"), res
    report_id = res["message_ids"][0]
    await wait_for(
        lambda: report_id in gw.adapter.threads.own or report_id in gw.adapter.threads.roots,
        what="echo of the report seen",
    )
    w.reply(ids["alice"], ids["general"], trig.event_id, "@helper_bot is the report good?")
    await wait_for(lambda: len(gw.agent.calls) == 2, what="second turn")
    block = gw.agent.calls[1].message.split("[New message]")[0]
    assert "BUILD REPORT: all green" in block and "(you)" in block
    assert "pong:" not in block  # the session's own earlier reply is held, not repeated


async def test_resync_mid_run_loses_nothing_repeats_nothing(gateway):
    """Any RBAC change closes every socket with ``RESYNC_REQUIRED``; the session reconnects
    without a cursor (a snapshot), so what was posted meanwhile comes from gap recovery. Every
    DM reaches the agent exactly once: as a turn's own text, or — when recovery read the DM
    after the next one was posted — in that turn's block (one turn per conversation)."""
    gw = await gateway()
    w, ids = gw.world, gw.ids
    w.post(ids["alice"], ids["dm"], "before the reset")
    await idle(gw, timeout=15.0, turns=1)
    rt = gw.adapter._realtime
    before = rt.stats["connects"]
    w.force_resync()
    w.post(ids["alice"], ids["dm"], "during the reset")
    await wait_for(lambda: rt.stats["connects"] > before and rt.caught_up.is_set(), what="reconnected")
    w.post(ids["alice"], ids["dm"], "after the reset")
    await wait_for(
        lambda: any(c.message.endswith("after the reset") for c in gw.agent.calls), timeout=20, what="the last DM"
    )
    await idle(gw, timeout=20)
    texts = [c.message for c in gw.agent.calls]
    for said in ("before the reset", "during the reset", "after the reset"):
        assert sum(t.count(said) for t in texts) == 1, (said, texts)
    assert sum(t.endswith("before the reset") for t in texts) == 1
