"""The inbound pipeline: which realtime message becomes a Hermes turn, and how.

Small pure steps on plain data (:class:`~hermes_chatto.wire.types.ChattoMessage` plus an
:class:`IngressContext`), each testable on its own; :func:`decide` runs them in order
and returns an :class:`IngressDecision` the adapter just executes.

1. classification — done by the wire layer (``wire/frames.Classifier``);
2. :func:`is_own` — the bot's own messages (author id == bot id, or an id we just
   created) are dropped in channels, threads and DMs; another bot is never "self";
3. dedupe by event id — :class:`SeenSet` (bounded LRU; the adapter uses the
   restart-surviving ``store.SeenStore`` when it exists);
4. :func:`skip_reason` — echo rows, tombstones, second upserts of a thread root,
   bodiless rows;
5. :func:`gate` — DMs always; channels when ``@<bot login>`` appears outside code
   spans/blocks and blockquotes (:func:`mentions`), in a thread the bot takes part in,
   or in a free-response room; then :func:`bot_gate` — another bot's message only as
   ``allow_bots`` says (default ``none``), and :func:`bot_loop_gate` — at most a budget
   of consecutive bot-to-bot turns per thread and per room, until a person speaks there;
6. :func:`route` — DM → ``chat_type="dm"``; channel → ``"group"``; ``chat_id`` = room
   id; ``thread_id`` = thread root id; a top-level channel message that starts a turn
   carries its own id as ``thread_id`` (answered in a thread under it, as Hermes' Slack
   adapter does) unless ``reply_in_thread`` is off.

Reactions start a turn only when configured (``reaction_triggers``): :func:`decide_reaction`
applies the same gates to the reactor and the reacted message. No I/O, no Hermes import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from .bounded import BoundedSet
from .wire.types import ROOM_KIND_DM, ChattoMessage

#: ``allow_bots`` values: other bots' messages never start a turn / only when they
#: @mention the bot / like a person's (Hermes' Slack and Discord adapters: default none).
ALLOW_BOTS_NONE, ALLOW_BOTS_MENTIONS, ALLOW_BOTS_ALL = "none", "mentions", "all"
ALLOW_BOTS_VALUES = (ALLOW_BOTS_NONE, ALLOW_BOTS_MENTIONS, ALLOW_BOTS_ALL)


# ---------------------------------------------------------------------------------
# step 2: self


def is_own(msg: ChattoMessage, bot_user_id: str, recently_created: Container[str] = ()) -> bool:
    """True when ``msg`` is the bot's own message: its author id equals the bot's user id
    or its event id is one the bot just created (``CreateMessage`` response ids).

    Another bot (``author.is_bot`` with a different id) is an ordinary sender.
    An empty ``bot_user_id`` never matches (unknown identity is not "everyone").
    """
    if bot_user_id and msg.author_id == bot_user_id:
        return True
    return bool(msg.event_id) and msg.event_id in recently_created


# ---------------------------------------------------------------------------------
# step 3: dedupe


class SeenLike(Protocol):
    def __contains__(self, event_id: object) -> bool: ...
    def add(self, event_id: str) -> None: ...


class SeenSet(BoundedSet[str]):
    """Bounded in-memory set of event ids, least recently added evicted first.

    ``capacity`` counts ids (default 50,000; below 1 means 1). In-memory only: the adapter
    prefers the sqlite-backed ``hermes_chatto.store.SeenStore`` (survives a restart) when
    present. Re-adding an id refreshes it; empty ids are ignored.
    """

    __slots__ = ()

    def __init__(self, capacity: int = 50_000, initial: Iterable[str] = ()) -> None:
        super().__init__(max(1, int(capacity)), initial)


# ---------------------------------------------------------------------------------
# step 4: rows that are never turns


def skip_reason(msg: ChattoMessage) -> str | None:
    """Why ``msg`` is not a new message, or ``None``.

    ``"echo_row"`` (``echo_of_event_id`` set: a channel copy of a thread reply,
    the canonical reply is handled instead), ``"tombstone"`` (``deleted_at`` set),
    ``"no_body"`` (no text and no attachment).
    """
    if msg.echo_of_event_id:
        return "echo_row"
    if msg.deleted_at is not None:
        return "tombstone"
    if not (msg.body or "").strip() and not msg.attachment_names:
        return "no_body"
    return None


# ---------------------------------------------------------------------------------
# step 5: mention gate

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def strip_code_and_quotes(body: str) -> str:
    """``body`` with fenced code blocks, indented-by-fence content, inline code spans and
    blockquote lines removed (replaced by spaces/newlines), as Chatto's mention parser
    ignores them (Chatto's ``cli/internal/core/mentions.go``)."""
    out_lines: list[str] = []
    fence: str | None = None
    for line in body.split("\n"):
        m = _FENCE_RE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out_lines.append("")
                continue
            if line.lstrip(" ").startswith(">"):
                out_lines.append("")
                continue
            out_lines.append(line)
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = None
            out_lines.append("")
    text = "\n".join(out_lines)
    return _strip_code_spans(text)


def _strip_code_spans(text: str) -> str:
    """Remove CommonMark inline code spans: a run of N backticks up to the next run of
    exactly N backticks. An unmatched run is literal text."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] != "`":
            j = text.find("`", i)
            if j < 0:
                out.append(text[i:])
                break
            out.append(text[i:j])
            i = j
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        run = j - i
        # find a closing run of exactly `run` backticks
        k = j
        close = -1
        while k < n:
            k = text.find("`" * run, k)
            if k < 0:
                break
            e = k + run
            if (k == 0 or text[k - 1] != "`") and (e >= n or text[e] != "`"):
                close = k
                break
            while k < n and text[k] == "`":
                k += 1
        if close < 0:
            out.append(text[i:j])
            i = j
        else:
            out.append(" ")
            i = close + run
    return "".join(out)


@lru_cache(maxsize=64)
def _mention_re(login: str) -> re.Pattern[str]:
    """The compiled ``@<login>`` pattern (one per bot login; compiled once).

    Same matches as ``(?<![\\w.@/-])@<login>(?![\\w-])``: the "no word char, ``.``, ``@``,
    ``/`` or ``-`` before the ``@``" test is written as a lookbehind *after* the literal
    ``@`` so that the regex engine can skip straight to each ``@`` instead of testing the
    lookbehind at every position of the body."""
    return re.compile(r"@(?<![\w.@/-]@)" + re.escape(login) + r"(?![\w-])", re.IGNORECASE)


def mentions(body: str | None, login: str) -> bool:
    """True when ``@<login>`` appears in ``body`` outside code spans, code blocks and
    blockquotes. Case-insensitive; the mention must not be part of a longer login or an
    e-mail address (``a@login`` / ``@login2`` do not count)."""
    if not body or not login or "@" not in body:  # no "@": no mention (the pattern needs one)
        return False
    if "`" in body or "~" in body or ">" in body:
        body = strip_code_and_quotes(body)
    # else: without backticks, tildes or ">" there is no fence, code span or blockquote,
    # and strip_code_and_quotes would return the body unchanged.
    return _mention_re(login).search(body) is not None


# ---------------------------------------------------------------------------------
# context and decision


@dataclass(slots=True, unsafe_hash=True)  # read-only by convention; not frozen: see wire/events.py
class IngressContext:
    """What the pipeline needs to know besides the message (plain values).

    ``room_kind`` is ``"dm"`` / ``"channel"`` (``""`` = unknown, treated as channel);
    ``bot_in_thread`` means the bot already takes part in the message's thread (it
    posted there, the root is its own, or a session exists for the thread);
    ``free_response`` means the room is configured to answer without a mention.
    ``allow_bots`` (:data:`ALLOW_BOTS_VALUES`) says which messages of *other* bots may
    start a turn (:func:`bot_gate`). ``thread_require_mention``: in a channel thread only a
    message that mentions the bot starts a turn (:func:`strict_thread_gate`).
    """

    bot_user_id: str
    bot_login: str = ""
    room_kind: str = ""
    room_name: str = ""
    free_response: bool = False
    require_mention: bool = True
    bot_in_thread: bool = False
    reply_in_thread: bool = True
    recently_created: Container[str] = field(default_factory=frozenset)
    allow_bots: str = ALLOW_BOTS_NONE
    thread_require_mention: bool = False


@dataclass(slots=True, unsafe_hash=True)  # read-only by convention; not frozen: see wire/events.py
class IngressDecision:
    """Dispatch or drop, with the source fields for ``adapter.build_source``.

    ``reason`` is a stable slug: ``dispatch_dm``, ``dispatch_mention``,
    ``dispatch_thread``, ``dispatch_free_response``, ``dispatch_no_mention_required``,
    ``own_message``, ``duplicate``, ``echo_row``, ``tombstone``,
    ``no_body``, ``not_addressed``, ``other_bot`` (another bot's message ``allow_bots``
    does not admit), ``bot_loop_thread`` / ``bot_loop_room`` (another bot's message past the
    loop budget: :func:`bot_loop_gate`, applied by the adapter, which keeps the counts).
    ``starts_thread`` is True when a top-level channel message gets ``thread_id`` = its
    own id (the reply opens a thread under it).
    """

    dispatch: bool
    reason: str
    chat_type: str = ""
    chat_id: str = ""
    chat_name: str | None = None
    thread_id: str | None = None
    user_id: str = ""
    user_name: str = ""
    is_bot: bool = False
    text: str = ""
    message_id: str = ""
    starts_thread: bool = False

    # The two copies the ingest path makes per turn, built by position: ``dataclasses.replace``
    # introspects every field (~2 µs against ~0.3; tests compare the two field by field).

    def with_author(self, user_name: str, is_bot: bool, chat_name: str | None) -> IngressDecision:
        """``dataclasses.replace(self, user_name=…, is_bot=…, chat_name=…)``."""
        return IngressDecision(
            self.dispatch,
            self.reason,
            self.chat_type,
            self.chat_id,
            chat_name,
            self.thread_id,
            self.user_id,
            user_name,
            is_bot,
            self.text,
            self.message_id,
            self.starts_thread,
        )

    def with_text(self, text: str) -> IngressDecision:
        """``dataclasses.replace(self, text=…)``."""
        return IngressDecision(
            self.dispatch,
            self.reason,
            self.chat_type,
            self.chat_id,
            self.chat_name,
            self.thread_id,
            self.user_id,
            self.user_name,
            self.is_bot,
            text,
            self.message_id,
            self.starts_thread,
        )


def gate(msg: ChattoMessage, ctx: IngressContext) -> str | None:
    """Step 5: the dispatch reason, or ``None`` when the message is not for the bot."""
    if ctx.room_kind == ROOM_KIND_DM:
        return "dispatch_dm"
    # the server's own mention list when the message came with one (protocol 4), else the body
    mv = msg.mentions_viewer
    if mv or (mv is None and mentions(msg.body, ctx.bot_login)):
        return "dispatch_mention"
    if msg.thread_root_event_id and ctx.bot_in_thread:
        return "dispatch_thread"
    if ctx.free_response:
        return "dispatch_free_response"
    if not ctx.require_mention:
        return "dispatch_no_mention_required"
    return None


def bot_gate(msg: ChattoMessage, reason: str, ctx: IngressContext) -> str | None:
    """Step 5b: ``reason`` unchanged for a person's message; for another bot's message
    (``author.is_bot``) ``reason`` only when ``allow_bots`` admits it (``all``; or
    ``mentions`` and the message @mentions the bot), else ``None``. Two bots that answer
    each other's thread replies would loop without end (hermes-agent PR #27127)."""
    author = msg.author
    if author is None or not author.is_bot:
        return reason
    if ctx.allow_bots == ALLOW_BOTS_ALL:
        return reason
    if ctx.allow_bots == ALLOW_BOTS_MENTIONS and reason == "dispatch_mention":
        return reason
    return None


# ---------------------------------------------------------------------------------
# step 5c: the bot-to-bot loop breaker

#: Default budgets of consecutive bot-to-bot turns (turns whose trigger is another bot's
#: message, with no person's message in between): per thread and per room.
BOT_LOOP_THREAD_TURNS, BOT_LOOP_ROOM_TURNS = 6, 20


@dataclass(slots=True, unsafe_hash=True)  # read-only by convention; not frozen: see wire/events.py
class BotLoopState:
    """What the loop breaker counted (plain counts, the adapter keeps them per thread/room).

    ``thread_turns`` / ``room_turns``: consecutive bot-to-bot turns the bot took in the
    message's thread / room since a person last spoke there. ``thread_budget`` /
    ``room_budget``: how many are allowed (0 = no limit)."""

    thread_turns: int = 0
    room_turns: int = 0
    thread_budget: int = BOT_LOOP_THREAD_TURNS
    room_budget: int = BOT_LOOP_ROOM_TURNS


def bot_loop_gate(is_bot: bool, allow_bots: str, state: BotLoopState) -> str | None:
    """Step 5c: ``None`` when a turn may start; ``"bot_loop_thread"`` / ``"bot_loop_room"``
    when the message is another bot's and the bot already took its budget of consecutive
    bot-to-bot turns in the thread / the room.

    A person's message is never stopped (it resets the counts: the adapter's job). Only
    ``allow_bots`` ``mentions`` and ``all`` can loop (``none`` starts no bot turn at all).
    Two assistants that answer (or @mention) each other would otherwise talk without end: the
    peers' shape is a hop limit (Feishu's bot-to-bot hops, Matrix's MSC4295 bounce limit)."""
    if not is_bot or allow_bots not in (ALLOW_BOTS_MENTIONS, ALLOW_BOTS_ALL):
        return None
    if state.thread_budget > 0 and state.thread_turns >= state.thread_budget:
        return "bot_loop_thread"
    if state.room_budget > 0 and state.room_turns >= state.room_budget:
        return "bot_loop_room"
    return None


def strict_thread_gate(msg: ChattoMessage, reason: str, ctx: IngressContext) -> str | None:
    """Step 5a, ``thread_require_mention`` on: a channel thread reply starts a turn only when
    it mentions the bot (``reason`` ``dispatch_mention``), even in a thread the bot takes part
    in; a free-response room and ``require_mention`` off still answer without one (as
    hermes-agent's Matrix ``thread_require_mention`` and Slack ``strict_mention``). DMs and
    top-level channel messages are not affected. Returns the reason, or ``None`` (drop)."""
    if reason != "dispatch_thread" or not msg.thread_root_event_id or ctx.room_kind == ROOM_KIND_DM:
        return reason
    if ctx.free_response:
        return "dispatch_free_response"
    if not ctx.require_mention:
        return "dispatch_no_mention_required"
    return None


def route(msg: ChattoMessage, ctx: IngressContext) -> tuple[str, str, str | None, bool]:
    """Step 6: ``(chat_type, chat_id, thread_id, starts_thread)``.

    DM → ``("dm", room, None)`` (Chatto DMs have no threads). Channel reply →
    ``("group", room, root)``. Top-level channel message → ``("group", room, own id)``
    when ``reply_in_thread`` (the answer opens a thread under it), else no thread.
    """
    if ctx.room_kind == ROOM_KIND_DM:
        return "dm", msg.room_id, None, False
    if msg.thread_root_event_id:
        return "group", msg.room_id, msg.thread_root_event_id, False
    if ctx.reply_in_thread:
        return "group", msg.room_id, msg.event_id, True
    return "group", msg.room_id, None, False


def _drop(reason: str, msg: ChattoMessage) -> IngressDecision:
    return IngressDecision(False, reason, chat_id=msg.room_id, message_id=msg.event_id)


def chat_name_for(chat_type: str, room_name: str, author_label: str) -> str | None:
    """The source's ``chat_name`` (what gateway.log, the channel directory and ``hermes send
    -l`` show): the room's name; for a DM, which has none, the person's display name (the
    other member of a bot's DM is the author of every message it gets there); ``None`` when
    unknown (the host then shows the id)."""
    if room_name:
        return room_name
    if chat_type == "dm" and author_label:
        return author_label
    return None


def decide(
    msg: ChattoMessage,
    ctx: IngressContext,
    seen: SeenLike | None = None,
    *,
    mark_seen: bool = True,
) -> IngressDecision:
    """Run steps 2–6 on one new message and return the decision.

    ``seen`` (step 3) is consulted and, when ``mark_seen``, the event id is added to it
    for every message that passes step 2 — so a replay after a reconnect, a gap
    recovery or a restart (with a persistent seen-store) is dropped as ``duplicate``.
    """
    if is_own(msg, ctx.bot_user_id, ctx.recently_created):
        return _drop("own_message", msg)
    if seen is not None:
        eid = msg.event_id
        if eid in seen:
            return _drop("duplicate", msg)
        if mark_seen:
            seen.add(eid)
    why = skip_reason(msg)
    if why is not None:
        return _drop(why, msg)
    reason = gate(msg, ctx)
    if reason is not None and ctx.thread_require_mention:
        reason = strict_thread_gate(msg, reason, ctx)
    if reason is None:
        return _drop("not_addressed", msg)
    if bot_gate(msg, reason, ctx) is None:
        return _drop("other_bot", msg)
    chat_type, chat_id, thread_id, starts = route(msg, ctx)
    author = msg.author
    return IngressDecision(  # positional (field order): cheaper than keywords on the ingest path
        True,
        reason,
        chat_type,
        chat_id,
        chat_name_for(chat_type, ctx.room_name, author.label if author is not None else ""),
        thread_id,
        msg.author_id,
        (author.label if author is not None else msg.author_id),
        bool(author.is_bot) if author is not None else False,
        msg.body or "",
        msg.event_id,
        starts,
    )


# ---------------------------------------------------------------------------------
# reaction triggers

#: The turn text of a reaction trigger: ``reaction:added:<shortcode>``, named as hermes-agent's
#: Slack (``reaction_triggers``, PR #70195) and Feishu adapters name theirs.
REACTION_TURN_PREFIX = "reaction:added:"


def reaction_turn_text(shortcode: str) -> str:
    """``"reaction:added:<shortcode>"``: the text of the turn a trigger reaction starts."""
    return REACTION_TURN_PREFIX + shortcode


@dataclass(slots=True, unsafe_hash=True)  # read-only by convention; not frozen: see wire/events.py
class Reaction:
    """A reaction as ingress judges it: ``shortcode`` added (``added``) by ``user_id`` on
    ``msg`` (``None``: the message could not be read); ``user_is_bot``: the reactor is a bot
    account; ``user_allowed``: the host authorises the reactor (``False`` only when its check
    refuses them); ``on_prompt``: the message is one of the bot's approval prompts."""

    shortcode: str
    user_id: str
    added: bool = True
    msg: ChattoMessage | None = None
    user_is_bot: bool = False
    user_allowed: bool = True
    on_prompt: bool = False


def reaction_gate(r: Reaction, ctx: IngressContext, triggers: Container[str]) -> str | None:
    """Whether a reaction starts a turn: ``None`` when it does, else the drop reason.

    The same gates as a message: only an *added* reaction whose shortcode is one of
    ``triggers`` (``reaction_removed``, ``not_a_trigger``); never the bot's own
    (``own_reaction``), another bot's only with ``allow_bots: all`` (``other_bot``: a
    reaction cannot mention, so ``mentions`` does not admit it); never on an approval
    prompt (``approval_prompt``: its reactions are answers); the reactor must be authorised
    (``not_allowed``); the message must be readable and a real message (``no_message`` and
    :func:`skip_reason`'s slugs); and it must be one the bot serves (``not_addressed``): in
    a DM, on the bot's own message or one that mentions it, in a thread the bot takes part
    in (unless ``thread_require_mention``), in a free-response room, or with
    ``require_mention`` off."""
    if not r.added:
        return "reaction_removed"
    if r.shortcode not in triggers:
        return "not_a_trigger"
    if ctx.bot_user_id and r.user_id == ctx.bot_user_id:
        return "own_reaction"
    if r.user_is_bot and ctx.allow_bots != ALLOW_BOTS_ALL:
        return "other_bot"
    if r.on_prompt:
        return "approval_prompt"
    if not r.user_allowed:
        return "not_allowed"
    msg = r.msg
    if msg is None:
        return "no_message"
    why = skip_reason(msg)
    if why is not None:
        return why
    if ctx.room_kind == ROOM_KIND_DM:
        return None
    own = bool(ctx.bot_user_id) and msg.author_id == ctx.bot_user_id
    mv = msg.mentions_viewer
    if own or mv or (mv is None and mentions(msg.body, ctx.bot_login)):
        return None
    if msg.thread_root_event_id and ctx.bot_in_thread and not ctx.thread_require_mention:
        return None
    if ctx.free_response or not ctx.require_mention:
        return None
    return "not_addressed"


def decide_reaction(r: Reaction, ctx: IngressContext, triggers: Container[str]) -> IngressDecision:
    """:func:`reaction_gate`, then the turn: text ``reaction:added:<shortcode>``, the reactor
    as its user (``user_name`` = their id until the adapter knows their name), routed like
    the reacted message (:func:`route`: its thread, a thread under a top-level channel message
    when ``reply_in_thread``, flat in a DM); ``message_id`` = the reacted message."""
    msg = r.msg
    why = reaction_gate(r, ctx, triggers)
    if why is not None or msg is None:
        return IngressDecision(
            False, why or "no_message", chat_id=msg.room_id if msg else "", message_id=msg.event_id if msg else ""
        )
    chat_type, chat_id, thread_id, starts = route(msg, ctx)
    return IngressDecision(
        True,
        "dispatch_reaction",
        chat_type,
        chat_id,
        ctx.room_name or None,
        thread_id,
        r.user_id,
        r.user_id,
        r.user_is_bot,
        reaction_turn_text(r.shortcode),
        msg.event_id,
        starts,
    )


# ---------------------------------------------------------------------------------
# edits


@dataclass(frozen=True, slots=True)
class EditDecision:
    """What to do with an edit: ``redispatch`` the edited text for ``guard_key`` (the
    adapter's in-flight turn key) or ignore it (``reason``)."""

    redispatch: bool
    reason: str
    guard_key: str = ""
    text: str = ""


def decide_edit(msg: ChattoMessage, bot_user_id: str, inflight: Callable[[str], str | None]) -> EditDecision:
    """An edit replaces a turn only when the edited message is the trigger of a turn
    still in flight (``inflight(event_id)`` returns its guard key); edits of older
    messages, own edits, tombstones and empty bodies do nothing."""
    if bot_user_id and msg.author_id == bot_user_id:
        return EditDecision(False, "own_message")
    if msg.deleted_at is not None or not (msg.body or "").strip():
        return EditDecision(False, "no_body")
    key = inflight(msg.event_id)
    if not key:
        return EditDecision(False, "not_in_flight")
    return EditDecision(True, "replace_in_flight", guard_key=key, text=msg.body or "")
