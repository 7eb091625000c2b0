"""Fixtures of the host tests: the plugin registered through real discovery, and a real
``GatewayRunner`` wired to a real ``ChattoAdapter`` for the ``chatto_world`` (model call
stubbed; no ``hermes gateway run`` process).

* ``registered`` – ``plugins.enabled: [chatto]`` + ``discover_plugins(force=True)``;
  returns the ``PlatformEntry``.
* ``gateway`` – a factory ``await gateway(**opts) -> Gateway`` building a real
  ``GatewayRunner`` for ``chatto_world`` (options: ``allow_all``, ``allowed_users``,
  ``extra`` (platforms.chatto.extra), ``reply`` (callable or str for the stub model),
  ``env``). ``Gateway`` (:class:`support.host.Gateway`) has ``runner``, ``adapter``,
  ``agent`` (:class:`support.fakes.FakeAgent`), ``world`` and ``stop()``; everything is
  torn down after the test.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from support.fakes import AgentCall, FakeAgent
from support.host import Gateway, build_gateway


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


@pytest.fixture()
async def gateway(hermes_home, write_config, chatto_world, monkeypatch):
    made: list[Gateway] = []

    async def _build(
        *,
        allow_all: bool = True,
        allowed_users: str | None = None,
        extra: dict | None = None,
        reply: Callable[[AgentCall], str] | str | None = None,
        env: dict | None = None,
    ) -> Gateway:
        gw = await build_gateway(
            chatto_world,
            monkeypatch,
            write_config,
            agent=FakeAgent(reply),
            allow_all=allow_all,
            allowed_users=allowed_users,
            extra=extra,
            env=env,
        )
        made.append(gw)
        return gw

    try:
        yield _build
    finally:
        for gw in made:
            await gw.stop()
