"""Command line of the local Chatto server: ``python -m chatto_local <command>``.

``serve`` starts the server with the demo world (person ``alice``, bot ``helper_bot``,
channel ``general``, the DM alice ↔ bot), writes the credentials to an owner-only (0600)
env file, ``--env-file PATH`` or else a new one in the temp directory::

    CHATTO_URL=<base url>
    CHATTO_BOT_KEY=<the bot's cht_BK_ key>
    CHATTO_USER_KEY=<a bearer token for alice>
    CHATTO_ADMIN_KEY=<key of the admin API the other commands use>
    CHATTO_HOME_CHANNEL=<room id of #general>

and prints, as its first lines, the two that are no secret and where the keys are::

    CHATTO_URL=<base url>
    CHATTO_HOME_CHANNEL=<room id of #general>
    # keys written to <path> (mode 0600): CHATTO_BOT_KEY, CHATTO_USER_KEY, CHATTO_ADMIN_KEY

then serves until interrupted (Ctrl-C / SIGTERM). It never prints a key: its output is
what people redirect into a log file (issue 24 finding 6). The ``--state`` file, which holds
keys too, is written 0600 as well. Options without a command mean ``serve``
(``python -m chatto_local --port 0`` still works).

The other commands talk to a running server over its admin HTTP API
(:mod:`chatto_local.admin`), found through ``--url``/``--admin-key`` or the
``CHATTO_URL``/``CHATTO_ADMIN_KEY`` environment variables (``serve --env-file F`` writes them
to ``F``; ``set -a; . F; set +a`` loads them): ``status``, ``add-person``, ``post``,
``read``, ``grant``, ``revoke``, ``keys``, ``create-key``, ``revoke-key``, ``rotate-key``. ``model`` serves the scripted offline model
(:class:`~chatto_local.scripted_model.ScriptedModel`) for a gateway without a real
one.

Exit status: 0 done; 1 the server refused (message on stderr) or ``read --wait-for-bot``
timed out; 2 usage error, server unreachable, or the ``server`` extra is missing. The commands
that make a key (``add-person``, ``create-key``, ``rotate-key``) print it: they run in a
terminal, on request; ``serve``, which runs in the background with its output in a log, does not.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib.util import find_spec
from typing import Any

PROG = "python -m chatto_local"
COMMANDS = (
    "serve",
    "model",
    "status",
    "add-person",
    "post",
    "read",
    "grant",
    "revoke",
    "keys",
    "create-key",
    "revoke-key",
    "rotate-key",
)
#: The lines ``serve`` prints first and writes to ``--env-file`` (other lines of the file are kept).
ENV_KEYS = ("CHATTO_URL", "CHATTO_BOT_KEY", "CHATTO_USER_KEY", "CHATTO_ADMIN_KEY", "CHATTO_HOME_CHANNEL")
#: The lines of :data:`ENV_KEYS` that hold no secret: the only ones ``serve`` prints.
PUBLIC_ENV_KEYS = ("CHATTO_URL", "CHATTO_HOME_CHANNEL")

EPILOG = f"""\
examples:
  {PROG} serve --port 8765 --env-file chatto.env   # terminal 1
  set -a; . ./chatto.env; set +a     # terminal 2: load CHATTO_URL and CHATTO_ADMIN_KEY
  {PROG} post --as alice --room general '@helper_bot hello'
  {PROG} read --room general --thread <id printed by post> --wait-for-bot 60
  {PROG} revoke message.post-in-thread --room general
  {PROG} COMMAND --help   # the options of one command
"""


class CliError(Exception):
    """Ends the command with ``code`` (1 refused, 2 usage/unreachable) and a one-line message."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# ----------------------------------------------------------------------------- parser


def _client_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("connection")
    g.add_argument("--url", default=None, help="base URL of the running local server (default: $CHATTO_URL)")
    g.add_argument(
        "--admin-key",
        default=None,
        help="its admin key, CHATTO_ADMIN_KEY in the env file serve wrote (default: $CHATTO_ADMIN_KEY)",
    )
    g.add_argument("--json", action="store_true", help="print the server's JSON answer (default: text)")
    g.add_argument("--timeout", type=float, default=10.0, help="seconds per HTTP request (default: 10)")
    return p


def _bot_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user", default=None, metavar="LOGIN", help="the bot account to change (default: the demo bot helper_bot)"
    )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="The local Chatto server (a protocol-faithful subset of Chatto 0.5 for tests, the demo "
        "and trying the bot by hand) and commands that act on a running one as a person or "
        "as its admin.",
    )
    subs = ap.add_subparsers(dest="command", metavar="COMMAND")
    client = _client_options()

    s = subs.add_parser(
        "serve",
        help="start the server with the demo world; its credentials go to an env file (0600)",
        description="Start the local Chatto server with the demo world (person alice, bot "
        "helper_bot, channel general, the DM alice <-> bot) and serve until "
        "Ctrl-C. Writes CHATTO_URL, CHATTO_BOT_KEY, CHATTO_USER_KEY (alice), "
        "CHATTO_ADMIN_KEY and CHATTO_HOME_CHANNEL (#general) to an owner-only (0600) env "
        "file (--env-file, else a new one in the temp directory) and prints CHATTO_URL, "
        "CHATTO_HOME_CHANNEL and that file's path first; it never prints a key. Needs the "
        "server extra.",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    s.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default: 0)")
    s.add_argument(
        "--state",
        default=None,
        metavar="PATH",
        help="JSON file keeping rooms, messages and keys across restarts (default: none, in memory)",
    )
    s.add_argument("--heartbeat", type=float, default=15.0, help="realtime heartbeat interval in seconds (default: 15)")
    s.add_argument(
        "--admin-key",
        default=None,
        help="admin key the other commands must present (default: a new random one per start)",
    )
    s.add_argument(
        "--env-file",
        default=None,
        metavar="PATH",
        help="write the CHATTO_* lines to this file (mode 0600), e.g. $HERMES_HOME/.env; other "
        "lines in it are kept, and the bot key line is updated after rotate-key (default: a "
        "new chatto-local-*.env in the temp directory)",
    )

    m = subs.add_parser(
        "model",
        help="serve the scripted offline model (OpenAI-compatible) on loopback",
        description="Serve the deterministic scripted model the demo uses, for a Hermes "
        "gateway without a real model: it answers each turn with a short "
        "text that says what context it received. Prints MODEL_BASE_URL.",
    )
    m.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default: 127.0.0.1)")
    m.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default: 0)")

    st = subs.add_parser(
        "status",
        parents=[client],
        help="people, rooms, the bot's permissions; is it online",
        description="List people and bots, rooms with members, the bot's effective "
        "permissions in each room, and whether the bot is online (connected "
        "over realtime, e.g. by a running gateway).",
    )
    st.add_argument(
        "--wait-for-bot",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait up to SECONDS until the bot is online, e.g. after starting the "
        "gateway; exit 1 if it does not come (default: 0, no waiting)",
    )

    a = subs.add_parser(
        "add-person",
        parents=[client],
        help="create a person (human account) and its key",
        description="Create a human account, add it to rooms and print its id and bearer token.",
    )
    a.add_argument("login", help="login of the new person, e.g. bob")
    a.add_argument("--name", default="", help="display name (default: none, the login is shown)")
    a.add_argument(
        "--room",
        action="append",
        default=None,
        metavar="ROOM",
        help="room to join; repeat for several (default: general)",
    )
    a.add_argument("--no-room", action="store_true", help="join no room (default: off)")

    p = subs.add_parser(
        "post",
        parents=[client],
        help="post a message as a person (in a room or a thread)",
        description="Post as a person, with the same rules as Chatto's CreateMessage (the "
        "person needs the permissions). Prints the new message's id.",
    )
    p.add_argument("text", help="message text (Markdown); mention the bot with @helper_bot")
    p.add_argument("--as", dest="as_", default="alice", metavar="LOGIN", help="who posts (default: alice)")
    p.add_argument(
        "--room",
        default="general",
        help="channel name, room id, or dm:<login> for that person's DM with the bot (default: general)",
    )
    p.add_argument(
        "--thread",
        default="",
        metavar="ID",
        help="reply in the thread under this root message id (default: none, a new root)",
    )
    p.add_argument(
        "--also-to-channel",
        action="store_true",
        help="with --thread: also show the reply in the channel (default: off)",
    )
    p.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="PATH",
        help="attach a local file (repeatable; uploaded with Chatto's chunked upload rules; default: none)",
    )

    r = subs.add_parser(
        "read",
        parents=[client],
        help="print a room's messages or one thread",
        description="Print a room's timeline, or with --thread the root and its replies, "
        "oldest first: id, time, author, text.",
    )
    r.add_argument("--room", default="general", help="channel name, room id, or dm:<login> (default: general)")
    r.add_argument("--thread", default="", metavar="ID", help="root message id of the thread (default: none)")
    r.add_argument("--limit", type=int, default=0, help="show only the last N messages; 0 = all (default: 0)")
    r.add_argument(
        "--wait-for-bot",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait up to SECONDS until the newest message shown is a bot's, e.g. the reply "
        "to your post; exit 1 if it does not come (default: 0, no waiting)",
    )

    for name, verb, what in (("grant", "grant", "give"), ("revoke", "revoke", "take away")):
        g = subs.add_parser(
            name,
            parents=[client],
            help=f"{verb} permissions for the bot in a room",
            description=f"{what.capitalize()} room permissions of the bot (or --user) in one "
            "room, or at server scope. A room-scope revoke also overrides a "
            "server-scope grant there. Like any permission change on Chatto, "
            "it closes the bot's realtime sockets with RESYNC_REQUIRED.",
        )
        g.add_argument(
            "permissions",
            nargs="+",
            metavar="PERMISSION",
            help="e.g. message.post, message.post-in-thread, message.react, room.join",
        )
        g.add_argument(
            "--room",
            default=None,
            help="channel name, room id, or dm:<login> (default: none; required unless --server-scope)",
        )
        g.add_argument(
            "--server-scope", action="store_true", help=f"{verb} at server scope instead of in one room (default: off)"
        )
        _bot_option(g)

    k = subs.add_parser(
        "keys",
        parents=[client],
        help="list the bot's API keys (ids and names, no secrets)",
        description="The bot's valid API keys: one line per key, its id and name (never the secret).",
    )
    _bot_option(k)
    k = subs.add_parser(
        "create-key",
        parents=[client],
        help="give the bot another named API key (the others keep working)",
        description="BotService/CreateBotApiKey: a new named key; prints CHATTO_BOT_KEY=<key> "
        "and its id (the secret is shown this once).",
    )
    k.add_argument("--name", default="key", help="the key's name (default: key)")
    _bot_option(k)
    k = subs.add_parser(
        "revoke-key",
        parents=[client],
        help="revoke one of the bot's API keys (its realtime sockets are closed)",
        description="BotService/RevokeBotApiKey: the key stops working at once and the sockets "
        "opened with it are closed with AUTHENTICATION_REQUIRED.",
    )
    k.add_argument("key_id", metavar="KEY_ID", help="the key's id (see: keys)")
    _bot_option(k)
    k = subs.add_parser(
        "rotate-key",
        parents=[client],
        help="replace the bot's keys with a new one (the old ones stop working)",
        description="What an operator does on Chatto 0.5: create a new key, then revoke every "
        "older one (their realtime sockets are closed). Prints CHATTO_BOT_KEY=<new key>.",
    )
    _bot_option(k)
    return ap


# ----------------------------------------------------------------------------- serve / model


def _missing_server_extra() -> list[str]:
    return [m for m in ("starlette", "uvicorn") if find_spec(m) is None]


def write_env_file(path: str, values: dict[str, str]) -> None:
    """Set ``values`` in the dotenv file ``path``, keeping its other lines; the file is made
    owner-only (0600) because it holds keys."""
    lines: list[str] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            lines = [ln.rstrip("\n") for ln in fh if ln.split("=", 1)[0].strip() not in values]
    lines += [f"{k}={v}" for k, v in values.items()]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode on open: owner-only before a key is in it
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(ln + "\n" for ln in lines))


def _fresh_env_file() -> str:
    """A new owner-only (0600, ``mkstemp``) ``chatto-local-*.env`` in the temp directory: where
    ``serve`` puts the keys when no ``--env-file`` is given."""
    fd, path = tempfile.mkstemp(prefix="chatto-local-", suffix=".env")
    os.close(fd)
    return path


def _serve_until_signal(stop_fn: Callable[[], None]) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    finally:
        stop_fn()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    missing = _missing_server_extra()
    if missing:
        raise CliError(
            f"the local Chatto server needs the [server] extra (missing: {', '.join(missing)}); "
            "install it with: pip install 'hermes-chatto[server]'  (from a checkout: "
            "pip install '.[server]')",
            2,
        )
    from .server import LocalChatto

    srv = LocalChatto.demo(state_path=args.state, heartbeat_interval=args.heartbeat)
    srv.admin_key = args.admin_key or "chadm_" + secrets.token_urlsafe(18)
    try:
        url = srv.start_sync(args.host, args.port)
    except (OSError, RuntimeError) as e:
        # One line and exit 2, like `model`: the README's by-hand block waits for the keys
        # line and names this log when it does not come.
        raise CliError(f"cannot start the local Chatto server on {args.host}:{args.port}: {e}", 2) from None
    w = srv.world
    assert w is not None
    # CHATTO_HOME_CHANNEL (#general) makes the file a complete profile .env for this server:
    # without a home channel Hermes opens every new chat with a "No home channel" notice.
    values = dict(zip(ENV_KEYS, (url, srv.bot_key, w.alice_token, srv.admin_key, w.general_id), strict=True))
    env_file = args.env_file or _fresh_env_file()
    write_env_file(env_file, values)  # before the lines below: whoever reads them may read the file next

    def _rewrite(op: str, user_id: str) -> None:
        if op in ("rotate-key", "revoke-key") and user_id == w.bot_id:
            write_env_file(env_file, {"CHATTO_BOT_KEY": srv.bot_key})

    srv.admin_listeners.append(_rewrite)
    for k in PUBLIC_ENV_KEYS:
        print(f"{k}={values[k]}")
    keys = ", ".join(k for k in ENV_KEYS if k not in PUBLIC_ENV_KEYS)
    print(f"# keys written to {os.path.abspath(env_file)} (mode 0600): {keys}")
    print(
        f"# bot user id {w.bot_id} (login {w.bot_login}); alice {w.alice_id}; "
        f"channel general {w.general_id}; DM {w.dm_id}"
    )
    print(f"# serving; try: {PROG} --help   (Ctrl-C stops)")
    sys.stdout.flush()

    def _stop() -> None:
        srv.stop_sync()
        srv.save_state()

    return _serve_until_signal(_stop)


def cmd_model(args: argparse.Namespace) -> int:
    from .scripted_model import ScriptedModel

    model = ScriptedModel()
    try:
        url = model.start(args.host, args.port)
    except (OSError, ValueError) as e:
        raise CliError(f"cannot start the scripted model on {args.host}:{args.port}: {e}", 2) from None
    print(f"MODEL_BASE_URL={url}")
    print(f"MODEL_NAME={model.model_id}")
    print("# scripted model serving; Ctrl-C stops")
    sys.stdout.flush()
    return _serve_until_signal(model.stop)


# ----------------------------------------------------------------------------- client commands


def call(args: argparse.Namespace, op: str, body: dict) -> dict:
    """POST one admin op to the running server; returns its JSON answer or raises :class:`CliError`."""
    import httpx

    url = (args.url or os.environ.get("CHATTO_URL") or "").rstrip("/")
    key = args.admin_key or os.environ.get("CHATTO_ADMIN_KEY") or ""
    if not url:
        raise CliError("no server URL: pass --url or set CHATTO_URL (serve prints it)", 2)
    if not key:
        raise CliError("no admin key: pass --admin-key or set CHATTO_ADMIN_KEY (serve writes it to its env file)", 2)
    try:
        resp = httpx.post(
            f"{url}/_local/admin/{op}", json=body, timeout=args.timeout, headers={"Authorization": f"Bearer {key}"}
        )
    except httpx.HTTPError as e:
        raise CliError(f"cannot reach the local server at {url}: {e} (is `{PROG} serve` running?)", 2) from None
    try:
        data = resp.json()
    except ValueError:
        data = None
    if resp.status_code == 404 and not isinstance(data, dict):
        raise CliError(f"{url} has no admin API (not a local server started with `{PROG} serve`?)", 2)
    if resp.status_code != 200 or not isinstance(data, dict):
        msg = data.get("error") if isinstance(data, dict) else resp.text[:200]
        raise CliError(f"{op}: {msg} (HTTP {resp.status_code})")
    return data


def _time(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S") if ts else "--:--:--"


def format_message(m: dict, *, reply: bool = False) -> str:
    """``<id>  <time>  <author>: <text>`` (one line per text line, later ones indented)."""
    body = "(deleted)" if m.get("deleted") else (m.get("body") or "")
    files = [f"{a['filename']} [{a['content_type']}]" for a in m.get("attachments") or []]
    if files and not m.get("deleted"):
        body = (body + "\n" if body else "") + "(attachments: " + ", ".join(files) + ")"
    tags = []
    if m.get("author_is_bot"):
        tags.append("bot")
    if m.get("edited"):
        tags.append("edited")
    if m.get("reply_count"):
        tags.append(f"{m['reply_count']} repl{'y' if m['reply_count'] == 1 else 'ies'}")
    who = m.get("author", "?") + (f" [{', '.join(tags)}]" if tags else "")
    pre = "  ↳ " if reply else ""
    head = f"{pre}{m['id']}  {_time(m.get('created_at'))}  {who}: "
    lines = body.splitlines() or [""]
    pad = " " * len(pre + "    ")
    return head + lines[0] + "".join("\n" + (pad + ln if ln.strip() else "") for ln in lines[1:])


def _out(args: argparse.Namespace, data: dict, text: Callable[[dict], str]) -> int:
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text(data))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    def text(d: dict) -> str:
        n = d["bot_connections"]
        online = f"online ({n} realtime connection{'s' if n != 1 else ''})" if n else "offline"
        out = [f"server {d['url']}", f"bot {d['bot']}: {online}", "people:"]
        out += [
            f"  {p['login']:<16} {p['id']}  {'bot' if p['is_bot'] else 'person'}"
            + (f"  ({p['name']})" if p["name"] else "")
            for p in d["people"]
        ]
        out.append(f"rooms (and what {d['bot']} may do there):")
        for r in d["rooms"]:
            label = f"#{r['name']}" if r["kind"] == "channel" else "dm " + "+".join(r["members"])
            out.append(f"  {label:<24} {r['id']}  members: {', '.join(r['members'])}")
            out.append(f"  {'':<24} {d['bot']}: {', '.join(r['bot_permissions']) or '(nothing)'}")
        return "\n".join(out)

    data = call(args, "status", {})
    if args.wait_for_bot > 0:
        deadline = time.monotonic() + args.wait_for_bot
        while not data["bot_connections"]:
            if time.monotonic() >= deadline:
                _out(args, data, text)
                raise CliError(
                    f"the bot did not come online within {args.wait_for_bot:g} s (is the gateway running? see its log)"
                )
            time.sleep(0.25)
            data = call(args, "status", {})
    return _out(args, data, text)


def cmd_add_person(args: argparse.Namespace) -> int:
    rooms = [] if args.no_room else (args.room or ["general"])
    data = call(args, "add-person", {"login": args.login, "name": args.name, "rooms": rooms})
    return _out(
        args,
        data,
        lambda d: (
            f"added {d['login']} {d['id']} (rooms: {', '.join(d['rooms']) or 'none'})\nCHATTO_USER_KEY={d['token']}"
        ),
    )


def cmd_post(args: argparse.Namespace) -> int:
    if args.also_to_channel and not args.thread:
        raise CliError("--also-to-channel needs --thread", 2)
    data = call(
        args,
        "post",
        {
            "as": args.as_,
            "room": args.room,
            "text": args.text,
            "thread": args.thread,
            "also_send_to_channel": args.also_to_channel,
            "files": [_file_arg(p) for p in args.file],
        },
    )
    # Only the id on stdout, so that ROOT=$(... post ...) captures it.
    return _out(args, data, lambda d: d["message"]["id"])


def _file_arg(path: str) -> dict:
    import base64
    import os

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    return {"name": os.path.basename(path), "data": base64.b64encode(data).decode()}


def cmd_read(args: argparse.Namespace) -> int:
    body = {"room": args.room, "thread": args.thread, "limit": args.limit}
    data = call(args, "read", body)
    if args.wait_for_bot > 0:
        deadline = time.monotonic() + args.wait_for_bot
        while not (data["messages"] and data["messages"][-1]["author_is_bot"]):
            if time.monotonic() >= deadline:
                _out(args, data, _read_text)
                raise CliError(
                    f"no reply from a bot within {args.wait_for_bot:g} s "
                    "(is the gateway running and allowed to answer?)"
                )
            time.sleep(0.25)
            data = call(args, "read", body)
    return _out(args, data, _read_text)


def _read_text(d: dict) -> str:
    msgs = d["messages"]
    if not msgs:
        return "(no messages)"
    root = d.get("thread") or ""
    return "\n".join(format_message(m, reply=bool(root) and m["id"] != root) for m in msgs)


def _perm_cmd(op: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if not args.server_scope and not args.room:
            raise CliError(f"{op}: name a room with --room (or use --server-scope)", 2)
        data = call(
            args,
            op,
            {"permissions": args.permissions, "room": args.room, "server_scope": args.server_scope, "user": args.user},
        )

        def text(d: dict) -> str:
            out = f"{op}{'ed' if op == 'grant' else 'd'} {', '.join(d['changed'])} for {d['user']} in {d['scope']}"
            if "effective" in d:
                out += f"\nnow {d['user']} may: {', '.join(d['effective']) or '(nothing)'}"
            return out

        return _out(args, data, text)

    return run


def cmd_rotate_key(args: argparse.Namespace) -> int:
    data = call(args, "rotate-key", {"user": args.user})
    return _out(args, data, lambda d: f"CHATTO_BOT_KEY={d['key']}")


def cmd_keys(args: argparse.Namespace) -> int:
    data = call(args, "keys", {"user": args.user})
    return _out(args, data, lambda d: "\n".join(f"{k['id']}  {k['name']}" for k in d["keys"]) or "(no keys)")


def cmd_create_key(args: argparse.Namespace) -> int:
    data = call(args, "create-key", {"user": args.user, "name": args.name})
    return _out(args, data, lambda d: f"CHATTO_BOT_KEY={d['key']}\n# key id {d['key_id']}")


def cmd_revoke_key(args: argparse.Namespace) -> int:
    data = call(args, "revoke-key", {"user": args.user, "key_id": args.key_id})
    return _out(args, data, lambda d: f"revoked key {d['revoked']} of {d['user']}")


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": cmd_serve,
    "model": cmd_model,
    "status": cmd_status,
    "add-person": cmd_add_person,
    "post": cmd_post,
    "read": cmd_read,
    "grant": _perm_cmd("grant"),
    "revoke": _perm_cmd("revoke"),
    "rotate-key": cmd_rotate_key,
    "keys": cmd_keys,
    "create-key": cmd_create_key,
    "revoke-key": cmd_revoke_key,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Backwards compatible: options without a command start the server.
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv.insert(0, "serve")
    args = build_parser().parse_args(argv)
    try:
        code = HANDLERS[args.command](args)
        sys.stdout.flush()
        return code
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except BrokenPipeError:
        # The reader went away (``status | head -2``): exit quietly, as Unix tools do. Point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the pipe


def _entry(argv: Any = None) -> None:  # pragma: no cover - used by __main__
    raise SystemExit(main(argv))
