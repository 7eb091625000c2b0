"""Two profiles with the same bot key in two gateway processes: the second is refused with a
fatal error naming the first (Hermes' scoped lock, ``gateway.status.acquire_scoped_lock``,
keyed by server URL + bot user id), so no message is answered twice; once the first
disconnects, the bot is free again. Real pieces: two Hermes profiles, the real
``GatewayRunner``-created ``ChattoAdapter`` in a child process and in this one, the local
Chatto server over loopback."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap

import pytest

from chatto_local.hermes_config import write_hermes_config

from support.paths import REPO

pytestmark = pytest.mark.timeout(120)

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from gateway.config import Platform, load_gateway_config
    from gateway.run import GatewayRunner
    from hermes_cli.plugins import discover_plugins

    async def main():
        discover_plugins(force=True)
        cfg = load_gateway_config()
        plat = Platform("chatto")
        adapter = GatewayRunner(cfg)._create_adapter(plat, cfg.platforms[plat])
        ok = await adapter.connect(is_reconnect=False)
        print("connected" if ok else "refused: " + str(adapter.fatal_error_message), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await adapter.disconnect()
        print("disconnected", flush=True)

    asyncio.run(main())
    """
)


def _profile(home, url: str, key: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / ".env").write_text(f"CHATTO_URL={url}\nCHATTO_BOT_KEY={key}\nCHATTO_ALLOW_ALL_USERS=true\n")
    write_hermes_config(home, platform={"enabled": True})


async def _adapter_here():
    from gateway.config import Platform, load_gateway_config
    from gateway.run import GatewayRunner
    from hermes_cli.plugins import discover_plugins

    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    discover_plugins(force=True)
    cfg = load_gateway_config()
    plat = Platform("chatto")
    return GatewayRunner(cfg)._create_adapter(plat, cfg.platforms[plat])


async def test_a_bot_already_served_by_another_profile_is_refused_naming_it(
    chatto_world, hermes_home, tmp_path, monkeypatch
):
    srv = chatto_world
    key = srv.bot_key
    monkeypatch.setenv("HERMES_GATEWAY_LOCK_DIR", str(tmp_path / "locks"))
    alpha = tmp_path / "root" / "profiles" / "alpha"
    _profile(alpha, srv.base_url, key)
    _profile(hermes_home, srv.base_url, key)  # this process's profile: the same bot
    for k, v in (("CHATTO_URL", srv.base_url), ("CHATTO_BOT_KEY", key), ("CHATTO_ALLOW_ALL_USERS", "true")):
        monkeypatch.setenv(k, v)  # a gateway process has its profile's .env in os.environ

    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATTO_")}
    env["HERMES_HOME"] = str(alpha)
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "hermes"
    script.write_text(_CHILD)
    # "<…>/hermes gateway run" as its command line: Hermes treats a lock whose live holder
    # does not look like a gateway as stale (gateway/status.py looks_like_gateway_command_line).
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        "gateway",
        "run",
        cwd=REPO,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
        assert line == "connected", line

        adapter = await _adapter_here()
        assert await adapter.connect(is_reconnect=False) is False
        msg = adapter.fatal_error_message or ""
        assert adapter.fatal_error_code == "chatto_bot_in_use"
        assert f"Chatto bot {srv.bot_id} on {srv.base_url} is already served by profile 'alpha'" in msg, msg
        assert "gateway PID" in msg and "its own CHATTO_BOT_KEY" in msg
        assert key not in msg
        # the refused profile never opened a realtime socket: the bot is online once
        assert [u for u, _k in srv.realtime_hellos] == [srv.bot_id]
        # the lock file holds no key and not the identity in clear
        (lock,) = (tmp_path / "locks").iterdir()
        text = lock.read_text()
        assert key not in text and f"{srv.base_url}#{srv.bot_id}" not in text

        child.stdin.close()
        assert (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip() == "disconnected"
        await asyncio.wait_for(child.wait(), 30)

        again = await _adapter_here()
        try:
            assert await again.connect(is_reconnect=False) is True, again.fatal_error_message
        finally:
            await again.disconnect()
        assert not list((tmp_path / "locks").iterdir())  # released at disconnect
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
