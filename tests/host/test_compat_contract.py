"""Contract test: every private Hermes attribute the plugin touches (``compat.HOST_PRIVATES``)
still has the shape the plugin relies on, on the installed hermes-agent.

A failure here means the host changed: update the accessor in ``hermes_chatto/compat.py``
(and its ``checked_on`` version), not the caller.
"""

from __future__ import annotations

import importlib
import inspect
import re
from importlib.metadata import version

import pytest

from hermes_chatto import compat


def _owner(path: str) -> type:
    module, _, cls = path.partition(":")
    return getattr(importlib.import_module(module), cls)


def _adapter():
    """A real ``BasePlatformAdapter`` instance (the Chatto adapter, no connection)."""
    from gateway.config import PlatformConfig

    from hermes_chatto.adapter import ChattoAdapter
    from hermes_chatto.config import ChattoSettings

    key = "cht_BK_Ubot0000000000b.c2VjcmV0LWtleS1mb3ItdGVzdHM"
    settings = ChattoSettings.resolve({"url": "http://127.0.0.1:9", "bot_key": key})
    return ChattoAdapter(PlatformConfig(enabled=True), settings=settings)


def test_every_accessor_is_listed():
    """Each ``compat`` accessor that reads ``adapter._x``/``runner._x`` has a HOST_PRIVATES entry."""
    src = inspect.getsource(compat)
    tail = src[src.index("class HostPrivate") :]
    used = set(re.findall(r"(?:adapter|store|runner)\._([a-z][a-z_]+)", tail))
    used |= set(re.findall(r'"_([a-z][a-z_]+)"', tail))
    listed = {e.name.lstrip("_") for e in compat.HOST_PRIVATES}
    assert used <= listed, used - listed


def test_checked_on_is_a_version_and_installed_is_covered():
    installed = version("hermes-agent")
    versions = {e.checked_on for e in compat.HOST_PRIVATES}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in versions)
    assert installed in versions, f"installed hermes-agent {installed} was never checked: re-check and retag"


@pytest.mark.parametrize("entry", compat.HOST_PRIVATES, ids=lambda e: f"{e.owner.split(':')[1]}.{e.name}")
def test_host_private_has_expected_shape(entry, registered):
    if entry.kind in ("module function", "newer module function"):
        try:
            mod = importlib.import_module(entry.owner.rstrip(":"))
        except ImportError:
            assert entry.kind == "newer module function", f"{entry.owner} is gone"
            return
        fn = getattr(mod, entry.name, None)
        if fn is None and entry.kind == "newer module function":
            return
        assert callable(fn), f"{entry.owner}{entry.name} is gone"
        required = [p for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty]
        assert not required, f"{entry.name}: new required parameters {required}"
        return
    cls = _owner(entry.owner)
    if entry.kind == "newer method":
        fn = getattr(cls, entry.name, None)
        assert fn is None or callable(fn), f"{entry.owner}.{entry.name} is not a method"
        return
    if entry.kind in ("method", "async method"):
        fn = getattr(cls, entry.name, None)
        assert callable(fn), f"{entry.owner}.{entry.name} is gone"
        assert inspect.iscoroutinefunction(fn) == (entry.kind == "async method"), f"{entry.name}: sync/async changed"
        params = tuple(p for p in inspect.signature(fn).parameters if p != "self")
        assert params[: len(entry.params)] == entry.params, f"{entry.name}{params}: signature changed"
        extra = [
            p
            for n, p in inspect.signature(fn).parameters.items()
            if n not in entry.params and n != "self" and p.default is inspect.Parameter.empty
        ]
        assert not extra, f"{entry.name}: new required parameters {extra}"
        return
    if entry.kind.startswith("store "):
        return  # instance attributes of SessionStore: test_session_store_privates
    obj = _adapter()
    if entry.kind == "dict":
        assert isinstance(getattr(obj, entry.name, None), dict), f"{entry.name} is not a dict on a new adapter"
    else:  # "attr": set by a public setter
        assert entry.name == "_session_store"
        marker = object()
        obj.set_session_store(marker)
        assert compat.session_store(obj) is marker, "set_session_store no longer sets _session_store"


def test_accessors_reach_the_real_attributes(registered):
    obj = _adapter()
    assert compat.pending_messages(obj) is obj._pending_messages
    assert compat.active_sessions(obj) is obj._active_sessions
    assert compat.session_tasks(obj) is obj._session_tasks
    assert compat.session_store(obj) is None
    compat.set_fatal_error(obj, "chatto_test", "boom", retryable=True)
    assert obj.fatal_error_code == "chatto_test" and obj.fatal_error_retryable is True
    assert compat.is_sender_authorized(obj, "Ualice", "dm", "Rdm") in (True, False, None)
    compat.mark_connected(obj)
    assert obj.is_connected
    compat.mark_disconnected(obj)
    assert not obj.is_connected
    assert compat.evict_cached_agent(obj, "agent:main:chatto:dm:x") is False  # no runner wired


def test_runner_evict_cached_agent_is_called(registered):
    calls = []

    class Runner:
        def _evict_cached_agent(self, session_key):
            calls.append(session_key)

    obj = _adapter()
    obj.gateway_runner = Runner()
    assert compat.evict_cached_agent(obj, "k") is True and calls == ["k"]


def test_session_store_privates(tmp_path, monkeypatch):
    """The SessionStore internals ``compat.session_id_for`` reads exist on a real store, and
    the lookup finds a session the store created (and never creates one itself)."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    from gateway.config import GatewayConfig
    from gateway.session import SessionStore

    store = SessionStore(tmp_path / "sessions", GatewayConfig())
    kinds = {e.name: e.kind for e in compat.HOST_PRIVATES if e.owner.endswith(":SessionStore")}
    for name, kind in kinds.items():
        if kind == "store dict":
            assert isinstance(getattr(store, name, None), dict), f"SessionStore.{name} is not a dict"
        elif kind == "store attr":
            assert hasattr(store, name), f"SessionStore.{name} is gone"
    assert compat.session_id_for(store, "agent:main:chatto:thread:R1:E1") is None
    assert not store._entries, "the lookup created a session"
