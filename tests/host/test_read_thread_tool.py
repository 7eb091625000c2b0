"""``chatto_read_thread`` (issue 26) inside a real ``GatewayRunner`` with the live adapter:
LocalChatto over loopback ↔ real ChattoClient ↔ ChattoAdapter; the tool handler runs in a
worker thread with the session's Hermes context (``gateway.session_context``) bound, as the
agent's tool executor runs it.

What it must do: read a message the block cut, whole (and on from an offset when longer than
one call); read the replies a seed left out, none twice; refuse (with a reason) a session that
is not in a Chatto thread, another thread named by argument, and a message of another thread.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from chatto_local.scripted_model import block_messages
from hermes_chatto.frontier import HEADER

from support.host import world_ids
from support.waits import idle

pytestmark = pytest.mark.timeout(180)

SEP = "\n\n[New message]\n"


def _call(args: dict, *, room: str, thread: str, platform: str = "chatto") -> dict:
    """The tool handler with a session bound to ``platform``/``room``/``thread`` (a worker
    thread's own context, like the agent's tool executor)."""
    from gateway.session_context import clear_session_vars, set_session_vars

    from hermes_chatto.tools import chatto_read_thread

    tokens = set_session_vars(platform=platform, chat_id=room, thread_id=thread)
    try:
        return json.loads(chatto_read_thread(args))
    finally:
        clear_session_vars(tokens)


async def call(args: dict, **kw: str) -> dict:
    return await asyncio.to_thread(_call, args, **kw)


def _block(gw, n: int) -> str:
    msg = gw.agent.calls[n].message or ""
    return msg.partition(SEP)[0] if HEADER in msg else ""


async def _thread_with_unseen_replies(gw, count: int, *, long_at: int | None = None):
    """A root by alice, ``count`` replies by carol (not allowed: no turns) the bot has not seen,
    then a mention: the bot's first turn in the thread. Returns (root, replies, turn index)."""
    w, ids = gw.world, gw.ids
    carol = w.create_user("carol", "Carol").id
    w.add_member(ids["general"], carol)
    root = w.post(ids["alice"], ids["general"], "Nightly export failed, thread for notes")
    replies = []
    for i in range(count):
        body = f"reply {i + 1:02d}: note"
        if i == long_at:
            body = "\n".join(f"L{k:03d} trace line of a long report" for k in range(290))  # ~9.6 kB
        replies.append(w.reply(carol, ids["general"], root.event_id, body))
    n = len(gw.agent.calls)
    w.reply(ids["alice"], ids["general"], root.event_id, "@helper_bot what happened?")
    await idle(gw, turns=n + 1)
    return root, replies, n


async def test_seed_leaves_out_older_replies_the_tool_reads_them_none_twice(gateway, chatto_world):
    gw = await gateway(allow_all=False, allowed_users=world_ids(chatto_world)["alice"])
    root, replies, n = await _thread_with_unseen_replies(gw, 45)
    block = _block(gw, n)
    shown = block_messages(block)
    assert len(shown) == 20 and shown[0].startswith("Alice: Nightly export")  # root + 19 newest
    first = replies[26]
    assert f"(\u2026 26 earlier replies not shown; chatto_read_thread before={first.event_id} reads them)" in block
    room = gw.ids["general"]
    got: list[str] = []
    before = first.event_id
    calls = 0
    while before:
        out = await call({"before": before}, room=room, thread=root.event_id)
        assert out.get("ok"), out
        assert len(out["message_ids"]) <= 20  # bounded: the block's window
        got = block_messages(out["text"]) + got
        before = out.get("more_before", "")
        calls += 1
    assert calls == 2
    everything = [m.split(": ", 1)[1] for m in got + shown[1:]]
    assert everything == [f"reply {i:02d}: note" for i in range(1, 46)]  # each once, in order


async def test_a_cut_message_is_read_whole_in_bounded_calls(gateway, chatto_world):
    gw = await gateway(allow_all=False, allowed_users=world_ids(chatto_world)["alice"])
    root, replies, n = await _thread_with_unseen_replies(gw, 3, long_at=1)
    block = _block(gw, n)
    long = replies[1]
    assert f"(cut: chatto_read_thread message_id={long.event_id} reads it whole)" in block
    room = gw.ids["general"]
    text, offset, calls = [], 0, 0
    while True:
        out = await call({"message_id": long.event_id, "offset": offset}, room=room, thread=root.event_id)
        assert out.get("ok"), out
        assert len(out["text"].encode()) <= 8000
        (msg,) = block_messages(out["text"])
        body = msg.split(": ", 1)[1]
        text.append(body[1:] if offset else body)  # a read from an offset starts with "…"
        calls += 1
        if "next_offset" not in out:
            break
        assert out["text"].endswith(f"offset={out['next_offset']} reads on)")
        text[-1] = text[-1].removesuffix("\u2026")
        offset = out["next_offset"]
    assert calls == 2
    assert "".join(text) == long.body  # every line, in order, nothing lost at the seams


async def test_refused_outside_the_sessions_room_and_thread(gateway, chatto_world):
    gw = await gateway(allow_all=False, allowed_users=world_ids(chatto_world)["alice"])
    root, replies, _ = await _thread_with_unseen_replies(gw, 2)
    w, ids = gw.world, gw.ids
    room = ids["general"]
    other_root = w.post(ids["alice"], room, "another thread")
    other = w.reply(ids["alice"], room, other_root.event_id, "secret of another thread")
    here = {"room": room, "thread": root.event_id}

    def refused(out: dict, *words: str) -> None:
        assert "ok" not in out and out["error"].startswith("refused: "), out
        for word in words:
            assert word in out["error"], out

    # a message, a "before" or an "after" of another thread: not found in this one
    refused(await call({"message_id": other.event_id}, **here), other.event_id, "not a message of")
    refused(await call({"before": other.event_id}, **here), "not a message of")
    refused(await call({"after": other_root.event_id}, **here), "not a message of")
    # another thread or room named by argument
    refused(await call({"thread_id": other_root.event_id}, **here), "only this conversation's thread")
    refused(await call({"room": "Rsomewhereelse1"}, **here), "only this conversation's thread")
    # a session that is not in a Chatto thread: a DM (no thread), another platform
    refused(await call({}, room=room, thread=""), "not in a Chatto thread")
    refused(await call({}, room=room, thread=root.event_id, platform="telegram"), "not in a Chatto thread")
    # nothing of the other thread leaked into any answer; the session's own thread still reads
    ok = await call({"message_id": replies[0].event_id}, **here)
    assert ok.get("ok") and "reply 01: note" in ok["text"] and "secret" not in ok["text"]
    start = await call({}, **here)
    assert start.get("ok") and block_messages(start["text"])[0].startswith("Alice: Nightly export")
