"""Shared fixtures: a temp ``HERMES_HOME`` (set before any Hermes module is imported),
the plugin registered through real discovery, a started LocalChatto demo world and a
real ``GatewayRunner`` wired to a real ``ChattoAdapter`` with the model call stubbed.

Fixtures (all function-scoped):

* ``hermes_home`` – a fresh temp Hermes home (``HERMES_HOME`` monkeypatched, Chatto /
  gateway auth env vars cleared, the settings cache cleared); returns its ``Path``.
* ``write_config(extra=None, *, enabled=True, plugins=("chatto",), **top)`` – writes
  ``config.yaml`` in that home (``plugins.enabled`` + a ``platforms.chatto`` block).
* ``registered`` – ``plugins.enabled: [chatto]`` + ``discover_plugins(force=True)``;
  returns the ``PlatformEntry``.
* ``chatto_world`` – ``LocalChatto.demo()`` started on 127.0.0.1:0 (async fixture); the
  object has ``base_url`` and the demo ids (see :func:`world_ids`).
* ``gateway`` – a factory ``await gateway(**opts) -> Gateway`` building a real
  ``GatewayRunner`` for ``chatto_world`` (options: ``allow_all``, ``allowed_users``,
  ``extra`` (platforms.chatto.extra), ``reply`` (callable or str for the stub model),
  ``env``). ``Gateway`` has ``runner``, ``adapter``, ``agent`` (:class:`FakeAgent`),
  ``world`` and ``stop()``; everything is torn down after the test.

Waiting is condition-based: :func:`wait_for` polls a predicate with a timeout.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

# Never let a test touch the real ~/.hermes: Hermes modules compute cache paths from
# HERMES_HOME at import time, so this must happen before they are imported.
os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-chatto-tests-")
os.environ.setdefault("HERMES_GATEWAY_BUSY_ACK_ENABLED", "true")

CHATTO_ENV = (
    "CHATTO_URL", "CHATTO_BOT_KEY", "CHATTO_ALLOWED_USERS", "CHATTO_ALLOW_ALL_USERS", "CHATTO_HOME_CHANNEL",
    "CHATTO_HOME_CHANNEL_THREAD_ID", "CHATTO_REQUIRE_MENTION", "CHATTO_FREE_RESPONSE_ROOMS",
    "CHATTO_REPLY_IN_THREAD", "CHATTO_ACK_REACTION", "CHATTO_DONE_REACTION", "CHATTO_RETAINED_ROOMS",
    "CHATTO_THREAD_CONTEXT_WINDOW", "CHATTO_THREAD_CONTEXT_MAX_BYTES", "CHATTO_WIRE_LOG_LEVEL",
    "GATEWAY_ALLOWED_USERS", "GATEWAY_ALLOW_ALL_USERS", "GATEWAY_MULTIPLEX_PROFILES",
)


async def wait_for(pred: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> Any:
    """Poll ``pred`` (sync or async) until it returns a truthy value; return it.
    Raises ``AssertionError`` naming ``what`` after ``timeout`` seconds."""
    from hermes_chatto.testing.harness import wait_until

    return await wait_until(pred, timeout=timeout, interval=interval, what=what or pred, exc=AssertionError)


@pytest.fixture()
def hermes_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in CHATTO_ENV:
        monkeypatch.delenv(name, raising=False)
    try:
        from hermes_chatto.config import clear_settings_cache

        clear_settings_cache()
    except Exception:
        pass
    yield home
    try:
        from hermes_chatto.config import clear_settings_cache

        clear_settings_cache()
    except Exception:
        pass


@pytest.fixture()
def write_config(hermes_home):
    import yaml

    def _write(extra: dict | None = None, *, enabled: bool | None = True, plugins=("chatto",), **top) -> Path:
        cfg: dict[str, Any] = {"plugins": {"enabled": list(plugins)}}
        if enabled is not None or extra:
            block: dict[str, Any] = {}
            if enabled is not None:
                block["enabled"] = enabled
            if extra:
                block["extra"] = dict(extra)
            cfg["platforms"] = {"chatto": block}
        cfg.update(top)
        path = hermes_home / "config.yaml"
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        return path

    return _write


@pytest.fixture()
def registered(hermes_home, write_config):
    """The plugin loaded through real entry-point discovery (``plugins.enabled``)."""
    write_config(enabled=None)
    from gateway.platform_registry import platform_registry
    from hermes_cli.plugins import discover_plugins

    discover_plugins(force=True)
    entry = platform_registry.get("chatto")
    assert entry is not None, "hermes_chatto was not registered by discovery"
    return entry


# ---------------------------------------------------------------------------------
# LocalChatto world


def world_ids(world: Any) -> dict[str, str]:
    """Demo ids of a LocalChatto world (``LocalChatto.demo().world``, a ``DemoWorld``):
    ``alice``, ``bot``, ``general``, ``dm``, ``bot_key``, ``alice_token``, ``bot_login``."""
    w = getattr(world, "world", None) or world
    return {
        "alice": w.alice_id,
        "bot": w.bot_id,
        "general": w.general_id,
        "dm": w.dm_id,
        "bot_key": w.bot_key,
        "alice_token": w.alice_token,
        "bot_login": getattr(w, "bot_login", "helper_bot"),
    }


@pytest.fixture()
async def chatto_world(hermes_home):
    from hermes_chatto.testing import LocalChatto

    world = LocalChatto.demo()
    await world.start("127.0.0.1", 0)
    try:
        yield world
    finally:
        await world.stop()


# ---------------------------------------------------------------------------------
# real GatewayRunner with a stubbed model call


@dataclass
class AgentCall:
    message: str
    context_prompt: str
    source: Any
    session_id: str
    session_key: str | None
    history: list = field(default_factory=list)


class FakeAgent:
    """Stands in for ``GatewayRunner._run_agent``: records every call; the reply is
    ``reply(call) -> str`` (default ``"pong: <message>"``). ``gate`` (an
    ``asyncio.Event``) when set makes calls wait until it is set (to keep a turn in
    flight)."""

    def __init__(self, reply: Callable[[AgentCall], str] | str | None = None):
        self.calls: list[AgentCall] = []
        self.reply = reply
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()

    def _reply(self, call: AgentCall) -> str:
        if self.reply is None:
            return f"pong: {call.message}"
        if callable(self.reply):
            return self.reply(call)
        return str(self.reply)

    async def run(self, runner, message, context_prompt, history, source, session_id, session_key=None, **kw):
        call = AgentCall(message=message, context_prompt=context_prompt, source=source, session_id=session_id,
                         session_key=session_key, history=list(history or []))
        self.calls.append(call)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        result = {"final_response": self._reply(call), "messages": [], "api_calls": 0, "tools": []}
        self._promote_overflow(runner, source, session_key)
        return result

    @staticmethod
    def _promote_overflow(runner, source, session_key) -> None:
        """What the real ``_run_agent_inner`` does after a run (0.19.0 run.py, drain site):
        keep the adapter's pending slot filled from the runner's busy-queue overflow
        (``_promote_queued_event``); without it, follow-ups beyond the first queued one
        would be lost only because ``_run_agent`` is stubbed."""
        try:
            adapter = runner._adapter_for_source(source)
        except Exception:
            adapter = None
        slot = getattr(adapter, "_pending_messages", None)
        if not session_key or slot is None or session_key in slot:
            return
        nxt = runner._promote_queued_event(session_key, adapter, None)
        if nxt is not None:
            slot[session_key] = nxt


@dataclass
class Gateway:
    runner: Any
    adapter: Any
    agent: FakeAgent
    world: Any
    ids: dict[str, str]

    async def stop(self) -> None:
        try:
            await self.adapter.cancel_background_tasks()
        except Exception:
            pass
        await self.adapter.disconnect()


async def idle(gw, *, turns: int = 0, timeout: float = 20.0) -> None:
    """Wait until ``gw``'s agent has run ``turns`` turns and nothing is in flight."""
    if turns:
        await wait_for(lambda: len(gw.agent.calls) >= turns, timeout=timeout, what=f"{turns} turn(s)")
    await wait_for(lambda: not gw.adapter._active_sessions and not gw.runner._running_agents,
                   timeout=timeout, what="gateway idle")


def bot_replies(gw, room: str, root: str):
    """The bot's messages in thread ``root`` of ``room`` (server state, oldest first)."""
    return [m for m in gw.world.thread_messages(room, root) if m.author_id == gw.ids["bot"]]


def wire_adapter(runner: Any, adapter: Any) -> None:
    """Wire an adapter to a runner exactly like ``GatewayRunner.start`` (0.19.0 run.py)."""
    adapter.gateway_runner = runner
    adapter.set_message_handler(runner._handle_message)
    adapter.set_fatal_error_handler(runner._handle_adapter_fatal_error)
    adapter.set_session_store(runner.session_store)
    adapter.set_busy_session_handler(runner._handle_active_session_busy_message)
    adapter.set_topic_recovery_fn(runner._recover_telegram_topic_thread_id)
    adapter.set_authorization_check(runner._make_adapter_auth_check(adapter.platform))
    adapter._busy_text_mode = runner._busy_text_mode


async def start_gateway(chatto_world: Any, monkeypatch: Any, ids: dict, *, agent: "FakeAgent") -> "Gateway":
    """A connected real ``GatewayRunner`` + ``ChattoAdapter`` for ``chatto_world``, with
    ``GatewayRunner._run_agent`` replaced by ``agent`` and the adapter wired exactly like
    ``GatewayRunner.start``. The caller has written the config and environment."""
    from gateway.config import Platform, load_gateway_config
    from gateway.run import GatewayRunner
    from hermes_cli.plugins import discover_plugins

    discover_plugins(force=True)

    async def fake_run_agent(self, message, context_prompt, history, source, session_id, session_key=None, **kw):
        return await agent.run(self, message, context_prompt, history, source, session_id, session_key, **kw)

    monkeypatch.setattr(GatewayRunner, "_run_agent", fake_run_agent)
    cfg = load_gateway_config()
    runner = GatewayRunner(cfg)
    plat = Platform("chatto")
    adapter = runner._create_adapter(plat, cfg.platforms[plat])
    assert adapter is not None, "registry refused to create the Chatto adapter"
    wire_adapter(runner, adapter)
    ok = await adapter.connect(is_reconnect=False)
    assert ok, f"connect failed: {adapter.fatal_error_message}"
    runner.adapters[plat] = adapter
    return Gateway(runner=runner, adapter=adapter, agent=agent, world=chatto_world, ids=ids)


async def build_gateway(chatto_world: Any, monkeypatch: Any, write_config: Callable[..., Path], *,
                        agent: "FakeAgent", allow_all: bool = True, allowed_users: str | None = None,
                        extra: dict | None = None, env: dict | None = None, home_channel: bool = True,
                        top: dict | None = None) -> "Gateway":
    """Point the Chatto env vars and ``config.yaml`` at ``chatto_world`` and return
    :func:`start_gateway`'s connected :class:`Gateway`. ``env`` values of ``None`` unset
    the variable; ``home_channel`` sets ``CHATTO_HOME_CHANNEL`` to the demo channel (no
    "No home channel" notice); ``top`` is merged into the top level of ``config.yaml`` (a
    dict, not ``**kwargs``: its keys, e.g. ``agent``, would clash with the parameters)."""
    ids = world_ids(chatto_world)
    monkeypatch.setenv("CHATTO_URL", chatto_world.base_url)
    monkeypatch.setenv("CHATTO_BOT_KEY", ids["bot_key"])
    if home_channel:
        monkeypatch.setenv("CHATTO_HOME_CHANNEL", ids["general"])
    if allow_all:
        monkeypatch.setenv("CHATTO_ALLOW_ALL_USERS", "true")
    if allowed_users is not None:
        monkeypatch.setenv("CHATTO_ALLOWED_USERS", allowed_users)
    for k, v in (env or {}).items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    write_config(extra or {}, enabled=True, **(top or {}))
    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    return await start_gateway(chatto_world, monkeypatch, ids, agent=agent)


@pytest.fixture()
async def gateway(hermes_home, write_config, chatto_world, monkeypatch):
    made: list[Gateway] = []

    async def _build(*, allow_all: bool = True, allowed_users: str | None = None, extra: dict | None = None,
                     reply: Callable[[AgentCall], str] | str | None = None, env: dict | None = None) -> Gateway:
        gw = await build_gateway(chatto_world, monkeypatch, write_config, agent=FakeAgent(reply),
                                 allow_all=allow_all, allowed_users=allowed_users, extra=extra, env=env)
        made.append(gw)
        return gw

    try:
        yield _build
    finally:
        for gw in made:
            await gw.stop()
