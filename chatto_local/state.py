"""State and rules of the local Chatto server (a Chatto 0.5 subset).

One :class:`ChattoState` holds users, rooms, room timelines, messages, threads,
reactions and the durable *fact log* that feeds the realtime events. Every public
method takes the state lock (a ``threading.RLock``), so the ConnectRPC handlers (server
event loop thread) and the test driver (any thread) can call it concurrently.

Rules follow Chatto 0.5 (``cli/internal/core``):

* ``CreateMessage`` (message_model.go, messages.go): membership, ``message.post`` for roots, the separate
  ``message.post-in-thread`` for replies, ``message.echo`` for ``also_send_to_channel``,
  threads created by the first reply (an extra ``ThreadCreated`` fact), the root must be a
  root message, DMs have no threads, body limit 10,000 UTF-8 **bytes**, whitespace-only
  bodies rejected, slow mode (``resource_exhausted``).
* edits (3 h author window), deletions as tombstones.
* reactions by gemoji shortcode (emoji.go).
* rooms and DMs; bots start with no permissions (permission_resolver.go).

Errors are raised as the project's :mod:`hermes_chatto.wire.errors` classes with the
exact Connect ``code`` and Chatto's message text, so the RPC layer can serialise them
and the driver raises what a client would see.

All instants are **integer nanoseconds** since the Unix epoch on the server clock
(:class:`Clock`, which has a settable offset so tests can simulate "3 hours later").
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hermes_chatto.emoji import is_shortcode
from hermes_chatto.wire import errors as E

from .cursors import Sealer, b64url, new_id, unb64url

# ----------------------------------------------------------------------------- constants

MAX_BODY_BYTES = 10_000  #: ``MaxMessageBodyLength``, UTF-8 bytes
EDIT_WINDOW_NS = 3 * 3600 * 1_000_000_000  #: ``MessageEditWindow``, 3 hours
MAX_REACTIONS_PER_USER = 20  #: ``MaxReactionsPerUserPerMessage`` (distinct emoji)
DEFAULT_PAGE = 50  #: ``defaultHistoricalMessageLimit``, events
MAX_PAGE = 500
#: Presence lapses this long after the last SetPresence/RefreshPresence (the presence KV
#: bucket's TTL, 60 s; clients refresh every 30 s). Not re-verified for beta.20.
PRESENCE_TTL_NS = 60 * 1_000_000_000

#: The room permission rows, 0.5 names (cli/internal/core/permission.go; docs/chatto-0.5.md §5).
ROOM_PERMISSIONS = (
    "room.list",
    "room.join",
    "message.read",
    "message.read-interactions",
    "message.post",
    "message.post-in-thread",
    "message.post-in-interactions",
    "message.attach",
    "message.react",
    "message.echo",
    "message.manage",
    "room.manage",
    "room.ban-member",
)
#: Allows that include others (permission.go: "allows include listed permissions; denials do
#: not follow inclusion"): ``message.read`` includes ``message.read-interactions``;
#: ``message.post`` includes ``message.post-in-thread`` and ``message.post-in-interactions``.
PERMISSION_INCLUDES = {
    "message.read": ("message.read-interactions",),
    "message.post": ("message.post-in-thread", "message.post-in-interactions"),
}


def expand(perms: Iterable[str]) -> set[str]:
    """``perms`` plus what they include (:data:`PERMISSION_INCLUDES`)."""
    out = set(perms)
    for p in list(out):
        out.update(PERMISSION_INCLUDES.get(p, ()))
    return out


#: Server-scope permission rows reported by GetViewer (one row per known permission).
SERVER_PERMISSIONS = ROOM_PERMISSIONS + ("user.profile", "server.manage")
#: What a human gets by default (the "everyone" role of a fresh server).
HUMAN_DEFAULT_PERMISSIONS = frozenset(
    {
        "room.list",
        "room.join",
        "message.read",
        "message.post",
        "message.post-in-thread",
        "message.attach",
        "message.react",
        "message.echo",
        "user.profile",
    }
)
#: Rows that apply inside a DM (the "Direct messages" scope: message.* only).
DM_PERMISSIONS = frozenset(
    {
        "message.read",
        "message.read-interactions",
        "message.post",
        "message.post-in-interactions",
        "message.attach",
        "message.react",
    }
)
#: The usual set a demo bot is given (bots start with none).
BOT_USUAL_PERMISSIONS = (
    "room.list",
    "room.join",
    "message.read",
    "message.post",
    "message.post-in-thread",
    "message.attach",
    "message.react",
)

_INVISIBLE = {"\u3164", "\u2800", "\u115f", "\u1160", "\uffa0"}
_BOT_KEY_RE = re.compile(r"^cht_BK_(U[0-9A-Za-z]{14})\.([A-Za-z0-9_\-]+)$")


def has_visible_content(body: str) -> bool:
    """Chatto's ``HasVisibleContent``: something other than whitespace/invisible chars."""
    for ch in body:
        if ch.isspace() or ch in _INVISIBLE:
            continue
        if unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp", "Mn", "Me"):
            continue
        return True
    return False


def rfc3339nano(ns: int) -> str:
    """Go ``time.RFC3339Nano`` in UTC: trailing zeros of the fraction trimmed, ``Z`` suffix."""
    secs, frac = divmod(ns, 1_000_000_000)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    f = f"{frac:09d}".rstrip("0")
    return base + ("." + f if f else "") + "Z"


def err(code: str, message: str) -> E.ChattoError:
    """A :class:`hermes_chatto.wire.errors.ChattoError` subclass instance for Connect ``code``."""
    cls = {
        "unauthenticated": E.ChattoCredentialError,
        "permission_denied": E.ChattoPermissionDenied,
        "invalid_argument": E.ChattoInvalidArgument,
        "out_of_range": E.ChattoInvalidArgument,
        "not_found": E.ChattoNotFound,
        "failed_precondition": E.ChattoFailedPrecondition,
        "resource_exhausted": E.ChattoResourceExhausted,
    }.get(
        code,
        E.ChattoTransientError
        if code in ("unavailable", "aborted", "internal", "unknown", "deadline_exceeded", "data_loss")
        else E.ChattoError,
    )
    return cls(message, code=code)


class Clock:
    """Server clock: wall time plus a settable ``offset`` in **seconds**.

    ``now_ns()`` → int ns since epoch; ``now()`` → float s; ``advance(s)`` adds to the offset.
    Tests use it to make "an hour later" (edit window, slow mode) or expire resume cursors.
    """

    def __init__(self, offset: float = 0.0):
        self.offset = float(offset)

    def now_ns(self) -> int:
        return time.time_ns() + int(self.offset * 1e9)

    def now(self) -> float:
        return self.now_ns() / 1e9

    def advance(self, seconds: float) -> None:
        self.offset += float(seconds)


# ----------------------------------------------------------------------------- records


@dataclass
class UserRec:
    id: str
    login: str
    display_name: str
    is_bot: bool
    created_ns: int
    roles: list[str] = field(default_factory=list)
    server_grants: set[str] = field(default_factory=set)
    tokens: list[str] = field(default_factory=list, repr=False)  # humans: issued bearer tokens
    #: bots: named API keys ``{"id", "name", "secret", "created_ns"}`` (BotService/CreateBotApiKey);
    #: several may be valid at once, each revoked on its own (RevokeBotApiKey)
    bot_keys: list[dict] = field(default_factory=list, repr=False)
    deleted: bool = False
    owner_id: str = ""  # bots: the human owner ("" = ownerless, not capped: a local-server shortcut)
    profile_rev: int = 0

    @property
    def bot_key(self) -> str:
        """The bot's oldest valid key (``""`` when it has none)."""
        if not self.is_bot or not self.bot_keys:
            return ""
        return bot_key_token(self.id, self.bot_keys[0]["secret"])


def bot_key_token(user_id: str, secret: str) -> str:
    """The bearer form of a bot key: ``cht_BK_<userId>.<secret>``."""
    return f"cht_BK_{user_id}.{secret}"


@dataclass
class RoomRec:
    id: str
    kind: str  # "channel" | "dm"
    name: str
    created_ns: int
    members: list[str] = field(default_factory=list)
    description: str = ""
    archived: bool = False
    group_id: str = ""
    universal: bool = False
    slow_mode_seconds: int = 0
    threading_mode: int = 3  #: ``RoomThreadingMode`` (3 = ENABLED)
    timeline: list[str] = field(default_factory=list)  # room-visible row ids, oldest first
    grants: dict[str, set[str]] = field(default_factory=dict)  # user -> granted at room scope
    denies: dict[str, set[str]] = field(default_factory=dict)  # user -> revoked at room scope
    unread: set[str] = field(default_factory=set)  # users with has_unread
    banned: set[str] = field(default_factory=set)  # users banned from the room
    last_post_ns: dict[str, int] = field(default_factory=dict)

    @property
    def is_dm(self) -> bool:
        return self.kind == "dm"


@dataclass
class RowRec:
    """A non-message room timeline row (``room_created``, ``user_joined_room``)."""

    id: str
    room_id: str
    kind: str
    actor_id: str
    created_ns: int
    seq: int


@dataclass
class MsgRec:
    id: str
    room_id: str
    actor_id: str
    created_ns: int
    seq: int
    body: str | None
    updated_ns: int | None = None
    deleted_ns: int | None = None
    in_reply_to: str = ""
    thread_root_event_id: str = ""
    echo_of_event_id: str = ""
    echo_from_thread_root_event_id: str = ""
    channel_echo_event_id: str = ""
    reactions: dict[str, list[str]] = field(default_factory=dict)  # emoji -> user ids (order kept)
    has_thread: bool = False
    replies: list[str] = field(default_factory=list)
    followers: list[str] = field(default_factory=list)
    thread_unread: set[str] = field(default_factory=set)
    # thread summary, maintained incrementally (recomputed when a reply is deleted)
    t_count: int = 0
    t_last_ns: int | None = None
    t_participants: list[str] = field(default_factory=list)
    #: attachment rows ``{"id", "filename", "content_type"}`` (bytes live in chatto_local/assets.py)
    attachments: list[dict] = field(default_factory=list)
    #: mentions decided at post time: ``[cause, target, recipient ids]`` with cause
    #: ``"direct"`` (target = user id), ``"here"`` or ``"all"`` (target ``""``)
    mentions: list[list] = field(default_factory=list)

    @property
    def is_root(self) -> bool:
        return not self.thread_root_event_id and not self.echo_of_event_id


@dataclass
class NoticeRec:
    """One notification occurrence (Notifications 2.0, proto/chatto/api/v1/notifications.proto):
    ``kind`` is the ``NotificationSignal`` oneof name (``direct_mention_received``)."""

    id: str
    created_ns: int
    actor_id: str
    kind: str
    room_id: str
    event_id: str
    thread_root_event_id: str = ""
    unread: bool = True


#: ``@login`` mentions in a body (Chatto's mention rule, simplified to login tokens).
MENTION_RE = re.compile(r"(?<![\w@])@([A-Za-z0-9_-]+)")


@dataclass(frozen=True)
class ThreadView:
    reply_count: int
    last_reply_ns: int | None
    participants: tuple[str, ...]
    followers: frozenset[str]
    unread: frozenset[str]


@dataclass(frozen=True)
class MsgView:
    """Immutable snapshot of a message (plus its thread summary) at one moment;
    rendered per viewer by :mod:`.render`."""

    rec: MsgRec
    thread: ThreadView | None


@dataclass
class Fact:
    """One durable fact of the realtime log: replayed on resume, mapped to a protocol-4 event
    per viewer (:mod:`chatto_local.events`).

    ``audience``: user ids allowed to receive it (room members at fact time) or ``None``
    for everyone. ``rbac`` facts make any resume across them a reset.
    """

    seq: int
    id: str
    kind: str
    created_ns: int
    actor_id: str | None
    room_id: str | None = None
    audience: frozenset[str] | None = None
    msg: MsgView | None = None
    root: MsgView | None = None
    echo: MsgView | None = None
    reaction: tuple[int, str, str, str] | None = None  # (action 1/2, message id, emoji, user id)
    user_id: str | None = None
    row: RowRec | None = None
    rbac: bool = False
    #: ``thread_followed``: (room id, thread root id, is_following) of ``user_id``
    follow: tuple[str, str, bool] | None = None
    #: room facts: the room's values at fact time (name, slow mode …) for the event payload
    data: dict | None = None


# ----------------------------------------------------------------------------- state


class ChattoState:
    """The whole server state. See module docstring; all methods are thread-safe."""

    def __init__(self, *, clock: Clock | None = None, server_name: str = "Chatto (local)", version: str = "0.5.0-dev"):
        self.lock = threading.RLock()
        self.clock = clock or Clock()
        self.server_name = server_name
        self.version = version
        self.sealer = Sealer()
        self.users: dict[str, UserRec] = {}
        self.rooms: dict[str, RoomRec] = {}
        self.rows: dict[str, RowRec] = {}
        self.messages: dict[str, MsgRec] = {}
        #: user id → notification occurrences, oldest first (not persisted)
        self.notifications: dict[str, list[NoticeRec]] = {}
        #: user id → (PresenceStatus value, expiry ns); absent or lapsed = offline
        self.presence: dict[str, tuple[int, int]] = {}
        self.seq = 0
        self.facts: list[Fact] = []
        self.log_base_seq = 0  # facts with seq <= base are not in the log (e.g. loaded from disk)
        self.listeners: list[Callable[[list[Fact]], None]] = []
        self.transient_listeners: list[Callable[[str, dict], None]] = []
        self.change_listeners: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ plumbing

    def now_ns(self) -> int:
        return self.clock.now_ns()

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def _emit(self, facts: list[Fact]) -> None:
        """Append facts to the log and notify listeners (called with the lock held)."""
        if not facts:
            return
        self.facts.extend(facts)
        for cb in list(self.listeners):
            cb(facts)
        self._changed()

    def _changed(self) -> None:
        for cb in list(self.change_listeners):
            cb()

    def _fact(self, kind: str, *, actor_id: str | None, fid: str | None = None, **kw) -> Fact:
        room = self.rooms.get(kw.get("room_id") or "")
        if room is not None and "data" not in kw:
            kw["data"] = {
                "name": room.name,
                "description": room.description,
                "kind": room.kind,
                "universal": room.universal,
                "slow_mode_seconds": room.slow_mode_seconds,
                "threading_mode": room.threading_mode,
            }
        return Fact(
            seq=self._next_seq(), id=fid or new_id("E"), kind=kind, created_ns=self.now_ns(), actor_id=actor_id, **kw
        )

    def view(self, m: MsgRec) -> MsgView:
        """Snapshot of ``m`` incl. its thread summary (reply count excludes tombstones)."""
        thread = None
        if m.has_thread:
            thread = ThreadView(
                reply_count=m.t_count,
                last_reply_ns=m.t_last_ns,
                participants=tuple(m.t_participants),
                followers=frozenset(m.followers),
                unread=frozenset(m.thread_unread),
            )
        rec = dataclasses.replace(
            m,
            replies=[],
            followers=[],
            thread_unread=set(),
            t_participants=[],
            reactions={k: list(v) for k, v in m.reactions.items()},
        )
        return MsgView(rec=rec, thread=thread)

    def _recount_thread(self, root: MsgRec) -> None:
        live = [self.messages[r] for r in root.replies if self.messages[r].deleted_ns is None]
        root.t_count = len(live)
        root.t_last_ns = max((r.created_ns for r in live), default=None)
        root.t_participants = list(dict.fromkeys(r.actor_id for r in live))

    # ------------------------------------------------------------------ users and auth

    def create_user(
        self,
        login: str,
        display_name: str = "",
        is_bot: bool = False,
        *,
        roles: Iterable[str] | None = None,
        owner_id: str = "",
    ) -> UserRec:
        """Create a human (default permissions, role ``everyone``) or a bot (no
        permissions, no roles). Raises ``already_exists`` for a taken login."""
        with self.lock:
            if any(u.login == login for u in self.users.values()):
                raise err("already_exists", f"login {login!r} is taken")
            u = UserRec(
                id=new_id("U"), login=login, display_name=display_name or "", is_bot=is_bot, created_ns=self.now_ns()
            )
            if is_bot:
                if owner_id:
                    owner = self.user(owner_id)
                    if owner.is_bot or owner.deleted:
                        raise err("invalid_argument", "a bot's owner must be an active human")
                u.owner_id = owner_id
                u.bot_keys.append(self._new_key("default"))
                u.roles = list(roles or [])
            else:
                u.roles = list(roles) if roles is not None else ["everyone"]
                u.server_grants = set(HUMAN_DEFAULT_PERMISSIONS)
                u.tokens.append("chu_" + b64url(secrets.token_bytes(24)))
            self.users[u.id] = u
            self._emit([self._fact("user_created", actor_id=None, user_id=u.id)])
            return u

    def issue_token(self, user_id: str) -> str:
        """Issue another bearer token for a human; returns it."""
        with self.lock:
            u = self.user(user_id)
            if u.is_bot:
                raise err("failed_precondition", "operation requires a human account")
            tok = "chu_" + b64url(secrets.token_bytes(24))
            u.tokens.append(tok)
            self._changed()
            return tok

    def _new_key(self, name: str) -> dict:
        return {"id": new_id("K"), "name": name, "secret": b64url(secrets.token_bytes(16)), "created_ns": self.now_ns()}

    def _bot(self, bot_id: str) -> UserRec:
        u = self.user(bot_id)
        if not u.is_bot:
            raise err("not_found", "bot not found")
        return u

    def may_manage_bot(self, actor: str, bot: UserRec) -> bool:
        """The bot's owner, or a holder of ``bot.manage`` (core/bots.go)."""
        return actor == bot.owner_id or "bot.manage" in self.server_effective(actor)

    def create_bot_key(self, bot_id: str, name: str, *, actor: str | None = None) -> tuple[dict, str]:
        """``BotService/CreateBotApiKey``: a new named key next to the existing ones;
        returns ``(metadata, bearer)``. ``actor`` (when given) must own or manage the bot."""
        with self.lock:
            bot = self._bot(bot_id)
            if actor is not None and not self.may_manage_bot(actor, bot):
                raise err("permission_denied", "permission denied: bot.manage")
            if not name.strip():
                raise err("invalid_argument", "validation error:\n - name: value is required [required]")
            key = self._new_key(name.strip())
            bot.bot_keys.append(key)
            self._changed()
            return key, bot_key_token(bot.id, key["secret"])

    def revoke_bot_key(self, bot_id: str, key_id: str, *, actor: str | None = None) -> dict:
        """``BotService/RevokeBotApiKey``: the key stops authenticating at once; returns it."""
        with self.lock:
            bot = self._bot(bot_id)
            if actor is not None and not self.may_manage_bot(actor, bot):
                raise err("permission_denied", "permission denied: bot.manage")
            key = next((k for k in bot.bot_keys if k["id"] == key_id), None)
            if key is None:
                raise err("not_found", "bot API key not found")
            bot.bot_keys.remove(key)
            self._changed()
            return key

    def key_id_of(self, token: str | None) -> str | None:
        """The key id of a valid bot bearer, else ``None``."""
        m = _BOT_KEY_RE.match(token or "")
        if not m:
            return None
        with self.lock:
            u = self.users.get(m.group(1))
            if u is None:
                return None
            for k in u.bot_keys:
                if secrets.compare_digest(m.group(2), k["secret"]):
                    return str(k["id"])
            return None

    def authenticate(self, token: str | None) -> str | None:
        """User id for a bearer token (bot key or issued human token), else ``None``."""
        if not token:
            return None
        with self.lock:
            m = _BOT_KEY_RE.match(token)
            if m:
                u = self.users.get(m.group(1))
                if u is None or not u.is_bot or u.deleted or not self.bot_key_valid_owner(u):
                    return None
                try:
                    secret = unb64url(m.group(2))
                except ValueError:
                    return None
                if len(secret) not in (16, 32):
                    return None
                ok = any(secrets.compare_digest(m.group(2), k["secret"]) for k in u.bot_keys)
                return u.id if ok else None
            for u in self.users.values():
                if not u.is_bot and not u.deleted and token in u.tokens:
                    return u.id
            return None

    def user(self, user_id: str) -> UserRec:
        u = self.users.get(user_id)
        if u is None:
            raise err("not_found", "user not found")
        return u

    def user_by_login(self, login: str) -> UserRec:
        for u in self.users.values():
            if u.login == login:
                return u
        raise err("not_found", "user not found")

    # ------------------------------------------------------------------ permissions

    def effective(self, user_id: str, room: RoomRec) -> set[str]:
        """Effective room permissions of ``user_id`` in ``room`` (grants minus denies; in a DM a human
        gets the DM defaults, a bot only its own grants). A bot's grants are capped by its
        owner's (core/permission_resolver.go ``resolveBotWithGroup``: a grant works only
        while the owner holds the same permission; a deleted or non-human owner allows
        nothing)."""
        u = self.users.get(user_id)
        if u is None:
            return set()
        # allows include listed permissions, an explicit deny at the room removes the one
        # permission it names ("denials do not follow inclusion", permission.go)
        granted = expand(set(u.server_grants) | room.grants.get(user_id, set())) - room.denies.get(user_id, set())
        if room.is_dm:
            if user_id not in room.members:
                return set()
            if u.is_bot:
                return self._owner_cap(u, room, granted & DM_PERMISSIONS)
            return set(DM_PERMISSIONS) - room.denies.get(user_id, set())
        if u.is_bot:
            return self._owner_cap(u, room, granted & set(ROOM_PERMISSIONS))
        return granted & set(ROOM_PERMISSIONS)

    def _owner_cap(self, bot: UserRec, room: RoomRec, granted: set[str]) -> set[str]:
        if not bot.owner_id:
            return granted
        owner = self.users.get(bot.owner_id)
        if owner is None or owner.deleted or owner.is_bot:
            return set()
        return granted & self._owner_decision(owner, room)

    def _owner_decision(self, owner: UserRec, room: RoomRec) -> set[str]:
        """What the owner holds at ``room``'s scope, membership aside (the resolver asks the
        owner's decision for the room, not whether the owner is in it)."""
        denied = room.denies.get(owner.id, set())
        held = expand(set(owner.server_grants) | room.grants.get(owner.id, set())) - denied
        if room.is_dm:
            held |= set(DM_PERMISSIONS) - denied
        return held

    def server_effective(self, user_id: str) -> set[str]:
        """Server-scope permissions of ``user_id`` (a bot's capped by its owner's)."""
        u = self.users.get(user_id)
        if u is None:
            return set()
        held = expand(u.server_grants)
        if u.is_bot and u.owner_id:
            owner = self.users.get(u.owner_id)
            held = held & expand(owner.server_grants) if owner is not None and self.bot_key_valid_owner(u) else set()
        return held

    def bot_key_valid_owner(self, bot: UserRec) -> bool:
        """core/bots.go ``ValidateBotAPIKeyCredential``: a bot key authenticates only while
        the bot's owner exists, is not deleted and is not a bot."""
        if not bot.owner_id:
            return True
        owner = self.users.get(bot.owner_id)
        return owner is not None and not owner.deleted and not owner.is_bot

    def delete_user(self, user_id: str) -> None:
        """Delete an account (``deleted``): its tokens stop working, and so do the keys of the
        bots it owns (core/bots.go)."""
        with self.lock:
            u = self.user(user_id)
            u.deleted = True
            self.presence.pop(user_id, None)
            self._emit([self._fact("user_deleted", actor_id=None, user_id=user_id)])

    def can_see(self, user_id: str, room: RoomRec) -> bool:
        if user_id in room.members:
            return True
        if room.is_dm or room.archived:
            return False
        return "room.list" in self.effective(user_id, room)

    def room(self, room_id: str) -> RoomRec:
        r = self.rooms.get(room_id)
        if r is None:
            raise err("not_found", "room not found")
        return r

    def _member_room(self, actor: str, room_id: str) -> RoomRec:
        if not room_id:
            raise err(
                "invalid_argument",
                "validation error:\n - room_id: value length must be at least 1 characters [string.min_len]",
            )
        room = self.room(room_id)
        if actor not in room.members:
            if not self.can_see(actor, room):
                raise (
                    err("not_found", "room not found")
                    if room.is_dm
                    else err("permission_denied", "not a member of this room")
                )
            raise err("permission_denied", "not a member of this room")
        return room

    def _need(self, actor: str, room: RoomRec, perm: str) -> None:
        if perm not in self.effective(actor, room):
            raise err("permission_denied", f"permission denied: {perm}")

    def thread_of(self, m: MsgRec) -> MsgRec:
        """The root of ``m``'s thread (an echo row: the original reply's root; a root: itself)."""
        rid = m.thread_root_event_id or m.echo_from_thread_root_event_id
        return self.messages.get(rid, m) if rid else m

    def thread_relationship(self, user_id: str, root: MsgRec) -> bool:
        """The interaction relationship of ``message.read-interactions`` /
        ``message.post-in-interactions`` (permission.go, ADR-095): the account wrote the
        thread's root or was directly mentioned in it (in the root or a reply)."""
        if root.actor_id == user_id:
            return True
        for mid in [root.id, *root.replies]:
            m = self.messages.get(mid)
            if m is not None and any(c == "direct" and t == user_id for c, t, _r in m.mentions):
                return True
        return False

    def can_read_message(self, user_id: str, room: RoomRec, m: MsgRec) -> bool:
        """Message content is readable by a member holding ``message.read``, or
        ``message.read-interactions`` with a relationship to the message's thread
        (``CanReadMessageEvent``; cli/internal/core/realtime_replay.go, ADR-080/095)."""
        if user_id not in room.members:
            return False
        eff = self.effective(user_id, room)
        if "message.read" in eff:
            return True
        return "message.read-interactions" in eff and self.thread_relationship(user_id, self.thread_of(m))

    def need_read(self, actor: str, room: RoomRec, m: MsgRec | None = None) -> None:
        """Raise ``permission_denied`` unless ``actor`` may read ``room``'s timeline (``m`` is
        None) or the message ``m``."""
        ok = self.can_read_message(actor, room, m) if m is not None else "message.read" in self.effective(actor, room)
        if not ok:
            raise err("permission_denied", "permission denied: message.read")

    def _received_dm(self, actor: str, room: RoomRec) -> bool:
        """A DM in which another member has posted: ``message.post-in-interactions`` may post there."""
        return room.is_dm and any(
            (m := self.messages.get(i)) is not None and m.actor_id != actor for i in room.timeline
        )

    def grant(self, room_id: str | None, user_id: str, *perms: str) -> None:
        """Grant permissions at room scope (``room_id``) or server scope (``None``).
        An RBAC fact: resumes across it become resets (the server closes open sockets
        with ``RESYNC_REQUIRED``)."""
        with self.lock:
            u = self.user(user_id)
            if room_id is None:
                u.server_grants |= set(perms)
            else:
                room = self.room(room_id)
                room.grants.setdefault(user_id, set()).update(perms)
                room.denies.get(user_id, set()).difference_update(perms)
            self._emit([self._fact("rbac", actor_id=None, rbac=True)])

    def revoke(self, room_id: str | None, user_id: str, *perms: str) -> None:
        """Revoke permissions at room scope (also overrides server-scope grants there) or
        server scope (``None``). An RBAC fact like :meth:`grant`."""
        with self.lock:
            u = self.user(user_id)
            if room_id is None:
                u.server_grants -= set(perms)
            else:
                room = self.room(room_id)
                room.grants.get(user_id, set()).difference_update(perms)
                room.denies.setdefault(user_id, set()).update(perms)
            self._emit([self._fact("rbac", actor_id=None, rbac=True)])

    def rbac_fence(self) -> None:
        """Record an RBAC fact without changing anything (forces the next resume to reset)."""
        with self.lock:
            self._emit([self._fact("rbac", actor_id=None, rbac=True)])

    # ------------------------------------------------------------------ rooms

    def _add_row(self, room: RoomRec, kind: str, actor: str) -> RowRec:
        row = RowRec(
            id=new_id("E"), room_id=room.id, kind=kind, actor_id=actor, created_ns=self.now_ns(), seq=self._next_seq()
        )
        self.rows[row.id] = row
        room.timeline.append(row.id)
        return row

    def create_channel(
        self,
        name: str,
        members: Iterable[str] = (),
        *,
        created_by: str | None = None,
        description: str = "",
        universal: bool = False,
    ) -> RoomRec:
        """A channel room with ``members`` (their ``user_joined_room`` rows follow the
        ``room_created`` row)."""
        with self.lock:
            members = list(dict.fromkeys(members))
            for m in members:
                self.user(m)
            creator = created_by or (members[0] if members else "")
            room = RoomRec(
                id=new_id("R"),
                kind="channel",
                name=name,
                created_ns=self.now_ns(),
                description=description,
                universal=universal,
                group_id=new_id("G"),
            )
            self.rooms[room.id] = room
            row = self._add_row(room, "room_created", creator)
            facts = [
                self._fact(
                    "room_created", actor_id=creator or None, room_id=room.id, audience=frozenset(members), row=row
                )
            ]
            for m in members:
                room.members.append(m)
                jr = self._add_row(room, "user_joined_room", m)
                facts.append(
                    self._fact(
                        "member_joined",
                        actor_id=m,
                        room_id=room.id,
                        audience=frozenset(room.members),
                        row=jr,
                        user_id=m,
                    )
                )
            self._emit(facts)
            return room

    def add_member(self, room_id: str, user_id: str) -> None:
        """Make ``user_id`` a member of a channel (``user_joined_room`` row + fact)."""
        with self.lock:
            room = self.room(room_id)
            self.user(user_id)
            if room.is_dm:
                raise err("failed_precondition", "DM membership is fixed")
            if user_id in room.members:
                return
            room.members.append(user_id)
            row = self._add_row(room, "user_joined_room", user_id)
            self._emit(
                [
                    self._fact(
                        "member_joined",
                        actor_id=user_id,
                        room_id=room.id,
                        audience=frozenset(room.members),
                        row=row,
                        user_id=user_id,
                    )
                ]
            )

    def remove_member(self, room_id: str, user_id: str, *, ban: bool = False) -> None:
        """Remove (or ban) ``user_id`` from a channel: a ``member_removed`` fact for the members
        before the removal (the removed user included: realtime_replay.go keeps facts that close
        the viewer's own access), mapped to ``user_left_room`` with actor = the removed user. A
        banned user cannot join again."""
        with self.lock:
            room = self.room(room_id)
            if room.is_dm:
                raise err("failed_precondition", "DM membership is fixed")
            if user_id not in room.members:
                return
            audience = frozenset(room.members)
            room.members.remove(user_id)
            room.unread.discard(user_id)
            if ban:
                room.banned.add(user_id)
            self._emit(
                [self._fact("member_removed", actor_id=None, room_id=room.id, audience=audience, user_id=user_id)]
            )

    def join_room(self, actor: str, room_id: str) -> RoomRec:
        """``RoomService.JoinRoom``: needs ``room.join``."""
        with self.lock:
            room = self.room(room_id)
            if room.is_dm:
                raise err("invalid_argument", "cannot join a direct message")
            if actor in room.banned:
                raise err("permission_denied", "banned from this room")
            self._need(actor, room, "room.join")
            self.add_member(room_id, actor)
            return room

    def start_dm(self, actor: str, participant_ids: Iterable[str], *, driver: bool = False) -> RoomRec:
        """``RoomService.StartDM``: create or return the DM for exactly ``{actor} ∪ participants``;
        ≤ 9 others. Bots cannot call it (ADR-095, chatto#2113: ``permission_denied``; the exact
        code is not verified); ``driver=True`` (the test driver) skips that rule."""
        with self.lock:
            if not driver and self.user(actor).is_bot:
                raise err("permission_denied", "bots cannot start direct messages")
            others = [p for p in dict.fromkeys(participant_ids) if p != actor]
            if len(others) > 9:
                raise err("invalid_argument", "a direct message can have at most 10 participants")
            for p in others:
                if p not in self.users or self.users[p].deleted:
                    raise err("not_found", "user not found")
            want = frozenset([actor, *others])
            for room in self.rooms.values():
                if room.is_dm and frozenset(room.members) == want:
                    return room
            room = RoomRec(id=new_id("R"), kind="dm", name="", created_ns=self.now_ns(), members=[actor, *others])
            self.rooms[room.id] = room
            row = self._add_row(room, "room_created", actor)
            self._emit(
                [self._fact("room_created", actor_id=actor, room_id=room.id, audience=frozenset(room.members), row=row)]
            )
            return room

    def set_slow_mode(self, room_id: str, seconds: int) -> None:
        with self.lock:
            room = self.room(room_id)
            room.slow_mode_seconds = int(seconds)
            self._emit(
                [self._fact("room_slow_mode_changed", actor_id=None, room_id=room.id, audience=frozenset(room.members))]
            )

    def update_room(self, room_id: str, *, name: str | None = None, description: str | None = None) -> None:
        """Rename / describe a room: a ``room_updated`` fact."""
        with self.lock:
            room = self.room(room_id)
            if name is not None:
                room.name = name
            if description is not None:
                room.description = description
            self._emit([self._fact("room_updated", actor_id=None, room_id=room.id, audience=frozenset(room.members))])

    def set_threading_mode(self, room_id: str, mode: int) -> None:
        """``RoomThreadingMode`` value (1 REQUIRED … 4 DISABLED): a ``room_threading_mode_changed`` fact."""
        with self.lock:
            room = self.room(room_id)
            room.threading_mode = int(mode)
            self._emit(
                [
                    self._fact(
                        "room_threading_mode_changed", actor_id=None, room_id=room.id, audience=frozenset(room.members)
                    )
                ]
            )

    def update_profile(self, user_id: str, *, display_name: str) -> None:
        """Change a display name: a ``user_profile_changed`` fact (every viewer)."""
        with self.lock:
            u = self.user(user_id)
            u.display_name = display_name
            u.profile_rev += 1
            self._emit([self._fact("user_profile_changed", actor_id=user_id, user_id=user_id)])

    def set_archived(self, room_id: str, archived: bool = True) -> None:
        """Archive (a ``room_archived`` fact: Chatto's ``RoomArchived`` maps to ``room_remove``)
        or unarchive (``room_updated``: ``room_upsert``)."""
        with self.lock:
            room = self.room(room_id)
            room.archived = archived
            kind = "room_archived" if archived else "room_unarchived"
            self._emit([self._fact(kind, actor_id=None, room_id=room.id, audience=frozenset(room.members))])

    def slow_mode_deadline(self, user_id: str, room: RoomRec) -> int | None:
        """ns deadline of the viewer's next allowed post, or ``None`` (not active / bypassed)."""
        if room.is_dm or room.slow_mode_seconds <= 0:
            return None
        if self.effective(user_id, room) & {"room.manage", "message.manage"}:
            return None
        last = room.last_post_ns.get(user_id)
        if last is None:
            return None
        deadline = last + room.slow_mode_seconds * 1_000_000_000
        return deadline if deadline > self.now_ns() else None

    def has_message_history(self, room: RoomRec) -> bool:
        return any(i in self.messages for i in room.timeline)

    # ------------------------------------------------------------------ messages

    def _msg_in_room(self, room: RoomRec, event_id: str, *, allow_deleted: bool = False) -> MsgRec:
        m = self.messages.get(event_id)
        if m is None or m.room_id != room.id or (m.deleted_ns is not None and not allow_deleted):
            raise err("not_found", "message not found")
        return m

    def create_message(
        self,
        actor: str,
        room_id: str,
        body: str,
        *,
        thread_root_event_id: str = "",
        in_reply_to: str = "",
        also_send_to_channel: bool = False,
        create_thread: bool = False,
        attachment_asset_ids: Iterable[str] = (),
        created_ns: int | None = None,
    ) -> MsgRec:
        """``MessageService.CreateMessage`` (rules in the module docstring). Returns the new message record."""
        with self.lock:
            room = self._member_room(actor, room_id)
            if room.archived:
                raise err("failed_precondition", "room is archived")
            attachments = list(attachment_asset_ids)
            root: MsgRec | None = None
            if in_reply_to:
                target = self._msg_in_room(room, in_reply_to, allow_deleted=True)
                if not thread_root_event_id and target.thread_root_event_id:
                    thread_root_event_id = target.thread_root_event_id
            if thread_root_event_id:
                if room.is_dm:
                    raise err("invalid_argument", "threads are not supported in direct messages")
                if create_thread:
                    raise err("invalid_argument", "create_thread cannot be combined with thread_root_event_id")
                root = self.messages.get(thread_root_event_id)
                if root is None or root.room_id != room.id:
                    raise err("not_found", "thread root not found")
                if not root.is_root:
                    raise err("invalid_argument", "thread root must be a root message, not a thread reply")
                if root.deleted_ns is not None:
                    raise err("not_found", "thread root not found")
                eff = self.effective(actor, room)
                if "message.post-in-thread" not in eff and not (
                    "message.post-in-interactions" in eff and self.thread_relationship(actor, root)
                ):
                    raise err("permission_denied", "permission denied: message.post-in-thread")
                if also_send_to_channel:
                    self._need(actor, room, "message.echo")
                    self._need(actor, room, "message.post")
            else:
                if also_send_to_channel:
                    raise err("invalid_argument", "also_send_to_channel requires a thread reply")
                if create_thread and room.is_dm:
                    raise err("invalid_argument", "threads are not supported in direct messages")
                eff = self.effective(actor, room)
                if "message.post" not in eff and not (
                    "message.post-in-interactions" in eff and self._received_dm(actor, room)
                ):
                    raise err("permission_denied", "permission denied: message.post")
                if create_thread:
                    self._need(actor, room, "message.post-in-thread")
            assets = []
            if attachments:
                from .assets import attach_to_message

                self._need(actor, room, "message.attach")
                assets = attach_to_message(self, actor, room.id, attachments)
            if len(body.encode("utf-8")) > MAX_BODY_BYTES:
                raise err("invalid_argument", "message body exceeds maximum length")
            if not has_visible_content(body) and not assets:
                raise err("invalid_argument", "message must have a body or attachments")
            deadline = self.slow_mode_deadline(actor, room)
            if deadline is not None:
                raise err("resource_exhausted", f"slow mode is active until {rfc3339nano(deadline)}")

            now = self.now_ns()
            room.last_post_ns[actor] = now
            facts: list[Fact] = []
            msg = MsgRec(
                id=new_id("E"),
                room_id=room.id,
                actor_id=actor,
                created_ns=created_ns if created_ns is not None else now,
                seq=0,
                body=body,
                in_reply_to=in_reply_to,
                thread_root_event_id=root.id if root else "",
                mentions=self._mentions(room, body, actor),
            )
            if assets:
                from .assets import store_of

                msg.attachments = store_of(self).attach(assets, msg.id)
            audience = frozenset(room.members)
            new_followers: list[str] = []
            if root is None:
                msg.seq = self._next_seq()
                self.messages[msg.id] = msg
                room.timeline.append(msg.id)
                room.unread |= set(room.members) - {actor}
                room.unread.discard(actor)
                if create_thread:
                    msg.has_thread = True
                    msg.followers.append(actor)
                    new_followers.append(actor)
                facts.append(
                    Fact(
                        seq=msg.seq,
                        id=msg.id,
                        kind="message_posted",
                        created_ns=now,
                        actor_id=actor,
                        room_id=room.id,
                        audience=audience,
                    )
                )
                if create_thread:
                    facts.append(self._fact("thread_created", actor_id=actor, room_id=room.id, audience=audience))
            else:
                first = not root.has_thread
                thread_fact = None
                if first:
                    root.has_thread = True
                    thread_fact = self._fact("thread_created", actor_id=actor, room_id=room.id, audience=audience)
                    if root.actor_id not in root.followers:
                        root.followers.append(root.actor_id)
                        new_followers.append(root.actor_id)
                msg.seq = self._next_seq()
                self.messages[msg.id] = msg
                root.replies.append(msg.id)
                root.t_count += 1
                root.t_last_ns = max(root.t_last_ns or 0, msg.created_ns)
                if actor not in root.t_participants:
                    root.t_participants.append(actor)
                if actor not in root.followers:
                    root.followers.append(actor)
                    new_followers.append(actor)
                for uid in self._mentioned(room, body, actor):  # THREAD_FOLLOW_SOURCE_DIRECT_MENTION
                    if uid not in root.followers:
                        root.followers.append(uid)
                        new_followers.append(uid)
                root.thread_unread |= set(root.followers) - {actor}
                root.thread_unread.discard(actor)
                room.unread.discard(actor)
                if thread_fact:
                    facts.append(thread_fact)
                facts.append(
                    Fact(
                        seq=msg.seq,
                        id=msg.id,
                        kind="reply_posted",
                        created_ns=now,
                        actor_id=actor,
                        room_id=room.id,
                        audience=audience,
                    )
                )
                if also_send_to_channel:
                    echo = MsgRec(
                        id=new_id("E"),
                        room_id=room.id,
                        actor_id=actor,
                        created_ns=self.now_ns(),
                        seq=self._next_seq(),
                        body=body,
                        echo_of_event_id=msg.id,
                        echo_from_thread_root_event_id=root.id,
                        mentions=[list(x) for x in msg.mentions],
                    )
                    self.messages[echo.id] = echo
                    room.timeline.append(echo.id)
                    msg.channel_echo_event_id = echo.id
                    room.unread |= set(room.members) - {actor}
                    facts.append(
                        Fact(
                            seq=echo.seq,
                            id=echo.id,
                            kind="message_posted",
                            created_ns=echo.created_ns,
                            actor_id=actor,
                            room_id=room.id,
                            audience=audience,
                        )
                    )
            # ThreadFollowed facts (durable; realtime_event_projection.go maps them to
            # thread_viewer_state_changed for the follower only)
            thread_id = root.id if root is not None else msg.id
            for uid in new_followers:
                facts.append(
                    self._fact(
                        "thread_followed",
                        actor_id=uid,
                        room_id=room.id,
                        audience=frozenset({uid}),
                        user_id=uid,
                        follow=(room.id, thread_id, True),
                    )
                )
            # snapshots after all mutations (ThreadCreated shows the updated summary, fixture 03-01)
            for f in facts:
                if f.kind == "thread_created":
                    f.root = self.view(root if root is not None else msg)
                elif f.kind == "reply_posted":
                    assert root is not None  # reply_posted is emitted only for a reply (root set)
                    f.msg = self.view(msg)
                    f.root = self.view(root)
                elif f.kind == "message_posted":
                    f.msg = self.view(self.messages[f.id])
            self._emit(facts)
            self._notify_mentions(room, msg, actor)
            return msg

    def _mentions(self, room: RoomRec, body: str, actor: str) -> list[list]:
        """The message's mentions as decided at post time (``[cause, target, recipients]``):
        ``@login`` of an existing user is a direct mention (recipient: that user when a member
        other than the author); ``@here`` / ``@all`` (when no user has that login) mention the
        members other than the author (``@here`` only those shown online)."""
        out: list[list] = []
        seen: set[tuple[str, str]] = set()
        logins = {u.login.lower(): u.id for u in self.users.values() if not u.deleted}
        for name in MENTION_RE.findall(body or ""):
            low = name.lower()
            if low in logins:
                uid = logins[low]
                key = ("direct", uid)
                recipients = [uid] if uid in room.members and uid != actor else []
            elif low in ("here", "all"):
                key = (low, "")
                others = [m for m in room.members if m != actor]
                recipients = others if low == "all" else [m for m in others if self.presence_status(m) != 4]
            else:
                continue
            if key not in seen:
                seen.add(key)
                out.append([key[0], key[1], recipients])
        return out

    def _mentioned(self, room: RoomRec, body: str, actor: str) -> list[str]:
        """Members of ``room`` other than ``actor`` that ``body`` mentions by ``@login``."""
        logins = {m.lower() for m in MENTION_RE.findall(body or "")}
        return [u for u in room.members if u != actor and u in self.users and self.users[u].login.lower() in logins]

    def _notify_mentions(self, room: RoomRec, msg: MsgRec, actor: str) -> None:
        """The notification occurrences a new message makes (Chatto's
        ``notificationDecisionsForMessage``, cli/internal/core/notification_decisions.go, with
        the product defaults of notification_policy.go: every kind below produces one; followed
        rooms are off): ``direct_mention_received`` per mentioned member,
        ``direct_message_received`` per other DM member, ``reply_received`` for the author of
        the ``in_reply_to`` message, ``followed_thread_activity`` per follower of the thread.
        One per kind per recipient, never the actor. Each new occurrence is announced to the
        recipient's sockets with a transient ``notification_occurrences_changed
        {created_notification_id}`` (realtime_event_projection.go pubsub mapping: no cursor,
        never replayed)."""
        signals: dict[str, list[str]] = {}

        def add(uid: str, kind: str) -> None:
            if uid and uid != actor and uid in room.members and uid in self.users:
                kinds = signals.setdefault(uid, [])
                if kind not in kinds:
                    kinds.append(kind)

        for uid in self._mentioned(room, msg.body or "", actor):
            add(uid, "direct_mention_received")
        if room.is_dm:
            for uid in room.members:
                add(uid, "direct_message_received")
        parent = self.messages.get(msg.in_reply_to) if msg.in_reply_to else None
        if parent is not None:
            add(parent.actor_id, "reply_received")
        root = self.messages.get(msg.thread_root_event_id) if msg.thread_root_event_id else None
        if root is not None:
            for uid in root.followers:
                add(uid, "followed_thread_activity")
        for uid, kinds in signals.items():
            created: list[str] = []
            for kind in sorted(kinds):  # Chatto sorts a recipient's signal identities
                nid = new_id("N")
                created.append(nid)
                self.notifications.setdefault(uid, []).append(
                    NoticeRec(
                        id=nid,
                        created_ns=msg.created_ns,
                        actor_id=actor,
                        kind=kind,
                        room_id=room.id,
                        event_id=msg.id,
                        thread_root_event_id=msg.thread_root_event_id,
                    )
                )
            for nid in created:
                for cb in list(self.transient_listeners):
                    cb("notifications", {"user_id": uid, "created_notification_id": nid, "created_ns": self.now_ns()})

    def update_message(self, actor: str, room_id: str, event_id: str, body: str | None) -> MsgRec:
        """``MessageService.UpdateMessage``: author within 3 h, others need
        ``message.manage``. ``body=None`` leaves the body unchanged."""
        with self.lock:
            room = self._member_room(actor, room_id)
            m = self._msg_in_room(room, event_id)
            if m.echo_of_event_id:
                m = self._msg_in_room(room, m.echo_of_event_id)
            now = self.now_ns()
            if m.actor_id == actor:
                if now - m.created_ns > EDIT_WINDOW_NS and "message.manage" not in self.effective(actor, room):
                    raise err("failed_precondition", "edit window has expired")
            else:
                self._need(actor, room, "message.manage")
            if body is not None:
                # Only the length is checked (core/messages.go EditMessage: len(newBody) >
                # MaxMessageBodyLength): a real server stores an edit to "  " or "" as is.
                if len(body) > MAX_BODY_BYTES or len(body.encode("utf-8")) > MAX_BODY_BYTES:
                    raise err("invalid_argument", "message body exceeds maximum length")
                m.body = body
            m.updated_ns = now
            echo = None
            if m.channel_echo_event_id and m.channel_echo_event_id in self.messages:
                echo = self.messages[m.channel_echo_event_id]
                if echo.deleted_ns is None:
                    echo.body, echo.updated_ns = m.body, now
                else:
                    echo = None
            f = self._fact("message_edited", actor_id=actor, room_id=room.id, audience=frozenset(room.members))
            f.msg = self.view(m)
            f.echo = self.view(echo) if echo else None
            self._emit([f])
            return m

    def delete_message(self, actor: str, room_id: str, event_id: str) -> MsgRec:
        """``MessageService.DeleteMessage``: tombstone (body absent, ``deleted_at`` set)."""
        with self.lock:
            room = self._member_room(actor, room_id)
            m = self._msg_in_room(room, event_id)
            if m.echo_of_event_id:
                m = self._msg_in_room(room, m.echo_of_event_id)
            if m.actor_id != actor:
                self._need(actor, room, "message.manage")
            now = self.now_ns()
            m.deleted_ns, m.body, m.reactions = now, None, {}
            if m.thread_root_event_id and m.thread_root_event_id in self.messages:
                self._recount_thread(self.messages[m.thread_root_event_id])
            echo = None
            if m.channel_echo_event_id and m.channel_echo_event_id in self.messages:
                echo = self.messages[m.channel_echo_event_id]
                echo.deleted_ns, echo.body, echo.reactions = now, None, {}
            f = self._fact("message_deleted", actor_id=actor, room_id=room.id, audience=frozenset(room.members))
            f.msg = self.view(m)
            f.echo = self.view(echo) if echo else None
            self._emit([f])
            return m

    def get_message(self, actor: str, room_id: str, event_id: str) -> MsgRec:
        """``MessageService/GetMessage``: membership, then ``message.read`` (or
        read-interactions with a relationship to the message's thread)."""
        with self.lock:
            room = self._member_room(actor, room_id)
            m = self._msg_in_room(room, event_id)
            self.need_read(actor, room, m)
            return m

    def react(self, actor: str, room_id: str, message_event_id: str, emoji: str, add: bool) -> tuple[bool, MsgRec]:
        """``AddReaction``/``RemoveReaction``: ``(changed, message)``. Echo ids alias the
        canonical reply; adding an existing reaction is an idempotent success."""
        with self.lock:
            room = self._member_room(actor, room_id)
            if not is_shortcode(emoji or ""):
                # cli/internal/core/emoji.go resolveEmojiInput: only gemoji shortcode names
                raise err("invalid_argument", "unsupported emoji")
            self._need(actor, room, "message.react")
            m = self._msg_in_room(room, message_event_id)
            if m.echo_of_event_id:
                m = self._msg_in_room(room, m.echo_of_event_id)
            users = m.reactions.get(emoji, [])
            if add:
                if actor in users:
                    return False, m
                mine = sum(1 for us in m.reactions.values() if actor in us)
                if mine >= MAX_REACTIONS_PER_USER:
                    raise err("resource_exhausted", "too many reactions on this message")
                m.reactions.setdefault(emoji, []).append(actor)
            else:
                if actor not in users:
                    return False, m
                users.remove(actor)
                if not users:
                    del m.reactions[emoji]
            f = self._fact(
                "reaction",
                actor_id=actor,
                room_id=room.id,
                audience=frozenset(room.members),
                reaction=(1 if add else 2, m.id, emoji, actor),
            )
            f.msg = self.view(m)
            self._emit([f])
            return True, m

    def typing(self, actor: str, room_id: str, thread_root_event_id: str = "") -> None:
        """``RoomService.RefreshTypingIndicator``: membership only; a transient ``user_typing``
        to the other members who can read the room or thread (realtime.go; own typing is not
        echoed), never logged."""
        with self.lock:
            room = self._member_room(actor, room_id)
            root = self.messages.get(thread_root_event_id) if thread_root_event_id else None
            if thread_root_event_id and (root is None or root.room_id != room.id):
                raise err("not_found", "thread root not found")
            audience = frozenset(
                u
                for u in room.members
                if u != actor
                and (
                    self.can_read_message(u, room, root)
                    if root is not None
                    else "message.read" in self.effective(u, room)
                )
            )
            payload = {
                "room_id": room.id,
                "thread_root_event_id": thread_root_event_id,
                "actor_id": actor,
                "audience": audience,
                "created_ns": self.now_ns(),
            }
            for cb in list(self.transient_listeners):
                cb("typing", payload)

    # ------------------------------------------------------------------ presence

    def presence_status(self, user_id: str) -> int:
        """``PresenceStatus`` value of ``user_id`` now: the stored one until it lapses, then
        OFFLINE (4). OFFLINE is never stored: expiry or deletion means offline."""
        entry = self.presence.get(user_id)
        if entry is None or entry[1] <= self.now_ns():
            return 4
        return entry[0]

    def set_presence(self, user_id: str, status: int, *, ttl_ns: int = PRESENCE_TTL_NS) -> int:
        """``MyAccountService/SetPresence``: ONLINE/AWAY/DO_NOT_DISTURB hold for ``ttl_ns``
        (refresh with :meth:`refresh_presence`); OFFLINE clears. A change is announced with a
        transient ``presence_changed`` to every socket (deployment-wide)."""
        if status not in (1, 2, 3, 4):
            raise err("invalid_argument", "validation error:\n - status: value must be one of the defined enum values")
        with self.lock:
            self.user(user_id)
            before = self.presence_status(user_id)
            if status == 4:
                self.presence.pop(user_id, None)
            else:
                self.presence[user_id] = (status, self.now_ns() + ttl_ns)
            if before != status:
                self._presence_changed(user_id, status)
            return status

    def refresh_presence(self, user_id: str, *, ttl_ns: int = PRESENCE_TTL_NS) -> int:
        """``MyAccountService/RefreshPresence``: extend the current non-offline status."""
        with self.lock:
            status = self.presence_status(user_id)
            if status != 4:
                self.presence[user_id] = (status, self.now_ns() + ttl_ns)
            return status

    def sweep_presence(self) -> None:
        """Drop lapsed presence entries and announce each user as OFFLINE."""
        with self.lock:
            now = self.now_ns()
            for uid, (_status, exp) in list(self.presence.items()):
                if exp <= now:
                    del self.presence[uid]
                    self._presence_changed(uid, 4)

    def _presence_changed(self, user_id: str, status: int) -> None:
        for cb in list(self.transient_listeners):
            cb("presence", {"actor_id": user_id, "status": status, "created_ns": self.now_ns()})

    # ------------------------------------------------------------------ reads

    @staticmethod
    def clamp_limit(limit: int) -> int:
        if limit <= 0:
            return DEFAULT_PAGE
        return min(limit, MAX_PAGE)

    def thread_root(self, actor: str, room_id: str, root_id: str) -> tuple[RoomRec, MsgRec]:
        room = self._member_room(actor, room_id)
        root = self.messages.get(root_id)
        if root is None or root.room_id != room.id:
            raise err("not_found", "thread root not found")
        if not root.is_root:
            raise err("invalid_argument", "thread root must be a root message, not a thread reply")
        self.need_read(actor, room, root)
        return room, root

    # ------------------------------------------------------------------ persistence

    def to_json(self) -> dict:
        """JSON-serialisable snapshot (users incl. keys, rooms, rows, messages, secret)."""
        with self.lock:

            def s(x):
                return sorted(x)

            return {
                "format": "hermes-chatto-local/1",
                "server_name": self.server_name,
                "version": self.version,
                "secret": b64url(self.sealer.secret),
                "seq": self.seq,
                "users": [dict(u.__dict__, server_grants=s(u.server_grants)) for u in self.users.values()],
                "rooms": [
                    dict(
                        r.__dict__,
                        grants={k: s(v) for k, v in r.grants.items()},
                        denies={k: s(v) for k, v in r.denies.items()},
                        unread=s(r.unread),
                        banned=s(r.banned),
                    )
                    for r in self.rooms.values()
                ],
                "rows": [dict(r.__dict__) for r in self.rows.values()],
                "messages": [dict(m.__dict__, thread_unread=s(m.thread_unread)) for m in self.messages.values()],
            }

    def load_json(self, data: dict) -> None:
        """Replace the state with a :meth:`to_json` snapshot. The fact log starts empty,
        so resume cursors from before the load lead to a reset (never to a wrong replay)."""
        with self.lock:
            self.sealer = Sealer(unb64url(data["secret"]))
            self.seq = int(data["seq"])
            self.log_base_seq = self.seq
            self.facts = []
            self.users = {}
            for u in data["users"]:
                u = dict(u)
                legacy = u.pop("bot_secret", "")  # hermes-chatto-local/1 files: one unnamed key
                user = UserRec(**u)
                if legacy and not user.bot_keys:
                    user.bot_keys = [{"id": new_id("K"), "name": "default", "secret": legacy, "created_ns": 0}]
                user.server_grants = set(user.server_grants)
                self.users[user.id] = user
            self.rooms = {}
            for r in data["rooms"]:
                room = RoomRec(**r)
                room.grants = {k: set(v) for k, v in room.grants.items()}
                room.denies = {k: set(v) for k, v in room.denies.items()}
                room.unread = set(room.unread)
                room.banned = set(room.banned)
                self.rooms[room.id] = room
            self.rows = {r["id"]: RowRec(**r) for r in data["rows"]}
            self.messages = {}
            for m in data["messages"]:
                msg = MsgRec(**m)
                msg.thread_unread = set(msg.thread_unread)
                self.messages[msg.id] = msg
