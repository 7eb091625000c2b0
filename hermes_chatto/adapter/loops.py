"""The bot-to-bot loop breaker's state: consecutive bot-to-bot turns per thread and per room.

With ``allow_bots: all`` (a free-response room) or ``mentions`` (answers that @mention each
other), two assistants answer each other without end. The decision is pure
(:func:`hermes_chatto.ingress.bot_loop_gate`); this unit keeps the counts it decides on:

* a turn started by another bot's message adds one to its thread's count and its room's;
* a person's message resets its room's count and its thread's (a person "speaks there");
* when a count reaches its budget the bot answers no bot there, and says so once at
  WARNING per trip (naming the room, the thread, the count and how it ends).

Counts are memory only (bounded maps): a restart starts them again at 0, at worst one more
budget of bot turns.
"""

from __future__ import annotations

from ..bounded import BoundedMap
from ..counters import Counters
from ..ingress import BOT_LOOP_ROOM_TURNS, BOT_LOOP_THREAD_TURNS, BotLoopState, bot_loop_gate
from ..logs import get_logger
from ..wire.types import ChattoMessage, ThreadKey

logger = get_logger("hermes_chatto.adapter")

#: Threads and rooms whose counts are kept (least recently touched dropped first).
LOOP_CAPACITY = 5_000


class BotLoopBreaker:
    """Owns the per-thread and per-room counts of consecutive bot-to-bot turns.

    ``thread_budget`` / ``room_budget``: turns allowed (0 = no limit)."""

    def __init__(
        self,
        counters: Counters,
        thread_budget: int = BOT_LOOP_THREAD_TURNS,
        room_budget: int = BOT_LOOP_ROOM_TURNS,
        capacity: int = LOOP_CAPACITY,
    ) -> None:
        self._counters = counters
        self.thread_budget = max(0, int(thread_budget))
        self.room_budget = max(0, int(room_budget))
        self._threads: BoundedMap[ThreadKey, int] = BoundedMap(capacity)
        self._rooms: BoundedMap[str, int] = BoundedMap(capacity)
        #: threads / rooms where the breaker tripped and said so (cleared when a person speaks)
        self._told: BoundedMap[ThreadKey, bool] = BoundedMap(capacity)

    def watching(self, msg: ChattoMessage) -> bool:
        """Whether a bot-to-bot count runs in ``msg``'s room or thread (only then does a message
        whose author is not known yet need its author read, to tell a person from a bot)."""
        return bool(self._rooms.get(msg.room_id, 0)) or bool(
            msg.thread_root_event_id and self._threads.get(msg.thread, 0)
        )

    def person_spoke(self, msg: ChattoMessage) -> None:
        """A person's message in ``msg``'s room (and thread): its counts start again."""
        room = msg.room_id
        if self._rooms.pop(room, None):
            self._told.pop(ThreadKey(room, ""), None)
        if msg.thread_root_event_id and self._threads.pop(msg.thread, None):
            self._told.pop(msg.thread, None)

    def admit(self, msg: ChattoMessage, allow_bots: str) -> str | None:
        """Another bot's ``msg`` would start a turn: ``None`` and one more counted, or the
        reason it does not (``bot_loop_thread`` / ``bot_loop_room``, WARNING once per trip)."""
        thread, room = msg.thread, msg.room_id
        state = BotLoopState(
            self._threads.get(thread, 0), self._rooms.get(room, 0), self.thread_budget, self.room_budget
        )
        why = bot_loop_gate(True, allow_bots, state)
        if why is None:
            self._threads.put(thread, state.thread_turns + 1)
            self._rooms.put(room, state.room_turns + 1)
            return None
        self._counters["dropped_bot_loop"] += 1
        where = thread if why == "bot_loop_thread" else ThreadKey(room, "")
        if not self._told.get(where):
            self._told.put(where, True)
            self._counters["bot_loop_trips"] += 1
            if why == "bot_loop_thread":
                logger.warning(
                    "Chatto: bot loop breaker: %d bot-to-bot turns in a row in thread %s of room %s "
                    "(bot_loop_thread_turns=%d); not answering other bots there until a person writes in that thread",
                    state.thread_turns,
                    thread.root_id,
                    room,
                    self.thread_budget,
                )
            else:
                logger.warning(
                    "Chatto: bot loop breaker: %d bot-to-bot turns in a row in room %s "
                    "(bot_loop_room_turns=%d); not answering other bots there until a person writes in that room",
                    state.room_turns,
                    room,
                    self.room_budget,
                )
        return why
