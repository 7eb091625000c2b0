"""Exec approvals in Chatto: the prompt, answers by reaction or typed command, the outcome.

When the agent wants to run a command the host flags as dangerous, hermes-agent calls the
adapter's ``send_exec_approval`` (0.19.0 ``gateway/run.py`` ``_approval_notify_sync``;
newer hosts probe ``supports_exec_approval_buttons`` first and may call
``_send_exec_approval_prompt``; both reach :meth:`ExecApprovals.prompt`). The agent's
thread then waits (``approvals.timeout`` in ``config.yaml``; the host's own default: 60 s on
0.19.0, 300 s on newer hosts, asked of the host by :func:`compat.approval_timeout_s`) for
``tools.approval.resolve_gateway_approval``. A newer host names each request
(``request_id``); a reaction then resolves the request of the prompt it is on, not the
session's oldest (0.19.0 has no ids: the oldest).

* **The prompt** is posted where the turn runs (its thread, or the DM) through the one send
  path: the command as the host passes it (already redacted), why it was flagged, who may
  answer and how, and that silence means no. The bot adds the answer reactions itself so a
  person answers with one click:

  ======================  ==================  ===============================
  reaction                shortcode           answer (``resolve`` choice)
  ======================  ==================  ===============================
  ✅                      ``white_check_mark`` run it once (``once``)
  🔁                      ``repeat``          allow for this session (``session``)
  ♾️                      ``infinity``        always allow (``always``; only when
                                              the host offers it)
  ❌                      ``x``               do not run it (``deny``)
  ======================  ==================  ===============================

* **Who may answer by reaction**: the person whose message started the turn; when the turn
  has no known requester, any user the host authorises. Other people's reactions are
  ignored (counted ``approvals.ignored``). Typing ``/approve``, ``/approve session``,
  ``/approve always`` or ``/deny`` in the same thread or DM works too, under the host's own
  rules (it authorises the typed command itself).
* **The outcome** is edited into the prompt (who decided what); a prompt nobody answered
  before the turn ended says the command was not run.
* **Typing** pauses while a prompt waits (:meth:`waiting`) and resumes once it is answered.

State: ``pending`` (prompt message id → :class:`Pending`, bounded), background reaction
tasks. Counters ``approvals.*``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import compat, emoji
from ..bounded import BoundedMap, BoundedSet
from ..logs import get_logger
from .conn import Conn

logger = get_logger("hermes_chatto.adapter.approvals")

#: Answer reactions, in the order the bot adds them: shortcode → (host choice, meaning).
CHOICES: dict[str, tuple[str, str]] = {
    "white_check_mark": ("once", "run it once"),
    "repeat": ("session", "allow for this session"),
    "infinity": ("always", "always allow"),
    "x": ("deny", "do not run it"),
}
#: What the outcome line says per choice.
OUTCOME = {
    "once": "✅ Approved once",
    "session": "🔁 Approved for this session",
    "always": "♾️ Always allowed",
    "deny": "❌ Denied",
}
#: Prompts remembered (all rooms).
PENDING_CAPACITY = 256
#: Characters of the command shown in the prompt (the host's own prompt budget).
COMMAND_BUDGET = 3000
_TYPED = re.compile(r"^\s*/(approve|deny)\b\s*(\w+)?", re.IGNORECASE)
#: ``/deny <reason>``: the free text after the verb (newer hosts relay it to the agent).
_DENY_REASON = re.compile(r"^\s*/deny\b[ \t]*(.*)$", re.IGNORECASE | re.DOTALL)
#: Characters of a typed deny reason shown in the prompt's outcome line.
REASON_BUDGET = 300

assert all(emoji.is_shortcode(s) for s in CHOICES)  # Chatto refuses anything else


@dataclass
class Pending:
    """One prompt waiting for an answer."""

    chat_id: str
    thread_id: str
    session_key: str
    requester_id: str
    requester_name: str
    body: str
    choices: tuple[str, ...]
    #: the host's id of this request (newer hosts; ``""`` on 0.19.0): a reaction resolves it,
    #: not the session's oldest pending request
    request_id: str = ""


def prompt_text(
    command: str,
    description: str,
    *,
    requester_name: str,
    choices: tuple[str, ...],
    timeout_s: int,
    smart_denied: bool = False,
) -> str:
    """The prompt body (Markdown; pure). ``timeout_s``: seconds until the host gives up."""
    cmd = command if len(command) <= COMMAND_BUDGET else command[:COMMAND_BUDGET] + "\n… [cut]"
    fence = "````" if "```" in cmd else "```"
    who = f"{requester_name}, react" if requester_name else "React"
    options = " · ".join(f"{emoji.glyph(s)} {CHOICES[s][1]}" for s in choices)
    typed = ", ".join(f"`/{c}`" for c in _typed_forms(choices))
    only = f" Only {requester_name} can answer by reaction." if requester_name else ""
    lines = [
        "⚠️ **Approval needed**: the agent wants to run this command.",
        f"{fence}\n{cmd}\n{fence}",
        f"Why it was flagged: {description or 'dangerous command'}",
    ]
    if smart_denied:
        lines.append("The automatic check said no; your answer overrides it for this one command.")
    minutes = max(1, round(timeout_s / 60))
    lines.append(
        f"{who} on this message to answer: {options}. Or type {typed} here.{only} "
        f"If nobody answers within {minutes} minute{'s' if minutes != 1 else ''}, it will NOT run."
    )
    return "\n\n".join(lines)


def _typed_forms(choices: tuple[str, ...]) -> list[str]:
    forms = ["approve"]
    if "repeat" in choices:
        forms.append("approve session")
    if "infinity" in choices:
        forms.append("approve always")
    return forms + ["deny"]


def deny_reason(text: str) -> str:
    """The reason of a typed ``/deny <reason>`` (one line, at most :data:`REASON_BUDGET`
    characters; ``""`` without one). The host resolves the request with it (newer hosts relay
    it to the agent); the prompt's outcome line shows it."""
    m = _DENY_REASON.match(text)
    if m is None:
        return ""
    words = m.group(1).split()
    if words and words[0].lower() == "all":  # "/deny all <reason>" denies every pending request
        words = words[1:]
    reason = " ".join(words)
    return reason if len(reason) <= REASON_BUDGET else reason[:REASON_BUDGET] + "…"


def outcome_text(body: str, line: str) -> str:
    """The prompt after its answer: everything up to the instructions, then ``line``."""
    head = body.rsplit("\n\n", 1)[0]
    return f"{head}\n\n**{line}**"


class ExecApprovals:
    """Owns ``pending`` (prompt id → :class:`Pending`) and the reaction tasks.

    ``send(chat_id, text, metadata)`` posts through the adapter's send path and returns the
    host's ``SendResult``; ``edit(chat_id, message_id, text)`` edits; ``react(chat_id,
    message_id, shortcode)`` adds the bot's reaction; ``requester(chat_id, thread_id)`` →
    ``(user id, name)`` of the running turn there, or ``None``; ``authorized(user_id,
    chat_id)`` → whether the host authorises that user; ``resume_typing(chat_id)``."""

    def __init__(
        self,
        conn: Conn,
        *,
        send: Callable[..., Any],
        edit: Callable[..., Any],
        react: Callable[..., Any],
        requester: Callable[[str, str], tuple[str, str] | None],
        authorized: Callable[[str, str], bool],
        resume_typing: Callable[[str], None],
    ) -> None:
        self._conn = conn
        self._send, self._edit, self._react = send, edit, react
        self._requester, self._authorized, self._resume = requester, authorized, resume_typing
        self.pending: BoundedMap[str, Pending] = BoundedMap(PENDING_CAPACITY)
        #: every prompt posted (answered or not): its reactions are answers, never triggers
        self.prompts: BoundedSet[str] = BoundedSet(PENDING_CAPACITY * 4)
        self._tasks: set[asyncio.Future[Any]] = set()

    @classmethod
    def for_adapter(cls, adapter: Any) -> ExecApprovals:
        """Wired to a ``ChattoAdapter``: its ``send`` (the one send path), its
        :class:`OutboundOps`, the turn tracker's requester, the host's authorisation."""

        def authorized(user_id: str, chat_id: str) -> bool:
            chat_type = "dm" if adapter.rooms.is_dm(chat_id) else "group"
            return compat.is_sender_authorized(adapter, user_id, chat_type, chat_id) is not False

        return cls(
            adapter.conn,
            send=lambda chat_id, text, metadata: adapter.send(chat_id, text, metadata=metadata),
            edit=adapter.ops.edit_message,
            react=adapter.ops.add_reaction,
            requester=adapter.turns.requester,
            authorized=authorized,
            resume_typing=adapter.resume_typing_for_chat,
        )

    def is_prompt(self, message_id: str) -> bool:
        """Whether ``message_id`` is an approval prompt this process posted."""
        return message_id in self.pending or message_id in self.prompts

    def waiting(self, chat_id: str) -> bool:
        """Whether a prompt in ``chat_id`` waits for an answer (typing stays paused)."""
        return any(p.chat_id == chat_id for p in self.pending.values())

    # ------------------------------------------------------------------ the prompt

    async def prompt(
        self,
        chat_id: str,
        command: str,
        session_key: str,
        description: str = "dangerous command",
        metadata: dict[str, Any] | None = None,
        *,
        allow_permanent: bool = True,
        allow_session: bool = True,
        smart_denied: bool = False,
        request_id: str = "",
    ) -> Any:
        """Post the prompt; returns the host's ``SendResult`` (``success=False`` makes the host
        fall back to its own plain-text prompt). ``request_id``: the host's id of this request
        (newer hosts), kept with the prompt so a reaction on it resolves this request."""
        thread_id = str((metadata or {}).get("thread_id") or "")
        who = self._requester(chat_id, thread_id)
        choices = tuple(
            s
            for s, (c, _m) in CHOICES.items()
            if (c != "always" or allow_permanent) and (c != "session" or allow_session)
        )
        body = prompt_text(
            command,
            description,
            requester_name=who[1] if who else "",
            choices=choices,
            timeout_s=compat.approval_timeout_s(),
            smart_denied=smart_denied,
        )
        result = await self._send(chat_id, body, metadata)
        mid = str(getattr(result, "message_id", "") or "")
        if not getattr(result, "success", False) or not mid:
            return result
        self.pending.put(
            mid,
            Pending(
                chat_id,
                thread_id,
                session_key,
                who[0] if who else "",
                who[1] if who else "",
                body,
                choices,
                request_id=request_id,
            ),
        )
        self.prompts.add(mid)
        self._conn.counters["approvals.prompted"] += 1
        task = asyncio.ensure_future(self._offer(chat_id, mid, choices))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return result

    async def _offer(self, chat_id: str, mid: str, choices: tuple[str, ...]) -> None:
        for s in choices:
            if mid not in self.pending:
                return
            await self._react(chat_id, mid, s)

    # ------------------------------------------------------------------ answers

    async def on_reaction(self, room_id: str, message_id: str, shortcode: str, user_id: str, added: bool) -> None:
        """A realtime ``reaction_change``: an answer when it is an added answer reaction on a
        pending prompt by someone allowed to answer."""
        p = self.pending.get(message_id)
        if p is None or not added or user_id == self._conn.bot_user_id or shortcode not in p.choices:
            return
        if (p.requester_id and user_id != p.requester_id) or (
            not p.requester_id and not self._authorized(user_id, room_id)
        ):
            self._conn.counters["approvals.ignored"] += 1
            logger.info("Chatto: approval reaction by %s ignored (only the requester may answer)", user_id)
            return
        choice = CHOICES[shortcode][0]
        self.pending.pop(message_id)
        resolved = compat.resolve_approval(p.session_key, choice, request_id=p.request_id)
        self._conn.counters["approvals.answered"] += 1
        name = p.requester_name if user_id == p.requester_id and p.requester_name else user_id
        line = f"{OUTCOME[choice]} by {name}." if resolved else "⌛ This prompt had already expired."
        self._resume(p.chat_id)
        await self._edit(p.chat_id, message_id, outcome_text(p.body, line))

    async def note_message(self, event: Any) -> None:
        """A dispatched message: a typed ``/approve`` / ``/deny`` in a chat with a pending prompt
        closes it (the host resolves the approval itself: the oldest, or every one with
        ``all``); the outcome line shows a ``/deny <reason>``'s reason."""
        text = str(getattr(event, "text", "") or "")
        m = _TYPED.match(text)
        src = getattr(event, "source", None)
        if m is None or src is None or not self._authorized(str(src.user_id or ""), src.chat_id):
            return
        thread = str(getattr(src, "thread_id", "") or "")
        verb, arg = m.group(1).lower(), (m.group(2) or "").lower()
        choice = (
            "deny" if verb == "deny" else ("session" if arg == "session" else "always" if arg == "always" else "once")
        )
        name = getattr(src, "user_name", "") or getattr(src, "user_id", "")
        line = f"{OUTCOME[choice]} by {name} (typed)."
        reason = deny_reason(text) if choice == "deny" else ""
        if reason:
            line = f"{OUTCOME[choice]} by {name} (typed): {reason}"
        for mid, p in list(self.pending.items()):
            if p.chat_id != src.chat_id or (p.thread_id or "") != thread:
                continue
            self.pending.pop(mid)
            self._conn.counters["approvals.typed"] += 1
            await self._edit(p.chat_id, mid, outcome_text(p.body, line))
            if arg != "all":
                return

    async def turn_ended(self, event: Any) -> None:
        """The turn in this chat/thread ended: prompts still open there were never answered."""
        src = getattr(event, "source", None)
        if src is None:
            return
        thread = str(getattr(src, "thread_id", "") or "")
        for mid, p in list(self.pending.items()):
            if p.chat_id == src.chat_id and (p.thread_id or "") == thread:
                self.pending.pop(mid)
                self._conn.counters["approvals.expired"] += 1
                self._resume(p.chat_id)
                await self._edit(
                    p.chat_id, mid, outcome_text(p.body, "⌛ Not answered in time: the command was NOT run.")
                )
