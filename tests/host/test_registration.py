"""Plugin registration through real hermes-agent discovery (entry point
``hermes_agent.plugins: chatto = "hermes_chatto"``), enablement, and cheap import."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

KEY = "cht_BK_Ubot0000000000b.c2VjcmV0LXNlY3JldC1zZWNyZXQ"


def test_import_is_cheap_subprocess(tmp_path):
    code = (
        "import sys, json, time; t=time.perf_counter(); import hermes_chatto; dt=time.perf_counter()-t;"
        "print(json.dumps({'heavy': [m for m in ('httpx','websockets','google.protobuf','gateway','pydantic')"
        " if m in sys.modules], 'dt': dt, 'has_register': callable(getattr(hermes_chatto,'register',None))}))"
    )
    env = dict(os.environ, HERMES_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["heavy"] == [], f"importing hermes_chatto pulled in {data['heavy']}"
    assert data["has_register"]
    assert data["dt"] < 1.0


def test_platform_name_unknown_before_registration_subprocess(tmp_path):
    code = (
        "from gateway.config import Platform\n"
        "try:\n    Platform('chatto'); print('exists')\nexcept ValueError:\n    print('ValueError')\n"
    )
    env = dict(os.environ, HERMES_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "ValueError", out.stderr


def test_discovery_registers_platform_tool_and_cli(registered):
    from gateway.config import Platform
    from gateway.platform_registry import PlatformEntry
    from hermes_cli.plugins import get_plugin_manager
    from tools.registry import registry

    entry = registered
    assert entry.name == "chatto" and entry.label == "Chatto" and entry.source == "plugin"
    assert entry.plugin_name == "chatto"
    assert entry.allowed_users_env == "CHATTO_ALLOWED_USERS"
    assert entry.allow_all_env == "CHATTO_ALLOW_ALL_USERS"
    assert entry.cron_deliver_env_var == "CHATTO_HOME_CHANNEL"
    assert entry.max_message_length == 0  # the host's char chunker is bypassed on purpose
    assert entry.platform_hint and entry.emoji
    for hook in ("is_connected", "env_enablement_fn", "standalone_sender_fn", "validate_config", "setup_fn"):
        assert callable(getattr(entry, hook)), hook
    assert entry.check_fn() is True
    names = {f.name for f in dataclasses.fields(PlatformEntry)}
    assert "parse_target_ref_fn" not in names  # 0.19.0: newer-only fields were not passed
    assert Platform("chatto").value == "chatto"
    tool = registry.get_entry("chatto_send_message")
    assert tool is not None and tool.toolset == "chatto"
    assert tool.schema["parameters"]["required"] == ["room", "text"]
    assert "chatto" in get_plugin_manager()._cli_commands


def test_not_enabled_without_config(registered):
    from gateway.config import Platform, load_gateway_config

    cfg = load_gateway_config()
    assert Platform("chatto") not in cfg.get_connected_platforms()
    entry = registered
    assert entry.is_connected(cfg.platforms.get(Platform("chatto"))) is False
    assert entry.env_enablement_fn() is None


def test_enabled_with_url_and_key_and_home_reseeded(registered, monkeypatch, write_config):
    from gateway.config import Platform, load_gateway_config
    from gateway.run import GatewayRunner

    monkeypatch.setenv("CHATTO_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CHATTO_BOT_KEY", KEY)
    monkeypatch.setenv("CHATTO_HOME_CHANNEL", "Rhome0000000000")
    write_config({}, enabled=True)
    cfg = load_gateway_config()
    plat = Platform("chatto")
    assert plat in cfg.get_connected_platforms()
    home = cfg.get_home_channel(plat)
    assert home is not None and home.chat_id == "Rhome0000000000"
    runner = GatewayRunner(cfg)
    adapter = runner._create_adapter(plat, cfg.platforms[plat])
    assert type(adapter).__name__ == "ChattoAdapter"
    assert adapter.gateway_runner is runner
    assert adapter.splits_long_messages is True and adapter.MAX_MESSAGE_LENGTH <= 10_000
    assert adapter.message_len_fn("ä") == 2  # bytes, for the host's own chunkers
    # the duplicate-credential check sees the key; printing the adapter's token does not
    fp = GatewayRunner._adapter_credential_fingerprint(adapter)
    assert fp and KEY not in fp
    assert adapter.token == KEY
    assert KEY not in repr(adapter.token) and KEY not in f"{adapter.token}" and KEY not in "%s" % adapter.token  # noqa: UP031 (%-formatting is the path under test)


def test_validate_config_refuses_missing_key(registered, write_config, monkeypatch):
    from gateway.config import Platform, load_gateway_config

    monkeypatch.setenv("CHATTO_URL", "http://127.0.0.1:9")
    write_config({}, enabled=True)
    cfg = load_gateway_config()
    assert registered.validate_config(cfg.platforms.get(Platform("chatto"))) is False


async def test_standalone_sender_reports_unconfigured(registered):
    from gateway.config import PlatformConfig

    res = await registered.standalone_sender_fn(PlatformConfig(enabled=True), "R1", "hi")
    assert "error" in res and "not configured" in res["error"]


def test_target_ref_parser_for_newer_hosts():
    import hermes_chatto

    assert hermes_chatto._parse_target_ref("Rabcdefghij0123") == ("Rabcdefghij0123", None)
    assert hermes_chatto._parse_target_ref("Rabcdefghij0123:Eabcdefghij0123") == ("Rabcdefghij0123", "Eabcdefghij0123")
    assert hermes_chatto._parse_target_ref("general") is None
    assert hermes_chatto._validate_target_ref("Rabcdefghij0123") is True
    assert isinstance(hermes_chatto._validate_target_ref("#general"), str)
