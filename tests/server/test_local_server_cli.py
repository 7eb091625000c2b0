"""``python -m chatto_local``: first lines are CHATTO_URL / CHATTO_HOME_CHANNEL and where the
keys were written (an owner-only env file: ``serve`` never prints a key, issue 24 finding 6),
the server serves the demo world, ``--state`` keeps rooms, messages and keys across restarts
(0600), and each command (``status``, ``add-person``, ``post``, ``read``, ``grant``, ``revoke``,
``rotate-key``) acts on a running server (one subprocess per module, commands through
``main(argv)``; effects checked over the real Chatto API)."""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from chatto_local import cli
from chatto_local.rawclient import RawRpc

from support.paths import REPO


class Proc:
    def __init__(self, *args: str):
        self.p = subprocess.Popen(
            [sys.executable, "-m", "chatto_local", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        #: every stdout line so far (the key scan reads them after :meth:`stop`)
        self.seen: list[str] = []
        #: the env file ``serve`` said it wrote the keys to (set by :func:`start`)
        self.env_file: Path | None = None
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.p.stdout:
            self.seen.append(line.rstrip("\n"))
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout: float = 20.0) -> str:
        return self.lines.get(timeout=timeout)

    def stop(self) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            return self.p.wait(15)
        finally:
            if self.p.poll() is None:
                self.p.kill()


#: serve's third line: where the keys are.
KEYS_LINE = re.compile(
    r"^# keys written to (?P<path>.+) \(mode 0600\): CHATTO_BOT_KEY, CHATTO_USER_KEY, CHATTO_ADMIN_KEY$"
)


def read_env(path: Path) -> dict[str, str]:
    """The ``NAME=value`` lines of a dotenv file."""
    return dict(ln.split("=", 1) for ln in path.read_text().splitlines() if "=" in ln and not ln.startswith("#"))


def start(*args: str) -> tuple[Proc, dict[str, str]]:
    """Start ``serve``; its printed lines (CHATTO_URL, CHATTO_HOME_CHANNEL, then where the keys
    are) and the CHATTO_* values of the env file it names."""
    proc = Proc(*args)
    printed = {}
    for expected in cli.PUBLIC_ENV_KEYS:
        name, _, value = proc.line().partition("=")
        assert name == expected
        printed[name] = value
    where = proc.line()
    m = KEYS_LINE.match(where)
    assert m, f"serve does not say where the keys are: {where!r}"
    proc.env_file = Path(m["path"])
    env = {k: v for k, v in read_env(proc.env_file).items() if k in cli.ENV_KEYS}
    assert set(env) == set(cli.ENV_KEYS) and {k: env[k] for k in printed} == printed
    return proc, env


def test_cli_says_where_the_keys_are_and_serves_the_demo_world(tmp_path):
    proc, env = start("--host", "127.0.0.1", "--port", "0", "--env-file", str(tmp_path / "chatto.env"))
    try:
        assert env["CHATTO_URL"].startswith("http://127.0.0.1:") and not env["CHATTO_URL"].endswith(":0")
        assert env["CHATTO_BOT_KEY"].startswith("cht_BK_U")
        bot = RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"])
        me = bot.ok("ViewerService/GetViewer", {})["user"]["profile"]
        assert me["login"] == "helper_bot" and me["displayName"] == "Ops Helper" and "bot" in me
        alice = RawRpc(env["CHATTO_URL"], env["CHATTO_USER_KEY"])
        assert alice.ok("ViewerService/GetViewer", {})["user"]["profile"]["login"] == "alice"
        rooms = {r["room"].get("name", ""): r for r in bot.ok("RoomDirectoryService/ListRooms", {})["rooms"]}
        granted = {p["permission"] for p in rooms["general"]["viewerState"]["permissions"] if p.get("granted")}
        assert {"message.post", "message.post-in-thread", "message.react", "message.attach", "room.join"} <= granted
        dm = alice.ok("RoomService/StartDM", {"participantIds": [me["id"]]})["room"]
        assert dm["kind"] == "ROOM_KIND_DM" and me["id"] in env["CHATTO_BOT_KEY"]
    finally:
        assert proc.stop() == 0


def test_cli_state_file_survives_a_restart(tmp_path):
    state = tmp_path / "chatto-state.json"
    proc, env = start("--port", "0", "--state", str(state), "--env-file", str(tmp_path / "a.env"))
    try:
        alice = RawRpc(env["CHATTO_URL"], env["CHATTO_USER_KEY"])
        general = next(
            r["room"]["id"]
            for r in alice.ok("RoomDirectoryService/ListRooms", {})["rooms"]
            if r["room"].get("name") == "general"
        )
        mid = alice.ok("MessageService/CreateMessage", {"roomId": general, "body": "remember me"})["message"]["id"]
    finally:
        assert proc.stop() == 0
    assert state.exists()
    assert oct(state.stat().st_mode & 0o777) == "0o600", "the state file holds keys: owner-only"
    proc2, env2 = start("--port", "0", "--state", str(state), "--env-file", str(tmp_path / "b.env"))
    try:
        assert env2["CHATTO_BOT_KEY"] == env["CHATTO_BOT_KEY"] and env2["CHATTO_USER_KEY"] == env["CHATTO_USER_KEY"]
        bot = RawRpc(env2["CHATTO_URL"], env2["CHATTO_BOT_KEY"])
        got = bot.ok("MessageService/GetMessage", {"roomId": general, "eventId": mid})["message"]
        assert got["body"] == "remember me"
    finally:
        assert proc2.stop() == 0


# ------------------------------------------------------------------------------ commands


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One ``serve`` subprocess with ``--env-file``; yields its CHATTO_* values and the env file."""
    env_file = tmp_path_factory.mktemp("cli") / "chatto.env"
    env_file.write_text("CHATTO_ALLOW_ALL_USERS=true\n")
    proc, env = start("serve", "--port", "0", "--env-file", str(env_file))
    try:
        assert proc.env_file == env_file
        yield env, env_file
    finally:
        assert proc.stop() == 0


def run(server, *argv: str) -> int:
    """``main([... , --url, --admin-key])`` against the module's server."""
    env, _ = server
    return cli.main([*argv, "--url", env["CHATTO_URL"], "--admin-key", env["CHATTO_ADMIN_KEY"]])


def out_of(capsys, server, *argv: str, code: int = 0) -> str:
    capsys.readouterr()
    assert run(server, *argv) == code
    return capsys.readouterr().out


def rooms_of(rpc: RawRpc) -> dict[str, dict]:
    return {r["room"].get("name", ""): r for r in rpc.ok("RoomDirectoryService/ListRooms", {})["rooms"]}


def test_serve_writes_the_env_file_keeping_other_lines(server):
    env, env_file = server
    lines = env_file.read_text().splitlines()
    assert lines[0] == "CHATTO_ALLOW_ALL_USERS=true"
    assert {f"{k}={v}" for k, v in env.items()} <= set(lines)
    assert oct(env_file.stat().st_mode & 0o777) == "0o600"
    # the home channel is #general (so Hermes does not open chats with a "no home channel" notice)
    general = rooms_of(RawRpc(env["CHATTO_URL"], env["CHATTO_USER_KEY"]))["general"]["room"]["id"]
    assert env["CHATTO_HOME_CHANNEL"] == general


def test_status_lists_people_rooms_and_bot_permissions(server, capsys):
    text = out_of(capsys, server, "status")
    assert "alice" in text and "helper_bot" in text and "#general" in text
    assert "bot helper_bot: offline" in text
    assert "message.post-in-thread" in text
    data = json.loads(out_of(capsys, server, "status", "--json"))
    general = next(r for r in data["rooms"] if r["name"] == "general")
    assert {"message.post", "message.post-in-thread"} <= set(general["bot_permissions"])


def test_add_person_creates_a_working_account_in_general(server, capsys):
    env, _ = server
    text = out_of(capsys, server, "add-person", "carol", "--name", "Carol")
    token = next(ln.partition("=")[2] for ln in text.splitlines() if ln.startswith("CHATTO_USER_KEY="))
    carol = RawRpc(env["CHATTO_URL"], token)
    me = carol.ok("ViewerService/GetViewer", {})["user"]["profile"]
    assert me["login"] == "carol" and me["displayName"] == "Carol" and not me.get("isBot")
    general = rooms_of(carol)["general"]
    carol.ok("MessageService/CreateMessage", {"roomId": general["room"]["id"], "body": "carol here"})
    # a taken login is refused with the reason
    assert run(server, "add-person", "carol") == 1
    assert "taken" in capsys.readouterr().err


def test_post_as_a_person_in_a_room_a_thread_and_a_dm(server, capsys):
    env, _ = server
    bot = RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"])
    general = rooms_of(bot)["general"]["room"]["id"]
    root = out_of(capsys, server, "post", "--as", "alice", "--room", "general", "@helper_bot cli root").strip()
    got = bot.ok("MessageService/GetMessage", {"roomId": general, "eventId": root})["message"]
    assert got["body"] == "@helper_bot cli root" and "threadRootEventId" not in got
    reply = out_of(capsys, server, "post", "--thread", root, "cli reply").strip()
    got = bot.ok("MessageService/GetMessage", {"roomId": general, "eventId": reply})["message"]
    assert got["threadRootEventId"] == root and got["body"] == "cli reply"
    dm = json.loads(out_of(capsys, server, "post", "--room", "dm:alice", "hello in the DM", "--json"))
    assert dm["message"]["room_id"] != general and dm["message"]["author"] == "alice"
    # refused by Chatto's rules: the message is not posted, the reason is printed
    assert run(server, "post", "--thread", "Enosuchmessage01", "x") == 1
    assert "error:" in capsys.readouterr().err


def test_read_room_and_thread(server, capsys):
    root = out_of(capsys, server, "post", "read me root").strip()
    out_of(capsys, server, "post", "--thread", root, "read me reply")
    room_text = out_of(capsys, server, "read")
    assert f"{root}  " in room_text and "alice [1 reply]: read me root" in room_text
    assert "read me reply" not in room_text  # replies live in the thread
    thread = out_of(capsys, server, "read", "--thread", root)
    lines = thread.splitlines()
    assert lines[0].startswith(root) and lines[1].startswith("  ↳ ") and lines[1].endswith("alice: read me reply")
    data = json.loads(out_of(capsys, server, "read", "--thread", root, "--json", "--limit", "1"))
    assert [m["body"] for m in data["messages"]] == ["read me reply"]


def test_read_waits_for_the_bots_reply(server, capsys):
    env, _ = server
    bot = RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"])
    general = rooms_of(bot)["general"]["room"]["id"]
    root = out_of(capsys, server, "post", "@helper_bot wait for me").strip()
    assert run(server, "read", "--thread", root, "--wait-for-bot", "0.3") == 1
    assert "no reply from a bot" in capsys.readouterr().err
    posted = threading.Event()

    def answer_later():
        # answers once the waiting read has started (its first poll came back without a reply)
        bot.ok("MessageService/CreateMessage", {"roomId": general, "body": "the answer", "threadRootEventId": root})
        posted.set()

    timer = threading.Timer(0.5, answer_later)
    timer.start()
    try:
        text = out_of(capsys, server, "read", "--thread", root, "--wait-for-bot", "20")
    finally:
        timer.join()
    assert posted.is_set() and text.splitlines()[-1].endswith("helper_bot [bot]: the answer")


def test_grant_and_revoke_a_permission_for_the_bot(server, capsys):
    env, _ = server
    bot = RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"])
    general = rooms_of(bot)["general"]["room"]["id"]
    # no mention: a thread the bot was mentioned in stays open to it through
    # message.post-in-interactions (included in message.post)
    root = out_of(capsys, server, "post", "permissions").strip()
    body = {"roomId": general, "body": "in thread", "threadRootEventId": root}
    try:
        text = out_of(capsys, server, "revoke", "message.post-in-thread", "--room", "general")
        assert "revoked message.post-in-thread for helper_bot in general" in text
        status, data, _ = RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"]).call(
            "chatto.api.v1.MessageService/CreateMessage", body
        )
        assert status == 403 and data["code"] == "permission_denied"
        granted = {p["permission"] for p in rooms_of(bot)["general"]["viewerState"]["permissions"] if p.get("granted")}
        assert "message.post-in-thread" not in granted
    finally:
        text = out_of(capsys, server, "grant", "message.post-in-thread", "--room", "general")
    assert "granted message.post-in-thread" in text
    bot.ok("MessageService/CreateMessage", body)
    # an unknown permission is refused with the known ones listed; a room is required
    assert run(server, "grant", "message.bogus", "--room", "general") == 1
    assert "unknown permission message.bogus" in capsys.readouterr().err
    assert run(server, "grant", "message.post") == 2
    assert "--room" in capsys.readouterr().err


def test_rotate_key_kills_the_old_key_and_updates_the_env_file(server, capsys):
    env, env_file = server
    old = env["CHATTO_BOT_KEY"]
    text = out_of(capsys, server, "rotate-key")
    new = text.strip().partition("=")[2]
    assert text.startswith("CHATTO_BOT_KEY=") and new != old and new.startswith("cht_BK_")
    status, _, _ = RawRpc(env["CHATTO_URL"], old).call("chatto.api.v1.ViewerService/GetViewer", {})
    assert status == 401
    assert RawRpc(env["CHATTO_URL"], new).ok("ViewerService/GetViewer", {})["user"]["profile"]["login"] == "helper_bot"
    env["CHATTO_BOT_KEY"] = new  # later tests act as the bot with the new key
    assert f"CHATTO_BOT_KEY={new}" in env_file.read_text().splitlines()
    assert "CHATTO_ALLOW_ALL_USERS=true" in env_file.read_text()


def test_named_keys_create_list_and_revoke(server, capsys):
    """BotService/CreateBotApiKey / RevokeBotApiKey through the CLI: a second named key works
    next to the first; revoking it leaves the first (and the env file) alone."""
    env, env_file = server
    text = out_of(capsys, server, "create-key", "--name", "ci")
    key = text.splitlines()[0].partition("=")[2]
    key_id = text.splitlines()[1].rpartition(" ")[2]
    assert key.startswith("cht_BK_") and key != env["CHATTO_BOT_KEY"]
    assert RawRpc(env["CHATTO_URL"], key).ok("ViewerService/GetViewer", {})["user"]["profile"]["login"] == "helper_bot"
    listed = out_of(capsys, server, "keys")
    assert f"{key_id}  ci" in listed and "cht_BK_" not in listed  # ids and names, never secrets
    assert "revoked key" in out_of(capsys, server, "revoke-key", key_id)
    assert RawRpc(env["CHATTO_URL"], key).call("ViewerService/GetViewer", {})[0] == 401
    assert RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"]).ok("ViewerService/GetViewer", {})
    assert run(server, "revoke-key", "Knope") == 1
    assert f"CHATTO_BOT_KEY={env['CHATTO_BOT_KEY']}" in env_file.read_text().splitlines()
    assert (env_file.stat().st_mode & 0o777) == 0o600


def test_connection_problems_are_one_line_errors(server, capsys, monkeypatch):
    env, _ = server
    monkeypatch.delenv("CHATTO_URL", raising=False)
    monkeypatch.delenv("CHATTO_ADMIN_KEY", raising=False)
    assert cli.main(["status"]) == 2
    assert "CHATTO_URL" in capsys.readouterr().err
    assert cli.main(["status", "--url", env["CHATTO_URL"], "--admin-key", "wrong"]) == 1
    assert "wrong admin key" in capsys.readouterr().err
    assert cli.main(["status", "--url", "http://127.0.0.1:9", "--admin-key", "k", "--timeout", "2"]) == 2
    assert "cannot reach the local server" in capsys.readouterr().err
    # the environment variables serve prints are enough
    monkeypatch.setenv("CHATTO_URL", env["CHATTO_URL"])
    monkeypatch.setenv("CHATTO_ADMIN_KEY", env["CHATTO_ADMIN_KEY"])
    assert cli.main(["status"]) == 0


def test_missing_server_extra_is_named_in_one_line():
    code = (
        "import sys; sys.modules['starlette'] = None; sys.modules['uvicorn'] = None\n"
        "from chatto_local.cli import main; raise SystemExit(main(['serve']))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "[server] extra" in lines[0] and "pip install 'hermes-chatto[server]'" in lines[0]


def _walk(parser: argparse.ArgumentParser, path: str = ""):
    yield path or "(top)", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}".strip())


def test_help_describes_every_option_with_its_default(capsys):
    seen = set()
    for path, parser in _walk(cli.build_parser()):
        if path != "(top)":
            assert parser.description, f"{path}: no description"
        for a in parser._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) or not a.option_strings:
                continue
            assert a.help and "default" in a.help, f"{path} {a.option_strings}: help without a default"
        seen.add(path)
    assert set(cli.COMMANDS) <= seen
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert f"    {command}" in text  # each command listed with its one-line help


def test_model_command_serves_the_scripted_model():
    import httpx

    proc = Proc("model", "--port", "0")
    try:
        name, _, url = proc.line().partition("=")
        assert name == "MODEL_BASE_URL" and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert proc.line() == "MODEL_NAME=fake-model"
        models = httpx.get(url + "/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == ["fake-model"]
    finally:
        assert proc.stop() == 0


def test_status_waits_until_the_bot_is_online(server, capsys):
    """``status --wait-for-bot`` returns once the bot holds a caught-up realtime socket."""
    import asyncio

    from chatto_local.rawclient import RawRealtime

    env, _ = server
    assert run(server, "status", "--wait-for-bot", "0.3") == 1
    assert "did not come online" in capsys.readouterr().err
    done = threading.Event()

    def bot_online():
        async def go():
            rt = await RawRealtime("ws" + env["CHATTO_URL"][4:] + "/api/realtime", env["CHATTO_BOT_KEY"]).connect()
            await rt.subscribe()
            await asyncio.to_thread(done.wait, 30)
            await rt.close()

        asyncio.run(go())

    th = threading.Thread(target=bot_online, daemon=True)
    th.start()
    try:
        text = out_of(capsys, server, "status", "--wait-for-bot", "20")
        assert "bot helper_bot: online (1 realtime connection)" in text
    finally:
        done.set()
        th.join(10)


def test_status_into_a_closed_pipe_exits_quietly(server):
    """``status | head -2``: the reader closes the pipe early; no BrokenPipeError traceback."""
    env, _ = server
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chatto_local",
            "status",
            "--url",
            env["CHATTO_URL"],
            "--admin-key",
            env["CHATTO_ADMIN_KEY"],
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()  # like `head` after its lines: nobody reads the rest
    err = p.stderr.read().decode()
    p.wait(60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_serve_prints_no_key_and_writes_them_owner_only(tmp_path):
    """Issue 24 finding 6: the README runs ``serve … > chatto.log`` (a 0644 file); the keys
    must not be in that output. They go to the env file (0600), named on stdout; without
    ``--env-file`` to a fresh 0600 file in the temp directory."""
    for args in (["--env-file", str(tmp_path / "keys.env")], []):
        proc, env = start("serve", "--port", "0", *args)
        try:
            keys = [env[k] for k in ("CHATTO_BOT_KEY", "CHATTO_USER_KEY", "CHATTO_ADMIN_KEY")]
            assert all(len(k) >= 16 for k in keys)
            assert oct(proc.env_file.stat().st_mode & 0o777) == "0o600", args
            if not args:
                assert proc.env_file.name.startswith("chatto-local-") and proc.env_file.suffix == ".env"
            RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"]).ok("ViewerService/GetViewer", {})  # the real keys
        finally:
            assert proc.stop() == 0
            if not args and proc.env_file:
                os.unlink(proc.env_file)
        err = proc.p.stderr.read()
        output = "\n".join([*proc.seen, err])
        secrets_parts = keys + [keys[0].split(".", 1)[1]]
        assert not [k for k in secrets_parts if k in output], "serve printed a key"
        assert "cht_BK_" not in output and "chadm_" not in output


@pytest.mark.parametrize("command", ["serve", "model"])
def test_a_busy_port_ends_serve_and_model_with_one_line_and_exit_2(command, tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        extra = ["--env-file", str(tmp_path / "chatto.env")] if command == "serve" else []
        proc = subprocess.run(
            [sys.executable, "-m", "chatto_local", command, "--port", str(port), *extra],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: cannot start the ") and f"127.0.0.1:{port}" in line
    assert "Address already in use" in line


def _readme_step(first: str, last: str) -> str:
    """The README's "Try it by hand" lines from the one starting with ``first`` to the one
    starting with ``last`` (both included)."""
    lines = (REPO / "README.md").read_text().split("## Try it by hand", 1)[1].splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith(first))
    j = next(n for n, ln in enumerate(lines) if n > i and ln.startswith(last))
    return "\n".join(lines[i : j + 1])


@pytest.mark.parametrize(
    ("first", "last", "port", "log"),
    [
        ("python -m chatto_local serve", "grep -q CHATTO_ADMIN_KEY", "8765", "chatto.log"),
        ("python -m chatto_local model", "grep -q MODEL_NAME", "8766", "model.log"),
    ],
)
def test_the_readme_by_hand_waits_give_up_on_a_busy_port_and_name_the_log(first, last, port, log, tmp_path):
    """Issue 28: the by-hand block looped forever when the server could not start."""
    import socket

    block = _readme_step(first, last)
    assert f"--port {port}" in block
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text("CHATTO_ALLOW_ALL_USERS=true\n")
    bindir = Path(sys.executable).parent  # `python` there is this venv's
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        script = block.replace(f"--port {port}", f"--port {busy.getsockname()[1]}")
        env = {**os.environ, "HERMES_HOME": str(home), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
        out = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().endswith(f"read {home / log}"), out
    assert "Address already in use" in (home / log).read_text()
