"""``chatto_read_thread``'s pure parts and its reader over a thread double (issue 26): what a
read returns, its bounds, the render of a message read on from an offset, and the refusals
that need no server (no session thread, another thread named, bad arguments). The same tool
against the local server: ``tests/host/test_read_thread_tool.py``; through the real gateway:
``tests/e2e/test_read_thread_e2e.py``."""

from __future__ import annotations

import json

import pytest

from chatto_local.scripted_model import block_messages
from hermes_chatto.adapter.reader import ReadLimits, read_thread
from hermes_chatto.frontier.render import HEADER, message_lines
from hermes_chatto.wire.errors import ChattoNotFound
from hermes_chatto.wire.types import ChattoMessage, ChattoUser, TimelinePage

from support.frontier import BOT, CAROL, ROOM, T0

ROOT = "Eroot0000000001"
USERS = {CAROL: ChattoUser(id=CAROL, display_name="Carol"), BOT: ChattoUser(id=BOT, display_name="Ops", is_bot=True)}


def _thread(n: int) -> list[ChattoMessage]:
    root = ChattoMessage(event_id=ROOT, room_id=ROOM, author_id=CAROL, body="root", created_at=T0)
    return [root] + [
        ChattoMessage(
            event_id=f"E{i:03d}", room_id=ROOM, author_id=CAROL, body=f"r{i}", created_at=T0, thread_root_event_id=ROOT
        )
        for i in range(1, n + 1)
    ]


class AroundOnly:
    """``GetThreadEventsAround`` over one thread as Chatto answers it: the root at index 0;
    anchor = root → the first ``limit`` replies, else ≈ (limit−1)/2 replies before it."""

    def __init__(self, msgs: list[ChattoMessage]) -> None:
        self.msgs, self.calls = msgs, 0

    async def get_thread_events_around(self, room, root, event_id, limit=None):
        self.calls += 1
        replies = self.msgs[1:]
        if event_id == root:
            items, older, newer = replies[:limit], False, len(replies) > limit
        else:
            idx = next((i for i, m in enumerate(replies) if m.event_id == event_id), None)
            if idx is None:
                raise ChattoNotFound("message not found")
            start = max(0, idx - (limit - 1) // 2)
            end = min(len(replies), start + limit)
            start = max(0, end - limit)
            items, older, newer = replies[start:end], start > 0, end < len(replies)
        page = TimelinePage(messages=(self.msgs[0], *items), has_older=older, has_newer=newer, users=USERS)
        return page, 0


async def test_before_reads_older_replies_oldest_first_bounded_never_the_root():
    client = AroundOnly(_thread(45))
    r = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, before="E027", limits=ReadLimits(20, 8000))
    assert r.ids == tuple(f"E{i:03d}" for i in range(7, 27)) and r.more_before == "E007"
    r2 = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, before=r.more_before)
    assert r2.ids == tuple(f"E{i:03d}" for i in range(1, 7)) and r2.more_before == ""
    assert [m.split(": ", 1)[1] for m in block_messages(r2.text)] == [f"r{i}" for i in range(1, 7)]
    assert client.calls == 2  # one read per call


async def test_no_argument_reads_the_start_after_reads_on():
    client = AroundOnly(_thread(30))
    r = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, limits=ReadLimits(10, 8000))
    assert r.ids[0] == ROOT and len(r.ids) == 10 and r.more_after == "E009"
    r2 = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, after=r.more_after, limits=ReadLimits(10, 8000))
    assert r2.ids == tuple(f"E{i:03d}" for i in range(10, 20)) and r2.more_after == "E019"


async def test_refusals_that_name_the_reason():
    client = AroundOnly(_thread(3))
    r = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, message_id="Eelsewhere00001")
    assert r.error.startswith("refused: ") and "not a message of this conversation's thread" in r.error
    r = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, before="E001", after="E002")
    assert r.error == "refused: give at most one of message_id, before, after"


async def test_the_byte_bound_holds_and_a_long_message_reads_on():
    long = ChattoMessage(
        event_id="E001",
        room_id=ROOM,
        author_id=CAROL,
        body="\n".join(f"line {i:03d} \u00e9\u00e8 \U0001f600" for i in range(600)),
        created_at=T0,
        thread_root_event_id=ROOT,
    )
    client = AroundOnly([_thread(0)[0], long])
    parts, offset = [], 0
    for _ in range(10):
        r = await read_thread(client, ROOM, ROOT, bot_user_id=BOT, message_id="E001", offset=offset)
        assert not r.error and len(r.text.encode()) <= 8000 and r.text.startswith(HEADER + "\nCarol: ")
        (msg,) = block_messages(r.text)
        body = msg.split(": ", 1)[1]
        parts.append((body[1:] if offset else body).removesuffix("\u2026") if r.next_offset else body[1:])
        if r.next_offset is None:
            break
        offset = r.next_offset
    assert "".join(parts) == long.body and len(parts) == 2


def test_message_lines_from_an_offset_marks_where_it_goes_on():
    m = ChattoMessage(event_id="E9", room_id=ROOM, author_id=CAROL, body="alpha\nbeta\ngamma", created_at=T0)
    lines, nxt = message_lines(m, bot_user_id=BOT, users=USERS, max_text_bytes=11)
    assert lines == ["Carol: alpha", "> be\u2026", "(cut: chatto_read_thread message_id=E9 offset=8 reads on)"]
    assert nxt == 8
    lines, nxt = message_lines(m, bot_user_id=BOT, users=USERS, offset=8)
    assert lines == ["Carol: \u2026ta", "> gamma"] and nxt is None


# ------------------------------------------------------------------ the tool handler


def _tool(args: dict, **session: str) -> dict:
    from gateway.session_context import clear_session_vars, set_session_vars

    from hermes_chatto.tools import chatto_read_thread

    tokens = set_session_vars(**session)
    try:
        return json.loads(chatto_read_thread(args))
    finally:
        clear_session_vars(tokens)


@pytest.mark.parametrize(
    ("session", "args", "words"),
    [
        ({"platform": "chatto", "chat_id": ROOM}, {}, "not in a Chatto thread"),  # a DM: no thread
        ({"platform": "slack", "chat_id": ROOM, "thread_id": ROOT}, {}, "not in a Chatto thread"),
        ({}, {"message_id": "E001"}, "not in a Chatto thread"),  # no session at all (CLI)
        (
            {"platform": "chatto", "chat_id": ROOM, "thread_id": ROOT},
            {"thread_id": "Eother"},
            "only this conversation's",
        ),
        ({"platform": "chatto", "chat_id": ROOM, "thread_id": ROOT}, {"room": "Rother"}, "only this conversation's"),
        ({"platform": "chatto", "chat_id": ROOM, "thread_id": ROOT}, {"offset": "x"}, "offset must be"),
    ],
)
def test_tool_refuses_before_any_read(session, args, words):
    out = _tool(args, **session)
    assert out["error"].startswith("refused: ") and words in out["error"], out
