"""`doctor` against the local Chatto server (real loopback HTTP + WebSocket).

Each failure case must name the problem and its fix; no output ever contains the key.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import os
import sys
import threading
from pathlib import Path

import pytest
import yaml

from chatto_local import LocalChatto

from support.paths import REPO


@pytest.fixture()
def srv():
    s = LocalChatto.demo()
    s.start_sync()
    yield s
    s.stop_sync()


@pytest.fixture()
def home(tmp_path, monkeypatch):
    h = tmp_path / "hermes"
    h.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(h))
    for k in list(os.environ):
        if k.startswith(("CHATTO_", "GATEWAY_ALLOW")):
            monkeypatch.delenv(k)
    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    yield h
    clear_settings_cache()


def _configure(home: Path, srv: LocalChatto, key: str | None = None, url: str | None = None) -> str:
    """Profile config the way `hermes gateway setup` leaves it: key in .env, URL in config.yaml."""
    key = key or srv.bot_key
    (home / ".env").write_text(f"CHATTO_BOT_KEY={key}\nCHATTO_ALLOWED_USERS={srv.alice_id}\n")
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "plugins": {"enabled": ["chatto"]},
                "platforms": {"chatto": {"enabled": True, "extra": {"url": url or srv.base_url}}},
            }
        )
    )
    return key


def _outputs(report) -> str:
    return report.render_text() + "\n" + report.to_json()


def _by_name(report) -> dict:
    return {c.name: c for c in report.checks}


def _assert_no_secret(text: str, *keys: str) -> None:
    for k in keys:
        assert k not in text
        assert k.split(".", 1)[1] not in text  # not even the secret half


async def test_all_pass_on_the_demo_world(srv, home, caplog):
    from hermes_chatto.doctor import PASS, run_doctor

    key = _configure(home, srv)
    with caplog.at_level(logging.DEBUG):
        report = await run_doctor(environ={})
    checks = _by_name(report)
    assert [c.status for c in report.checks] == [PASS] * len(report.checks), report.render_text()
    assert report.exit_code == 0 and report.ok
    assert {"configuration", "authorization", "server", "bot key", "rooms", "room #general", "realtime"} <= set(checks)
    assert "config.yaml platforms.chatto.extra.url" in checks["configuration"].detail
    assert "CHATTO_BOT_KEY from the .env" in checks["configuration"].detail
    assert "0.5.0-dev" in checks["server"].detail
    assert "@helper_bot" in checks["bot key"].detail and srv.bot_id in checks["bot key"].detail
    for perm in ("message.post", "message.post-in-thread", "message.react", "message.attach"):
        assert perm in checks["room #general"].detail
    rt = checks["realtime"]
    assert rt.elapsed_ms is not None and rt.elapsed_ms > 0 and "caught_up" in rt.detail
    data = json.loads(report.to_json())
    assert data["ok"] is True and data["summary"]["fail"] == 0
    assert all(set(c) >= {"name", "status", "detail"} for c in data["checks"])
    _assert_no_secret(_outputs(report) + caplog.text, key)
    # the doctor authenticated with the profile's key, and only with it
    tokens = {r.token for r in srv.requests}
    assert key in tokens and tokens <= {None, "", key}
    assert srv.requests_for("GetViewer") and srv.requests_for("ListRooms")
    assert [h[0] for h in srv.realtime_hellos] == [srv.bot_id]


async def test_revoked_key_names_problem_and_fix(srv, home, caplog):
    from hermes_chatto.doctor import FAIL, run_doctor

    old = _configure(home, srv)
    new = srv.rotate_key(srv.bot_id)
    with caplog.at_level(logging.DEBUG):
        report = await run_doctor(environ={})
    c = _by_name(report)["bot key"]
    assert c.status == FAIL and report.exit_code == 1
    assert "rejected CHATTO_BOT_KEY" in c.detail
    assert "rotate the key in Chatto" in c.fix and "CHATTO_BOT_KEY" in c.fix
    assert "realtime" not in _by_name(report)  # no noise after a dead key
    _assert_no_secret(_outputs(report) + caplog.text, old, new)


async def test_missing_post_in_thread_names_the_permission_and_fix(srv, home):
    from hermes_chatto.doctor import FAIL, PASS, run_doctor

    key = _configure(home, srv)
    srv.revoke(srv.general_id, srv.bot_id, "message.post-in-thread")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == FAIL and report.exit_code == 1
    assert "missing message.post-in-thread" in room.detail and "cannot reply in threads" in room.detail
    assert "grant message.post-in-thread" in room.fix and "room settings" in room.fix
    assert _by_name(report)["realtime"].status == PASS
    assert "FAIL  room #general" in report.render_text() and "fix: grant message.post-in-thread" in report.render_text()
    _assert_no_secret(_outputs(report), key)


async def test_missing_react_is_a_warning_not_a_failure(srv, home):
    from hermes_chatto.doctor import WARN, run_doctor

    _configure(home, srv)
    srv.revoke(srv.general_id, srv.bot_id, "message.react")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == WARN and "message.react" in room.detail and report.exit_code == 0


async def test_protocol_1_server_names_the_version_problem(srv, home):
    from hermes_chatto.doctor import FAIL, MSG_PROTOCOL_1, run_doctor

    key = _configure(home, srv)
    srv.set_protocol_version(1)
    report = await run_doctor(environ={})
    checks = _by_name(report)
    assert checks["server"].status == FAIL and "0.4.20" in checks["server"].detail
    assert checks["realtime"].status == FAIL
    assert MSG_PROTOCOL_1 in checks["realtime"].detail and "unsupported_protocol" in checks["realtime"].detail
    assert "upgrade the Chatto server to ≥ 0.5.0" in checks["realtime"].fix
    assert report.exit_code == 1
    _assert_no_secret(_outputs(report), key)


async def test_realtime_probe_alone_detects_protocol_1_when_version_is_unparsable(home):
    """A server reporting a non-semver version ('dev') is probed: the realtime endpoint decides."""
    from hermes_chatto.doctor import FAIL, MSG_PROTOCOL_1, run_doctor

    s = LocalChatto.demo(version="dev", protocol_version=1)
    s.start_sync()
    try:
        _configure(home, s)
        report = await run_doctor(environ={})
    finally:
        s.stop_sync()
    checks = _by_name(report)
    assert checks["server"].status == FAIL and "unsupported_protocol" in checks["server"].detail
    assert checks["realtime"].status == FAIL and MSG_PROTOCOL_1 in checks["realtime"].detail


@pytest.mark.parametrize("version", ["0.4.8", "dev"])
async def test_a_plain_build_of_main_is_judged_by_its_handshake_not_its_version(home, version):
    """Issue 13 item 7: Chatto main's ``cli/version.go`` says ``0.4.8``; only a build with
    ``-X main.Version=…`` reports ``0.5.0-dev``. Such a server speaks realtime protocol 2 and
    has bot keys: doctor must pass it (it failed it as "0.4.x speaks protocol 1")."""
    from hermes_chatto.doctor import PASS, run_doctor

    s = LocalChatto.demo(version=version)
    s.start_sync()
    try:
        _configure(home, s)
        report = await run_doctor(environ={})
    finally:
        s.stop_sync()
    checks = _by_name(report)
    assert checks["server"].status == PASS, checks["server"].detail
    assert "protocol 2" in checks["server"].detail and version in checks["server"].detail
    assert checks["bot key"].status == PASS and checks["realtime"].status == PASS
    assert report.exit_code == 0, report.render_text()


async def test_setup_wizard_accepts_a_plain_build_of_main():
    """The setup wizard judges the server the same way (issue 13 item 7)."""
    from hermes_chatto.setup_wizard import validate_live

    s = LocalChatto.demo(version="0.4.8")
    s.start_sync()
    try:
        live = await validate_live(s.base_url, s.bot_key)
    finally:
        s.stop_sync()
    assert (live.server_version, live.bot_id) == ("0.4.8", s.bot_id)


async def test_protocol_probe_reads_the_keyless_hello_answer():
    """``protocol_probe``: ``authentication_required`` → 2, ``unsupported_protocol`` → 1,
    nothing listening → undecided (``None``), never an exception."""
    from hermes_chatto.doctor import protocol_probe

    s = LocalChatto.demo(version="0.4.8")
    s.start_sync()
    try:
        assert (await protocol_probe(s.base_url)).protocol == 2
        s.set_protocol_version(1)
        assert (await protocol_probe(s.base_url)).protocol == 1
        url = s.base_url
    finally:
        s.stop_sync()
    gone = await protocol_probe(url, timeout=5.0)
    assert gone.protocol is None and gone.evidence.startswith("connect_failed")


class _NotChatto(http.server.BaseHTTPRequestHandler):
    def _reply(self):
        body = b"<html><body>404 page not found</body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _reply

    def log_message(self, *a):
        pass


@pytest.fixture()
def not_chatto():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotChatto)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_wrong_url_says_not_a_chatto_server(not_chatto, home, srv):
    from hermes_chatto.doctor import FAIL, run_doctor

    key = _configure(home, srv, url=not_chatto)
    report = await run_doctor(environ={})
    c = _by_name(report)["server"]
    assert c.status == FAIL and report.exit_code == 1
    assert "not a Chatto server / wrong URL" in c.detail and not_chatto in c.detail
    assert "CHATTO_URL" in c.fix and "without /api" in c.fix
    assert "bot key" not in _by_name(report)
    _assert_no_secret(_outputs(report), key)


async def test_environment_overrides_the_profile_files(srv, home, not_chatto):
    """CHATTO_URL in the environment beats the profile's config (doctor against another server)."""
    from hermes_chatto.doctor import FAIL, run_doctor

    _configure(home, srv)
    report = await run_doctor(environ={"CHATTO_URL": not_chatto})
    assert _by_name(report)["server"].status == FAIL
    assert "CHATTO_URL from the environment" in _by_name(report)["configuration"].detail


async def test_unconfigured_profile_fails_with_setup_hint(home):
    from hermes_chatto.doctor import FAIL, run_doctor

    report = await run_doctor(environ={})
    assert [c.name for c in report.checks] == ["configuration"]
    c = report.checks[0]
    assert c.status == FAIL and "CHATTO_URL" in c.detail and "CHATTO_BOT_KEY" in c.detail
    assert "hermes gateway setup" in c.fix


async def test_invalid_key_format_is_reported_without_the_value(home):
    from hermes_chatto.doctor import FAIL, run_doctor

    bad = "cht_BK_Unot-a-valid-id.c2VjcmV0c2VjcmV0c2VjcmV0"
    (home / ".env").write_text(f"CHATTO_URL=http://127.0.0.1:9\nCHATTO_BOT_KEY={bad}\n")
    report = await run_doctor(environ={})
    c = report.checks[0]
    assert c.status == FAIL and "CHATTO_BOT_KEY" in c.detail and "platforms.chatto.extra.bot_key" in c.detail
    assert bad not in _outputs(report) and "c2VjcmV0c2VjcmV0c2VjcmV0" not in _outputs(report)


async def _run_cli(home: Path, *args: str, extra_env: dict | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATTO_")}
    env.update({"HERMES_HOME": str(home), "PYTHONPATH": str(REPO)})
    env.update(extra_env or {})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hermes_chatto",
        "doctor",
        *args,
        env=env,
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode(), err.decode()


async def test_cli_json_and_exit_codes(srv, home):
    key = _configure(home, srv)
    rc, out, err = await _run_cli(home, "--json")
    assert rc == 0, out + err
    data = json.loads(out)
    assert data["ok"] is True and {c["status"] for c in data["checks"]} == {"pass"}
    assert {"name", "status", "detail"} <= set(data["checks"][0])
    _assert_no_secret(out + err, key)

    new = srv.rotate_key(srv.bot_id)
    rc, out, err = await _run_cli(home)
    assert rc == 1
    assert "FAIL  bot key" in out and "fix: rotate the key in Chatto" in out
    _assert_no_secret(out + err, key, new)

    # the environment overrides the profile's .env (here: the rotated key works again)
    rc, out, err = await _run_cli(home, "--json", extra_env={"CHATTO_BOT_KEY": new})
    assert rc == 0, out
    _assert_no_secret(out + err, key, new)


def test_register_cli_adds_hermes_chatto_doctor(srv, home, capsys):
    """register_cli through the real 0.19.0 PluginContext, then argparse the way hermes does."""
    import argparse

    from hermes_cli.plugins import PluginContext, PluginManager, PluginManifest

    from hermes_chatto.cli import register_cli

    manager = PluginManager()
    register_cli(PluginContext(PluginManifest(name="chatto", source="entrypoint"), manager))
    info = manager._cli_commands["chatto"]
    parser = argparse.ArgumentParser(prog="hermes")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser(info["name"], help=info["help"])
    info["setup_fn"](p)
    p.set_defaults(func=info["handler_fn"])

    key = _configure(home, srv)
    args = parser.parse_args(["chatto", "doctor", "--json"])
    args.func(args)  # exit 0 -> returns normally
    out = capsys.readouterr().out
    assert json.loads(out)["ok"] is True
    srv.revoke(srv.general_id, srv.bot_id, "message.post")
    with pytest.raises(SystemExit) as ei:
        args.func(parser.parse_args(["chatto", "doctor"]))
    assert ei.value.code == 1
    out = capsys.readouterr().out
    assert "missing message.post" in out
    _assert_no_secret(out, key)


async def test_setup_wizard_live_validation(srv):
    from hermes_chatto.setup_wizard import SetupValidationError, validate_live

    live = await validate_live(srv.base_url, srv.bot_key)
    assert (live.bot_id, live.bot_login, live.server_version) == (srv.bot_id, "helper_bot", "0.5.0-dev")
    with pytest.raises(SetupValidationError, match="not a bot account"):
        await validate_live(srv.base_url, srv.alice_token)
    old = srv.bot_key
    srv.rotate_key(srv.bot_id)
    with pytest.raises(SetupValidationError, match="rejected the bot key") as ei:
        await validate_live(srv.base_url, old)
    assert old not in str(ei.value)
    srv.set_protocol_version(1)
    with pytest.raises(SetupValidationError, match="need Chatto ≥ 0.5.0"):
        await validate_live(srv.base_url, srv.bot_key)


async def test_https_against_the_plain_http_server_says_use_http(srv, home):
    """https:// against the local (plain http) server on loopback: OpenSSL answers
    ``[SSL: WRONG_VERSION_NUMBER]``; doctor and the setup wizard say what it means."""
    from hermes_chatto.doctor import FAIL, run_doctor
    from hermes_chatto.setup_wizard import SetupValidationError, validate_live

    https = "https://" + srv.base_url[len("http://") :]
    key = _configure(home, srv, url=https)
    report = await run_doctor(environ={})
    c = _by_name(report)["server"]
    assert c.status == FAIL and "WRONG_VERSION_NUMBER" in c.detail
    assert c.fix.startswith(f"the server speaks plain http: use {srv.base_url}") and "CHATTO_URL" in c.fix
    _assert_no_secret(_outputs(report), key)
    with pytest.raises(SetupValidationError, match="the server speaks plain http: use http://") as ei:
        await validate_live(https, key)
    assert srv.base_url in str(ei.value)


def test_plain_http_hint_only_for_https_and_the_tls_mismatch():
    from hermes_chatto.doctor import plain_http_hint

    err = "could not reach https://h:1 (ConnectError: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006))"
    assert plain_http_hint("https://h:1/chat", err) == "the server speaks plain http: use http://h:1/chat"
    assert plain_http_hint("http://h:1", err) == ""
    assert plain_http_hint("https://h:1", "ConnectError: [Errno 111] Connection refused") == ""
    assert plain_http_hint("https://h:1", "[SSL: CERTIFICATE_VERIFY_FAILED]") == ""


async def test_each_config_error_hint_names_its_own_fix(srv, home):
    """A bad reaction name is fixed where it is set, not by the wizard (which writes only the
    URL and the key); a bad URL is the wizard's job."""
    from hermes_chatto.doctor import FAIL, run_doctor

    _configure(home, srv)
    report = await run_doctor(environ={"CHATTO_ACK_REACTION": "eyse"})
    c = _by_name(report)["configuration"]
    assert c.status == FAIL and "ack_reaction" in c.detail
    assert "CHATTO_ACK_REACTION" in c.fix and "platforms.chatto.extra.ack_reaction" in c.fix
    assert "setup" not in c.fix
    report = await run_doctor(environ={"CHATTO_URL": "ftp://nowhere"})
    c = _by_name(report)["configuration"]
    assert c.status == FAIL and "hermes chatto setup" in c.fix


async def test_rejected_key_hint_does_not_promise_the_wizard_rotates(srv, home):
    from hermes_chatto.doctor import run_doctor

    _configure(home, srv)
    srv.rotate_key(srv.bot_id)
    c = _by_name(await run_doctor(environ={}))["bot key"]
    assert "does both" not in c.fix and "hermes chatto setup" in c.fix


async def test_misspelled_config_keys_are_a_doctor_warning(srv, home):
    from hermes_chatto.doctor import WARN, run_doctor

    _configure(home, srv)
    cfg = yaml.safe_load((home / "config.yaml").read_text())
    cfg["platforms"]["chatto"]["extra"]["requre_mention"] = False
    (home / "config.yaml").write_text(yaml.safe_dump(cfg))
    report = await run_doctor(environ={})
    c = _by_name(report)["configuration keys"]
    assert c.status == WARN and "requre_mention" in c.detail and "did you mean require_mention?" in c.detail
    assert "rename requre_mention → require_mention" in c.fix
    assert report.exit_code == 0


def test_hermes_chatto_doctor_honours_a_value_set_on_the_command_line(srv, home):
    """Fresh-user report: ``CHATTO_URL=… hermes chatto doctor`` checked the .env's server,
    because the ``hermes`` command loads the profile's .env over the environment first."""
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed once the block ends
    key = srv.bot_key
    (home / ".env").write_text(f"CHATTO_URL={srv.base_url}\nCHATTO_BOT_KEY={key}\nCHATTO_ALLOW_ALL_USERS=true\n")
    (home / "config.yaml").write_text(
        yaml.safe_dump({"plugins": {"enabled": ["chatto"]}, "platforms": {"chatto": {"enabled": True}}})
    )
    hermes = str(Path(sys.executable).parent / "hermes")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATTO_")}
    env.update(HERMES_HOME=str(home), CHATTO_URL=dead)
    p = subprocess.run(
        [hermes, "chatto", "doctor", "--json", "--timeout", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    data = json.loads(p.stdout[p.stdout.index("{") :])
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["server"]["status"] == "fail" and dead in checks["server"]["detail"], checks
    detail = checks["configuration"]["detail"]
    assert f"url {dead}" in detail and "CHATTO_URL from the environment, over the .env's value" in detail
    assert "hermes gateway run` uses the .env's" in detail
    assert key not in p.stdout + p.stderr
