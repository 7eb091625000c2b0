"""What a person sees when a turn fails, and when the room refuses thread replies, with
the REAL ``hermes gateway run``, the local Chatto server and the scripted model, streaming
off and on (each test runs once per mode; one gateway per mode).

The reported bugs (fresh-user tester, hermes-agent 0.19.0):

* the model provider is down (the scripted model is stopped: every connection is
  refused): the bot posted the host's "⚠️ The model provider failed after retries…" twice
  in the same second, and the trigger ended with ✅. The host posts it twice: the agent's
  ``_emit_status("❌ API failed after N retries — …")`` (``agent/conversation_loop.py``)
  goes to ``adapter.send`` through the status callback (``gateway/run.py``
  ``_status_callback_sync``), rewritten by ``_prepare_gateway_status_message`` to that
  warning; then the failed turn's final response "API call failed after N retries: …" is
  rewritten by ``_sanitize_gateway_final_response`` to the same warning and sent as the
  reply. And ``BasePlatformAdapter._process_message_background`` reports SUCCESS whenever
  the final send succeeded, whatever the agent's ``failed``.
* streaming on, the bot loses ``message.post-in-thread``: the channel fallback's one-line
  note was edited away by the stream's final edit, so nobody saw it.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until
from hermes_chatto.adapter.failures import PROVIDER_FAILURE_NOTICES
from hermes_chatto.adapter.send import THREAD_FALLBACK_NOTE

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

GENERIC = next(n for n in PROVIDER_FAILURE_NOTICES if "failed after retries" in n)
STREAMING = {"streaming": {"enabled": True, "edit_interval": 0.3}}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["streaming-off", "streaming-on"])
async def h(request):
    extra = STREAMING if request.param == "streaming-on" else {}
    async with Harness(mode="subprocess", turn_timeout=45.0, extra_config=extra) as harness:
        yield harness


def _bots(h: Harness, event_id: str) -> set[str]:
    m = h.chatto.state.messages[event_id]
    return {k for k, users in m.reactions.items() if h.bot_id in users}


async def test_provider_down_warns_once_and_the_trigger_ends_failed(h: Harness):
    model = h.started_model
    await h.wait_idle()
    port = int(model.base_url.rsplit(":", 1)[1].split("/")[0])
    model.stop()  # a stopped provider: every connection refused
    try:
        trigger = await h.post("general", "@helper_bot model is down")
        eid = trigger.event_id

        async def warned() -> bool:
            return any(m.body == GENERIC for m in await h.bot_messages_since(trigger))

        await wait_until(warned, timeout=150, interval=0.2, what="the provider-failure warning")
        # the turn's end: 👀 taken back and a final reaction in its place
        await wait_until(
            lambda: bool(_bots(h, eid)) and "eyes" not in _bots(h, eid),
            timeout=60,
            what=f"the turn's final reaction ({_bots(h, eid)})",
        )
        await h.wait_idle()
    finally:
        model.start(port=port)
    bodies = [m.body for m in await h.bot_messages_since(trigger)]
    assert bodies == [GENERIC], bodies  # exactly once
    assert _bots(h, eid) == {"x"}, _bots(h, eid)
    # the bot still answers once the provider is back
    t = await h.turn("provider-back", "general", "@helper_bot are you back?")
    assert t.replies and _bots(h, t.trigger.event_id) <= {"white_check_mark", "eyes"}


async def test_lost_thread_permission_note_appears_once(h: Harness):
    general = h.rooms["general"]
    await h.wait_idle()
    # message.post includes post-in-interactions on Chatto 0.5 (a reply in the thread of a
    # mention): both must go for the answer to fall back to the channel
    h.chatto.revoke(general, h.bot_id, "message.post-in-thread", "message.post-in-interactions")
    try:
        notes = []
        for label in ("no-thread-1", "no-thread-2"):
            t = await h.turn(label, "general", f"@helper_bot {label}: what is the backup status?")
            assert t.replies and all(not m.thread_root_event_id for m in t.replies), label
            assert h.thread("general", t.trigger.event_id) == []
            notes += [m.body for m in t.replies if m.body.startswith(THREAD_FALLBACK_NOTE.strip()[:30])]
        assert len(notes) == 1, notes  # once per room, on the first answer
    finally:
        h.chatto.grant(general, h.bot_id, "message.post-in-thread")
