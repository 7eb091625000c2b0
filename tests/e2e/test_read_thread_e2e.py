"""Thread context a model can read (issue 26), end to end: the REAL ``hermes gateway run``, the
local Chatto server and the scripted model, whose inputs (the block, the tool results) are what
the assertions read.

* A thread the bot has never seen, 45 replies, then a mention: the first turn's block holds the
  root and the newest 19 replies, with a note counting the 26 older ones and naming
  ``chatto_read_thread before=<id>``; the model calls the tool (twice: 20 per call) and gets
  replies 1–26. Every reply reaches the model exactly once, in order.
* A stack trace in a code fence and a bulleted report reach the model with their lines.
* The tool refuses another thread (by argument or by message id) and a DM session.
"""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio

from chatto_local.harness import Harness
from chatto_local.scripted_model import block_messages, earlier_thread_messages

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

TOOL = "chatto_read_thread"
TRACE = (
    "CI failed on main:\n"
    "```\n"
    "Traceback (most recent call last):\n"
    '  File "export.py", line 88, in run\n'
    "    rows = fetch(cursor)\n"
    "TimeoutError: cursor expired\n"
    "```"
)
REPORT = "Nightly report:\n- export: failed (timeout)\n- billing: ok\n  - 3 retries\n- search: ok"
OLD_TRACE = "old failure:\n```\nKeyError: 'tenant'\n```"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", turn_timeout=60.0) as harness:
        yield harness


def _tool_results(h: Harness, since: int) -> list[dict]:
    """The ``chatto_read_thread`` results the model received after chat request ``since``."""
    out = []
    for r in h.started_model.chat_requests()[since:]:
        msgs = r.messages
        if r.stream and msgs and msgs[-1].get("role") == "tool":
            # Hermes may append its own note after a failed tool's JSON
            out.append(json.JSONDecoder().raw_decode(msgs[-1]["content"])[0])
    return out


def _last(body: dict) -> dict:
    return (body.get("messages") or [{}])[-1]


def _read_on(body: dict) -> dict:
    """A model that reads every reply the block left out: after the first turn's block, call
    the tool with the note's ``before``; after a result with ``more_before``, call it again."""
    last = _last(body)
    if last.get("role") == "tool":
        nxt = json.JSONDecoder().raw_decode(last.get("content") or "{}")[0].get("more_before")
        if not nxt:
            return {"content": "I read the whole thread."}
        return {"tool_calls": [{"name": TOOL, "arguments": {"before": nxt}}]}
    text = last.get("content") or ""
    text = text if isinstance(text, str) else json.dumps(text)
    m = re.search(TOOL + r" before=(\S+) reads them", text)
    if not m:
        return {"content": "no note naming the tool"}
    return {"tool_calls": [{"name": TOOL, "arguments": {"before": m.group(1)}}]}


async def test_45_unseen_replies_every_one_reaches_the_model_once(h: Harness):
    model = h.started_model
    root = await h.post("general", "Export incident, notes here")
    bodies = []
    for i in range(1, 46):
        body = f"reply {i:02d}"
        if i == 3:
            body = f"reply 03 {OLD_TRACE}"
        if i == 40:
            body = f"reply 40 {TRACE}"
        if i == 44:
            body = f"reply 44 {REPORT}"
        bodies.append(body)
        await h.post("general", body, thread_root=root.event_id, user="bob" if i % 2 else "alice")
    c0 = len(model.chat_requests())
    model.push(_read_on, _read_on, _read_on)
    t = await h.turn("mention", "general", "@helper_bot what happened here?", thread_root=root.event_id)
    assert model.script == []
    shown = earlier_thread_messages(t.context)
    assert shown[0] == "Alice: Export incident, notes here" and len(shown) == 20
    assert f"(\u2026 26 earlier replies not shown; {TOOL} before=" in (t.block or "")
    results = _tool_results(h, c0)
    assert len(results) == 2 and all(r.get("ok") for r in results), results
    assert all(len(r["message_ids"]) <= 20 and len(r["text"].encode()) <= 8000 for r in results)
    read = [m for r in reversed(results) for m in block_messages(r["text"])]
    got = [m.split(": ", 1)[1] for m in read + shown[1:]]
    assert got == bodies  # replies 1..45: each once, in order, their lines kept
    assert "what happened here" not in "\n".join(got)
    # the stack trace and the report reached the model line by line, quoted
    assert "Bob: reply 03 old failure:\n```\nKeyError: 'tenant'\n```" in read
    block_lines = (t.block or "").splitlines()
    for line in TRACE.splitlines()[1:] + REPORT.splitlines()[1:]:
        assert "> " + line in block_lines, line
    assert "Bob: reply 45" in block_lines and "I read the whole thread." in t.reply_text


async def test_the_tool_refuses_other_threads_and_dm_sessions(h: Harness):
    model = h.started_model
    other_root = await h.post("general", "Unrelated thread")
    other = await h.post("general", "secret in another thread", thread_root=other_root.event_id, user="bob")
    t0 = await h.turn("open", "general", "@helper_bot here is my question")
    root = t0.trigger.event_id
    c0 = len(model.chat_requests())
    model.push(
        {"tool_calls": [{"name": TOOL, "arguments": {"thread_id": other_root.event_id}}]},
        {"tool_calls": [{"name": TOOL, "arguments": {"message_id": other.event_id}}]},
        {"tool_calls": [{"name": TOOL, "arguments": {"before": other.event_id}}]},
        {"tool_calls": [{"name": TOOL, "arguments": {"message_id": root}}]},
        "done",
    )
    await h.turn("refusals", "general", "@helper_bot read elsewhere", thread_root=root)
    r1, r2, r3, r4 = _tool_results(h, c0)
    assert r1["error"].startswith("refused: ") and "only this conversation's thread" in r1["error"]
    for r in (r2, r3):
        assert r["error"].startswith("refused: ") and "not a message of this conversation's thread" in r["error"]
    assert "secret" not in json.dumps([r1, r2, r3])
    assert r4.get("ok") and "here is my question" in r4["text"]  # its own thread reads
    c1 = len(model.chat_requests())
    model.push({"tool_calls": [{"name": TOOL, "arguments": {}}]}, "done in dm")
    await h.turn("dm", "dm", "read the thread please")
    (r5,) = _tool_results(h, c1)
    assert r5["error"].startswith("refused: ") and "not in a Chatto thread" in r5["error"]
