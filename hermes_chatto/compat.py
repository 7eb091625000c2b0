"""Feature detection against the Hermes host (hermes-agent 0.19.0 on PyPI and newer).

Every Hermes import in this module happens inside a function, so importing
``hermes_chatto`` stays cheap and works without Hermes installed. Each helper uses the
newest host API present and falls back to what 0.19.0 has: the session-key chain of
:func:`session_key`, the scoped secret reader (newer hosts'
``gateway.platforms._shared.get_scoped_secret``; 0.19.0 has no ``_shared.py``) and the
profile key (``hermes_constants.hermes_home_key``, else the normcased resolved Hermes home).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from types import SimpleNamespace
from typing import Any, Final, NamedTuple, Protocol

from .logs import get_logger


def get_secret(name: str, default: str | None = None) -> str | None:
    """Read a secret from the serving profile's scope.

    Order: newer ``gateway.platforms._shared.get_scoped_secret``; else
    ``agent.secret_scope.get_secret`` (the installed scope is authoritative), falling back
    to ``os.environ`` only on ``UnscopedSecretError`` (the default profile under
    multiplexing, built unscoped); else ``os.environ`` when Hermes is absent.
    """
    try:
        from gateway.platforms._shared import get_scoped_secret
    except Exception:
        get_scoped_secret = None
    if get_scoped_secret is not None:
        try:
            return get_scoped_secret(name, default)
        except Exception:
            pass
    try:
        from agent.secret_scope import UnscopedSecretError
        from agent.secret_scope import get_secret as _get
    except Exception:
        return os.environ.get(name, default)
    try:
        return _get(name, default)
    except UnscopedSecretError:
        return os.environ.get(name, default)


def hermes_home():
    """The serving profile's Hermes home as a ``Path`` (follows the profile override)."""
    try:
        from hermes_constants import get_hermes_home
    except Exception:
        from pathlib import Path

        return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")
    return get_hermes_home()


def scope_key() -> str:
    """Cache key of the current profile scope: ``hermes_constants.hermes_home_key()`` when
    the host has it, else the normcased resolved Hermes home (0.19.0)."""
    try:
        from hermes_constants import hermes_home_key

        return str(hermes_home_key())
    except Exception:
        pass
    return os.path.normcase(str(hermes_home().expanduser().resolve()))


def acquire_scoped_lock(scope: str, identity: str, metadata: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """``gateway.status.acquire_scoped_lock`` (public, 0.19.0): Hermes' machine-local lock of
    one external identity (the file stores a SHA-256 prefix of ``identity``, the PID and
    ``metadata``). Returns ``(acquired, existing record or None)``; re-entrant for this PID."""
    from gateway.status import acquire_scoped_lock as acquire

    return acquire(scope, identity, metadata=metadata)


def release_scoped_lock(scope: str, identity: str) -> None:
    """``gateway.status.release_scoped_lock`` (public, 0.19.0); only this PID's lock."""
    from gateway.status import release_scoped_lock as release

    release(scope, identity)


def platform_entry_fields() -> set[str]:
    """Field names of ``gateway.platform_registry.PlatformEntry`` on this host."""
    from gateway.platform_registry import PlatformEntry

    return {f.name for f in dataclasses.fields(PlatformEntry)}


def entry_kwargs(**kw: Any) -> dict[str, Any]:
    """Drop keyword arguments this host's ``PlatformEntry`` does not have (an unknown
    kwarg raises ``TypeError`` in the dataclass)."""
    fields = platform_entry_fields()
    return {k: v for k, v in kw.items() if k in fields}


@functools.lru_cache(maxsize=4)
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def make_event(**kw: Any):
    """Build a ``MessageEvent`` by keywords, dropping fields this host lacks
    (``allow_gateway_control``, ``user_id`` … are newer-only).

    The host's field names are read once per ``MessageEvent`` class (cached; a different
    class object, e.g. after a reload, is looked up again). This is on the ingest hot path
    (``bench/p3_adapter.py``): the class comes from ``sys.modules`` once the module is
    loaded (an ``import`` statement per call cost more than building the event), and the
    names to drop are worked out once per (class, keyword names in call order)."""
    mod = sys.modules.get("gateway.platforms.base")
    if mod is None:
        from gateway.platforms.base import MessageEvent
    else:
        MessageEvent = mod.MessageEvent
    key = (MessageEvent, tuple(kw))
    drop = _EVENT_DROP.get(key)
    if drop is None:
        names = _field_names(MessageEvent)
        drop = tuple(k for k in kw if k not in names)
        if len(_EVENT_DROP) >= 64:  # a handful of call sites: bound it anyway
            _EVENT_DROP.clear()
        _EVENT_DROP[key] = drop
    for k in drop:  # kw is this call's own dict: safe to trim
        del kw[k]
    return MessageEvent(**kw)


#: ``(MessageEvent class, keyword names in call order)`` → the names this host lacks.
_EVENT_DROP: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}


def _event_key(adapter: Any, source: Any) -> str | None:
    """``adapter._event_session_key`` (newer hosts) for ``source``, or ``None`` when the
    host lacks it or it fails."""
    fn = getattr(adapter, "_event_session_key", None)
    if callable(fn):
        try:
            return fn(SimpleNamespace(source=source))
        except Exception:
            pass
    return None


def guard_key(adapter: Any, source: Any) -> str:
    """The key the base class uses for ``_active_sessions`` / ``_pending_messages``:
    ``adapter._event_session_key`` (newer) → ``build_session_key`` with the adapter's
    per-user flags and **no** profile (0.19.0 ``handle_message``). Unlike
    :func:`session_key` it never asks the runner, so it can differ from the runner's key
    when profiles are multiplexed."""
    key = _event_key(adapter, source)
    if key is not None:
        return key
    from gateway.session import build_session_key

    extra = getattr(getattr(adapter, "config", None), "extra", None) or {}
    return build_session_key(
        source,
        group_sessions_per_user=extra.get("group_sessions_per_user", True),
        thread_sessions_per_user=extra.get("thread_sessions_per_user", False),
    )


def session_key(adapter: Any, source: Any) -> str:
    """The session key the runner will use for ``source``, byte-identical to
    ``runner._session_key_for_source(source)``.

    Preference (the adapter's own helpers first, since the profile namespace and per-user flags
    live in the host): ``adapter._source_session_key`` (newer) →
    ``adapter._event_session_key`` (intermediate) → ``adapter.gateway_runner.
    _session_key_for_source`` (0.19.0 with a runner) → ``build_session_key`` with the
    source's profile and the adapter's per-user flags.
    """
    fn = getattr(adapter, "_source_session_key", None)
    if callable(fn):
        return fn(source)
    key = _event_key(adapter, source)
    if key is not None:
        return key
    runner = getattr(adapter, "gateway_runner", None)
    fn = getattr(runner, "_session_key_for_source", None)
    if callable(fn):
        return fn(source)
    from gateway.session import build_session_key

    extra = getattr(getattr(adapter, "config", None), "extra", None) or {}
    return build_session_key(
        source,
        extra.get("group_sessions_per_user", True),
        extra.get("thread_sessions_per_user", False),
        profile=getattr(source, "profile", None),
    )


# ---------------------------------------------------------------------------------
# Hermes session lookup for the thread frontier (``SessionStore`` internals), never creating
# sessions. Checked on hermes-agent 0.19.0 (``peek_session_id``, ``_entries``, ``_lock``,
# ``_should_reset``, ``_db.get_session``); newer hosts offer ``lookup_by_session_key``.

_session_log = get_logger("hermes_chatto.compat")


class SessionLookup(NamedTuple):
    """What :func:`session_lookup` found: ``session_id`` (the frontier's binding, ``None`` for
    none / a reset this turn) and, when the compression lineage was read and can no longer
    change, ``lineage = (the session's own id, its lineage root)`` for a cache."""

    session_id: str | None
    lineage: tuple[str, str] | None = None


class _Unknown:
    """:func:`session_id_now`'s answer when only a blocking read could tell."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


#: :func:`session_id_now` could not tell without blocking (call :func:`session_lookup` off the loop).
UNKNOWN: Final = _Unknown()


def session_id_for(session_store: Any, session_key: str) -> str | None:
    """The Hermes session id a frontier row for ``session_key`` binds to, or ``None``.

    Reads ``SessionStore`` (0.19.0: ``peek_session_id``; newer: ``lookup_by_session_key``)
    and never creates a session (``get_or_create_session`` is avoided). Returns ``None``
    when there is no session yet **or** the runner is about to replace it on this turn
    (entry suspended, or ``SessionStore._should_reset`` says idle/daily reset) — the turn
    then seeds afresh. A context-compression continuation maps to the first session of
    its chain (``sessions.parent_session_id`` with ``end_reason='compression'``), so
    compression is not mistaken for ``/new``. Blocking (store lock, SQLite): call with
    ``asyncio.to_thread``, or try :func:`session_id_now` first. Never raises.
    """
    return session_lookup(session_store, session_key).session_id


def session_lookup(session_store: Any, session_key: str) -> SessionLookup:
    """:func:`session_id_for` with what a caller may cache of it (:class:`SessionLookup`).
    Blocking; never raises."""
    if session_store is None or not session_key:
        return SessionLookup(None)
    sid: str | None = None
    entry = None
    try:
        lookup = getattr(session_store, "lookup_by_session_key", None)
        if callable(lookup):
            entry = lookup(session_key)
            sid = getattr(entry, "session_id", None) if entry is not None else None
        else:
            peek = getattr(session_store, "peek_session_id", None)
            if callable(peek):
                sid = peek(session_key)
            entries = getattr(session_store, "_entries", None)
            lock = getattr(session_store, "_lock", None)
            if sid and isinstance(entries, dict) and lock is not None:
                with lock:
                    entry = entries.get(session_key)
    except Exception:
        _session_log.debug("Chatto frontier: session lookup failed", exc_info=True)
        return SessionLookup(None)
    if not sid:
        return SessionLookup(None)
    if entry is not None and _will_reset(session_store, entry):
        return SessionLookup(None)
    root, stable = _lineage_root(session_store, str(sid))
    return SessionLookup(root, (str(sid), root) if stable else None)


class _Lineage(Protocol):
    def get(self, key: str, default: Any, /) -> Any: ...


def _entry_now(session_store: Any, session_key: str) -> Any:
    """0.19.0 ``SessionStore._entries[session_key]`` read on the event loop, only when the store
    is ``_loaded`` and its ``_lock`` is free right now: the entry, ``None`` (no entry) or
    :data:`UNKNOWN` (ask off the loop). Never raises."""
    entries = getattr(session_store, "_entries", None)
    lock = getattr(session_store, "_lock", None)
    if not isinstance(entries, dict) or lock is None or getattr(session_store, "_loaded", None) is not True:
        return UNKNOWN
    try:
        if not lock.acquire(blocking=False):
            return UNKNOWN
        try:
            return entries.get(session_key)
        finally:
            lock.release()
    except Exception:
        return UNKNOWN


def session_id_now(session_store: Any, session_key: str, lineage: _Lineage) -> str | None | _Unknown:
    """:func:`session_id_for` from memory only, on the event loop: the entry read from
    0.19.0 ``SessionStore._entries`` when the store is loaded (``_loaded``) and its ``_lock``
    is free right now (never waited for), the reset prediction (memory: the entry's times and
    the reset policy), and the compression lineage root from ``lineage`` (session id → root,
    filled from :attr:`SessionLookup.lineage`). :data:`UNKNOWN` when any of it would need a
    wait or a read (not loaded, lock held, lineage not cached, a newer host's lookup). Never
    raises."""
    if session_store is None or not session_key:
        return None
    if callable(getattr(session_store, "lookup_by_session_key", None)):
        return UNKNOWN  # a newer host: its lookup may read the database
    entry = _entry_now(session_store, session_key)
    if entry is UNKNOWN:
        return UNKNOWN
    sid = getattr(entry, "session_id", None) if entry is not None else None
    if not sid:
        return None
    if _will_reset(session_store, entry):
        return None
    return lineage.get(str(sid), UNKNOWN)


def session_exists_now(session_store: Any, session_key: str) -> bool | _Unknown:
    """Whether ``session_key`` has a session entry, read from 0.19.0 ``SessionStore._entries``
    on the event loop (as :func:`session_id_now`: only when the store is loaded and its
    ``_lock`` is free right now); :data:`UNKNOWN` otherwise (ask ``peek_session_id`` off the
    loop). Never raises."""
    if session_store is None or not session_key:
        return False
    entry = _entry_now(session_store, session_key)
    if entry is UNKNOWN:
        return UNKNOWN
    return bool(getattr(entry, "session_id", None)) if entry is not None else False


def _will_reset(store: Any, entry: Any) -> bool:
    """Whether the runner replaces ``entry``'s session on its next turn (suspended, or
    0.19.0 ``SessionStore._should_reset(entry, origin)`` says idle/daily reset). Memory only
    (the entry's times, the reset policy, the host's process registry).

    A reset policy of mode ``"none"`` (the host's default: "never auto-reset") is answered
    without asking ``_should_reset``: 0.19.0 returns ``None`` on every path for it (whatever
    the time, the entry's age or the background processes), and that check, which builds the
    session key and asks the process registry, was most of a quiet turn's session lookup
    (make bench P3; AGENTS decision 63). This is not a cache: the policy is read again on
    every call, so a changed configuration is seen at once, and every other mode still asks
    the host. ``test_will_reset_mode_none_agrees_with_the_host`` pins the host's answer."""
    try:
        if getattr(entry, "suspended", False):
            return True
        origin = getattr(entry, "origin", None)
        if origin is None:
            return False
        if _reset_mode(store, origin) == "none":
            return False
        should = getattr(store, "_should_reset", None)
        if callable(should):
            return bool(should(entry, origin))
    except Exception:
        _session_log.debug("Chatto frontier: reset prediction failed", exc_info=True)
    return False


def _reset_mode(store: Any, origin: Any) -> str | None:
    """The ``mode`` of the reset policy that applies to ``origin`` (``SessionStore.config``'s
    public ``get_reset_policy(platform=, session_type=)``, called as 0.19.0
    ``_should_reset`` calls it), or ``None`` when it cannot be read. May raise."""
    get = getattr(getattr(store, "config", None), "get_reset_policy", None)
    if not callable(get):
        return None
    mode = getattr(get(platform=origin.platform, session_type=origin.chat_type), "mode", None)
    return mode if isinstance(mode, str) else None


def _lineage_root(store: Any, sid: str) -> tuple[str, bool]:
    """``(the first session of sid's context-compression chain, stable)`` from 0.19.0
    ``SessionStore._db.get_session`` rows (``parent_session_id``, ``end_reason``); ``sid``
    itself when it has no compression parent. At most 100 hops. ``stable``: the answer can
    no longer change (a row's parent is set when it is created; an ended parent stays ended),
    so it may be cached: false when a row is missing, a parent has not ended yet, or a read
    failed."""
    db = getattr(store, "_db", None)
    get = getattr(db, "get_session", None)
    if not callable(get):
        return sid, False
    current = sid
    try:
        for _ in range(100):
            row = get(current)
            if not row:
                return current, False
            parent = row.get("parent_session_id")
            if not parent:
                return current, True
            prow = get(parent)
            if not prow or prow.get("end_reason") is None:
                return current, False
            if prow.get("end_reason") != "compression":
                return current, True
            current = parent
    except Exception:
        _session_log.debug("Chatto frontier: compression lineage lookup failed", exc_info=True)
    return current, False


# ---------------------------------------------------------------------------------
# Host private attributes: the one boundary
#
# Every private attribute of a Hermes object the plugin touches is read or called through
# one accessor below, and listed in HOST_PRIVATES with the hermes-agent version it was
# checked on. tests/host/test_compat_contract.py checks each entry against the installed
# hermes-agent classes (attribute present, expected type, expected parameters), so a host
# upgrade that changes one fails there, not somewhere deep in a turn.


@dataclasses.dataclass(frozen=True)
class HostPrivate:
    """One private Hermes attribute the plugin relies on.

    ``owner``: ``"module:Class"``; ``kind``: ``"dict"`` (an instance attribute holding a
    ``dict``, set in ``__init__``), ``"attr"`` (an instance attribute set by a public setter),
    ``"method"`` / ``"async method"``, ``"newer method"`` (absent on the version checked, used
    when a newer host has it), ``"module function"`` / ``"newer module function"`` (a private
    function of module ``owner`` = ``"module:"``), ``"store dict"`` / ``"store attr"`` (``SessionStore`` instance
    attributes); ``params``: a method's parameter names after ``self``
    (in order; the contract test compares them); ``checked_on``: hermes-agent version."""

    owner: str
    name: str
    kind: str
    params: tuple[str, ...] = ()
    checked_on: str = "0.19.0"
    why: str = ""


_BASE = "gateway.platforms.base:BasePlatformAdapter"
_STORE = "gateway.session:SessionStore"

HOST_PRIVATES: tuple[HostPrivate, ...] = (
    HostPrivate(
        _BASE,
        "_pending_messages",
        "dict",
        why="guard key -> queued follow-up: edits of a queued message, orphan rescue",
    ),
    HostPrivate(_BASE, "_active_sessions", "dict", why="guard key -> interrupt event: which turns run"),
    HostPrivate(_BASE, "_session_tasks", "dict", why="guard key -> turn task: whether an orphan has an owner"),
    HostPrivate(_BASE, "_session_store", "attr", why="set by set_session_store(); session lookups, rewind"),
    HostPrivate(_BASE, "_set_fatal_error", "method", ("code", "message", "retryable")),
    HostPrivate(_BASE, "_notify_fatal_error", "async method"),
    HostPrivate(_BASE, "_mark_connected", "method"),
    HostPrivate(_BASE, "_mark_disconnected", "method"),
    HostPrivate(_BASE, "_is_sender_authorized", "method", ("user_id", "chat_type", "chat_id")),
    HostPrivate(
        "gateway.run:GatewayRunner",
        "_evict_cached_agent",
        "method",
        ("session_key",),
        why="what /undo does after a rewind: the next turn rebuilds from the transcript",
    ),
    HostPrivate(
        "gateway.run:GatewayRunner",
        "_session_key_for_source",
        "method",
        ("source",),
        why="the runner's session key: session_key() matches it byte for byte",
    ),
    # newer hosts only (absent on 0.19.0): used when present, else the public build_session_key
    HostPrivate(_BASE, "_event_session_key", "newer method", why="guard key of an event (guard_key)"),
    HostPrivate(_BASE, "_source_session_key", "newer method", why="session key of a source (session_key)"),
    HostPrivate(
        "tools.approval:",
        "_get_approval_timeout",
        "module function",
        why="seconds an exec approval waits, as the prompt says (approval_timeout_s)",
    ),
    HostPrivate(
        "tools.approval_context:",
        "_get_approval_timeout",
        "newer module function",
        why="the same on hermes-agent main (default 300 s; commit 079b5a95)",
    ),
    # SessionStore internals read by session_id_for (0.19.0 has no public lookup that
    # neither creates a session nor ignores a pending reset)
    HostPrivate(_STORE, "_entries", "store dict", why="session key -> SessionEntry, read under _lock"),
    HostPrivate(_STORE, "_lock", "store attr", why="guards _entries"),
    HostPrivate(_STORE, "_loaded", "store attr", why="_entries read from memory only once the index is loaded"),
    HostPrivate(_STORE, "_db", "store attr", why="SessionDB: get_session rows for compression lineage"),
    HostPrivate(
        _STORE,
        "_should_reset",
        "method",
        ("entry", "source"),
        why="idle/daily reset the runner applies on the next turn (not asked for policy mode 'none': "
        "it never resets; test_will_reset_mode_none_agrees_with_the_host)",
    ),
)


def pending_messages(adapter: Any) -> dict[str, Any]:
    """``BasePlatformAdapter._pending_messages`` (0.19.0): guard key → queued ``MessageEvent``."""
    return adapter._pending_messages


def active_sessions(adapter: Any) -> dict[str, Any]:
    """``BasePlatformAdapter._active_sessions`` (0.19.0): guard key → interrupt ``asyncio.Event``
    of the turn running for it."""
    return adapter._active_sessions


def session_tasks(adapter: Any) -> dict[str, Any]:
    """``BasePlatformAdapter._session_tasks`` (0.19.0): guard key → the turn's ``asyncio.Task``."""
    return adapter._session_tasks


def session_store(adapter: Any) -> Any:
    """``BasePlatformAdapter._session_store`` (0.19.0; set by ``set_session_store``): the
    runner's ``SessionStore``, or ``None`` before the runner wired the adapter."""
    return getattr(adapter, "_session_store", None)


def set_fatal_error(adapter: Any, code: str, message: str, *, retryable: bool) -> None:
    """``BasePlatformAdapter._set_fatal_error(code, message, *, retryable)`` (0.19.0)."""
    adapter._set_fatal_error(code, message, retryable=retryable)


async def notify_fatal_error(adapter: Any) -> None:
    """``await BasePlatformAdapter._notify_fatal_error()`` (0.19.0): tell the runner."""
    await adapter._notify_fatal_error()


def mark_connected(adapter: Any) -> None:
    """``BasePlatformAdapter._mark_connected()`` (0.19.0)."""
    adapter._mark_connected()


def mark_disconnected(adapter: Any) -> None:
    """``BasePlatformAdapter._mark_disconnected()`` (0.19.0)."""
    adapter._mark_disconnected()


def is_sender_authorized(adapter: Any, user_id: str | None, chat_type: str | None, chat_id: str | None) -> bool | None:
    """``BasePlatformAdapter._is_sender_authorized(user_id, chat_type, chat_id)`` (0.19.0):
    ``False`` only when the runner's check refuses the sender (``None``: no check wired)."""
    return adapter._is_sender_authorized(user_id, chat_type, chat_id)


def evict_cached_agent(adapter: Any, session_key: str) -> bool:
    """``GatewayRunner._evict_cached_agent(session_key)`` (0.19.0) of the adapter's runner,
    when present; returns whether it was called. Raises what the runner raises."""
    evict = getattr(getattr(adapter, "gateway_runner", None), "_evict_cached_agent", None)
    if not callable(evict):
        return False
    evict(session_key)
    return True


# ---------------------------------------------------------------------------------
# Public host types the adapter needs (imported here, never at an adapter module's top)


def adapter_base_class() -> type:
    """``gateway.platforms.base.BasePlatformAdapter`` (the class ``ChattoAdapter`` extends)."""
    from gateway.platforms.base import BasePlatformAdapter

    return BasePlatformAdapter


def platform(name: str) -> Any:
    """``gateway.config.Platform(name)``."""
    from gateway.config import Platform

    return Platform(name)


def send_result(**kw: Any) -> Any:
    """``gateway.platforms.base.SendResult(**kw)``."""
    from gateway.platforms.base import SendResult

    return SendResult(**kw)


def text_message_type() -> Any:
    """``gateway.platforms.base.MessageType.TEXT``."""
    from gateway.platforms.base import MessageType

    return MessageType.TEXT


def outcome_succeeded(outcome: Any) -> bool:
    """Whether a processing ``outcome`` is ``ProcessingOutcome.SUCCESS``."""
    from gateway.platforms.base import ProcessingOutcome

    return bool(outcome == ProcessingOutcome.SUCCESS)


def outcome_failed(outcome: Any) -> bool:
    """Whether a processing ``outcome`` is ``ProcessingOutcome.FAILURE`` (not a cancel)."""
    from gateway.platforms.base import ProcessingOutcome

    return bool(outcome == ProcessingOutcome.FAILURE)


def failure_outcome() -> Any:
    """``gateway.platforms.base.ProcessingOutcome.FAILURE``."""
    from gateway.platforms.base import ProcessingOutcome

    return ProcessingOutcome.FAILURE


#: Where newer hosts say how long an exec approval waits (first found wins). hermes-agent main
#: (0.21.x): ``gateway/platforms/base_exec_approval.py`` ``approval_timeout_seconds()`` (public,
#: commit 13d73af8) over ``tools/approval_context.py`` ``_get_approval_timeout()`` (default 300 s,
#: commit 079b5a95); 0.19.0: ``tools/approval.py`` ``_get_approval_timeout()`` (default 60 s).
APPROVAL_TIMEOUT_SOURCES = (
    ("gateway.platforms.base_exec_approval", "approval_timeout_seconds"),
    ("tools.approval_context", "_get_approval_timeout"),
    ("tools.approval", "_get_approval_timeout"),
)


def approval_timeout_s() -> int:
    """Seconds the host waits for an exec approval, asked of the host itself (feature
    detection over :data:`APPROVAL_TIMEOUT_SOURCES`: newer hosts default to 300 s, 0.19.0 to
    60 s); without any of them ``approvals.timeout`` from ``config.yaml`` (public
    ``hermes_cli.config``), default 60."""
    import importlib

    for module, name in APPROVAL_TIMEOUT_SOURCES:
        try:
            fn = getattr(importlib.import_module(module), name, None)
        except Exception:  # noqa: BLE001 - not this host: ask the next source
            continue
        if callable(fn):
            try:
                return int(fn())
            except Exception:  # noqa: BLE001 - the prompt's wording only
                break
    try:
        from hermes_cli.config import load_config

        return int((load_config().get("approvals") or {}).get("timeout", 60))
    except Exception:  # noqa: BLE001 - the prompt's wording only
        return 60


def _accepts(fn: Any, name: str) -> bool:
    """Whether callable ``fn`` takes keyword ``name`` (or ``**kwargs``)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def resolve_approval(session_key: str, choice: str, *, request_id: str = "", reason: str = "") -> int:
    """``tools.approval.resolve_gateway_approval(session_key, choice)`` (public; ``choice``
    ``once``/``session``/``always``/``deny``): how many waiting approvals it unblocked.

    ``request_id`` / ``reason`` are passed only to a host whose function takes them
    (hermes-agent main ``tools/approval.py`` commit 00067189: ``resolve_gateway_approval(
    session_key, choice, resolve_all=False, reason=None, request_id=None)``; with a
    ``request_id`` it resolves that request, not the session's oldest). 0.19.0 takes neither:
    it resolves the oldest (FIFO)."""
    from tools.approval import resolve_gateway_approval

    kw: dict[str, Any] = {}
    if request_id and _accepts(resolve_gateway_approval, "request_id"):
        kw["request_id"] = request_id
    if reason and _accepts(resolve_gateway_approval, "reason"):
        kw["reason"] = reason
    return int(resolve_gateway_approval(session_key, choice, **kw))


def exec_approval_prompt_args(prompt: Any) -> dict[str, Any]:
    """The fields of a newer host's ``ExecApprovalPrompt`` (passed to
    ``_send_exec_approval_prompt``; hermes-agent > 0.19.0) as :meth:`send_exec_approval`
    keyword arguments, read by feature detection (a missing field takes its 0.19.0
    default; its action list decides which answers are offered). ``request_id`` (hermes-agent
    main ``gateway/platforms/base_approval_prompt.py`` commit 2328a687 builds the prompt with
    it) is kept, so an answer resolves its own request."""
    actions = [str(a[1]) for a in (getattr(prompt, "actions", None) or ()) if len(a) > 1]
    return {
        "chat_id": str(getattr(prompt, "chat_id", "") or ""),
        "command": str(getattr(prompt, "command", "") or ""),
        "session_key": str(getattr(prompt, "session_key", "") or ""),
        "description": str(getattr(prompt, "description", "") or "dangerous command"),
        "metadata": getattr(prompt, "metadata", None),
        "allow_permanent": ("always" in actions) if actions else bool(getattr(prompt, "allow_permanent", True)),
        "allow_session": ("session" in actions) if actions else bool(getattr(prompt, "allow_session", True)),
        "smart_denied": bool(getattr(prompt, "smart_denied", False)),
        "request_id": str(getattr(prompt, "request_id", "") or ""),
    }


def redelivery_markers() -> tuple[str, ...]:
    """The prefixes the host's delivery ledger puts on a reply it sends again
    (``gateway/delivery_ledger.py``): ``RECOVERED_MARKER`` (0.19.0: after a restart), and on
    newer hosts ``RECONNECTED_MARKER`` (after a reconnect) and ``FLOOD_MARKER`` (after a
    flood-control refusal; hermes-agent main commit 03b160ef). Whatever this host defines,
    plus the texts of those three as published (a reply may have been queued by another
    version); longest first."""
    found: list[str] = list(KNOWN_REDELIVERY_MARKERS)
    try:
        import gateway.delivery_ledger as ledger

        for name in ("RECOVERED_MARKER", "RECONNECTED_MARKER", "FLOOD_MARKER"):
            v = getattr(ledger, name, None)
            if isinstance(v, str) and v and v not in found:
                found.append(v)
    except Exception:  # noqa: BLE001 - no ledger: the published texts
        pass
    return tuple(sorted(found, key=len, reverse=True))


#: The ledger's markers as hermes-agent published them (0.19.0 ``RECOVERED_MARKER``; main
#: ``RECONNECTED_MARKER`` and ``FLOOD_MARKER``, ``gateway/delivery_ledger.py`` commit 03b160ef).
KNOWN_REDELIVERY_MARKERS = (
    "\u267b\ufe0f Recovered reply \u2014 the gateway restarted during delivery, so this may be a duplicate:\n\n",
    "\u267b\ufe0f Recovered reply \u2014 the messaging platform reconnected after the original "
    "delivery failed, so this may be a duplicate:\n\n",
    "\u267b\ufe0f Recovered reply \u2014 the messaging platform's rate limit refused the original, so part of "
    "it may already have arrived above:\n\n",
)


def flood_error_prefix() -> str | None:
    """``"flood_control:"`` when this host's delivery ledger retries a final reply refused by
    flood control after the wait the adapter names (hermes-agent main
    ``gateway/delivery_ledger.py`` commit 03b160ef: ``FLOOD_ERROR_PREFIX``, ``is_flood_error``,
    ``flood_wait_seconds``); ``None`` on hosts without that contract (0.19.0: its
    ``_send_with_retry`` honours ``SendResult.retry_after`` instead)."""
    try:
        import gateway.delivery_ledger as ledger
    except Exception:  # noqa: BLE001 - no ledger, no contract
        return None
    prefix = getattr(ledger, "FLOOD_ERROR_PREFIX", None)
    if isinstance(prefix, str) and prefix and callable(getattr(ledger, "is_flood_error", None)):
        return prefix
    return None


def channel_prompt_and_skills(extra: Any, room_id: str, thread_id: str | None) -> tuple[str | None, list[str] | None]:
    """``(channel_prompt, auto_skill)`` of a turn in ``room_id`` / ``thread_id`` from the
    platform's ``channel_prompts`` / ``channel_skill_bindings`` (``PlatformConfig.extra``),
    resolved by the host's own public helpers ``gateway.platforms.base.resolve_channel_prompt``
    / ``resolve_channel_skills`` exactly as its Discord adapter calls them for a thread:
    the thread root id first, its room id as the parent (a DM or a flat message: the room
    id). ``(None, None)`` when this host has no such helper or nothing matches."""
    if not isinstance(extra, dict) or not room_id:
        return None, None
    key, parent = (thread_id, room_id) if thread_id else (room_id, None)
    prompt: str | None = None
    skills: list[str] | None = None
    try:
        from gateway.platforms import base
    except Exception:  # noqa: BLE001 - no host: nothing to resolve
        return None, None
    resolve_prompt = getattr(base, "resolve_channel_prompt", None)
    resolve_skills = getattr(base, "resolve_channel_skills", None)
    if callable(resolve_prompt):
        prompt = resolve_prompt(extra, key, parent)
    if callable(resolve_skills):
        skills = resolve_skills(extra, key, parent)
    return prompt, skills


def classify_send_error(err: BaseException | None, text: str) -> str:
    """The host's ``classify_send_error(err, text)`` (a ``SEND_ERROR_KINDS`` name), or
    ``"unknown"`` when the host has none or it fails."""
    try:
        from gateway.platforms.base import classify_send_error as classify

        return str(classify(err, text))
    except Exception:  # noqa: BLE001 - an error kind is a hint, never a failure
        return "unknown"


# ------------------------------------------------------------------ media (public host helpers)


def message_type(name: str) -> Any:
    """``gateway.platforms.base.MessageType[name]`` (``"PHOTO"``, ``"VOICE"``, …); ``TEXT``
    for a name this host lacks."""
    from gateway.platforms.base import MessageType

    return getattr(MessageType, name, MessageType.TEXT)


def inbound_media_cap() -> int:
    """Hermes' ``gateway.max_inbound_media_bytes`` in bytes (``get_inbound_media_max_bytes``;
    0 = no cap; the host default 128 MiB when the host lacks the helper)."""
    try:
        from gateway.platforms.base import get_inbound_media_max_bytes
    except ImportError:  # pragma: no cover - older hosts
        return 128 * 1024 * 1024
    return int(get_inbound_media_max_bytes())


def cache_media(kind: str, data: bytes, name: str) -> str:
    """Store downloaded bytes in the host's media cache and return the file's path:
    ``kind`` ``"image"`` / ``"audio"`` / ``"video"`` (``name`` is the extension, e.g.
    ``".png"``) through ``cache_image_from_bytes`` / ``cache_audio_from_bytes`` /
    ``cache_video_from_bytes``, or ``"document"`` (``name`` is the file name) through
    ``cache_document_from_bytes``. Raises ``ValueError`` when the host refuses the bytes
    (not an image, over ``gateway.max_inbound_media_bytes``)."""
    from gateway.platforms import base

    if kind == "image":
        return str(base.cache_image_from_bytes(data, ext=name))
    if kind == "audio":
        return str(base.cache_audio_from_bytes(data, ext=name))
    if kind == "video":
        return str(base.cache_video_from_bytes(data, ext=name))
    return str(base.cache_document_from_bytes(data, name))


def media_path_ok(path: str) -> bool:
    """Whether the host allows ``path`` as an outbound attachment
    (``validate_media_delivery_path``: an existing regular file outside the credential
    denylist; stricter in ``gateway.strict`` mode)."""
    from gateway.platforms.base import validate_media_delivery_path

    return validate_media_delivery_path(path) is not None
