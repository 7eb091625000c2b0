"""A real ``GatewayRunner`` wired to a real ``ChattoAdapter`` for a LocalChatto world, with
the model call stubbed by :class:`support.fakes.FakeAgent` (no ``hermes gateway run``
process). The ``gateway`` fixture (tests/host/conftest.py) and the fault suite build on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.fakes import FakeAgent


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


async def start_gateway(chatto_world: Any, monkeypatch: Any, ids: dict, *, agent: FakeAgent) -> Gateway:
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


async def build_gateway(
    chatto_world: Any,
    monkeypatch: Any,
    write_config: Callable[..., Path],
    *,
    agent: FakeAgent,
    allow_all: bool = True,
    allowed_users: str | None = None,
    extra: dict | None = None,
    env: dict | None = None,
    home_channel: bool = True,
    top: dict | None = None,
) -> Gateway:
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


def drop_log_handlers_added_since(before: list) -> None:
    """Undo a test's ``hermes_logging.setup_logging``: close the file handlers it queued and
    keep the ones other code set up before (``hermes_logging`` has only a reset-everything
    helper). ``before``: ``hermes_logging.rotating_file_handlers()`` taken before the setup."""
    import hermes_logging

    added = [h for h in hermes_logging.rotating_file_handlers() if h not in before]
    if not before:
        hermes_logging._reset_queued_handlers()
        return
    hermes_logging.flush_log_queue()
    with hermes_logging._queue_state_lock:
        for h in added:
            hermes_logging._queued_file_handlers.remove(h)
            h.close()
        listener = hermes_logging._queue_listener
        if listener is not None:
            listener.stop()
            listener.handlers = tuple(hermes_logging._queued_file_handlers)
            listener.start()
