"""Downtime of any length: what was posted while the gateway was down is handled exactly once.

LocalChatto over real loopback sockets ↔ real ChattoClient / RealtimeSession ↔ ChattoAdapter ↔
real GatewayRunner (only ``_run_agent`` is stubbed). The server's clock is moved forward by the
downtime, so Chatto's 15-minute resume window (``docs/chatto-0.5.md`` §1.3,
``realtime_replay.go``) decides the path:

* **5 minutes**: the stored cursor still resumes; the server replays the missed events before
  ``caught_up`` (``recovery = RESUMED``); the adapter holds them until ``caught_up``;
* **1 hour, 1 day**: the cursor expired, the server resets (``recovery = SNAPSHOT``) and the
  adapter's gap recovery reads notifications and DM timelines.

Either way each conversation gets **one** turn: the newest message, with the earlier ones in its
context (a thread's ``[Earlier in this thread]`` block, a DM's block) — not a string of turns
interrupting each other.

Every case checks: 0 lost (every addressed message reached the agent, as a turn or in a
block), 0 answered twice (no trigger ran twice; a second restart runs nothing new).
"""

from __future__ import annotations

import pytest

from support.host import bot_replies
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(180)


async def _open_thread(gw) -> str:
    w, ids = gw.world, gw.ids
    root = w.post(ids["alice"], ids["general"], "@helper_bot start the release thread").event_id
    await idle(gw, turns=1)
    await wait_for(lambda: bot_replies(gw, ids["general"], root), what="thread reply")
    return root


def _post_while_down(w, ids, root: str) -> dict[str, list]:
    """Addressed messages by conversation, oldest first, and chatter nobody addressed."""
    return {
        "dm": [
            w.post(ids["alice"], ids["dm"], "while down: are you there?"),
            w.post(ids["alice"], ids["dm"], "while down: the deploy key expired"),
        ],
        "thread": [
            w.reply(ids["alice"], ids["general"], root, "while down: step one is done"),
            w.reply(ids["alice"], ids["general"], root, "while down: @helper_bot step two failed, why?"),
            w.reply(ids["alice"], ids["general"], root, "while down: @helper_bot any idea?"),
        ],
        "mention": [w.post(ids["alice"], ids["general"], "@helper_bot while down: a new question")],
        "chatter": [w.post(ids["alice"], ids["general"], "while down: lunch, anyone?")],
    }


def _trigger_of(call, posted: list) -> list[str]:
    return [m.event_id for m in posted if call.message.endswith(m.body)]


@pytest.mark.parametrize(("down_s", "path"), [(300, "replay"), (3600, "recovery"), (86400, "recovery")])
async def test_messages_posted_while_the_gateway_was_down_are_handled_once(gateway, chatto_world, down_s, path):
    gw = await gateway()
    w, ids = gw.world, gw.ids
    root = await _open_thread(gw)
    await gw.stop()
    chatto_world.advance_clock(down_s)
    down = _post_while_down(w, ids, root)
    addressed = down["dm"] + down["thread"] + down["mention"]

    gw2 = await gateway()
    want_turns = 3  # one per conversation: the DM, the thread, the new mention
    await idle(gw2, turns=want_turns, timeout=60)
    calls = gw2.agent.calls
    assert len(calls) == want_turns, [(c.source.thread_id, c.message[-80:]) for c in calls]
    stats = gw2.adapter.stats
    assert stats.get("replay_collapsed" if path == "replay" else "gap_recovered", 0) == 3, stats
    assert stats.get("gap_recovered" if path == "replay" else "replay_collapsed", 0) == 0, stats

    # 0 lost: every addressed message reached the agent, as a trigger or in a turn's context
    # (a block renders a message inert, its @mentions too: look for its own words)
    everything = "\n".join(c.message for c in calls)
    for m in addressed:
        words = m.body.split(": ", 1)[1].replace("@helper_bot ", "")
        assert words in everything, (f"lost: {m.body!r}", [(c.source.thread_id, c.message) for c in calls])
    assert not any(c.message.endswith(down["chatter"][0].body) for c in calls), "chatter started a turn"
    # 0 answered twice: no message is the trigger of two turns
    triggers = [t for c in calls for t in _trigger_of(c, addressed)]
    assert len(triggers) == len(set(triggers)) == want_turns, triggers
    # one turn per conversation: the newest message, the earlier ones in its block
    assert set(triggers) == {down["dm"][-1].event_id, down["thread"][-1].event_id, down["mention"][0].event_id}
    thread_turn = next(c for c in calls if c.message.endswith(down["thread"][-1].body))
    assert "[Earlier in this thread]" in thread_turn.message
    assert "step one is done" in thread_turn.message and "step two failed" in thread_turn.message
    dm_turn = next(c for c in calls if c.message.endswith(down["dm"][-1].body))
    assert "are you there?" in dm_turn.message
    block = dm_turn.message.split("[New message]")[0]
    assert "Alice" in block and ids["alice"] not in block, block  # the author by name, not by id
    # every answer landed where a person looks for it
    await wait_for(lambda: len(bot_replies(gw2, ids["general"], root)) >= 2, what="the thread's answer")
    await gw2.stop()

    # a second restart right away answers nothing again
    gw3 = await gateway()
    w.post(ids["alice"], ids["dm"], "after the restarts")
    await idle(gw3, turns=1, timeout=60)
    assert [c.message for c in gw3.agent.calls][-1].endswith("after the restarts")
    assert len(gw3.agent.calls) == 1, [c.message[-60:] for c in gw3.agent.calls]


async def test_a_gateway_down_for_days_by_its_own_clock_still_recovers(gateway, chatto_world):
    """The stored cursor's age is measured on this machine: after two days it can no longer
    resume (Chatto's cursors live 15 minutes, so it is not even sent) but when it was stored
    still tells gap recovery where to read back to. (Before protocol 4 a cursor older than
    24 h was dropped whole, and with it the point to recover from: nothing was answered.)"""
    import time

    from hermes_chatto.store import ResumeCursorStore

    gw = await gateway()
    w, ids = gw.world, gw.ids
    await _open_thread(gw)
    await gw.stop()
    store = ResumeCursorStore()
    try:
        cursor = store.load_entry(ids["bot"])
        assert cursor is not None and cursor[0]
        store.save(ids["bot"], cursor[0], now=time.time() - 2 * 86400)  # as if stored two days ago
    finally:
        store.close()
    missed = w.post(ids["alice"], ids["general"], "@helper_bot after two days: status?")
    n = len(w.catchups)
    gw2 = await gateway()
    await idle(gw2, turns=1, timeout=60)
    assert [c.message for c in gw2.agent.calls][0].endswith(missed.body)
    assert gw2.adapter.stats.get("gap_recovered", 0) == 1
    assert [c.reason for c in w.catchups[n:] if c.user_id == ids["bot"]] == ["no_cursor"]


@pytest.mark.parametrize("window", [3, 0])
async def test_a_dm_backlog_longer_than_the_context_window_is_not_lost(gateway, chatto_world, window):
    """Bench P9 (1 day down) lost 9 of alice's 30 DMs: the DM's turn carried only the newest
    ``thread_context_window`` (20) earlier messages and marked the rest seen. Every missed DM
    is for the bot and a DM has no thread the agent could read on (``chatto_read_thread``
    refuses DM sessions), so the window, which bounds a thread's *context*, does not cut owed
    messages (0 neither): one turn, every missed DM in it once."""
    extra = {"thread_context_window": window}
    gw = await gateway(extra=extra)
    w, ids = gw.world, gw.ids
    await _open_thread(gw)
    await gw.stop()
    chatto_world.advance_clock(86400)
    missed = [w.post(ids["alice"], ids["dm"], f"while down: question number {k}") for k in range(8)]

    gw2 = await gateway(extra=extra)
    await idle(gw2, turns=1, timeout=60)
    calls = gw2.agent.calls
    assert len(calls) == 1, [c.message[-80:] for c in calls]
    assert calls[0].message.endswith(missed[-1].body)
    for m in missed:  # 0 lost, 0 twice
        assert calls[0].message.count(m.body) == 1, (f"lost or twice: {m.body!r}", calls[0].message)
    assert "not shown" not in calls[0].message
