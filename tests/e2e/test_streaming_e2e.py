"""Streaming on (``streaming: {enabled: true}`` in ``config.yaml``): what a person in the
room sees, with the REAL ``hermes gateway run`` (hermes-agent 0.19.0, its stream consumer
driving the adapter's ``send`` / ``edit_message``), the local Chatto server and the
scripted model (hermes_chatto.testing.harness).

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

from hermes_chatto.delivery import DEFAULT_CHUNK_BYTES, split_body
from hermes_chatto.testing.harness import Harness, utf8_len
from hermes_chatto.testing.scripted_model import long_reply
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
    assert long_reply  # the model's long answer (scripted_model.long_reply) is the text
