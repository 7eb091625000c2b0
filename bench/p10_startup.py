"""P10: startup, the plugin's own share: importing it and connecting it.

In a fresh interpreter (``run_all`` runs each script in its own):

1. **host import**: ``gateway.run``, ``gateway.config``, ``hermes_cli.plugins`` (what any
   platform pays; informational).
2. **plugin import**: then ``hermes_chatto`` and ``hermes_chatto.adapter`` (with the wire
   layer: httpx, websockets, protobuf, the generated schema), i.e. what this plugin adds.
   **settings import** (reported beside it, not in the goal's figure as the issue defines
   it): ``hermes_chatto.config``, i.e. pydantic and pydantic-settings, which the host has not
   imported at that point; the plugin's ``register`` and connection check load the settings
   during discovery.
3. **connect**: a real ``GatewayRunner`` + ``ChattoAdapter`` (``_gateway.start_gateway``)
   against the local server (its demo world, in its own process): from ``adapter.connect``
   to the plugin handling ``caught_up`` (discovery, runner construction not counted).

Goal: plugin import + connect < 0.3 s.

The plugin's bytecode is compiled first (not timed), as ``pip install`` does: a checkout run
with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module of the plugin from
source on each start (~0.1 s here), while the host's modules load from the ``.pyc`` its install
wrote. ``P10_BYTECODE=off`` skips it (a first start from a fresh checkout).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from _util import emit, note, setup_hermes_home


async def connect_time() -> tuple[float, float]:
    from _gateway import agent_result, start_gateway, stop_gateway
    from _server_proc import ServerProcess
    from hermes_chatto.wire import events as E

    async def run_agent(message, source, session_key):
        return agent_result("ok")

    sp = ServerProcess()
    info = sp.start()
    marks: dict[str, float] = {}

    def before(adapter) -> None:
        on_event = adapter.inbound.on_event

        async def watched(ev):
            await on_event(ev)
            if isinstance(ev, E.CaughtUp):
                marks.setdefault("caught_up", time.perf_counter())

        adapter.inbound.on_event = watched
        marks["connect"] = time.perf_counter()

    t0 = time.perf_counter()
    _runner, adapter = await start_gateway(
        info["base"], info["bot_key"], info["general"], run_agent, before_connect=before
    )
    end = time.monotonic() + 30
    while "caught_up" not in marks and time.monotonic() < end:
        await asyncio.sleep(0.001)
    setup_s = marks["connect"] - t0
    connect_s = marks["caught_up"] - marks["connect"]
    await stop_gateway(adapter)
    sp.stop()
    return setup_s, connect_s


def compile_plugin() -> str:
    """Write the plugin's ``.pyc`` files (``compileall``: also with ``PYTHONDONTWRITEBYTECODE``)
    without importing it; returns what was done, for the note."""
    if os.environ.get("P10_BYTECODE", "on") == "off":
        return "plugin bytecode: not compiled first (P10_BYTECODE=off)"
    import compileall
    from importlib.util import find_spec

    spec = find_spec("hermes_chatto")
    if spec is None or spec.origin is None:
        raise RuntimeError("hermes_chatto is not importable")
    package = os.path.dirname(spec.origin)
    compileall.compile_dir(package, quiet=1)
    return f"plugin bytecode: compiled first ({package})"


def main() -> None:
    setup_hermes_home()
    compiled = compile_plugin()
    if "hermes_chatto.adapter" in sys.modules:  # pragma: no cover - a fresh interpreter is the point
        raise RuntimeError("run P10 in a fresh interpreter")
    t0 = time.perf_counter()
    import gateway.config  # noqa: F401
    import gateway.run  # noqa: F401
    import hermes_cli.plugins  # noqa: F401

    t1 = time.perf_counter()
    import hermes_chatto  # noqa: F401
    import hermes_chatto.adapter  # noqa: F401

    t2 = time.perf_counter()
    import hermes_chatto.config  # noqa: F401  (register/check_fn load the settings: pydantic-settings)

    t3 = time.perf_counter()
    setup_s, connect_s = asyncio.run(connect_time())
    host_import, plugin_import, settings_import = t1 - t0, t2 - t1, t3 - t2
    note(compiled)
    note(
        f"P10: host import {host_import:.3f} s, plugin import {plugin_import:.3f} s, settings import "
        f"{settings_import:.3f} s, runner set-up (discovery, GatewayRunner, adapter built; settings already "
        f"imported) {setup_s:.3f} s, connect → caught_up {connect_s:.3f} s"
    )
    emit(10, "host_import", host_import, "s", "-")
    emit(10, "plugin_import", plugin_import, "s", "-")
    emit(10, "settings_import", settings_import, "s", "-")
    emit(10, "connect_to_caught_up", connect_s, "s", "-")
    emit(10, "plugin_share", plugin_import + connect_s, "s", "<0.3")
    emit(10, "plugin_share_with_settings", plugin_import + settings_import + connect_s, "s", "-")


if __name__ == "__main__":
    main()
