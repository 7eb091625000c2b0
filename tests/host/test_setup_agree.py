"""The host's screens agree on "is Chatto configured?" wherever the URL and key live.

Each screen is checked through the real hermes-agent function behind it (0.19.0):

* the ``hermes gateway setup`` menu line "Chatto  (configured)" and its closing summary
  ("No platforms configured" or the start/install offer) — ``hermes_cli/gateway.py``
  ``gateway_setup`` → ``_platform_status``, which calls our ``is_connected`` with a
  synthetic, empty ``PlatformConfig(enabled=True)``;
* ``hermes doctor``'s "Tool Availability" line for the ``chatto`` toolset —
  ``model_tools.check_tool_availability`` (+ ``hermes_cli/doctor.py::
  _apply_doctor_tool_availability_overrides``), which calls the tool's ``check_fn``;
* the gateway itself — ``gateway/config.py::load_gateway_config`` (enablement gate) →
  ``GatewayConfig.get_connected_platforms`` → ``platform_registry.create_adapter``.

Places: the profile's ``.env`` (loaded by the CLI's own ``load_hermes_dotenv`` as at
start-up), ``platforms.chatto.extra`` in ``config.yaml`` (the URL there, as the wizard
writes it, with the key in ``.env``; or both there), and the process environment.
"""

from __future__ import annotations

import builtins
import logging
import os

import pytest
import yaml

from chatto_local.hermes_config import write_hermes_config

from support.host import drop_log_handlers_added_since

URL = "http://127.0.0.1:9"
KEY = "cht_BK_UagreeBot000001.c2VjcmV0LWZvci1hZ3JlZQ"


@pytest.fixture()
def env_restored():
    """The host's writers/loaders set ``os.environ`` directly (``save_env_value``,
    ``load_hermes_dotenv``): put every CHATTO_* back as it was after the test."""
    before = {k: v for k, v in os.environ.items() if k.startswith("CHATTO_")}
    yield
    for k in [k for k in os.environ if k.startswith("CHATTO_")]:
        if k not in before:
            del os.environ[k]
    os.environ.update(before)


@pytest.fixture()
def home(registered, hermes_home, env_restored):
    return hermes_home


def _write_yaml(home, extra: dict | None, *, enabled: bool | None = None) -> None:
    block: dict = {}
    if enabled is not None:
        block["enabled"] = enabled
    if extra:
        block["extra"] = extra
    write_hermes_config(home, platform=block or None)


def _write_dotenv(home, values: dict[str, str]) -> None:
    (home / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    from hermes_cli.env_loader import load_hermes_dotenv

    load_hermes_dotenv(hermes_home=home)  # what every `hermes …` process does at start-up


def _menu_status() -> str:
    from hermes_cli.gateway import _all_platforms, _platform_status

    (chatto,) = [p for p in _all_platforms() if p["key"] == "chatto"]
    return _platform_status(chatto)


def _doctor_toolset_ok() -> bool:
    from hermes_cli.doctor import _apply_doctor_tool_availability_overrides
    from model_tools import check_tool_availability
    from tools.registry import invalidate_check_fn_cache

    invalidate_check_fn_cache()
    available, unavailable = _apply_doctor_tool_availability_overrides(*check_tool_availability())
    assert ("chatto" in available) != any(u.get("name") == "chatto" for u in unavailable)
    return "chatto" in available


def _gateway_starts_it() -> bool:
    from gateway.config import Platform, load_gateway_config
    from gateway.platform_registry import platform_registry

    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    cfg = load_gateway_config()
    plat = Platform("chatto")
    if plat not in cfg.get_connected_platforms():
        return False
    return platform_registry.create_adapter("chatto", cfg.platforms[plat]) is not None


def _run_gateway_setup(monkeypatch, capsys, lines: list[str], secrets: list[str]) -> tuple[str, list[list[str]]]:
    """Run the real ``hermes_cli.gateway.gateway_setup`` with scripted terminal input
    (``input`` / the host's masked secret prompt) and no service manager; returns its
    stdout and every menu it showed."""
    import hermes_cli.cli_output as cli_output
    import hermes_cli.gateway as gw

    menus: list[list[str]] = []
    real_choice = gw.prompt_choice

    def choice(question, choices, default=0, description=None):
        menus.append(list(choices))
        return real_choice(question, choices, default, description)

    monkeypatch.setattr(gw, "prompt_choice", choice)
    monkeypatch.setattr(builtins, "input", lambda prompt="": lines.pop(0))
    monkeypatch.setattr(cli_output, "masked_secret_prompt", lambda prompt="": secrets.pop(0))
    for name in (
        "supports_systemd_services",
        "is_macos",
        "is_windows",
        "is_wsl",
        "is_termux",
        "_is_service_installed",
        "_is_service_running",
        "is_managed",
    ):
        monkeypatch.setattr(gw, name, lambda *a, **k: False)
    monkeypatch.setattr(gw, "prompt_yes_no", lambda *a, **k: False)  # don't start anything
    gw.gateway_setup()
    return capsys.readouterr().out, menus


def _chatto_line(menu: list[str]) -> str:
    (line,) = [m for m in menu if "Chatto" in m]
    return line


def _summary_says_configured(out: str) -> bool:
    return "No platforms configured" not in out


def _assert_all(home, monkeypatch, capsys, expected: bool) -> None:
    status = _menu_status()
    assert status == ("configured" if expected else "not configured")
    out, menus = _run_gateway_setup(monkeypatch, capsys, [""], [])  # Enter = Done
    assert _chatto_line(menus[-1]).endswith("(configured)" if expected else "(not configured)")
    assert _summary_says_configured(out) is expected, out[-400:]
    assert _doctor_toolset_ok() is expected
    assert _gateway_starts_it() is expected


@pytest.mark.parametrize(
    "place", ["dotenv", "yaml_url_dotenv_key", "yaml_url_dotenv_key_not_enabled", "yaml_both", "environment"]
)
def test_every_screen_agrees_wherever_url_and_key_live(home, monkeypatch, capsys, place):
    if place == "dotenv":
        _write_yaml(home, None)
        _write_dotenv(home, {"CHATTO_URL": URL, "CHATTO_BOT_KEY": KEY})
    elif place == "yaml_url_dotenv_key":  # what `hermes gateway setup` writes
        _write_yaml(home, {"url": URL}, enabled=True)
        _write_dotenv(home, {"CHATTO_BOT_KEY": KEY})
    elif place == "yaml_url_dotenv_key_not_enabled":  # hand-written, no `enabled:` line
        _write_yaml(home, {"url": URL})
        _write_dotenv(home, {"CHATTO_BOT_KEY": KEY})
    elif place == "yaml_both":
        _write_yaml(home, {"url": URL, "bot_key": KEY}, enabled=True)
    else:
        _write_yaml(home, None)
        monkeypatch.setenv("CHATTO_URL", URL)
        monkeypatch.setenv("CHATTO_BOT_KEY", KEY)
    _assert_all(home, monkeypatch, capsys, True)


@pytest.mark.parametrize("place", ["nothing", "yaml_url_only", "dotenv_key_only", "environment_url_only"])
def test_every_screen_agrees_when_half_configured(home, monkeypatch, capsys, place):
    if place == "yaml_url_only":
        _write_yaml(home, {"url": URL}, enabled=True)
    elif place == "dotenv_key_only":
        _write_yaml(home, None)
        _write_dotenv(home, {"CHATTO_BOT_KEY": KEY})
    elif place == "environment_url_only":
        _write_yaml(home, None)
        monkeypatch.setenv("CHATTO_URL", URL)
    else:
        _write_yaml(home, None)
    status = _menu_status()
    assert status == "not configured"
    assert _doctor_toolset_ok() is False
    from gateway.config import Platform, load_gateway_config

    assert Platform("chatto") not in load_gateway_config().get_connected_platforms() or place == "yaml_url_only"
    # `enabled: true` with the key missing: the gateway tries, validate_config refuses it
    assert _gateway_starts_it() is False


def test_the_wizard_inside_gateway_setup_makes_every_screen_say_configured(home, monkeypatch, capsys):
    """The user's path: `hermes gateway setup` → Chatto → URL, key (checked live against
    the local server), allowed users, home channel → Done. The menu shown after the wizard, the closing summary,
    `hermes doctor`'s toolset line and the gateway all see the saved configuration."""
    from chatto_local import LocalChatto

    _write_yaml(home, None)
    with LocalChatto.demo() as srv:
        from hermes_cli.gateway import _all_platforms

        idx = [p["key"] for p in _all_platforms()].index("chatto")
        out, menus = _run_gateway_setup(
            monkeypatch, capsys, [str(idx + 1), srv.base_url, "", "", ""], [srv.world.bot_key]
        )
        assert len(menus) == 2
        assert _chatto_line(menus[0]).endswith("(not configured)")
        assert "✓ Chatto 0.5" in out and "✓ Saved CHATTO_BOT_KEY" in out
        assert f"✓ Saved CHATTO_HOME_CHANNEL={srv.world.general_id}" in out  # Enter: the first channel
        assert _chatto_line(menus[1]).endswith("(configured)")
        assert _summary_says_configured(out), out[-400:]
        assert srv.world.bot_key not in out
        cfg = yaml.safe_load((home / "config.yaml").read_text())
        assert cfg["platforms"]["chatto"]["extra"]["url"] == srv.base_url
        assert _doctor_toolset_ok() is True
        assert _gateway_starts_it() is True
    # a fresh process sees it too (.env is loaded at start-up, not inherited)
    os.environ.pop("CHATTO_BOT_KEY", None)
    assert _menu_status() == "not configured"  # …without the start-up load
    from hermes_cli.env_loader import load_hermes_dotenv

    load_hermes_dotenv(hermes_home=home)
    assert _menu_status() == "configured" and _doctor_toolset_ok() is True


# ------------------------------------------------------------------------------ the reason reaches gateway.log


@pytest.mark.parametrize("bad", ["url", "key", "missing_key"])
def test_configuration_error_reason_reaches_gateway_log_without_the_key(home, monkeypatch, bad):
    """`hermes gateway` logs through ``hermes_logging.setup_logging(mode="gateway")``:
    gateway.log keeps only gateway-component loggers. The reason why Chatto did not start
    (not just the host's generic "adapter creation failed") must be in it, with no key."""
    import hermes_logging
    from gateway.config import Platform, load_gateway_config
    from gateway.run import GatewayRunner

    secret = "c2VjcmV0LWZvci1iYWQta2V5"
    values = {
        "url": {"CHATTO_URL": "ftp://chat.example", "CHATTO_BOT_KEY": KEY},
        "key": {"CHATTO_URL": URL, "CHATTO_BOT_KEY": "cht_UK_UaaaaaaaaaaaaaA." + secret},
        "missing_key": {"CHATTO_URL": URL},
    }[bad]
    _write_yaml(home, None, enabled=True)
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    root = logging.getLogger()
    level, was_initialized = root.level, hermes_logging._logging_initialized
    before = hermes_logging.rotating_file_handlers()
    try:
        log_dir = hermes_logging.setup_logging(hermes_home=home, mode="gateway", force=True)
        cfg = load_gateway_config()
        runner = GatewayRunner(cfg)
        plat = Platform("chatto")
        assert runner._create_adapter(plat, cfg.platforms[plat]) is None
        hermes_logging.flush_log_queue()
        text = (log_dir / "gateway.log").read_text(encoding="utf-8")
        errors = (log_dir / "errors.log").read_text(encoding="utf-8")
    finally:
        drop_log_handlers_added_since(before)
        root.setLevel(level)
        hermes_logging._logging_initialized = was_initialized
    assert "adapter creation failed" in text  # the host's line …
    assert "Chatto platform not started: Chatto setting" in text  # … and ours, with the reason
    want = {"url": "CHATTO_URL", "key": "CHATTO_BOT_KEY", "missing_key": "CHATTO_BOT_KEY"}[bad]
    (line,) = [ln for ln in text.splitlines() if "Chatto platform not started" in ln]
    assert want in line and "is not set" in line if bad == "missing_key" else want in line
    assert line in errors  # one record, in both files
    assert secret not in text + errors and KEY not in text + errors


def test_factory_reports_a_config_error_in_one_line_instead_of_a_traceback(home, caplog):
    from gateway.config import PlatformConfig

    from hermes_chatto import _factory
    from hermes_chatto.config import GATEWAY_LOGGER_NAME

    with caplog.at_level(logging.ERROR):
        assert _factory(PlatformConfig(enabled=True, extra={"url": URL})) is None
    (rec,) = [r for r in caplog.records if r.name == GATEWAY_LOGGER_NAME]
    assert "CHATTO_BOT_KEY" in rec.getMessage() and rec.exc_info is None
