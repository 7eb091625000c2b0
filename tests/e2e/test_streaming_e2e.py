"""Streaming on (``streaming: {enabled: true}`` in ``config.yaml``): what a person in the
room sees, with the REAL ``hermes gateway run`` (hermes-agent 0.19.0, its stream consumer
driving the adapter's ``send`` / ``edit_message``), the local Chatto server and the
scripted model (chatto_local.harness).

The reported bug: a ~25 kB answer to a channel mention was posted twice in its thread
(six bot messages where three are expected): the host's stream consumer split and sent
the text itself before the end of the stream, never marked the final answer delivered,
and the gateway's normal send posted it again.

Each test asserts the messages in Chatto: how many, their bodies (reassembling to the
model's text, nothing twice), where they are (DM flat, thread under the mention).
Waiting is condition-based (the harness' turn waits); no fixed sleeps.
"""

from __future__ import annotations

import math

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, utf8_len, wait_until
from chatto_local.scripted_model import is_own_line, long_reply
from hermes_chatto.delivery import DEFAULT_CHUNK_BYTES, split_body
from hermes_chatto.wire.types import MAX_BODY_BYTES

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(240),
]

STREAMING = {"streaming": {"enabled": True, "edit_interval": 0.3}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", turn_timeout=45.0, extra_config=STREAMING) as harness:
        yield harness


def _squash(s: str) -> str:
    return "".join((s or "").split())


def _answer(h: Harness, marker: str) -> str:
    return next(r.reply for r in reversed(h.started_model.chat_requests()) if r.reply and marker in r.reply)


async def test_short_dm_answer_is_one_message_edited_to_the_final_text(h: Harness):
    t = await h.turn("stream-dm", "dm", "Who are you, streaming edition?")
    answer = t.requests[-1].reply if t.requests else ""
    await h.wait_idle()
    msgs = await h.bot_messages_since(t.trigger)
    assert len(msgs) == 1, [m.body for m in msgs]
    assert msgs[0].body == answer
    assert not msgs[0].thread_root_event_id  # DMs are flat


async def test_long_thread_answer_is_posted_exactly_once(h: Harness):
    t = await h.turn("stream-long", "general", "@helper_bot please give me the long answer, streamed")
    answer = _answer(h, "LONG-ANSWER")
    await h.wait_idle()
    msgs = await h.bot_messages_since(t.trigger)
    bodies = [m.body or "" for m in msgs]
    size = utf8_len(answer)
    assert size >= 20_000
    expected = math.ceil(size / DEFAULT_CHUNK_BYTES)
    assert len(split_body(answer)) == expected
    assert len(msgs) == expected, f"{len(msgs)} bot messages (expected {expected}): {[len(b) for b in bodies]}"
    assert all(utf8_len(b) <= MAX_BODY_BYTES for b in bodies)
    assert {m.thread_root_event_id for m in msgs} == {t.trigger.event_id}
    assert _squash("".join(bodies)) == _squash(answer)
    assert answer.count("L001 ") == 1 and "".join(bodies).count("L001 ") == 1


def _typed_long_answer(tag: str) -> dict:
    """A scripted ≈25 kB answer streamed in 400-character chunks 50 ms apart (≈2 s), so the
    stream consumer posts a preview and edits it several times before the end."""
    return {"content": long_reply(tag), "chunk_delay": 0.05}


async def _assert_long_once(h: Harness, t, answer: str) -> list:
    await h.wait_idle()
    msgs = await h.bot_messages_since(t.trigger)
    bodies = [m.body or "" for m in msgs]
    expected = math.ceil(utf8_len(answer) / DEFAULT_CHUNK_BYTES)
    assert len(msgs) == expected, f"{len(msgs)} bot messages (expected {expected}): {[utf8_len(b) for b in bodies]}"
    assert all(utf8_len(b) <= MAX_BODY_BYTES for b in bodies)
    assert {m.thread_root_event_id for m in msgs} == {t.trigger.event_id}
    assert _squash("".join(bodies)) == _squash(answer), "the bodies reassemble to the model's text"
    return msgs


async def test_typed_long_answer_previews_then_splits_once(h: Harness):
    edits0 = len(h.chatto.requests_for("/UpdateMessage"))
    h.started_model.push(_typed_long_answer("typed"))
    t = await h.turn("stream-typed", "general", "@helper_bot type the long answer slowly please")
    answer = _answer(h, "LONG-ANSWER typed")
    msgs = await _assert_long_once(h, t, answer)
    # the preview was edited while the model typed (and then became chunk 1)
    assert len(h.chatto.requests_for("/UpdateMessage")) - edits0 >= 2
    assert msgs[0].is_edited, "the first message is the edited preview"


async def test_edit_that_fails_mid_stream_still_delivers_the_answer_once(h: Harness):
    # Chatto's answer to an edit after the 3-hour window (cli/internal/core/errors.go
    # ErrEditWindowExpired → failed_precondition), on the 2nd edit of the preview
    h.chatto.fail_rpc("UpdateMessage", nth=2, code="failed_precondition", message="edit window has expired")
    deletes0 = len(h.chatto.requests_for("/DeleteMessage"))
    h.started_model.push(_typed_long_answer("edit-fails"))
    t = await h.turn("stream-edit-fails", "general", "@helper_bot the long answer again, typed")
    answer = _answer(h, "LONG-ANSWER edit-fails")
    await _assert_long_once(h, t, answer)
    # the frozen preview was replaced by the final messages and retracted
    assert len(h.chatto.requests_for("/DeleteMessage")) - deletes0 == 1


async def test_slow_mode_during_the_final_split_waits_and_posts_once(h: Harness):
    room = h.rooms["general"]
    h.chatto.set_slow_mode(room, 2)
    try:
        rec = h.chatto.state.room(room)
        await wait_until(
            lambda: h.chatto.state.slow_mode_deadline(h.bot_id, rec) is None,
            timeout=10,
            what="the bot's slow-mode deadline from earlier tests to pass",
        )
        creates0 = len(h.chatto.requests_for("/CreateMessage"))
        h.started_model.push(_typed_long_answer("slow-mode"))
        t = await h.turn("stream-slow", "general", "@helper_bot long answer under slow mode")
        answer = _answer(h, "LONG-ANSWER slow-mode")
        msgs = await _assert_long_once(h, t, answer)
        creates = len(h.chatto.requests_for("/CreateMessage")) - creates0
        # alice's trigger + the bot's messages + at least one post slow mode refused
        assert creates > 1 + len(msgs), "slow mode refused a continuation (and the adapter waited for it)"
    finally:
        h.chatto.set_slow_mode(room, 0)


async def test_restart_right_after_a_streamed_answer_does_not_quote_it_back(h: Harness):
    h.started_model.push({"content": "Streamed plan: step one, step two, step three. " * 20, "chunk_delay": 0.05})
    t1 = await h.turn("stream-restart-1", "general", "@helper_bot outline the plan, streamed")
    root = t1.trigger.event_id
    assert len(t1.replies) == 1
    await h.restart_gateway()
    t2 = await h.turn("stream-restart-2", "general", "and after the restart, what is step two?", thread_root=root)
    assert not any(is_own_line(ln) for ln in t2.block_lines), t2.block_lines
    assert "Streamed plan" not in (t2.block or "")


async def test_a_tool_call_between_two_streamed_segments_shows_each_once(h: Harness):
    h.started_model.push(
        {
            "content": "Let me look that up first.",
            "tool_calls": [{"name": "terminal", "arguments": {"command": "echo hi"}}],
        },
        {"content": "The check says hi. " * 30, "chunk_delay": 0.02},
    )
    t = await h.turn("stream-tool", "general", "@helper_bot check something with a tool, streamed")
    await h.wait_idle()
    msgs = await h.bot_messages_since(t.trigger)
    bodies = [m.body or "" for m in msgs]
    assert sum("Let me look that up first." in b for b in bodies) <= 1, bodies
    final = ("The check says hi. " * 30).strip()
    assert sum(_squash(final) in _squash(b) for b in bodies) == 1, bodies
    assert {m.thread_root_event_id for m in msgs} == {t.trigger.event_id}


async def test_a_streamed_answer_the_server_refuses_ends_with_failed_only(h: Harness):
    """Seen on a real server with streaming on: an answer Chatto refuses (zero-width spaces
    only: no visible content) posted nothing, yet the trigger showed ✅ beside ❌ (the host
    ran the message twice: first reported a success, then a failure)."""
    h.started_model.push({"content": "\u200b\u200b\u200b"})
    await h.wait_idle()
    trigger = await h.post("general", "@helper_bot this streamed answer will not land")
    eid = trigger.event_id

    def bots() -> set[str]:
        m = h.chatto.state.messages[eid]
        return {k for k, users in m.reactions.items() if h.bot_id in users}

    await wait_until(lambda: "x" in bots(), timeout=45, what="❌ on the trigger")
    await h.wait_idle()
    assert bots() == {"x"}, bots()
    assert not [m for m in await h.bot_messages_since(trigger) if (m.body or "").strip("\u200b")]
