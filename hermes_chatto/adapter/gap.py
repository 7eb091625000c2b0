"""Gap recovery: what was posted while the realtime socket did not watch, for downtime of any
length up to a horizon.

Protocol 4 resumes only a short gap: a resume cursor is valid for 15 minutes and a replay
covers at most 10,000 positions / 2,000 events (docs/chatto-0.5.md). Within that the server
replays the missed events before ``caught_up`` (``recovery = "resumed"``) and nothing is
done here. After a longer gap (a restart after downtime, a long network outage, a resume the
server refused) ``caught_up`` says ``"snapshot"`` or ``"live_only"`` and this unit reads what
the socket did not deliver since the stream was last known complete (the cursor keeper's
``last_at``: the last cursor this process saw, or the store time of the cursor a restart
loaded), bounded by ``recovery_horizon_s`` (default 7 days):

* mentions, replies to the bot, DMs and activity in threads it follows, from its notification
  occurrences (``NotificationService/ListNotificationOccurrences``, newest first, 100 a page,
  at most :data:`MAX_NOTICE_PAGES` pages, back to that time), each read with ``GetMessage``;
* every root of the rooms where any message may be for the bot (DMs, free-response rooms, all
  rooms when ``require_mention`` is off): ``GetRoomEvents`` newest first, at most
  :data:`ROOM_READ_LIMIT` messages per room.

What was handled before is in the persistent seen-set and skipped. The rest is grouped by
conversation (a DM, a channel thread, a channel root) and each conversation gets **one**
turn: its newest message that ingress dispatches. The older ones are marked seen; in a thread
they reach the turn through the frontier's ``[Earlier in this thread]`` block (realtime did
not watch the thread, so its next turn reads it anchored: nothing skipped, nothing repeated);
in a DM they are put in the turn's context as the same inert block. The newest
:data:`MAX_RECOVERY_TURNS_PER_ROOM` conversations per room (:data:`MAX_RECOVERY_TURNS` in all)
are answered, oldest first; a WARNING names what was left. Reads are counted in
``recovery_reads``, turns in ``gap_recovered``. Messages the server *replayed* on a resume get
the same one-turn-per-conversation treatment (:meth:`GapRecovery.replayed`, counted in
``replay_collapsed``), without reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from ..logs import get_logger
from ..wire.errors import ChattoError, ChattoNotFound
from ..wire.notices import MessageNotice
from ..wire.types import ChattoMessage, ChattoUser, ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn
from .rooms import RoomDirectory

logger = get_logger("hermes_chatto.adapter")

#: Occurrences per ``ListNotificationOccurrences`` page (Chatto's maximum) and pages read.
NOTICE_LIST_LIMIT, MAX_NOTICE_PAGES = 100, 10
#: ``NotificationSignal`` kinds whose message may be for the bot (ingress decides).
NOTICE_KINDS = frozenset(
    {
        "direct_mention_received",
        "role_mention_received",
        "here_mention_received",
        "all_mention_received",
        "reply_received",
        "direct_message_received",
        "followed_thread_activity",
    }
)
#: Newest room-timeline messages read per room that is read in full.
ROOM_READ_LIMIT = 100
#: Most conversations answered per room after one gap (a flood in one room must not drown the
#: others), and in all: beyond them a WARNING says how many were left.
MAX_RECOVERY_TURNS_PER_ROOM = 25
MAX_RECOVERY_TURNS = 500
#: Notice kinds that say the bot takes part in the message's thread (Chatto makes the bot follow
#: a thread it wrote the root of, replied in or was mentioned in: a reply there needs no mention).
FOLLOWED_KINDS = frozenset({"followed_thread_activity", "reply_received"})
#: Seconds before the last known-complete time that still count: the cursor is stored at
#: most every 2 s and the server's clock may run a little ahead of this machine's.
MARGIN_S = 60.0
#: Default horizon (seconds): messages older than this when the gap is noticed are not answered.
DEFAULT_HORIZON_S = 7 * 24 * 3600.0

#: ``ingest(msg, *, thin=False, context=None)``: run one message through ingress and dispatch.
Ingest = Callable[..., Awaitable[None]]
#: ``join(thread)``: the bot takes part in ``thread`` (the thread index).
Join = Callable[[ThreadKey], None]
#: ``render(messages) -> str``: the inert block of earlier messages for a DM turn.
Render = Callable[[list[ChattoMessage]], str | None]


async def _no_author(user_id: str) -> ChattoUser | None:
    return None


def render_earlier(conn: Conn) -> Render:
    """The inert block of a DM's earlier missed messages: the frontier's renderer and its byte
    bound (``thread_context_max_bytes``: long texts are shortened before any message is left
    out).

    Not cut to ``thread_context_window``: that bounds a thread's *context*, and what a thread
    block leaves out stays readable (``chatto_read_thread``) or arrives with the next turn.
    These are owed messages (everything in a DM is for the bot), a DM has no thread to read on
    and this block is the only way they reach the agent: a window of 20 lost the 9 oldest of 30
    DMs after a day down (bench P9)."""
    from ..frontier.render import render_block

    def render(messages: list[ChattoMessage]) -> str | None:
        max_bytes = int(getattr(conn.settings, "thread_context_max_bytes", 8000))
        text = render_block(
            messages,
            bot_user_id=conn.bot_user_id,
            max_bytes=max_bytes,
            read_tool=False,  # a DM has no thread: chatto_read_thread cannot read it
        )
        return text or None

    return render


def conversation(msg: ChattoMessage, dm: bool) -> ThreadKey:
    """Which conversation ``msg`` belongs to: the DM room, its thread, or its own root."""
    if dm:
        return ThreadKey(msg.room_id, "")
    return msg.thread


class GapRecovery:
    """Owns the recovery task and ``horizon_s``. ``dispatches(msg)`` says whether ingress would
    start a turn for ``msg`` (the inbound's rules, the thread index's "bot takes part" included,
    nothing marked seen), ``ingest`` dispatches one message, ``render`` the DM block, ``join``
    tells the thread index of a thread the bot follows."""

    def __init__(
        self,
        conn: Conn,
        rooms: RoomDirectory,
        boundary: ErrorBoundary,
        *,
        ingest: Ingest,
        dispatches: Callable[[ChattoMessage], Awaitable[bool]],
        render: Render,
        join: Join = lambda key: None,
        author: Callable[[str], Awaitable[ChattoUser | None]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._conn = conn
        self._rooms = rooms
        self._boundary = boundary
        self._ingest = ingest
        self._dispatches = dispatches
        self._render = render
        self._join = join
        self._author = author or _no_author
        self._clock = clock
        self.horizon_s = float(getattr(conn.settings, "recovery_horizon_s", DEFAULT_HORIZON_S) or 0.0)
        self.task: asyncio.Task[None] | None = None
        #: a gap noticed while a recovery ran: the point from which to run once more
        self._again: float | None = None

    def realtime_gap(self) -> None:
        """Tell the frontier that realtime did not watch every room: each session's next turn
        reads its thread (anchored)."""
        frontier = self._conn.frontier
        if frontier is not None:
            with self._boundary.guard("frontier.realtime_gap"):
                frontier.realtime_gap(None)

    def caught_up(self, recovery: str, last_at: float | None) -> None:
        """``caught_up`` with ``recovery``; ``last_at`` epoch seconds the stream was last known
        complete (``None``: this bot never ran here, there is nothing to recover)."""
        if recovery == "resumed":
            return
        self.realtime_gap()
        if last_at is None or self.horizon_s <= 0:
            return
        now = self._clock()
        since = max(last_at - MARGIN_S, now - self.horizon_s)
        if self.task is not None and not self.task.done():
            # one at a time: the running recovery may have read its notifications before this
            # gap's messages were posted, so another pass follows it (from the older point)
            self._again = since if self._again is None else min(self._again, since)
            return
        self.task = asyncio.ensure_future(self._run(since))

    async def _run(self, since: float) -> None:
        while True:
            with self._boundary.guard("gap.recover"):
                await self.recover(since)
            again, self._again = self._again, None
            if again is None:
                return
            since = again

    async def recover(self, since: float) -> int:
        """Read and answer what was posted since ``since`` (epoch seconds); returns the turns
        dispatched. Never raises a ChattoError (each failed read is a WARNING)."""
        client: Any = self._conn.client
        if client is None:
            return 0
        started = self._clock()
        logger.info(
            "Chatto: recovering messages since %s (%.0f s ago)",
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(since)),
            started - since,
        )
        found: dict[str, ChattoMessage] = {}
        for n in await self._notices(client, since):
            if n.kind in FOLLOWED_KINDS and n.thread_root_event_id:
                self._join(ThreadKey(n.room_id, n.thread_root_event_id))
            if n.event_id in found or self._conn.is_seen(n.event_id):
                continue
            msg = await self._get(client, n.room_id, n.event_id)
            if msg is not None:
                found[msg.event_id] = msg
        for room_id in self._rooms_read_in_full():
            for msg in await self._room_roots(client, room_id, since):
                found.setdefault(msg.event_id, msg)
        return await self._answer([m for m in found.values() if not self._conn.is_seen(m.event_id)], since)

    async def _notices(self, client: Any, since: float) -> list[MessageNotice]:
        out: list[MessageNotice] = []
        offset = 0
        for _ in range(MAX_NOTICE_PAGES):
            try:
                page, more = await client.list_notifications(offset=offset, limit=NOTICE_LIST_LIMIT)
            except ChattoError as exc:
                logger.warning("Chatto: reading notifications for recovery failed (%s): %s", exc.code, exc)
                break
            self._conn.counters["recovery_reads"] += 1
            out += [
                n
                for n in page
                if n.kind in NOTICE_KINDS
                and n.created_at is not None
                and n.created_at >= since
                and n.room_id
                and n.event_id
                and n.actor_id != self._conn.bot_user_id
            ]
            offset += NOTICE_LIST_LIMIT
            oldest = min((n.created_at for n in page if n.created_at is not None), default=None)
            if not more or not page or (oldest is not None and oldest < since):
                break
        return out

    def _rooms_read_in_full(self) -> list[str]:
        require = bool(getattr(self._conn.settings, "require_mention", True))
        return [
            r.id
            for r in self._rooms.rooms.values()
            if (r.is_member or r.is_dm) and (r.is_dm or r.id in self._rooms.free or not require)
        ]

    async def _room_roots(self, client: Any, room_id: str, since: float) -> list[ChattoMessage]:
        try:
            page = await client.get_room_events(room_id, limit=ROOM_READ_LIMIT)
        except ChattoError as exc:
            logger.warning("Chatto: reading room %s for recovery failed (%s): %s", room_id, exc.code, exc)
            return []
        self._conn.counters["recovery_reads"] += 1
        users = getattr(page, "users", {}) or {}
        return [
            replace(m, author=m.author or users.get(m.author_id))
            for m in page.messages
            if m.created_at is not None and m.created_at >= since and m.author_id != self._conn.bot_user_id
        ]

    async def _get(self, client: Any, room_id: str, event_id: str) -> ChattoMessage | None:
        self._conn.counters["recovery_reads"] += 1
        try:
            msg: ChattoMessage = await client.get_message(room_id, event_id)
            return msg
        except ChattoNotFound:
            return None
        except ChattoError as exc:
            logger.warning("Chatto: reading message %s for recovery failed (%s): %s", event_id, exc.code, exc)
            return None

    async def replayed(self, msgs: list[ChattoMessage]) -> int:
        """Messages the server replayed on a resume (held by the inbound until ``caught_up``):
        answered like recovered ones, one turn per conversation, each read in full only if it
        is the conversation's turn. Returns the turns dispatched."""
        return await self._answer([m for m in msgs if not self._conn.is_seen(m.event_id)], thin=True)

    async def _answer(self, msgs: list[ChattoMessage], since: float = 0.0, *, thin: bool = False) -> int:
        """One turn per conversation (see the module docstring)."""
        groups: dict[ThreadKey, list[ChattoMessage]] = {}
        for m in sorted(msgs, key=lambda m: (m.created_at or 0.0, m.event_id)):
            if m.echo_of_event_id or m.deleted_at is not None:
                continue
            groups.setdefault(conversation(m, self._rooms.is_dm(m.room_id)), []).append(m)
        turns: list[tuple[ChattoMessage, list[ChattoMessage]]] = []
        for group in groups.values():
            chosen = None
            for m in reversed(group):  # the newest message ingress would dispatch
                if await self._dispatches(m):
                    chosen = m
                    break
            if chosen is None:
                continue
            earlier = [m for m in group if m is not chosen and (m.created_at or 0.0) <= (chosen.created_at or 0.0)]
            turns.append((chosen, earlier))
        turns.sort(key=lambda t: t[0].created_at or 0.0)
        turns = self._capped(turns)
        seen = self._conn.seen
        for chosen, earlier in turns:
            for m in earlier:
                if seen is not None:
                    seen.add(m.event_id)
            context = None
            if earlier and self._rooms.is_dm(chosen.room_id):
                context = self._render([await self._with_author(m) for m in earlier])
            self._conn.counters["replay_collapsed" if thin else "gap_recovered"] += 1
            self._conn.counters["replay_merged" if thin else "gap_merged"] += len(earlier)
            await self._ingest(chosen, thin=thin, context=context)
        if turns and not thin:
            logger.info("Chatto: recovered %d conversations since the gap", len(turns))
        return len(turns)

    async def _with_author(self, msg: ChattoMessage) -> ChattoMessage:
        """``msg`` with its author (the user directory, read once per author): a replayed
        message names its author only by id, and the block shows names."""
        if msg.author is not None or not msg.author_id:
            return msg
        author = await self._author(msg.author_id)
        return msg if author is None else replace(msg, author=author)

    def _capped(
        self, turns: list[tuple[ChattoMessage, list[ChattoMessage]]]
    ) -> list[tuple[ChattoMessage, list[ChattoMessage]]]:
        """At most :data:`MAX_RECOVERY_TURNS_PER_ROOM` conversations per room and
        :data:`MAX_RECOVERY_TURNS` in all, the newest kept (oldest first); a WARNING names what
        was left."""
        per_room: dict[str, int] = {}
        kept: list[tuple[ChattoMessage, list[ChattoMessage]]] = []
        for t in reversed(turns):
            room = t[0].room_id
            if per_room.get(room, 0) >= MAX_RECOVERY_TURNS_PER_ROOM or len(kept) >= MAX_RECOVERY_TURNS:
                continue
            per_room[room] = per_room.get(room, 0) + 1
            kept.append(t)
        left = len(turns) - len(kept)
        if left:
            logger.warning(
                "Chatto: %d conversations had messages for the bot while it was away; answering the newest "
                "%d (at most %d per room, %d in all), not the %d oldest",
                len(turns),
                len(kept),
                MAX_RECOVERY_TURNS_PER_ROOM,
                MAX_RECOVERY_TURNS,
                left,
            )
        return list(reversed(kept))
