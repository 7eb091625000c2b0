"""A gateway killed without a clean shutdown (SIGKILL, or Ctrl-C whose drain timed out)
leaves no ``.clean_shutdown`` marker; hermes-agent 0.19.0 then marks EVERY session updated
in the last 120 s ``resume_pending`` (``SessionStore.suspend_recently_active``) and, once
the adapter is up, sends each an empty internal "auto-resume" turn through
``adapter.handle_message`` (``GatewayRunner._schedule_resume_pending_sessions``). A thread
whose turn was already answered must get nothing from that: no second reply, no leaked
recovery note. Real ``hermes gateway run``, local Chatto, scripted model."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(240),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", turn_timeout=30.0) as harness:
        yield harness


def _sigkill(h: Harness) -> None:
    """Kill the gateway's process group with SIGKILL: no drain, no ``.clean_shutdown``."""
    g = h.gateway
    assert g is not None and g.proc is not None
    os.killpg(g.proc.pid, signal.SIGKILL)
    g.proc.wait(10)
    g.proc = None


def _cursor_persisted_past(h: Harness, event_id: str, since: float) -> bool:
    """The plugin's state file holds ``event_id`` in the seen-set and a cursor written
    after ``since`` (epoch s): a restart will not replay the message."""
    path = h.home / "chatto" / "state.sqlite3"
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        seen = con.execute("SELECT 1 FROM seen WHERE event_id = ?", (event_id,)).fetchone()
        row = con.execute("SELECT MAX(updated_at) FROM realtime_cursor").fetchone()
    except sqlite3.Error:
        return False
    finally:
        con.close()
    return seen is not None and row is not None and row[0] is not None and float(row[0]) > since


async def test_sigkill_restart_posts_nothing_into_answered_threads(h: Harness):
    a = await h.turn("answered-a", "general", f"@{h.bot_login} first question about the backups")
    b = await h.turn("answered-b", "general", f"@{h.bot_login} second question about the rota")
    answered = {t.trigger.event_id: len(t.replies) for t in (a, b)}
    assert all(answered.values())
    _sigkill(h)
    await h.start_gateway()
    log = h.gateway.log_path
    # The host did treat the answered sessions as restart-interrupted (else this test
    # would prove nothing).
    await wait_until(
        lambda: "as resumable from previous run" in log.read_text(errors="replace"),
        timeout=30,
        what="the host to mark the recent sessions resumable",
    )
    await wait_until(
        lambda: "Scheduled auto-resume for" in log.read_text(errors="replace"),
        timeout=30,
        what="the host to send its auto-resume turns",
    )

    async def settled() -> bool:
        """Each resumed session either was declined by the plugin or got its extra reply."""
        declined = log.read_text(errors="replace").count("declined: its last turn was answered")
        grown = 0
        for t in (a, b):
            msgs = await h.bot_messages_since(t.trigger)
            grown += len([m for m in msgs if m.thread_key == t.trigger.thread_key]) > answered[t.trigger.event_id]
        return declined + grown >= 2

    await wait_until(settled, timeout=60, what="both resumed sessions to be declined or answered")
    await h.wait_idle()
    for t in (a, b):
        now = await h.bot_messages_since(t.trigger)
        thread = [m for m in now if m.thread_key == t.trigger.thread_key]
        bodies = [m.body for m in thread]
        assert len(thread) == answered[t.trigger.event_id], f"answered thread got more: {bodies}"
        assert not any("unfinished work" in (x or "") for x in bodies), bodies
    # A fresh turn after the restart still works (the resume turns have run).
    c = await h.turn("after-restart", "general", f"@{h.bot_login} third question after the restart")
    assert c.replies


async def test_turn_killed_while_retrying_is_resumed_once_in_its_thread_with_reactions(h: Harness):
    """The tester's case: a turn waits on a model that does not answer, the gateway is
    killed; after the restart that trigger is answered once, in its own thread, and ends
    with ✅ (not a bare 👀-less trigger); an earlier answered thread gets nothing."""
    model = h.started_model
    done = await h.turn("answered-before", "general", f"@{h.bot_login} a question answered before the kill")
    n_done = len(done.replies)
    model.push({"delay": 20})  # the model hangs: the turn is in flight when the kill comes
    n0 = len(model.chat_requests())
    posted_at = time.time()
    stuck = await h.post("general", f"@{h.bot_login} the question the kill interrupts")
    await wait_until(lambda: len(model.chat_requests()) > n0, timeout=30, what="the hanging model to be called")
    # The tester's turn hung long enough for the plugin to persist the realtime cursor past
    # the trigger (every <= 2 s): a restart does not replay it, only the host resumes it.
    await wait_until(
        lambda: _cursor_persisted_past(h, stuck.event_id, posted_at),
        timeout=30,
        what="the resume cursor persisted past the trigger",
    )
    _sigkill(h)
    await h.start_gateway()

    async def answered() -> list | None:
        msgs = [m for m in await h.bot_messages_since(stuck) if m.thread_key == stuck.thread_key]
        return msgs or None

    replies = await wait_until(answered, timeout=60, what="the interrupted trigger's answer")
    after = await h.turn("after-kill", "general", f"@{h.bot_login} a new question after the kill")
    assert after.replies
    await h.wait_idle()
    replies = [m for m in await h.bot_messages_since(stuck) if m.thread_key == stuck.thread_key]
    assert len(replies) == 1, [m.body for m in replies]
    trig = h.chatto.state.messages[stuck.event_id]
    assert h.bot_id in (trig.reactions.get("white_check_mark") or ()), trig.reactions
    assert h.bot_id not in (trig.reactions.get("eyes") or ()), trig.reactions
    earlier = [m for m in await h.bot_messages_since(done.trigger) if m.thread_key == done.trigger.thread_key]
    assert len(earlier) == n_done, [m.body for m in earlier]
