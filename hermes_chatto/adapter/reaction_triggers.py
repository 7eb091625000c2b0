"""Reaction triggers: a configured reaction on a message starts a turn (opt-in).

``reaction_triggers`` (gemoji shortcodes, empty by default) names the reactions that start
a turn ``reaction:added:<shortcode>``, named as hermes-agent's Slack adapter
(``reaction_triggers``, PR #70195) and Feishu adapter name theirs. The turn is the
reactor's, about the reacted message: it is routed like that message (its thread; a thread
under a top-level channel message when ``reply_in_thread``; flat in a DM), carries the
message as ``reply_to_message_id`` / ``reply_to_text`` (the runner quotes it when the
session has not seen it) and gets the room's ``channel_prompts`` / skills.

The decision is the pure :func:`hermes_chatto.ingress.decide_reaction`: the same gates as a
message (the reactor is authorised; the message is in a room and thread the bot serves; not
the bot's own reaction, not another bot's unless ``allow_bots: all``). Approval prompts keep
their reactions (:mod:`.approvals` answers them; they never start a turn).

Cost: nothing for a reaction that is not a trigger; a trigger reads the reacted message once
(``GetMessage``) and its reactor once per process (``GetUser``). A reaction the server
replays after a reconnect is dropped by the seen-set (key ``reaction:<room>:<message>:
<shortcode>:<user>``), and its turn waits for that key to be on disk like a message's turn
(:mod:`.durable`). Counters ``reaction_turns``, ``reaction_drops``, ``reaction_drops.<why>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import compat
from ..frontier.render import sender_name
from ..ingress import IngressDecision, Reaction, decide_reaction
from ..logs import get_logger
from ..wire.errors import ChattoError, ChattoNotFound
from ..wire.events import ReactionChanged
from ..wire.types import ChattoMessage, ThreadKey
from .conn import Conn

logger = get_logger("hermes_chatto.adapter.reaction_triggers")

#: ``MessageEvent.metadata`` key a reaction turn carries (its shortcode): the turn tracker
#: leaves such turns out of the thread frontier (their ``message_id`` is not a new message).
REACTION_META = "chatto_reaction_trigger"


def seen_key(ev: ReactionChanged) -> str:
    """The seen-set key of one added reaction (room, message, shortcode, reactor)."""
    return f"reaction:{ev.room_id}:{ev.message_event_id}:{ev.emoji}:{ev.user_id}"


class ReactionTriggers:
    """Turns configured reactions into turns. Owns no state (the seen-set is the
    connection's). ``inbound`` is the :class:`~.inbound.Inbound` unit (its ingress context,
    channel overlays, durable gate and dispatch); ``is_prompt(message_id)`` says whether a
    message is one of the bot's approval prompts."""

    def __init__(self, host: Any, conn: Conn, inbound: Any, *, is_prompt: Callable[[str], bool]) -> None:
        self._host = host
        self._conn = conn
        self._inbound = inbound
        self._is_prompt = is_prompt

    def _triggers(self) -> list[str]:
        return list(getattr(self._conn.settings, "reaction_triggers", None) or ())

    async def on_reaction(self, ev: ReactionChanged) -> None:
        """A realtime ``reaction_added`` / ``reaction_removed``: a turn when ingress says so."""
        triggers = self._triggers()
        if not triggers or not ev.added or ev.emoji not in triggers or ev.user_id == self._conn.bot_user_id:
            return  # the common case: no read, no count
        seen, key = self._conn.seen, seen_key(ev)
        if seen is not None and key in seen:
            return
        d, msg = await self._decide(ev, triggers)
        if not d.dispatch or msg is None:
            self._conn.counters["reaction_drops"] += 1
            self._conn.counters["reaction_drops." + d.reason] += 1
            logger.debug("Chatto: reaction %s on %s starts no turn (%s)", ev.emoji, ev.message_event_id, d.reason)
            return
        if seen is not None:
            seen.add(key)
        gate = self._inbound.durable
        if gate is None:
            await self._hand_over(ev, msg, d)
            return
        await gate.admit(key, lambda: self._hand_over(ev, msg, d))

    async def _decide(self, ev: ReactionChanged, triggers: list[str]) -> tuple[IngressDecision, ChattoMessage | None]:
        inbound = self._inbound
        room = await inbound._rooms.fetch(ev.room_id)
        user = await inbound._users.fetch(ev.user_id)
        msg = await self._read(ev)
        chat_type = "dm" if room is not None and room.kind == "dm" else "group"
        allowed = compat.is_sender_authorized(self._host, ev.user_id, chat_type, ev.room_id) is not False
        r = Reaction(
            ev.emoji,
            ev.user_id,
            ev.added,
            msg,
            user_is_bot=bool(user is not None and user.is_bot),
            user_allowed=allowed,
            on_prompt=self._is_prompt(ev.message_event_id),
        )
        probe = msg or ChattoMessage(event_id=ev.message_event_id, room_id=ev.room_id, author_id="")
        d = decide_reaction(r, inbound.ctx_for(room, probe), triggers)
        if not d.dispatch and d.reason == "not_addressed" and msg is not None and msg.thread_root_event_id:
            if await inbound._threads.bot_in_thread(msg.thread, lambda: inbound._has_session(msg)):
                d = decide_reaction(r, inbound.ctx_for(room, msg, True), triggers)
        if d.dispatch and user is not None:
            d = dataclasses.replace(d, user_name=sender_name(user.label, user.login or user.id))
        return d, msg

    async def _read(self, ev: ReactionChanged) -> ChattoMessage | None:
        """The reacted message (``GetMessage``), or ``None`` (deleted, unreadable: WARNING)."""
        client = self._conn.client
        if client is None:
            return None
        self._conn.counters["message_reads"] += 1
        try:
            msg: ChattoMessage = await client.get_message(ev.room_id, ev.message_event_id)
        except ChattoNotFound:
            return None
        except ChattoError as exc:
            logger.warning(
                "Chatto: could not read message %s reacted to with %s (%s): %s; the reaction starts no turn",
                ev.message_event_id,
                ev.emoji,
                exc.code,
                exc,
            )
            return None
        return msg

    async def _hand_over(self, ev: ReactionChanged, msg: ChattoMessage, d: IngressDecision) -> None:
        source = self._host.build_source(
            chat_id=d.chat_id,
            chat_name=d.chat_name,
            chat_type=d.chat_type,
            user_id=d.user_id,
            user_name=d.user_name,
            thread_id=d.thread_id,
            is_bot=d.is_bot,
            message_id=d.message_id,
        )
        if d.thread_id:
            self._inbound._threads.join(ThreadKey(d.chat_id, d.thread_id))
        prompt, skills = self._inbound.channel_overlays(d.chat_id, d.thread_id)
        own = bool(msg.author_id) and msg.author_id == self._conn.bot_user_id
        event = compat.make_event(
            text=d.text,
            message_type=compat.text_message_type(),
            source=source,
            raw_message=msg,
            message_id=d.message_id,
            reply_to_message_id=msg.event_id,
            reply_to_text=(msg.body or "")[:4000] or None,
            reply_to_author_id=msg.author_id or None,
            reply_to_is_own_message=own,
            timestamp=datetime.now(),
            user_id=d.user_id,
            user_name=d.user_name,
            channel_prompt=prompt,
            auto_skill=skills,
            metadata={REACTION_META: ev.emoji},
        )
        self._conn.counters["reaction_turns"] += 1
        logger.info("Chatto: reaction %s by %s on %s starts a turn", ev.emoji, d.user_id, msg.event_id)
        await self._inbound.dispatch(event)
