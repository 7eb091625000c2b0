"""A thread reply in a room the bot's realtime socket does not retain (issue 13 item 1),
against a REAL Chatto server.

A socket retains at most 64 rooms. The bot here is in 65 channels and a DM: ``#hc-<tag>`` and
63 filler channels are listed in ``retained_rooms`` (so they fill the socket), and
``#hc-<tag>-cold`` is left out. The real server sends no ``room_activity`` for thread
replies (``cli/internal/http_server/realtime_projection.go``), only a viewer-state change of
a followed thread (``thread_viewer_states_replace``) and, after a mention, a notification:
alice's reply in the bot's thread there must still reach the bot.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from support.live import LiveHarness

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(600)]

FILLERS = 63


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h(live_cfg):
    # Not the DM: an empty DM is not in ListRooms (connectapi/room_directory.go), so listing
    # it would leave a slot that the cold room then takes.
    retain = ("general",) + tuple(f"filler-{n}" for n in range(FILLERS))
    harness = LiveHarness(live_cfg, fillers=FILLERS, extra_rooms=("cold",), retain_first=retain, turn_timeout=60.0)
    try:
        await harness.start()
        yield harness
    finally:
        await harness.stop()


async def test_the_cold_room_is_not_retained(h: LiveHarness):
    """The set-up holds: more rooms than a socket retains, and the gateway says so."""
    assert len(h.rooms) == FILLERS + 3
    assert "retains at most 64" in h.gateway_log()


async def test_root_mention_in_an_unretained_room_is_answered(h: LiveHarness):
    t = await h.turn("cold-root", "cold", f"@{h.bot_login} are you there in the cold room?")
    assert t.replies and all(m.thread_root_event_id == t.trigger.event_id for m in t.replies)
    h.cold_root = t.trigger.event_id  # type: ignore[attr-defined]


async def test_thread_reply_in_an_unretained_room_is_answered(h: LiveHarness):
    root = getattr(h, "cold_root", "")
    assert root, "the root mention was not answered"
    h.turn_timeout = 45.0
    t = await h.turn("cold-reply", "cold", "and a follow-up in your thread, no mention", thread_root=root)
    assert t.replies and all(m.thread_root_event_id == root for m in t.replies)
