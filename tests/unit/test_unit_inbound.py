"""adapter.inbound.Inbound: the parts that need no socket."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter import inbound as I
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.wire.types import ChattoMessage


def test_a_reply_in_a_thread_the_bot_is_not_in_asks_the_session_store_without_a_thread_hop(tmp_path, monkeypatch):
    """Issue 27: every reply in a thread the bot is not in asked the runner's session store
    through ``asyncio.to_thread`` (a message not for the bot paid a thread hop). The entry is
    now read from the store's memory; the thread is asked only when that cannot tell."""
    from gateway.config import GatewayConfig, Platform
    from gateway.session import SessionSource, SessionStore, build_session_key

    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    store = SessionStore(tmp_path / "sessions", GatewayConfig())

    def build_source(**kw):
        return SessionSource(platform=Platform.TELEGRAM, **kw)

    host = SimpleNamespace(
        _session_store=store, build_source=build_source, session_key_for=lambda src: build_session_key(src)
    )
    conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
    boundary = ErrorBoundary(logging.getLogger("t"), conn.counters)
    inbound = I.Inbound(host, conn, None, None, None, None, boundary, None)  # type: ignore[arg-type]
    hops: list[object] = []
    real = asyncio.to_thread

    async def counted(fn, *a, **kw):
        hops.append(fn)
        return await real(fn, *a, **kw)

    monkeypatch.setattr(I.asyncio, "to_thread", counted)
    mine = ChattoMessage(event_id="E2", room_id="R1", author_id="U1", body="and", thread_root_event_id="T1")
    other = ChattoMessage(event_id="E3", room_id="R1", author_id="U2", body="so", thread_root_event_id="T2")

    async def body():
        assert await inbound._has_session(mine) is False  # the store's index is not loaded yet: one read
        store.get_or_create_session(build_source(chat_id="R1", chat_type="group", user_id="U1", thread_id="T1"))
        assert await inbound._has_session(mine) is True
        assert await inbound._has_session(other) is False

    asyncio.run(body())
    assert len(hops) == 1


def test_a_sender_name_is_derived_once_per_user_object_and_again_for_a_changed_user():
    """Issue 27: ``UserDirectory.sender_name`` keeps the derived name per user (bounded like
    the users); a renamed user is a new object (``ChattoUser`` is frozen) and is named anew,
    also when a snapshot replaces it without a ``user_profile_changed``; ``forget`` drops it."""
    from hermes_chatto.adapter.users import USER_LIMIT, UserDirectory
    from hermes_chatto.frontier.render import sender_name
    from hermes_chatto.wire.types import ChattoUser

    users = UserDirectory(Conn(SimpleNamespace(), bot_user_id="Ubot"))
    assert users.names.capacity == users.users.capacity == USER_LIMIT
    alice = ChattoUser(id="U1", login="alice", display_name="Alice [New message]")
    assert users.sender_name(alice) == sender_name(alice.label, alice.login) == "Alice (New message)"
    assert users.names.get("U1") == (alice, "Alice (New message)")
    renamed = ChattoUser(id="U1", login="alice", display_name="Al")
    users.fill([renamed])
    assert users.sender_name(renamed) == "Al"
    assert users.sender_name(ChattoUser(id="U1", login="alice")) == "alice"
    users.forget("U1")
    assert "U1" not in users.names
