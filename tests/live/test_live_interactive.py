"""Streaming, lifecycle reactions, exec approvals and other bots (issue 14) against a REAL
Chatto server: the real ``hermes gateway run`` with ``streaming: {enabled: true}``, the
scripted model, people acting over the API, every check read back over the API as alice.
The same scenarios as tests/e2e/test_streaming_e2e.py, test_lifecycle_e2e.py,
test_approvals_e2e.py and test_other_bots_e2e.py where a real server can run them (faults
inside the server cannot be injected; a failed turn is an answer the real server refuses).

Skipped, with the reason, unless ``CHATTO_LIVE_URL`` / ``CHATTO_LIVE_LOGIN`` /
``CHATTO_LIVE_PASSWORD`` name a server (README: "Check against your own Chatto server").
"""

from __future__ import annotations

import math

import pytest
import pytest_asyncio

from chatto_local.harness import utf8_len, wait_until
from chatto_local.scripted_model import long_reply, split_context
from hermes_chatto.delivery import DEFAULT_CHUNK_BYTES
from hermes_chatto.wire.connect import ChattoClient
from hermes_chatto.wire.types import MAX_BODY_BYTES

from support.live import LiveHarness, reactions_of

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

STREAMING = {"streaming": {"enabled": True, "edit_interval": 0.3}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h(live_cfg):
    # everyone authorised (CHATTO_ALLOW_ALL_USERS), so another bot is stopped by allow_bots only
    harness = LiveHarness(live_cfg, turn_timeout=60.0, extra_config=STREAMING, allow_all_users=True)
    try:
        await harness.start()
        yield harness
    finally:
        if harness.model is not None:
            harness.holding_model.release()
        await harness.stop()
        assert not (harness.live and harness.live.cleanup_errors), harness.live.cleanup_errors


def _squash(s: str) -> str:
    return "".join((s or "").split())


async def _bot_reactions(h: LiveHarness, room_id: str, event_id: str) -> set[str]:
    return {r["emoji"] for r in await reactions_of(h, room_id, event_id) if h.bot_id in (r.get("previewUserIds") or [])}


# ----------------------------------------------------------------------------- streaming


async def test_streamed_short_dm_answer_is_one_message_edited_to_the_final_text(h: LiveHarness):
    h.started_model.push({"content": "Streamed hello: " + "a short answer, typed. " * 12, "chunk_delay": 0.05})
    t = await h.turn("stream-dm", "dm", "Who are you, streaming edition?")
    answer = t.requests[-1].reply if t.requests else ""
    await h.wait_idle()
    msgs = await h.bot_messages_since(t.trigger)
    assert len(msgs) == 1, [m.body for m in msgs]
    assert msgs[0].body == answer and not msgs[0].thread_root_event_id
    assert msgs[0].is_edited, "the preview was edited into the final text"


async def test_streamed_25_kB_thread_answer_is_posted_exactly_once(h: LiveHarness):
    h.started_model.push({"content": long_reply("live-streamed"), "chunk_delay": 0.05})
    t = await h.turn("stream-long", "general", f"@{h.bot_login} type the long answer slowly please")
    answer = long_reply("live-streamed")
    await h.wait_idle()
    msgs = await h.bot_messages_since(t.trigger)
    bodies = [m.body or "" for m in msgs]
    expected = math.ceil(utf8_len(answer) / DEFAULT_CHUNK_BYTES)
    assert utf8_len(answer) >= 20_000
    assert len(msgs) == expected, f"{len(msgs)} bot messages (expected {expected}): {[utf8_len(b) for b in bodies]}"
    assert all(utf8_len(b) <= MAX_BODY_BYTES for b in bodies)
    assert {m.thread_root_event_id for m in msgs} == {t.trigger.event_id}
    assert _squash("".join(bodies)) == _squash(answer), "the bodies reassemble to the model's text"
    assert "".join(bodies).count("L001 ") == 1, "nothing twice"
    assert msgs[0].is_edited, "the first message is the edited preview"


# ----------------------------------------------------------------------------- lifecycle reactions


async def test_a_successful_turn_ends_with_done_and_no_eyes(h: LiveHarness):
    t = await h.turn("react-ok", "general", f"@{h.bot_login} how are the builds?")

    async def done():
        got = await _bot_reactions(h, t.room_id, t.trigger.event_id)
        return got if got == {"white_check_mark"} else None

    await wait_until(done, timeout=30, what="✅ only on the trigger (👀 taken back)")


async def test_a_failed_turn_ends_with_failed_and_no_eyes(h: LiveHarness):
    """The model answers only zero-width spaces: the real server refuses that body
    (``invalid_argument``: no visible content, core/messages.go), the answer cannot be
    delivered, the turn fails, and the trigger ends with ❌ only. (A provider error does not
    do it: hermes-agent 0.19.0 then delivers its own warning and counts the turn a success.)"""
    await h.wait_idle()
    h.started_model.push({"content": "\u200b\u200b\u200b"})
    trigger = await h.post("general", f"@{h.bot_login} this answer will not land")
    seen: list[set[str]] = [set()]

    async def failed():
        seen[0] = await _bot_reactions(h, trigger.room_id, trigger.event_id)
        return seen[0] if seen[0] == {"x"} else None

    try:
        await wait_until(failed, timeout=90, what="❌ only on the trigger")
    except TimeoutError as exc:
        posted = [m.body for m in await h.bot_messages_since(trigger)]
        raise AssertionError(f"{exc}: the bot's reactions {seen[0]}, its posts {posted}") from None
    await h.wait_idle()
    assert not [m for m in await h.bot_messages_since(trigger) if (m.body or "").strip("\u200b")]


# ----------------------------------------------------------------------------- exec approvals


async def test_an_exec_approval_answered_by_reaction_runs_the_command(h: LiveHarness):
    target = h.run_dir / "target-approve"
    target.mkdir()
    h.started_model.push(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": f"rm -rf {target}"}}]},
        "Cleaned up: the directory is gone.",
    )
    await h.wait_idle()
    trigger = await h.post("general", f"@{h.bot_login} please clean up target-approve")

    async def prompt():
        for m in await h.bot_messages_since(trigger):
            if "Approval needed" in (m.body or ""):
                return m
        return None

    p = await wait_until(prompt, timeout=60, what="the approval prompt")
    assert p.thread_root_event_id == trigger.event_id and f"rm -rf {target}" in (p.body or "")

    async def answers_on_it():
        got = await _bot_reactions(h, p.room_id, p.event_id)
        return got if {"white_check_mark", "x"} <= got else None

    await wait_until(answers_on_it, timeout=30, what="the answer reactions on the prompt (accepted by the server)")
    # bob did not ask: his ✅ is ignored; alice's ✅ runs it
    await h.client("bob").add_reaction(p.room_id, p.event_id, "white_check_mark")
    await h.client("alice").add_reaction(p.room_id, p.event_id, "white_check_mark")

    async def landed():
        return any("Cleaned up: the directory is gone." in (m.body or "") for m in await h.bot_messages_since(trigger))

    await wait_until(landed, timeout=60, what="the agent's answer after the approval")
    await h.wait_idle()
    assert not target.exists()
    prompt_now = next(m for m in await h.read_thread("general", trigger.event_id) if m.event_id == p.event_id)
    assert "Approved once by Alice" in (prompt_now.body or ""), prompt_now.body


# ----------------------------------------------------------------------------- other bots


async def test_another_bots_mention_starts_no_turn_by_default(h: LiveHarness):
    """``allow_bots`` defaults to ``none``: a second bot account (created through the real
    ``BotService``, authorised like alice) @mentions this bot; no turn starts. Fence: alice's
    next mention is answered by the same gateway, whose socket delivers in order."""
    assert h.live is not None
    other = await h.live.create_bot("other", "Other Bot", rooms=("general",))
    n0 = len(h.started_model.turn_requests())
    async with ChattoClient(h.live.base_url, other.key, timeout=20.0) as as_other:
        ask = await as_other.create_message(h.rooms["general"], f"@{h.bot_login} what is the deploy status?")
    t = await h.turn("after-bot", "general", f"@{h.bot_login} fence: are you there?")
    assert t.replies
    triggers = [split_context(r.user_text)[1] for r in h.started_model.turn_requests()[n0:]]
    assert not any("deploy status" in x for x in triggers), triggers
    assert not [m for m in await h.read_thread("general", ask.event_id) if m.author_id == h.bot_id]
