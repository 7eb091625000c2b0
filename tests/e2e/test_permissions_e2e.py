"""Missing room permissions, end to end: local Chatto + the REAL ``hermes gateway run`` +
the scripted model, across a gateway restart.

What hermes-agent 0.19.0 does with a reply whose send failed: ``BasePlatformAdapter.
_process_message_background`` records the final reply in the delivery ledger (``state.db``
``delivery_obligations``) before sending and marks it ``failed`` whenever the
``SendResult`` is not ``success`` — whatever ``error_kind``/``retryable`` say. At the next
start ``GatewayRunner._redeliver_pending_obligations`` sends every ``failed`` row again
with "♻️ Recovered reply — the gateway restarted during delivery…" in front. So the adapter
itself has to keep a refused reply from coming back (see ``adapter/send.py``).

What a person in the room sees is read from the server's state (as alice).
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until
from hermes_chatto.adapter.send import HOST_RECOVERED_PREFIX, THREAD_FALLBACK_NOTE

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(240),
]

THREAD = "message.post-in-thread"
# On Chatto 0.5 ``message.post`` also includes post-in-interactions, which lets the bot reply in
# the thread of a message that mentioned it: both must go for the answer to fall back to the channel.
INTERACTIONS = "message.post-in-interactions"
POST = "message.post"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    harness = Harness(mode="subprocess", turn_timeout=45.0)
    try:
        # the room lacks thread replies before the gateway starts: the connect warning
        await harness.start(
            before_gateway=lambda: harness.chatto.revoke(harness.rooms["general"], harness.bot_id, THREAD, INTERACTIONS)
        )
        yield harness
    finally:
        await harness.stop()


def _log(h: Harness) -> str:
    assert h.gateway is not None
    return h.gateway.log_path.read_text(errors="replace")


def _everything_alice_sees(h: Harness) -> list[str]:
    """Every message body in #general, top level and in every thread (as alice)."""
    out = []
    for m in h.room_messages("general"):
        out.append(m.body or "")
        try:
            out += [r.body or "" for r in h.thread("general", m.event_id)]
        except KeyError:
            pass
    return out


def _obligations(h: Harness) -> list[tuple[str, int, str]]:
    """``(state, attempts, content)`` of the host's delivery-ledger rows."""
    db = h.home / "state.db"
    with sqlite3.connect(db) as c:
        return list(c.execute("SELECT state, attempts, content FROM delivery_obligations"))


async def test_connect_warns_once_per_room_with_the_fix(h: Harness):
    log = _log(h)
    lines = [ln for ln in log.splitlines() if "the bot lacks" in ln]
    assert len(lines) == 1, lines  # #general only: the DM has everything, so nothing
    ln = lines[0]
    assert "#general" in ln and THREAD in ln and "WARNING" in ln
    assert "cannot reply in threads" in ln and "OWNER must hold" in ln and "room settings" in ln


async def test_mention_without_thread_permission_is_answered_in_the_channel(h: Harness):
    t = await h.turn("no-thread", "general", "@helper_bot what is the status of the backup?")
    assert t.replies, "the person gets an answer"
    assert all(not m.thread_root_event_id for m in t.replies), "posted in the channel itself"
    assert t.replies[0].body.startswith(THREAD_FALLBACK_NOTE.strip()[:30])
    assert h.thread("general", t.trigger.event_id) == []
    await wait_until(
        lambda: "Answered in the channel itself instead" in _log(h), timeout=15, what="the refusal to be logged"
    )
    assert "permission_denied in #general" in _log(h)
    # nothing owed: the host's ledger row is delivered, so a restart replays nothing
    rows = _obligations(h)
    assert rows and all(s == "delivered" for s, _a, _c in rows), rows


async def test_refused_reply_is_not_replayed_as_recovered_after_restart(h: Harness):
    room = h.rooms["general"]
    h.chatto.revoke(room, h.bot_id, POST)  # now neither flat nor thread posts
    await wait_until(
        # "message.post (": not the connect warning about message.post-in-thread. The reset
        # after the permission change carries the new rows in room_upsert (issue 13: they
        # used to be ignored when the room was known)
        lambda: _log(h).count(f"the bot lacks {POST} (") >= 1,
        timeout=30,
        what="the viewer-state change to be warned",
    )
    assert h.model is not None
    c0 = len(h.model.chat_requests())
    trigger = await h.post("general", "@helper_bot please summarise the incident")
    before = _everything_alice_sees(h)
    answer = await wait_until(
        lambda: next(
            (r.reply for r in h.model.chat_requests()[c0:] if r.stream and not r.tool_calls and r.reply), None
        ),
        timeout=45,
        what="the model's answer",
    )
    await h.wait_idle()
    await asyncio.sleep(1.0)  # the host's plain-text fallback resend is refused too
    assert await h.bot_messages_since(trigger) == [], "nothing reaches the room"
    log = _log(h)
    assert f"the bot lacks {POST} (the bot cannot post in this room" in log
    assert "The answer was not posted" in log and "Fix: grant" in log
    # one warning per room per permission change, not one per message
    assert log.count(f"in #general ({room}) the bot lacks {POST} (") == 1
    rows = [r for r in _obligations(h) if r[0] == "failed"]
    assert len(rows) == 1, _obligations(h)

    # the admin fixes the permission; the gateway restarts
    h.chatto.grant(room, h.bot_id, POST, THREAD, INTERACTIONS)
    await h.restart_gateway()
    await wait_until(
        lambda: any(s == "failed" and a >= 1 for s, a, _c in _obligations(h)),
        timeout=30,
        what="the host to retry its ledger row",
    )
    await wait_until(
        lambda: "not redelivering the host's recovered reply" in _log(h),
        timeout=30,
        what="the adapter to refuse the replay",
    )
    t = await h.turn("after-restart", "general", "@helper_bot are you back?")
    assert t.replies and all(m.thread_root_event_id == t.trigger.event_id for m in t.replies), (
        "with the permission back, answers go in the thread again"
    )
    seen = _everything_alice_sees(h)
    assert not any(HOST_RECOVERED_PREFIX.strip()[:20] in b for b in seen), "no misleading 'Recovered reply'"
    assert not any(answer.strip()[:40] in b for b in seen), "the refused answer never appears"
    assert len(seen) == len(before) + 2  # only the new mention and its answer
