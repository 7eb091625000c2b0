"""A real ``GatewayRunner`` with the real ``ChattoAdapter`` for the benchmarks (P6, P8): the
plugin loaded by Hermes' own discovery, wired exactly like ``GatewayRunner.start``
(hermes-agent 0.19.0 ``gateway/run.py``), with the model call (``GatewayRunner._run_agent``)
replaced by ``run_agent`` so a turn costs no model time.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from chatto_local.hermes_config import write_hermes_config


def write_config(home: str, *, extra: dict[str, Any] | None = None) -> None:
    """``config.yaml`` in Hermes home ``home``: the plugin enabled, ``platforms.chatto``."""
    block: dict[str, Any] = {"enabled": True}
    if extra:
        block["extra"] = dict(extra)
    # A configured provider, as in every real deployment (never called: ``_run_agent`` is
    # replaced). Without one, hermes-agent 0.19.0 resolves the runtime provider through its
    # fallbacks on every turn (``resolve_runtime_provider`` → ``has_aws_credentials``: a new
    # botocore session), ~120 ms on the event loop per turn, which P8 measured as the plugin
    # falling behind.
    # The offline settings every test home has (lazy installs off, chatto_local.hermes_config).
    write_hermes_config(home, platform=block)


async def start_gateway(
    base_url: str,
    bot_key: str,
    home_channel: str,
    run_agent: Callable[..., Awaitable[dict[str, Any]]],
    *,
    env: dict[str, str] | None = None,
    before_connect: Callable[[Any], None] | None = None,
) -> tuple[Any, Any]:
    """``(runner, adapter)``: connected to ``base_url`` as the bot, every sender allowed.
    ``run_agent(message, source, session_key)`` answers each turn (returns Hermes' result
    dict). ``before_connect(adapter)`` runs just before ``adapter.connect`` (to wrap a unit).
    Call with ``HERMES_HOME`` already set (see ``_util.setup_hermes_home``)."""
    os.environ.update(
        {
            "CHATTO_URL": base_url,
            "CHATTO_BOT_KEY": bot_key,
            "CHATTO_HOME_CHANNEL": home_channel,
            "CHATTO_ALLOW_ALL_USERS": "true",
            **(env or {}),
        }
    )
    write_config(os.environ["HERMES_HOME"])
    from gateway.config import Platform, load_gateway_config
    from gateway.run import GatewayRunner
    from hermes_cli.plugins import discover_plugins

    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    discover_plugins(force=True)

    async def fake_run_agent(self, message, context_prompt, history, source, session_id, session_key=None, **kw):
        return await run_agent(message, source, session_key)

    GatewayRunner._run_agent = fake_run_agent
    cfg = load_gateway_config()
    runner = GatewayRunner(cfg)
    plat = Platform("chatto")
    adapter = runner._create_adapter(plat, cfg.platforms[plat])
    if adapter is None:
        raise RuntimeError("the platform registry refused to create the Chatto adapter")
    adapter.gateway_runner = runner
    adapter.set_message_handler(runner._handle_message)
    adapter.set_fatal_error_handler(runner._handle_adapter_fatal_error)
    adapter.set_session_store(runner.session_store)
    adapter.set_busy_session_handler(runner._handle_active_session_busy_message)
    adapter.set_topic_recovery_fn(runner._recover_telegram_topic_thread_id)
    adapter.set_authorization_check(runner._make_adapter_auth_check(adapter.platform))
    adapter._busy_text_mode = runner._busy_text_mode
    if before_connect is not None:
        before_connect(adapter)
    if not await adapter.connect(is_reconnect=False):
        raise RuntimeError(f"connect failed: {adapter.fatal_error_message}")
    runner.adapters[plat] = adapter
    return runner, adapter


def agent_result(text: str) -> dict[str, Any]:
    """What ``GatewayRunner._run_agent`` returns for a turn answered with ``text``."""
    return {"final_response": text, "messages": [], "api_calls": 0, "tools": []}


async def stop_gateway(adapter: Any) -> None:
    try:
        await adapter.cancel_background_tasks()
    except Exception:  # noqa: BLE001 - best effort at the end of a benchmark
        pass
    await adapter.disconnect()
