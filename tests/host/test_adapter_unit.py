"""ChattoAdapter against a real GatewayRunner (model call stubbed) with in-memory Chatto
client/realtime fakes (``support.fakes``): ingress → build_source → handle_message → runner → send().

The same scenarios over real loopback sockets live in test_adapter_live.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from hermes_chatto.wire.errors import (
    ChattoAmbiguousWriteError,
    ChattoPermissionDenied,
    ChattoResourceExhausted,
    ChattoTransientError,
)
from hermes_chatto.wire.events import CaughtUp, MessageEdited, RoomChanged

from support.fakes import (
    ALICE,
    BOB,
    BOT,
    BOT_KEY,
    DM,
    GENERAL,
    OTHER_BOT,
    FakeAgent,
    FakeClient,
    FakeRealtime,
    FakeServer,
    posted,
)
from support.host import wire_adapter
from support.text import mixed_text
from support.waits import wait_for


class Unit:
    def __init__(self, runner, adapter, agent, server):
        self.runner, self.adapter, self.agent, self.server = runner, adapter, agent, server

    async def inbound(self, author, room, body, *, thread_root="", replay_of=None):
        m = replay_of or self.server.post(author, room, body, thread_root=thread_root)
        await self.adapter.inbound.on_event(posted(m))
        return m

    def bot_msgs(self):
        return self.server.bot_messages()

    async def idle(self):
        await wait_for(
            lambda: not self.adapter._active_sessions and not self.runner._running_agents,
            timeout=10,
            what="gateway idle",
        )


@pytest.fixture()
async def unit(registered, write_config, monkeypatch):
    made = []

    async def build(*, allow_all=True, allowed_users=None, extra=None, reply=None, multiplex_routes=None):
        from gateway.config import Platform, load_gateway_config
        from gateway.run import GatewayRunner

        from hermes_chatto.adapter import ChattoAdapter

        monkeypatch.setenv("CHATTO_URL", "http://127.0.0.1:9")
        monkeypatch.setenv("CHATTO_BOT_KEY", BOT_KEY)
        monkeypatch.setenv("CHATTO_ACK_REACTION", "eyes")
        monkeypatch.setenv("CHATTO_HOME_CHANNEL", GENERAL)  # no "No home channel" notice
        if allow_all:
            monkeypatch.setenv("CHATTO_ALLOW_ALL_USERS", "true")
        if allowed_users:
            monkeypatch.setenv("CHATTO_ALLOWED_USERS", allowed_users)
        write_config(extra or {}, enabled=True)
        agent = FakeAgent(reply)

        async def fake_run_agent(self, message, context_prompt, history, source, session_id, session_key=None, **kw):
            return await agent.run(self, message, context_prompt, history, source, session_id, session_key, **kw)

        monkeypatch.setattr(GatewayRunner, "_run_agent", fake_run_agent)
        cfg = load_gateway_config()
        if multiplex_routes is not None:
            from gateway.profile_routing import parse_profile_routes

            cfg.multiplex_profiles = True
            cfg.profile_routes = parse_profile_routes(multiplex_routes)
        runner = GatewayRunner(cfg)
        server = FakeServer.demo()
        plat = Platform("chatto")
        adapter = ChattoAdapter(
            cfg.platforms[plat], client_factory=lambda url, tok: FakeClient(server), realtime_factory=FakeRealtime
        )
        wire_adapter(runner, adapter)
        assert await adapter.connect()
        runner.adapters[plat] = adapter
        u = Unit(runner, adapter, agent, server)
        made.append(u)
        return u

    yield build
    for u in made:
        await u.adapter.cancel_background_tasks()
        await u.adapter.disconnect()


async def test_dm_turn_reply_flat_with_ack(unit):
    u = await unit()
    assert u.adapter.bot_user_id == BOT.id and u.adapter.bot_login == "helper_bot"
    trig = await u.inbound(ALICE, DM, "hello there")
    await wait_for(lambda: u.bot_msgs(), what="reply")
    reply = u.bot_msgs()[0]
    assert reply.body == "pong: hello there" and reply.thread_root_event_id == ""
    call = u.agent.calls[0]
    assert call.source.chat_type == "dm" and call.source.chat_id == DM and call.source.thread_id is None
    assert call.source.user_id == ALICE.id and call.source.user_name == "Alice"
    # lifecycle reactions: 👀 while the turn ran (added, then taken back), ✅ when done
    await wait_for(lambda: u.server.reactions == [(DM, trig.event_id, "white_check_mark")], what="✅ only")
    assert u.server.calls.count("AddReaction") == 2 and u.server.calls.count("RemoveReaction") == 1
    # our own echo is never a turn
    await u.inbound(None, None, None, replay_of=reply)
    await u.idle()
    assert len(u.agent.calls) == 1


async def test_channel_mention_opens_thread_and_followup_continues_session(unit):
    u = await unit()
    await u.inbound(ALICE, GENERAL, "just chatting")  # not addressed
    trig = await u.inbound(ALICE, GENERAL, "@helper_bot what is up?")
    await wait_for(lambda: u.bot_msgs(), what="reply")
    r = u.bot_msgs()[0]
    assert r.thread_root_event_id == trig.event_id  # answered in a thread under the trigger
    src1 = u.agent.calls[0].source
    assert src1.chat_type == "group" and src1.thread_id == trig.event_id
    await u.idle()
    # a follow-up in that thread without a mention continues the same session
    await u.inbound(BOB, GENERAL, "and more?", thread_root=trig.event_id)
    await wait_for(lambda: len(u.bot_msgs()) == 2, what="second reply")
    src2 = u.agent.calls[1].source
    assert u.runner._session_key_for_source(src2) == u.runner._session_key_for_source(src1)
    assert all(m.thread_root_event_id == trig.event_id for m in u.bot_msgs())
    assert len(u.agent.calls) == 2


async def test_thread_reply_in_foreign_thread_needs_mention(unit):
    u = await unit()
    root = await u.inbound(ALICE, GENERAL, "a root by alice")
    await u.inbound(BOB, GENERAL, "reply without mention", thread_root=root.event_id)
    await u.idle()
    assert u.agent.calls == []
    await u.inbound(BOB, GENERAL, "@helper_bot now you", thread_root=root.event_id)
    await wait_for(lambda: u.bot_msgs(), what="reply")
    assert u.bot_msgs()[0].thread_root_event_id == root.event_id


async def test_stranger_gets_pairing_not_a_turn(unit):
    u = await unit(allow_all=False, allowed_users=ALICE.id)
    await u.inbound(BOB, DM, "let me in")
    await wait_for(lambda: u.bot_msgs(), what="pairing reply")
    assert u.agent.calls == []
    assert "pair" in u.bot_msgs()[0].body.lower() or "code" in u.bot_msgs()[0].body.lower()
    # no ack reaction for an unauthorised sender
    assert not any(r[2] == "eyes" for r in u.server.reactions)


async def test_other_bot_gets_a_turn_when_authorised(unit):
    u = await unit(extra={"allow_bots": "mentions"})
    await u.inbound(OTHER_BOT, GENERAL, "@helper_bot ping from a bot")
    await wait_for(lambda: u.agent.calls, what="turn")
    assert u.agent.calls[0].source.is_bot is True


async def test_replay_is_one_turn(unit):
    u = await unit()
    m = await u.inbound(ALICE, DM, "only once")
    await wait_for(lambda: u.bot_msgs(), what="reply")
    await u.idle()
    await u.inbound(None, None, None, replay_of=m)  # reconnect replay / projection reset
    await u.idle()
    assert len(u.agent.calls) == 1


async def test_edit_of_in_flight_trigger_replaces_turn(unit):
    u = await unit()
    u.agent.gate = asyncio.Event()
    m = await u.inbound(ALICE, DM, "what is 2+2?")
    await wait_for(lambda: u.agent.calls, what="first turn running")
    from dataclasses import replace

    edited = replace(m, body="what is 3+3?", updated_at=(m.created_at or 0) + 5)
    u.server.messages[m.event_id] = edited
    await u.adapter.inbound.on_event(
        MessageEdited(room_id=edited.room_id, message_event_id=edited.event_id, actor_id=edited.author_id)
    )
    u.agent.gate.set()
    await wait_for(lambda: len(u.agent.calls) == 2, what="replacement turn")
    await u.idle()
    bodies = [b.body for b in u.bot_msgs()]
    assert "pong: what is 3+3?" in bodies
    assert "pong: what is 2+2?" not in bodies  # the stale answer was suppressed
    assert u.adapter.stats["edits_replaced"] == 1
    # an edit of an older message does nothing
    older = replace(edited, body="changed again", updated_at=(m.created_at or 0) + 9)
    await u.adapter.inbound.on_event(
        MessageEdited(room_id=older.room_id, message_event_id=older.event_id, actor_id=older.author_id)
    )
    await u.idle()
    assert len(u.agent.calls) == 2


async def test_long_reply_chunks_in_one_thread(unit):
    text = mixed_text(25_000)
    u = await unit(reply=text)
    trig = await u.inbound(ALICE, GENERAL, "@helper_bot long please")
    await u.idle()
    msgs = u.bot_msgs()
    assert len(msgs) >= 3
    assert all(len(m.body.encode()) <= 10_000 for m in msgs)
    assert "".join(m.body for m in msgs) == text
    assert {m.thread_root_event_id for m in msgs} == {trig.event_id}


async def test_chunk_two_of_three_fails_then_retry_resumes(unit):
    u = await unit()
    text = mixed_text(25_000, seed=3)
    u.server.fail_create[2] = ChattoPermissionDenied("missing message.post-in-thread")
    root = u.server.post(ALICE, GENERAL, "root")
    res = await u.adapter.send(GENERAL, text, metadata={"thread_id": root.event_id})
    assert not res.success
    assert "chunk 2 of 3 failed" in res.error and res.error_kind == "forbidden" and not res.retryable
    first = u.bot_msgs()
    assert len(first) == 1 and res.message_id == first[0].event_id
    # the host's plain-text fallback (or any resend of the same text) resumes at chunk 2
    res2 = await u.adapter.send(
        GENERAL, "(Response formatting failed, plain text:)\n\n" + text[:3500], metadata={"thread_id": root.event_id}
    )
    assert res2.success
    msgs = u.bot_msgs()
    assert len(msgs) == 3 and "".join(m.body for m in msgs) == text  # chunk 1 not re-sent
    assert res2.continuation_message_ids == (msgs[0].event_id, msgs[1].event_id)
    assert res2.message_id == msgs[2].event_id


async def test_transient_chunk_failure_retried_by_host_without_duplicates(unit):
    u = await unit(reply=mixed_text(25_000, seed=5))
    u.server.fail_create[2] = ChattoTransientError("unavailable (network)")
    await u.inbound(ALICE, DM, "long one")
    await wait_for(lambda: len(u.bot_msgs()) == 3, timeout=20, what="resumed delivery")
    await u.idle()
    assert len(u.bot_msgs()) == 3
    assert "".join(m.body for m in u.bot_msgs()) == u.agent._reply(u.agent.calls[0])
    assert "chunk 2 of 3 failed" in u.adapter.last_reports[0].describe()


async def test_slow_mode_and_ambiguous(unit):
    u = await unit()
    u.server.fail_create[1] = ChattoResourceExhausted("slow mode", retry_after=42.0)
    res = await u.adapter.send(GENERAL, "hi")
    assert not res.success and res.retryable and res.retry_after == 42.0 and res.error_kind == "rate_limited"
    u.server.fail_create[2] = ChattoAmbiguousWriteError("read timeout", may_have_landed=True)
    res = await u.adapter.send(GENERAL, "again")
    assert not res.success and not res.retryable and "timed out" in res.error


async def test_reply_to_a_reply_uses_its_root_and_dm_is_flat(unit):
    u = await unit()
    root = u.server.post(ALICE, GENERAL, "root")
    reply = u.server.post(BOB, GENERAL, "a reply", thread_root=root.event_id)
    res = await u.adapter.send(GENERAL, "answer", reply_to=reply.event_id)
    assert res.success and u.server.messages[res.message_id].thread_root_event_id == root.event_id
    res = await u.adapter.send(GENERAL, "answer 2", metadata={"thread_id": reply.event_id})
    assert u.server.messages[res.message_id].thread_root_event_id == root.event_id
    res = await u.adapter.send(DM, "dm answer", reply_to=reply.event_id, metadata={"thread_id": "X"})
    assert res.success and u.server.messages[res.message_id].thread_root_event_id == ""


async def test_typing_rate_limited_edit_delete_chat_info(unit):
    u = await unit()
    for _ in range(3):
        await u.adapter.send_typing(GENERAL, metadata={"thread_id": "E1"})
    assert u.server.typing == [(GENERAL, "E1")]
    await u.adapter.send_typing(DM, metadata={"thread_id": "E1"})
    assert u.server.typing[-1] == (DM, "")
    res = await u.adapter.send(GENERAL, "draft")
    ed = await u.adapter.edit_message(GENERAL, res.message_id, "final")
    assert ed.success and u.server.messages[res.message_id].body == "final"
    u.server.edit_window_expired = True
    ed = await u.adapter.edit_message(GENERAL, res.message_id, "later")
    assert not ed.success and "3-hour edit window" in ed.error
    too_long = await u.adapter.edit_message(GENERAL, res.message_id, "😀" * 3000)
    assert not too_long.success and too_long.error_kind == "too_long"
    assert await u.adapter.delete_message(GENERAL, res.message_id) is True
    assert await u.adapter.get_chat_info(GENERAL) == {"name": "general", "type": "group", "chat_id": GENERAL}
    assert (await u.adapter.get_chat_info(DM))["type"] == "dm"


@pytest.mark.parametrize(
    "routes", [None, [{"name": "r", "platform": "chatto", "chat_id": GENERAL, "profile": "coder"}]]
)
async def test_adapter_session_key_equals_runner(unit, routes):
    from hermes_chatto import compat

    u = await unit(multiplex_routes=routes)
    srcs = [
        u.adapter.build_source(chat_id=DM, chat_type="dm", user_id=ALICE.id),
        u.adapter.build_source(chat_id=GENERAL, chat_type="group", user_id=ALICE.id),
        u.adapter.build_source(chat_id=GENERAL, chat_type="group", user_id=ALICE.id, thread_id="Eroot"),
    ]
    if routes:
        assert srcs[1].profile == "coder" and srcs[2].profile == "coder"
    for src in srcs:
        assert u.adapter.session_key_for(src) == u.runner._session_key_for_source(src)
        assert compat.session_key(u.adapter, src) == u.runner._session_key_for_source(src)
    if routes:
        assert u.runner._session_key_for_source(srcs[2]).startswith("agent:coder:chatto:group:")
    # the key the ingress used for the frontier is the runner's key too
    seen = []

    class Spy:
        def observe(self, *a):
            pass

        async def start_turn(self, key, sid, trigger, retained):
            from hermes_chatto.frontier import TurnStart

            seen.append(key)
            return TurnStart(None)

        def note_sent(self, *a, **k):
            pass

    u.adapter._frontier = Spy()
    await u.inbound(ALICE, GENERAL, "@helper_bot key check")
    await wait_for(lambda: u.agent.calls, what="turn")
    assert seen == [u.runner._session_key_for_source(u.agent.calls[0].source)]


async def test_agent_tool_and_standalone_produce_reply_chunks(unit, monkeypatch):
    """Reply, agent tool (live adapter) and standalone sender give identical chunks."""
    import hermes_chatto
    import hermes_chatto.wire.connect as connect_mod
    from hermes_chatto.tools import chatto_send_message

    text = mixed_text(25_000, seed=11)
    u = await unit(reply=text)
    trig = await u.inbound(ALICE, GENERAL, "@helper_bot long")
    await u.idle()
    reply_chunks = [m.body for m in u.bot_msgs()]
    n = len(reply_chunks)
    # agent tool (runs in a worker thread like the agent's tools; finds the live adapter)
    out = json.loads(
        await asyncio.to_thread(chatto_send_message, {"room": "general", "text": text, "thread_id": trig.event_id})
    )
    assert out["ok"] and len(out["message_ids"]) == n
    tool_chunks = [u.server.messages[i].body for i in out["message_ids"]]
    # standalone sender (no live adapter in that code path: a short-lived client)
    monkeypatch.setattr(connect_mod, "ChattoClient", lambda url, key, **kw: FakeClient(u.server))
    from gateway.config import Platform

    res = await hermes_chatto._standalone_send(
        u.runner.config.platforms[Platform("chatto")], GENERAL, text, thread_id=trig.event_id
    )
    assert res["success"], res
    standalone_chunks = [u.server.messages[i].body for i in res["message_ids"]]
    assert reply_chunks == tool_chunks == standalone_chunks
    assert all(
        u.server.messages[i].thread_root_event_id == trig.event_id for i in out["message_ids"] + res["message_ids"]
    )


async def test_agent_tool_refusals(unit):
    from hermes_chatto.tools import chatto_send_message

    u = await unit()
    out = json.loads(await asyncio.to_thread(chatto_send_message, {"room": "nowhere", "text": "x"}))
    assert out["error"].startswith("refused") and "not a member" in out["error"]
    u.server.fail_create[u.server.creates + 2] = ChattoPermissionDenied("no post-in-thread")
    text = mixed_text(25_000, seed=2)
    out = json.loads(await asyncio.to_thread(chatto_send_message, {"room": GENERAL, "text": text}))
    assert "chunk 2 of 3 failed" in out["error"] and len(out["sent_message_ids"]) == 1
    again = json.loads(await asyncio.to_thread(chatto_send_message, {"room": GENERAL, "text": text}))
    assert again["ok"] and again["message_ids"][0] == out["sent_message_ids"][0]
    assert len(list(u.bot_msgs())) == 3  # chunk 1 posted once


async def test_seen_set_survives_restart(unit):
    """A replay after a gateway restart (new adapter, same Hermes home) is not a turn."""
    from gateway.config import Platform

    from hermes_chatto.adapter import ChattoAdapter

    u = await unit()
    m = await u.inbound(ALICE, DM, "handled before the restart")
    await wait_for(lambda: u.bot_msgs(), what="reply")
    await u.idle()
    await u.adapter.disconnect()
    fresh = ChattoAdapter(
        u.runner.config.platforms[Platform("chatto")],
        client_factory=lambda url, tok: FakeClient(u.server),
        realtime_factory=FakeRealtime,
    )
    wire_adapter(u.runner, fresh)
    assert await fresh.connect()
    u.runner.adapters[Platform("chatto")] = fresh
    u.adapter = fresh
    try:
        await u.inbound(None, None, None, replay_of=m)
        await u.inbound(ALICE, DM, "new after restart")
        await wait_for(lambda: len(u.agent.calls) == 2, what="new turn")
        await u.idle()
        assert [c.message for c in u.agent.calls] == ["handled before the restart", "new after restart"]
    finally:
        await fresh.disconnect()


async def test_reply_in_thread_of_bots_own_root_needs_no_mention(unit):
    """A root the bot posted from another process (cron, hermes send) — echo seen or not —
    makes its thread one the bot takes part in."""
    u = await unit()
    unseen_root = u.server.post(BOT, GENERAL, "Nightly report (posted before this gateway started)")
    await u.inbound(ALICE, GENERAL, "why did it fail?", thread_root=unseen_root.event_id)
    await wait_for(lambda: len(u.agent.calls) == 1, what="turn on reply to own root (GetMessage)")
    await u.idle()
    seen_root = u.server.post(BOT, GENERAL, "Another report")
    await u.inbound(None, None, None, replay_of=seen_root)  # its echo
    calls = u.server.calls.count("GetMessage")
    await u.inbound(ALICE, GENERAL, "and this one?", thread_root=seen_root.event_id)
    await wait_for(lambda: len(u.agent.calls) == 2, what="turn on reply to echoed own root")
    # known from the echo: no root lookup, only the trigger's own full read
    assert u.server.calls.count("GetMessage") == calls + 1
    # a human's thread stays mention-gated
    human_root = u.server.post(ALICE, GENERAL, "human root")
    await u.inbound(BOB, GENERAL, "chatter", thread_root=human_root.event_id)
    await u.idle()
    assert len(u.agent.calls) == 2


async def test_follow_up_orphaned_by_host_busy_race_is_rescued(unit):
    """0.19.0 race: the busy handler awaits (compression probe) while the running turn
    finishes; the follow-up is queued with no turn left to drain it. The adapter re-dispatches it."""
    u = await unit()
    u.agent.gate = asyncio.Event()
    release = asyncio.Event()

    async def slow_probe(session_key):
        await release.wait()
        await wait_for(lambda: session_key not in u.adapter._active_sessions, what="first turn released")
        return False

    u.runner._session_has_compression_in_flight = slow_probe
    await u.inbound(ALICE, DM, "first")
    await wait_for(lambda: u.agent.calls, what="first turn running")
    second = asyncio.create_task(u.inbound(ALICE, DM, "second"))
    await wait_for(lambda: not second.done() and u.adapter.stats["dispatched"] == 2, what="second in busy path")
    u.agent.gate.set()
    release.set()
    await second
    await wait_for(lambda: len(u.agent.calls) == 2, what="rescued follow-up ran")
    await u.idle()
    assert [c.message for c in u.agent.calls] == ["first", "second"]
    assert u.adapter.stats.get("orphans_rescued") == 1
    assert not u.adapter._pending_messages


async def test_thread_turns_with_thread_context_off_raise_nothing(unit, monkeypatch, caplog):
    """The issue's example: with ``thread_context_window=0`` the old no-op frontier shim had a
    stale ``turn_started`` signature, so every thread turn raised a TypeError that was
    swallowed at DEBUG. Now the real frontier always runs; thread turns are answered and no
    hook fails (none is counted, none is logged)."""
    import logging

    monkeypatch.setenv("CHATTO_THREAD_CONTEXT_WINDOW", "0")
    caplog.set_level(logging.DEBUG, logger="hermes_plugins.chatto")
    u = await unit()
    assert u.adapter.conn.settings.thread_context_window == 0 and u.adapter._frontier is not None
    trig = await u.inbound(ALICE, GENERAL, "@helper_bot start a thread")
    await wait_for(lambda: u.bot_msgs(), what="first reply")
    await u.idle()
    await u.inbound(ALICE, GENERAL, "and a follow-up", thread_root=trig.event_id)
    await wait_for(lambda: len(u.bot_msgs()) == 2, what="thread reply")
    await u.idle()
    assert all(m.thread_root_event_id == trig.event_id for m in u.bot_msgs())
    assert u.adapter.stats["hook_errors"] == 0, u.adapter.stats
    assert not [
        r for r in caplog.records if "TypeError" in r.getMessage() or (r.exc_info and r.exc_info[0] is TypeError)
    ]


async def test_typing_honours_the_hosts_toggle_and_pauses_while_an_approval_waits(unit):
    from hermes_chatto.adapter.approvals import Pending

    u = await unit()
    u.adapter.ops.stop_typing(DM, None)
    await u.adapter.send_typing(DM)
    assert u.server.typing == [(DM, "")]
    # an approval prompt waits in the DM: no typing until it is answered
    u.adapter.approvals.pending.put("Eprompt", Pending(DM, "", "S", ALICE.id, "Alice", "body", ("x",)))
    u.adapter.ops.stop_typing(DM, None)
    await u.adapter.send_typing(DM)
    assert u.server.typing == [(DM, "")]
    u.adapter.approvals.pending.pop("Eprompt")
    # the host's per-platform toggle (PlatformConfig.typing_indicator) off: never
    u.adapter.config.typing_indicator = False
    u.adapter.ops.stop_typing(DM, None)
    await u.adapter.send_typing(DM)
    assert u.server.typing == [(DM, "")]


async def test_a_message_that_is_not_for_the_bot_costs_no_read_a_turn_one(unit):
    """Protocol-4 events are thin: the adapter decides from what the event carries and reads
    the message (GetMessage) only when it starts a turn; the author's name is read once."""
    u = await unit()
    before = list(u.server.calls)
    await u.inbound(ALICE, GENERAL, "just chatting, not for the bot")
    await u.idle()
    assert u.server.calls == before and u.agent.calls == []
    await u.inbound(ALICE, DM, "hello")
    await wait_for(lambda: u.bot_msgs(), what="reply")
    new = u.server.calls[len(before) :]
    assert new.count("GetMessage") == 1 and new.count("GetUser") == 1, new
    await u.idle()
    mark = len(u.server.calls)
    await u.inbound(ALICE, DM, "again")
    await wait_for(lambda: len(u.bot_msgs()) == 2, what="second reply")
    assert u.server.calls[mark:].count("GetUser") == 0  # the author is known now


async def test_another_bot_is_recognised_by_user_bot_and_starts_no_turn(unit):
    """``User.bot`` (beta.20) marks a bot; read as a person it would start turns and two bots
    would answer each other. Another bot's @mention is dropped under the default allow_bots."""
    u = await unit()
    await u.inbound(OTHER_BOT, GENERAL, "@helper_bot ping from a bot")
    await u.inbound(OTHER_BOT, DM, "a bot in a DM")
    await u.idle()
    assert u.agent.calls == [] and u.adapter.stats["dropped"] >= 2


async def test_a_dm_opened_mid_run_is_learnt_and_answered(unit):
    """A DM the bot did not know at connect (a person opened it later; bots cannot open DMs):
    the first message's room is read once (GetRoom) and answered flat."""
    from hermes_chatto.wire.types import ChattoRoom

    u = await unit()
    new_dm = "Rdmnew00000000b"
    u.server.rooms[new_dm] = ChattoRoom(id=new_dm, kind="dm", is_member=True)
    await u.adapter.inbound.on_event(RoomChanged(kind="user_joined_room", room_id=new_dm, actor_id=BOT.id))
    m = u.server.post(BOB, new_dm, "hello, are you there?")
    await u.adapter.inbound.on_event(posted(m, room_kind="dm"))
    await wait_for(lambda: u.agent.calls, what="turn in the new DM")
    await u.idle()
    assert [c.message for c in u.agent.calls] == ["hello, are you there?"]
    assert u.agent.calls[0].source.chat_type == "dm" and u.bot_msgs()[0].thread_root_event_id == ""


async def test_downtime_beyond_the_resume_window_is_recovered_once(unit):
    """``caught_up`` with recovery ``snapshot`` after a gap: the mention posted meanwhile is
    read from the notifications and answered once; a second caught_up answers nothing again."""
    from hermes_chatto.wire.notices import MessageNotice

    u = await unit()
    missed = u.server.post(ALICE, GENERAL, "@helper_bot are you back?")
    notice = MessageNotice("direct_mention_received", GENERAL, missed.event_id, "", ALICE.id, True, missed.created_at)

    async def list_notifications(*, offset=0, limit=100):
        return ((notice,) if offset == 0 else ()), False

    client = u.adapter.conn.client
    client.list_notifications = list_notifications

    async def get_room_events(room_id, *, limit=None, **kw):
        from hermes_chatto.wire.types import TimelinePage

        return TimelinePage()

    client.get_room_events = get_room_events
    gap = u.adapter.gap
    gap.horizon_s = 4e8  # the fake server's clock stands in 2023
    await u.adapter.inbound.on_event(CaughtUp(cursor="c2", recovery="snapshot"))
    assert gap.task is None  # this process never saw a cursor and loaded none: nothing to recover
    u.adapter.cursor.seen_at = missed.created_at - 10
    await u.adapter.inbound.on_event(CaughtUp(cursor="c3", recovery="snapshot"))
    await gap.task
    await wait_for(lambda: u.bot_msgs(), what="answer to the missed mention")
    await u.idle()
    await u.adapter.inbound.on_event(CaughtUp(cursor="c4", recovery="live_only"))
    await gap.task
    await u.idle()
    assert len(u.agent.calls) == 1 and u.agent.calls[0].message.endswith("@helper_bot are you back?")


async def test_a_renamed_person_or_one_turned_bot_is_named_and_gated_anew(unit, monkeypatch):
    """Issue 27: the sender name derived from a user is kept per user object
    (``UserDirectory.names``). A ``user_profile_changed`` makes the next turn read the user
    again: the new name reaches the session source, and a person whose account became a bot's
    is gated as a bot (default ``allow_bots: none``: no turn)."""
    from hermes_chatto.wire.events import UserChanged
    from hermes_chatto.wire.types import ChattoUser

    from support import fakes

    u = await unit()
    await u.inbound(ALICE, DM, "hello")
    await wait_for(lambda: len(u.agent.calls) == 1, what="first turn")
    await u.idle()
    assert u.agent.calls[0].source.user_name == "Alice"
    renamed = ChattoUser(id=ALICE.id, login="alice", display_name="Alice (renamed)")
    monkeypatch.setitem(fakes.USERS, ALICE.id, renamed)
    await u.adapter.inbound.on_event(UserChanged("user_profile_changed", ALICE.id))
    await u.inbound(ALICE, DM, "again")
    await wait_for(lambda: len(u.agent.calls) == 2, what="second turn")
    await u.idle()
    assert u.agent.calls[1].source.user_name == "Alice (renamed)"
    monkeypatch.setitem(
        fakes.USERS, ALICE.id, ChattoUser(id=ALICE.id, login="alice", display_name="Alice", is_bot=True)
    )
    await u.adapter.inbound.on_event(UserChanged("user_profile_changed", ALICE.id))
    dropped = u.adapter.stats["dropped"]
    await u.inbound(ALICE, DM, "now a bot")
    await u.idle()
    assert len(u.agent.calls) == 2 and u.adapter.stats["dropped"] == dropped + 1
