"""Exactly once across crashes and refusals, checked against the HOST's stored transcript
(issue 24, findings 7 and 8). Real ``hermes gateway run``, local Chatto, scripted model; the
session's transcript is read from Hermes' own ``$HERMES_HOME/state.db`` (``messages``), not
from what the plugin believes.

* Finding 8: the bot's posting permission is removed while the model answers. The reply is
  refused (❌). hermes-agent 0.19.0 had stored the turn (question and unsent answer) in the
  transcript before delivering, so the next turn's block must not carry the question again;
  it says instead, in one line, that the previous answer was not delivered.
* Finding 7: the gateway is SIGKILLed while the model answers. After the restart the plugin
  runs the interrupted trigger again (decision 32) and answers once. That rerun is recorded
  like any turn: the next turn's block carries neither the trigger nor the rerun's answer.
  Before, the transcript then held the trigger 3 times and the answer twice.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until

from support.live import HoldingModel, wait_held

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

POST, THREAD, INTERACTIONS = "message.post", "message.post-in-thread", "message.post-in-interactions"
NOT_DELIVERED = "[Your previous answer in this thread was not delivered:"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    harness = Harness(mode="subprocess", turn_timeout=45.0)
    try:
        await harness.start(model=HoldingModel)
        yield harness
    finally:
        await harness.stop()


def _user_rows(h: Harness) -> list[str]:
    """The content of every user message in the host's transcripts (``state.db``)."""
    con = sqlite3.connect(f"file:{h.home / 'state.db'}?mode=ro", uri=True, timeout=5)
    try:
        return [r[0] or "" for r in con.execute("SELECT content FROM messages WHERE role = 'user' ORDER BY id")]
    finally:
        con.close()


def _assistant_rows(h: Harness) -> list[str]:
    con = sqlite3.connect(f"file:{h.home / 'state.db'}?mode=ro", uri=True, timeout=5)
    try:
        return [r[0] or "" for r in con.execute("SELECT content FROM messages WHERE role = 'assistant' ORDER BY id")]
    finally:
        con.close()


def _in_users(h: Harness, needle: str) -> int:
    return sum(c.count(needle) for c in _user_rows(h))


def _reacted(h: Harness, event_id: str, name: str) -> bool:
    m = h.chatto.state.messages.get(event_id)
    return m is not None and h.bot_id in (m.reactions.get(name) or ())


async def test_refused_answer_is_not_asked_again_and_the_agent_is_told(h: Harness):
    room = h.rooms["general"]
    first = await h.turn("first", "general", "@helper_bot open a thread about the backups")
    root = first.trigger.event_id
    model = h.started_model
    assert isinstance(model, HoldingModel)
    question = "which backup job failed last night"
    model.hold_next()
    asked = await h.post("general", f"@helper_bot {question}", thread_root=root)
    await wait_held(model)
    h.chatto.revoke(room, h.bot_id, POST, THREAD, INTERACTIONS)  # while the model answers
    model.release()
    await wait_until(lambda: _reacted(h, asked.event_id, "x"), timeout=45, what="the refused turn's ❌")
    await h.wait_idle()
    assert [m for m in h.thread("general", root) if m.author_id == h.bot_id and m.created_at >= asked.created_at] == []
    # the host stored the refused turn: the question once (the premise of the finding)
    assert _in_users(h, question) == 1, _user_rows(h)

    h.chatto.grant(room, h.bot_id, POST, THREAD, INTERACTIONS)
    nxt = await h.turn("next", "general", "@helper_bot and what about the database?", thread_root=root)
    assert question not in (nxt.block or ""), nxt.block
    assert NOT_DELIVERED in (nxt.block or ""), nxt.block
    assert nxt.replies
    # the host's transcript holds the question once: the refused turn's own row
    assert _in_users(h, question) == 1, _user_rows(h)
    assert sum(r.count(NOT_DELIVERED) for r in _user_rows(h)) == 1
    # said once: the turn after that carries no notice
    again = await h.turn("again", "general", "@helper_bot thanks", thread_root=root)
    assert NOT_DELIVERED not in (again.block or "")


def _sigkill(h: Harness) -> None:
    g = h.gateway
    assert g is not None and g.proc is not None
    os.killpg(g.proc.pid, signal.SIGKILL)
    g.proc.wait(10)
    g.proc = None


def _cursor_persisted_past(h: Harness, event_id: str, since: float) -> bool:
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


async def test_rerun_after_a_crash_is_recorded_and_never_comes_back_in_a_block(h: Harness):
    model = h.started_model
    first = await h.turn("crash-root", "general", "@helper_bot a thread about the rota")
    root = first.trigger.event_id
    question = "who is on call this weekend"
    model.push({"delay": 20})  # the model hangs: the turn is in flight when the kill comes
    n0 = len(model.chat_requests())
    posted_at = time.time()
    stuck = await h.post("general", f"@helper_bot {question}", thread_root=root)
    await wait_until(lambda: len(model.chat_requests()) > n0, timeout=30, what="the hanging model to be called")
    await wait_until(
        lambda: _cursor_persisted_past(h, stuck.event_id, posted_at), timeout=30, what="the cursor past the trigger"
    )
    assert _in_users(h, question) == 1  # the host stored the attempt before the model ran
    _sigkill(h)
    await h.start_gateway()

    def rerun_answer() -> str | None:
        mine = [m for m in h.thread("general", root) if m.author_id == h.bot_id and m.created_at >= stuck.created_at]
        return mine[0].body if mine else None

    answer = await wait_until(rerun_answer, timeout=60, what="the interrupted trigger's answer")
    await wait_until(lambda: _reacted(h, stuck.event_id, "white_check_mark"), timeout=45, what="the rerun's ✅")
    await h.wait_idle()
    tag = answer.split(":", 1)[0]  # "Scripted reply #N"
    assert tag.startswith("Scripted reply #"), answer
    nxt = await h.turn("after-crash", "general", "@helper_bot and next week?", thread_root=root)
    assert question not in (nxt.block or ""), nxt.block
    assert tag not in (nxt.block or ""), nxt.block
    # the host's transcript: the trigger from the interrupted attempt and from the rerun (the
    # host's own resume design), never from a block; the rerun's answer once, as the answer
    assert _in_users(h, question) == 2, _user_rows(h)
    assert sum(r.count(tag + ":") for r in _user_rows(h)) == 0, _user_rows(h)
    assert sum(r.startswith(tag + ":") for r in _assistant_rows(h)) == 1, _assistant_rows(h)
