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
    srv.post(srv.alice_id, srv.dm_id, "hello bot")  # Chatto lists a DM once it has a message
    with caplog.at_level(logging.DEBUG):
        report = await run_doctor(environ={})
    checks = _by_name(report)
    assert [c.status for c in report.checks] == [PASS] * len(report.checks), report.render_text()
    assert report.exit_code == 0 and report.ok
    assert {"configuration", "authorization", "server", "bot key", "rooms", "room #general", "realtime"} <= set(checks)
    assert "config.yaml platforms.chatto.extra.url" in checks["configuration"].detail
    assert "CHATTO_BOT_KEY from the .env" in checks["configuration"].detail
    assert "0.5.0-beta.20" in checks["server"].detail and "speaks realtime protocol 4" in checks["server"].detail
    assert "@helper_bot" in checks["bot key"].detail and srv.bot_id in checks["bot key"].detail
    for perm in ("message.read", "message.post", "message.post-in-thread", "message.react", "message.attach"):
        assert perm in checks["room #general"].detail
    assert checks["room #general"].detail.startswith("reads all messages, posts; granted: ")
    assert "reads all messages in 2" in checks["rooms"].detail and "posts in 2" in checks["rooms"].detail
    dm = checks["direct messages"]
    assert "1 DM(s) open" in dm.detail and "bots cannot open DMs" in dm.detail
    assert "only when a person opens one" in dm.detail
    rt = checks["realtime"]
    assert rt.elapsed_ms is not None and rt.elapsed_ms > 0 and "caught_up" in rt.detail
    assert rt.detail.startswith("protocol 4: caught_up after ") and "recovery live_only" in rt.detail
    data = json.loads(report.to_json())
    assert data["ok"] is True and data["summary"]["fail"] == 0
    assert all(set(c) >= {"name", "status", "detail"} for c in data["checks"])
    _assert_no_secret(_outputs(report) + caplog.text, key)
    # the doctor authenticated with the profile's key, and only with it
    tokens = {r.token for r in srv.requests}
    assert key in tokens and tokens <= {None, "", key}
    assert srv.requests_for("GetViewer") and srv.requests_for("ListRooms")
    # one key-less subscribe (the server check's protocol probe), then one with the key
    assert [h[0] for h in srv.realtime_hellos] == [None, srv.bot_id]


async def test_revoked_key_names_problem_and_fix(srv, home, caplog):
    from hermes_chatto.doctor import FAIL, run_doctor

    old = _configure(home, srv)
    new = srv.rotate_key(srv.bot_id)
    with caplog.at_level(logging.DEBUG):
        report = await run_doctor(environ={})
    c = _by_name(report)["bot key"]
    assert c.status == FAIL and report.exit_code == 1
    assert "rejected CHATTO_BOT_KEY" in c.detail
    assert "new API key for the bot" in c.fix and "CHATTO_BOT_KEY" in c.fix
    assert "realtime" not in _by_name(report)  # no noise after a dead key
    _assert_no_secret(_outputs(report) + caplog.text, old, new)


async def test_post_revoked_in_a_channel_names_the_permission_and_fix(srv, home):
    from hermes_chatto.doctor import FAIL, PASS, WARN, run_doctor

    key = _configure(home, srv)
    srv.revoke(srv.general_id, srv.bot_id, "message.post")
    srv.grant(srv.general_id, srv.bot_id, "message.post-in-thread")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == WARN and report.exit_code == 0, room
    assert room.detail.startswith("reads all messages, posts only in threads; missing message.post")
    assert "flat answers at the channel root" in room.detail
    srv.revoke(srv.general_id, srv.bot_id, "message.post-in-thread", "message.post-in-interactions")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == FAIL and report.exit_code == 1
    assert room.detail.startswith("reads all messages, cannot post; missing message.post")
    assert "no answers at all" in room.detail
    assert "grant message.post" in room.fix and "room settings" in room.fix and "owner" in room.fix
    assert "cannot post in 1" in _by_name(report)["rooms"].detail
    assert _by_name(report)["realtime"].status == PASS
    assert "FAIL  room #general" in report.render_text() and "fix: grant message.post" in report.render_text()
    _assert_no_secret(_outputs(report), key)


async def test_read_levels_in_the_room_report(srv, home):
    """0.5: reading needs message.read; message.read-interactions alone means only threads
    the bot started or was mentioned in (a warning); neither means it hears nothing (a failure)."""
    from hermes_chatto.doctor import FAIL, WARN, run_doctor

    _configure(home, srv)
    srv.revoke(srv.general_id, srv.bot_id, "message.read")
    srv.grant(srv.general_id, srv.bot_id, "message.read-interactions")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == WARN, room
    assert room.detail.startswith("reads only its interactions, posts; missing message.read")
    assert "free-response" in room.detail and "root-level chatter" in room.detail
    assert "reads only its interactions in 1" in _by_name(report)["rooms"].detail
    srv.revoke(srv.general_id, srv.bot_id, "message.read-interactions")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == FAIL and "reads nothing" in room.detail and "hears nothing" in room.detail


async def test_post_in_interactions_only_is_a_warning_naming_what_breaks(srv, home):
    from hermes_chatto.doctor import WARN, run_doctor

    _configure(home, srv)
    srv.revoke(srv.general_id, srv.bot_id, "message.post", "message.post-in-thread")
    srv.grant(srv.general_id, srv.bot_id, "message.post-in-interactions")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == WARN and "posts only in its interactions" in room.detail
    assert "no messages at the channel root" in room.detail
    assert "posts only in its interactions in 1" in _by_name(report)["rooms"].detail


async def test_missing_react_is_a_warning_not_a_failure(srv, home):
    from hermes_chatto.doctor import WARN, run_doctor

    _configure(home, srv)
    srv.revoke(srv.general_id, srv.bot_id, "message.react")
    report = await run_doctor(environ={})
    room = _by_name(report)["room #general"]
    assert room.status == WARN and "message.react" in room.detail and report.exit_code == 0


@pytest.mark.parametrize(
    ("protocol", "version", "speaks"), [(1, "0.4.20", "protocol 1"), (2, "0.5.0-alpha.5", "protocol 2")]
)
async def test_a_server_without_protocol_4_gets_one_line(srv, home, protocol, version, speaks):
    from hermes_chatto.doctor import FAIL, run_doctor

    key = _configure(home, srv)
    srv.set_protocol_version(protocol)
    report = await run_doctor(environ={})
    checks = _by_name(report)
    server = checks["server"]
    assert server.status == FAIL and "\n" not in server.detail
    assert f"Chatto {version} does not speak realtime protocol 4 (it answered UNSUPPORTED_PROTOCOL" in server.detail
    assert speaks in server.detail
    assert "this plugin speaks realtime protocol 4, and Chatto 0.5.0-beta.10 … beta.20 speak it" in server.detail
    assert "run Chatto 0.5.0-beta.10 … beta.20" in server.fix
    if "realtime" in checks:  # the bot key may still authenticate over ConnectRPC
        assert checks["realtime"].status == FAIL and "does not speak realtime protocol 4" in checks["realtime"].detail
    assert report.exit_code == 1
    _assert_no_secret(_outputs(report), key)


async def test_an_unparsable_version_is_judged_by_the_probe(home):
    """A server reporting a non-semver version ('dev') is probed: the realtime endpoint decides."""
    from hermes_chatto.doctor import FAIL, run_doctor

    s = LocalChatto.demo(version="dev", protocol_version=1)
    s.start_sync()
    try:
        _configure(home, s)
        report = await run_doctor(environ={})
    finally:
        s.stop_sync()
    checks = _by_name(report)
    assert checks["server"].status == FAIL and "UNSUPPORTED_PROTOCOL" in checks["server"].detail
    assert "Chatto dev does not speak realtime protocol 4" in checks["server"].detail


@pytest.mark.parametrize("version", ["0.4.8", "dev"])
async def test_a_plain_build_of_main_is_judged_by_its_handshake_not_its_version(home, version):
    """Chatto main's ``cli/version.go`` says ``0.4.8``; only a build with ``-X
    main.Version=…`` reports a release. A build that speaks protocol 4 passes whatever its
    version string says."""
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
    assert "speaks realtime protocol 4" in checks["server"].detail and version in checks["server"].detail
    assert checks["bot key"].status == PASS and checks["realtime"].status == PASS
    assert report.exit_code == 0, report.render_text()


async def test_setup_wizard_accepts_a_plain_build_of_main():
    """The setup wizard judges the server the same way."""
    from hermes_chatto.setup_wizard import validate_live

    s = LocalChatto.demo(version="0.4.8")
    s.start_sync()
    try:
        live = await validate_live(s.base_url, s.bot_key)
    finally:
        s.stop_sync()
    assert (live.server_version, live.bot_id) == ("0.4.8", s.bot_id)


async def test_protocol_probe_reads_the_keyless_subscribe_answer():
    """``protocol_probe``: ``AUTHENTICATION_REQUIRED`` → speaks 4, ``UNSUPPORTED_PROTOCOL`` →
    not, nothing listening → undecided (``None``), never an exception."""
    from hermes_chatto.doctor import protocol_probe

    s = LocalChatto.demo(version="0.4.8")
    s.start_sync()
    try:
        assert (await protocol_probe(s.base_url)).speaks is True
        s.set_protocol_version(2)
        no = await protocol_probe(s.base_url)
        assert no.speaks is False and no.evidence == "UNSUPPORTED_PROTOCOL"
        url = s.base_url
    finally:
        s.stop_sync()
    gone = await protocol_probe(url, timeout=5.0)
    assert gone.speaks is None and gone.evidence.startswith("connect_failed")


class _FakeWS:
    """A WebSocket that answers the subscribe with fixed frames."""

    def __init__(self, frames):
        self.frames, self.sent = list(frames), []

    async def send(self, data):
        self.sent.append(data)

    async def recv(self):
        if not self.frames:
            raise ConnectionError("closed")
        return self.frames.pop(0)

    async def close(self):
        pass


def _connect_with(*frames):
    async def connect(url, **kw):
        return _FakeWS(frames)

    return connect


async def test_realtime_probe_classifies_first_frames_and_closes():
    from hermes_chatto.doctor import _realtime_check, realtime_probe
    from hermes_chatto.wire.proto import chatto_pb2 as pb

    # a protocol-2 server (0.5.0-alpha.5) answers a subscribe with error{bad_hello}
    legacy = b"\x2a\x0b\x0a\x09bad_hello"
    p = await realtime_probe("http://x", "cht_BK_Ux.y", connect=_connect_with(legacy))
    assert p.error_code == "not_protocol_4" and p.evidence == "a protocol 2 (error bad_hello) frame"
    line = _realtime_check(p, "0.5.0-alpha.5")
    assert line.status == "fail" and "\n" not in line.detail
    assert line.detail.startswith("Chatto 0.5.0-alpha.5 does not speak realtime protocol 4 (it answered a protocol 2")
    assert "Chatto 0.5.0-alpha.1 … alpha.5 speak realtime protocol 2" in line.detail
    garbage = await realtime_probe("http://x", None, connect=_connect_with(b"\xff\xff\xff"))
    assert garbage.error_code == "undecodable_frame" and "undecodable first frame" in _realtime_check(garbage).detail

    def close(code, message="", retry=None):
        c = pb.RealtimeClose(code=code, message=message, reconnect=retry is not None)
        if retry is not None:
            c.retry_after.seconds = retry
        return pb.RealtimeServerFrame(close=c).SerializeToString()

    busy = await realtime_probe(
        "http://x",
        None,
        connect=_connect_with(close(pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE, "catch_up_in_progress", 2)),
    )
    line = _realtime_check(busy)
    assert line.status == "warn" and "TEMPORARILY_UNAVAILABLE: catch_up_in_progress" in line.detail
    assert line.fix == "retry in 2 s"
    auth = _realtime_check(
        await realtime_probe(
            "http://x", None, connect=_connect_with(close(pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED))
        )
    )
    assert auth.status == "fail" and "rejected the bot key (AUTHENTICATION_REQUIRED" in auth.detail
    assert "new API key" in auth.fix
    caught = pb.RealtimeServerFrame(
        caught_up=pb.RealtimeCaughtUp(cursor="c1", recovery=pb.REALTIME_RECOVERY_LIVE_ONLY)
    ).SerializeToString()
    ok = await realtime_probe("http://x", "k", connect=_connect_with(caught))
    assert ok.caught_up and ok.recovery == "live_only" and _realtime_check(ok).status == "pass"


def test_version_note_judges_the_release_range():
    from hermes_chatto.doctor import version_note

    assert version_note("0.5.0-beta.10").kind == version_note("0.5.0-beta.20").kind == "tested"
    assert version_note("0.5.0-beta.21").kind == version_note("0.5.0").kind == version_note("0.6.1").kind == "newer"
    assert version_note("0.5.0-beta.9").kind == version_note("0.5.0-alpha.6").kind == "pre_beta"
    assert version_note("0.5.0-alpha.5").kind == "protocol_2" and version_note("0.4.20").kind == "protocol_1"
    assert version_note("dev").kind == version_note("0.5.0-dev").kind == "unknown"


def test_server_line_warns_for_a_release_outside_the_tested_range():
    from hermes_chatto.doctor import ProtocolVerdict, _server_verdict

    c = _server_verdict("x", "0.5.0-beta.22", ProtocolVerdict(True, "AUTHENTICATION_REQUIRED to a key-less subscribe"))
    assert c.status == "warn" and "newer than the releases this plugin was tested with" in c.detail
    c = _server_verdict("x", "0.4.20", ProtocolVerdict(None, "timeout"))
    assert c.status == "fail" and "Chatto 0.4.x speaks realtime protocol 1" in c.detail
    c = _server_verdict("x", "0.5.0-beta.20", ProtocolVerdict(None, "timeout"))
    assert c.status == "warn" and "the realtime check decides" in c.detail


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
    assert "FAIL  bot key" in out and "fix: create a new API key for the bot" in out
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
    srv.revoke(srv.general_id, srv.bot_id, "message.post", "message.post-in-thread", "message.post-in-interactions")
    with pytest.raises(SystemExit) as ei:
        args.func(parser.parse_args(["chatto", "doctor"]))
    assert ei.value.code == 1
    out = capsys.readouterr().out
    assert "missing message.post" in out
    _assert_no_secret(out, key)


async def test_setup_wizard_live_validation(srv):
    from hermes_chatto.setup_wizard import SetupValidationError, validate_live

    live = await validate_live(srv.base_url, srv.bot_key)
    assert (live.bot_id, live.bot_login, live.server_version) == (srv.bot_id, "helper_bot", "0.5.0-beta.20")
    with pytest.raises(SetupValidationError, match="not a bot account"):
        await validate_live(srv.base_url, srv.alice_token)
    old = srv.bot_key
    srv.rotate_key(srv.bot_id)
    with pytest.raises(SetupValidationError, match="rejected the bot key") as ei:
        await validate_live(srv.base_url, old)
    assert old not in str(ei.value)
    srv.set_protocol_version(2)
    with pytest.raises(SetupValidationError, match="does not speak realtime protocol 4") as ei:
        await validate_live(srv.base_url, srv.bot_key)
    assert "0.5.0-alpha.5" in str(ei.value) and "0.5.0-beta.10 … beta.20 speak it" in str(ei.value)


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


async def test_doctor_fails_with_the_fix_when_the_plugin_is_disabled_and_agrees_with_the_host(srv, home, capsys):
    """Issue 28: after `hermes plugins disable chatto` the gateway logs "No messaging platforms
    enabled", and doctor said 9 passed. The real `hermes plugins disable/enable` functions
    edit the profile; doctor and the host's own plugin loader must agree after each."""
    from hermes_cli.plugins import discover_plugins, get_plugin_manager
    from hermes_cli.plugins_cmd import cmd_disable, cmd_enable

    from hermes_chatto.doctor import FAIL, PASS, run_doctor

    def host_loads_chatto() -> bool:
        discover_plugins(force=True)
        (entry,) = [p for p in get_plugin_manager().list_plugins() if p["key"] == "chatto"]
        return bool(entry["enabled"])

    _configure(home, srv)
    try:
        cmd_disable("chatto")
        assert host_loads_chatto() is False
        report = await run_doctor(environ={})
        plugin = _by_name(report)["plugin"]
        assert plugin.status == FAIL and report.exit_code != 0
        assert "plugins.disabled" in plugin.detail and "No messaging platforms enabled" in plugin.detail
        assert plugin.fix.startswith("run `hermes plugins enable chatto`")
        assert "server" not in _by_name(report)  # nothing after: the gateway would not run it

        cmd_enable("chatto", allow_tool_override=False)
        assert host_loads_chatto() is True
        report = await run_doctor(environ={})
        assert _by_name(report)["plugin"].status == PASS and _by_name(report)["gateway"].status == PASS
        assert report.exit_code == 0, report.render_text()
    finally:
        discover_plugins(force=True)


@pytest.mark.parametrize(
    ("plugins", "reason"),
    [
        ({"enabled": ["chatto"]}, ""),
        ({"enabled": ["chatto"], "disabled": ["chatto"]}, "plugins.disabled"),
        ({"enabled": []}, "not in plugins.enabled"),
        ({}, "no plugins.enabled list"),
        (None, "no plugins.enabled list"),
    ],
)
def test_plugin_skip_reason_is_the_host_loaders_rule(hermes_home, plugins, reason):
    """The pure rule against the real loader on the same config.yaml."""
    import yaml
    from hermes_cli.plugins import discover_plugins, get_plugin_manager

    from hermes_chatto.doctor import plugin_skip_reason

    cfg = {} if plugins is None else {"plugins": plugins}
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(cfg))
    got = plugin_skip_reason(plugins)
    assert (reason in got) if reason else got == ""
    try:
        discover_plugins(force=True)
        (entry,) = [p for p in get_plugin_manager().list_plugins() if p["key"] == "chatto"]
        assert bool(entry["enabled"]) is (got == "")
    finally:
        (hermes_home / "config.yaml").write_text(yaml.safe_dump({"plugins": {"enabled": ["chatto"]}}))
        discover_plugins(force=True)


async def test_doctor_fails_when_config_yaml_turns_the_platform_off(srv, home):
    from gateway.config import Platform, load_gateway_config

    from hermes_chatto.doctor import FAIL, run_doctor

    _configure(home, srv)
    cfg = yaml.safe_load((home / "config.yaml").read_text())
    cfg["platforms"]["chatto"]["enabled"] = False
    (home / "config.yaml").write_text(yaml.safe_dump(cfg))
    report = await run_doctor(environ={})
    gw = _by_name(report)["gateway"]
    assert gw.status == FAIL and "platforms.chatto.enabled is false" in gw.detail
    assert "platforms.chatto.enabled: true" in gw.fix
    with_env = dict(os.environ, CHATTO_BOT_KEY=srv.bot_key)
    os.environ.update(with_env)
    try:
        assert Platform("chatto") not in load_gateway_config().get_connected_platforms()  # the host agrees
    finally:
        os.environ.pop("CHATTO_BOT_KEY", None)


async def test_after_rotate_key_doctor_blames_the_stale_exported_variable_not_the_key(srv, home):
    """Issue 28: the by-hand block exports the .env's values; `rotate-key` rewrites the .env
    (the gateway's key is the new one) while the shell still exports the old key. Doctor said
    the key was revoked and to create a new one; the .env's key is fine."""
    from hermes_chatto.doctor import FAIL, run_doctor

    old = _configure(home, srv)
    new = srv.rotate_key(srv.bot_id)
    env_text = (home / ".env").read_text().replace(old, new)
    (home / ".env").write_text(env_text)  # what `serve`'s rotate-key listener does
    report = await run_doctor(environ={"CHATTO_BOT_KEY": old})
    key = _by_name(report)["bot key"]
    assert key.status == FAIL
    assert "exported in this shell" in key.detail and "differs from the one in the profile's .env" in key.detail
    assert key.fix.startswith("unset CHATTO_BOT_KEY") and "create a new API key" not in key.fix
    _assert_no_secret(_outputs(report), old, new)
    assert (await run_doctor(environ={})).ok  # the .env's key: all good
    # same key in both places, rejected: the key itself is blamed, as before
    srv.rotate_key(srv.bot_id)
    report = await run_doctor(environ={"CHATTO_BOT_KEY": new})
    assert "create a new API key" in _by_name(report)["bot key"].fix
