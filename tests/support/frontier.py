"""The frontier test kit: an in-memory thread with ``ThreadService/GetThreadEvents``
semantics (:class:`FakeThread`), a tiny gateway simulation around one ``ThreadFrontier``
(:class:`Sim`), the ids its people use (``ROOM``, ``BOT``, ``ALICE``, ``CAROL``, ``DEPLOY``)
and readers for a rendered block (:func:`bodies`, :func:`lines`).

``FakeThread`` semantics (chatto-protocol §2.8): no cursor → root + newest ``limit``
replies; ``after`` → replies only, oldest first; cursors are opaque sealed ``tl:`` strings
(a fresh random string per call, bound to the thread), computed from replies only; an empty
page has empty cursors; limit ≤ 0 → 50, max 500; ``after=""`` is refused like the real
client does.
"""

from __future__ import annotations

import secrets

from hermes_chatto.frontier import ThreadFrontier
from hermes_chatto.store import FrontierStore
from hermes_chatto.wire.errors import ChattoInvalidArgument, ChattoNotFound
from hermes_chatto.wire.types import ChattoMessage, ChattoUser, TimelinePage

ROOM = "Rgeneral0000001"
BOT = "Ubot00000000001"
ALICE = "Ualice000000001"
CAROL = "Ucarol000000001"
DEPLOY = "Udeploy00000001"
USERS = {
    BOT: ChattoUser(id=BOT, login="helper_bot", display_name="Helper", is_bot=True),
    ALICE: ChattoUser(id=ALICE, login="alice", display_name="Alice"),
    CAROL: ChattoUser(id=CAROL, login="carol", display_name="Carol"),
    DEPLOY: ChattoUser(id=DEPLOY, login="deploy", display_name="Deploy Bot", is_bot=True),
}
T0 = 1_767_261_600.0  # 2026-01-01 10:00:00 UTC


# ---------------------------------------------------------------------------------
# the fake thread


class FakeThread:
    """One Chatto room's threads with GetThreadEvents semantics (spec §2.8)."""

    def __init__(self, room_id: str = ROOM):
        self.room_id = room_id
        self.roots: dict[str, ChattoMessage] = {}
        self.replies: dict[str, list[ChattoMessage]] = {}
        self._cursors: dict[str, tuple[str, int]] = {}
        self.calls: list[dict] = []
        self.clock = T0
        self._n = 0

    def _id(self) -> str:
        self._n += 1
        return f"E{self._n:014d}"

    def _tick(self) -> float:
        self.clock += 60.0
        return self.clock

    def post_root(self, author: str, body: str) -> ChattoMessage:
        m = ChattoMessage(
            event_id=self._id(),
            room_id=self.room_id,
            author_id=author,
            body=body,
            created_at=self._tick(),
            author=USERS.get(author),
        )
        self.roots[m.event_id] = m
        self.replies[m.event_id] = []
        return m

    def reply(self, root: str, author: str, body: str) -> ChattoMessage:
        m = ChattoMessage(
            event_id=self._id(),
            room_id=self.room_id,
            author_id=author,
            body=body,
            created_at=self._tick(),
            thread_root_event_id=root,
            author=USERS.get(author),
        )
        self.replies[root].append(m)
        return m

    def delete(self, root: str, event_id: str) -> None:
        lst = self.replies[root]
        for i, m in enumerate(lst):
            if m.event_id == event_id:
                lst[i] = ChattoMessage(
                    event_id=m.event_id,
                    room_id=m.room_id,
                    author_id=m.author_id,
                    body=None,
                    created_at=m.created_at,
                    deleted_at=self._tick(),
                    thread_root_event_id=root,
                    author=m.author,
                )

    def _root_view(self, root: str) -> ChattoMessage:
        m = self.roots[root]
        n = len(self.replies[root])
        return ChattoMessage(
            event_id=m.event_id,
            room_id=m.room_id,
            author_id=m.author_id,
            body=m.body,
            created_at=m.created_at,
            reply_count=n,
            has_thread=n > 0,
            author=m.author,
        )

    def _seal(self, root: str, seq: int) -> str:
        tok = "tl:" + secrets.token_urlsafe(18)
        self._cursors[tok] = (root, seq)
        return tok

    async def get_thread_events(
        self,
        room_id: str,
        thread_root_event_id: str,
        *,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> TimelinePage:
        if after == "" or before == "":
            raise ValueError("empty cursor")
        assert before is None, "the frontier never pages backwards"
        root = thread_root_event_id
        self.calls.append({"root": root, "limit": limit, "after": after})
        if room_id != self.room_id or root not in self.roots:
            raise ChattoInvalidArgument("not a thread root")
        lim = 50 if not limit or limit <= 0 else min(int(limit), 500)
        reps = self.replies[root]
        if after is None:
            start = max(0, len(reps) - lim)
            sel = list(enumerate(reps))[start:]
            msgs = (self._root_view(root),) + tuple(m for _, m in sel)
            has_older, has_newer = start > 0, False
        else:
            if after not in self._cursors or self._cursors[after][0] != root:
                raise ChattoInvalidArgument("cursor does not belong to this timeline")
            seq = self._cursors[after][1]
            sel = [(i, m) for i, m in enumerate(reps) if i > seq][:lim]
            msgs = tuple(m for _, m in sel)
            has_older = True
            has_newer = bool(sel) and sel[-1][0] < len(reps) - 1
        start_c = self._seal(root, sel[0][0]) if sel else ""
        end_c = self._seal(root, sel[-1][0]) if sel else ""
        return TimelinePage(
            messages=msgs,
            start_cursor=start_c,
            end_cursor=end_c,
            has_older=has_older,
            has_newer=has_newer,
            users=dict(USERS),
        )

    async def get_thread_events_around(
        self, room_id: str, thread_root_event_id: str, event_id: str, limit: int | None = None
    ) -> tuple[TimelinePage, int]:
        """``GetThreadEventsAround`` (§2.8): root at index 0, then the anchor (``limit`` 1)."""
        root = thread_root_event_id
        self.calls.append({"root": root, "around": event_id, "limit": limit})
        if room_id != self.room_id or root not in self.roots:
            raise ChattoInvalidArgument("not a thread root")
        if event_id == root:  # anchor = root: the root, then the first ``limit`` replies
            return TimelinePage(
                messages=(self._root_view(root), *self.replies[root][: (limit or 1)]), users=dict(USERS)
            ), 0
        hit = [m for m in self.replies[root] if m.event_id == event_id]
        if not hit:
            raise ChattoNotFound("message not found")
        return TimelinePage(messages=(self._root_view(root), hit[0]), users=dict(USERS)), 1

    def forget_cursors(self) -> None:
        """Server secret rotation: every cursor issued so far dies."""
        self._cursors.clear()


# ---------------------------------------------------------------------------------
# a tiny gateway simulation around one frontier


class Sim:
    """Drives a :class:`ThreadFrontier` like the adapter does: realtime ``observe`` of
    every thread message (streamed rooms), ``block_for_turn`` before each turn,
    ``note_sent`` after the agent's reply."""

    def __init__(
        self,
        tmp_path,
        *,
        streamed: bool = True,
        window: int = 20,
        max_bytes: int = 8_000,
        store: bool = True,
        session_id: str | None = "S1",
        key: str = "agent:main:chatto:group:R:T",
    ):
        self.thread = FakeThread()
        self.path = tmp_path / "chatto" / "state.sqlite3"
        self.store = FrontierStore(self.path) if store else None
        self.streamed = streamed
        self.window, self.max_bytes = window, max_bytes
        self.session_id = session_id
        self.key = key
        self.f = self._new_frontier()
        self.root: str | None = None
        self.blocks: list[str | None] = []

    def _new_frontier(self) -> ThreadFrontier:
        return ThreadFrontier(
            self.store,
            self.thread.get_thread_events,
            BOT,
            window=self.window,
            max_bytes=self.max_bytes,
            fetch_around=self.thread.get_thread_events_around,
        )

    def check(self) -> None:
        """Every in-memory session ledger is sound (``SessionLedger.assert_invariants``)."""
        for ledger in self.f.ledgers():
            ledger.assert_invariants()

    async def restart(self) -> None:
        """Process state lost, store kept (queued writes finish first, as on a clean stop)."""
        await self.f.flush()
        self.check()
        self.store = FrontierStore(self.path) if self.store is not None else None
        self.f = self._new_frontier()

    def _observe(self, m: ChattoMessage) -> None:
        if self.streamed and m.thread_root_event_id:
            self.f.observe(m, True)

    def root_post(self, author: str, body: str) -> ChattoMessage:
        m = self.thread.post_root(author, body)
        self.root = m.event_id
        return m

    def post(self, author: str, body: str) -> ChattoMessage:
        """A thread reply that does not become a turn (not addressed / other bot)."""
        m = self.thread.reply(self.root, author, body)
        self._observe(m)
        self.check()
        return m

    def foreign_bot_post(self, body: str) -> ChattoMessage:
        """This bot posting through another path (cron, tool of another session)."""
        m = self.thread.reply(self.root, BOT, body)
        self._observe(m)  # own echo
        self.f.note_sent(ROOM, self.root, [m.event_id], None)
        self.check()
        return m

    async def turn(
        self, body: str, *, author: str = ALICE, reply: str | None = "ok", trigger: ChattoMessage | None = None
    ) -> str | None:
        if trigger is None:
            trigger = self.thread.reply(self.root, author, body)
            self._observe(trigger)
        block = await self.f.block_for_turn(self.key, self.session_id, trigger, self.streamed)
        self.check()
        self.blocks.append(block)
        self.last_trigger = trigger
        if reply is not None:
            r = self.thread.reply(self.root, BOT, f"{reply} ({trigger.body})")
            self._observe(r)  # the echo may arrive before note_sent
            self.f.note_sent(ROOM, self.root, [r.event_id], self.key, turn_trigger=trigger.event_id)
            self.last_reply = r
            self.check()
        return block

    @property
    def reads(self) -> int:
        return self.f.counters["thread_reads"]


def bodies(block: str | None) -> list[str]:
    """The message texts of a block, in order."""
    if not block:
        return []
    return [line.split(": ", 1)[1] for line in lines(block)]


def lines(block: str | None) -> list[str]:
    """The author lines of a block (a message's first line): every line but the header, the
    plugin's ``(…)`` lines (times, notes) and a message's further ``>`` lines."""
    return [ln for ln in (block or "").splitlines()[1:] if ln and not ln.startswith(("[", "(", ">"))]
