"""`hermes send` and the home channel, through the real hermes-agent 0.19.0 functions.

* ``hermes send --list`` → ``hermes_cli/send_cmd.py::_list_targets`` →
  ``gateway/channel_directory.py::load_directory`` / ``format_directory_for_display``; the
  directory is built by ``build_channel_directory`` from the gateway's *sessions*
  (``_build_from_sessions``: one entry per session origin, labelled ``<chat name> (<type>)``).
* ``hermes send --to …`` → ``tools/send_message_tool.py::send_message_tool`` →
  ``_handle_send``: ``_parse_target_ref`` (built-in id formats only on 0.19.0; newer hosts
  ask the plugin's ``parse_target_ref_fn``), else ``resolve_channel_name`` and a re-parse of
  the resolved id — which for a plugin platform yields no chat id, so 0.19.0 falls back to
  the *home channel*. The tests below pin that, because README (Sending) tells users.
* ``hermes config set`` → ``hermes_cli/config.py::set_config_value`` (its unknown-key
  warning is ``_validate_config_key``).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from support.waits import idle


@pytest.fixture()
def wire_level():
    """A connect sets the process-wide ``hermes_plugins.chatto.wire`` level (``wire_log_level``):
    put it back so later tests that capture wire DEBUG logs are not affected."""
    import logging

    lg = logging.getLogger("hermes_plugins.chatto.wire")
    level = lg.level
    yield
    lg.setLevel(level)


@pytest.fixture()
def directory(hermes_home, monkeypatch):
    """The channel directory files of this test's Hermes home (the host computes their
    paths once, at import)."""
    import gateway.channel_directory as cd

    monkeypatch.setattr(cd, "DIRECTORY_PATH", hermes_home / "channel_directory.json")
    monkeypatch.setattr(cd, "CHANNEL_ALIASES_PATH", hermes_home / "channel_aliases.json")
    return cd


def _bodies(world, room_id: str) -> list[str]:
    return [m.body for m in world.room_messages(room_id)]


async def _send(target: str, text: str) -> dict:
    from tools.send_message_tool import send_message_tool

    return json.loads(await asyncio.to_thread(send_message_tool, {"action": "send", "target": target, "message": text}))


async def test_send_list_and_to_on_hermes_0_19_0(wire_level, gateway, directory, chatto_world, capsys):
    """What `hermes send -l` lists and what `--to` does with it on 0.19.0. If this fails
    after a host upgrade, the host learnt plugin targets: update README "Sending"."""
    from hermes_cli.send_cmd import _list_targets

    gw = await gateway()
    ids, w = gw.ids, gw.world
    w.post(ids["alice"], ids["general"], f"@{ids['bot_login']} hello")
    w.post(ids["alice"], ids["dm"], "hi in the DM")
    await idle(gw, turns=2)
    await directory.build_channel_directory(gw.runner.adapters)
    await gw.stop()
    gw.runner.adapters.clear()  # `hermes send` runs in its own process: the stand-alone sender path

    assert _list_targets(None, json_mode=False) == 0
    listed = [ln.strip() for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("chatto:")]
    assert "chatto:Alice (dm)" in listed
    assert any(t.startswith("chatto:general / topic E") for t in listed)  # a thread session

    # bare platform: the home channel (CHATTO_HOME_CHANNEL = general here) — this works
    res = await _send("chatto", "to the home channel")
    assert res.get("success") and "home channel" in res.get("note", "")
    assert "to the home channel" in _bodies(w, ids["general"])

    # a listed name or a room id is resolved, then dropped: 0.19.0 delivers to the home channel
    for target in ("chatto:Alice (dm)", f"chatto:{ids['dm']}"):
        text = f"meant for the DM via {target}"
        res = await _send(target, text)
        assert res.get("success") and "home channel" in res.get("note", ""), res
        assert text in _bodies(w, ids["general"]) and text not in _bodies(w, ids["dm"])

    # an id the directory does not list is refused
    res = await _send(f"chatto:{ids['general']}", "refused")
    assert "Could not resolve" in res.get("error", "")


def test_home_channel_through_hermes_config_set(registered, hermes_home, monkeypatch, capsys):
    """`hermes config set platforms.chatto.extra.home_channel R…` is a key the host accepts
    (no warning), and both the host (`HomeChannel` for `hermes send --to chatto` and cron,
    via ``env_enablement``) and the plugin's settings read it."""
    import yaml
    from gateway.config import Platform, load_gateway_config
    from hermes_cli.config import set_config_value

    from hermes_chatto.config import clear_settings_cache, load_settings

    monkeypatch.setenv("CHATTO_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CHATTO_BOT_KEY", "cht_BK_UhomeBot0000001.c2VjcmV0LWZvci1ob21l")
    set_config_value("platforms.chatto.enabled", "true")
    set_config_value("platforms.chatto.extra.home_channel", "Rhome0000000000")
    set_config_value("platforms.chatto.extra.home_thread", "Eroot0000000000")
    out = capsys.readouterr().out
    assert "not a recognized config key" not in out
    cfg_yaml = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert cfg_yaml["platforms"]["chatto"]["extra"]["home_channel"] == "Rhome0000000000"

    home = load_gateway_config().get_home_channel(Platform("chatto"))
    assert home is not None and (home.chat_id, home.thread_id) == ("Rhome0000000000", "Eroot0000000000")
    clear_settings_cache()
    s = load_settings(None)
    assert (s.home_channel, s.home_thread) == ("Rhome0000000000", "Eroot0000000000")

    # the .env variable (what /sethome writes) wins over config.yaml
    monkeypatch.setenv("CHATTO_HOME_CHANNEL", "Rsethome000000a")
    home = load_gateway_config().get_home_channel(Platform("chatto"))
    assert (home.chat_id, home.thread_id) == ("Rsethome000000a", None)

    # `hermes config set CHATTO_HOME_CHANNEL …`: the host writes a top-level config.yaml key
    # and warns about it (it is not routed to .env: only *_API_KEY / *_TOKEN names are)
    set_config_value("CHATTO_HOME_CHANNEL", "Rtoplevel00000a")
    assert "not a recognized config key" in capsys.readouterr().out
    assert yaml.safe_load((hermes_home / "config.yaml").read_text())["CHATTO_HOME_CHANNEL"] == "Rtoplevel00000a"
