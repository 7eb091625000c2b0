"""Lifecycle reactions, as a person in the room sees them on their message, with the REAL
``hermes gateway run``, the local Chatto server and the scripted model: 👀 while the turn
runs, then ✅ (done) or ❌ (failed) with the 👀 taken back — on by default, as Hermes' own
Slack and Discord adapters do it.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", turn_timeout=45.0) as harness:
        yield harness


def _reactions(h: Harness, event_id: str) -> dict[str, list[str]]:
    """``shortcode → user ids`` on a message, from the server state."""
    m = h.chatto.state.messages[event_id]
    return {k: list(v) for k, v in m.reactions.items()}


def _bots(h: Harness, event_id: str) -> set[str]:
    return {k for k, users in _reactions(h, event_id).items() if h.bot_id in users}


async def test_a_successful_turn_ends_with_done_and_no_eyes(h: Harness):
    t = await h.turn("react-ok", "general", "@helper_bot how are the builds?")
    eid = t.trigger.event_id
    await wait_until(lambda: _bots(h, eid) == {"white_check_mark"}, timeout=20, what=f"✅ only ({_reactions(h, eid)})")
    assert h.chatto.requests_for("/RemoveReaction"), "the accepted 👀 was taken back"


async def test_a_failed_turn_ends_with_failed_and_no_eyes(h: Harness):
    await h.wait_idle()
    trigger = await h.post("general", "@helper_bot this answer will not land")
    # the answer cannot be posted: every CreateMessage of the reply (and the host's
    # plain-text retry) is refused; installed right after the person's post, long before
    # the model answers
    for _ in range(4):
        h.chatto.fail_create_message(1, code="invalid_argument", message="message must have a body or attachments")
    eid = trigger.event_id
    await wait_until(lambda: _bots(h, eid) == {"x"}, timeout=45, what=f"❌ only ({_reactions(h, eid)})")
    await h.wait_idle()
    assert not await h.bot_messages_since(trigger), "nothing was posted"
    h.chatto._faults.clear()
