"""End-to-end harness: local Chatto server + scripted model + the REAL Hermes gateway.

What runs (all on 127.0.0.1, nothing else):

* :class:`chatto_local.LocalChatto` — the local Chatto server (demo world: a
  person ``alice``, the bot ``helper_bot``, channel ``general``, a DM alice+bot), plus a
  second person ``bob`` the harness adds.
* :class:`chatto_local.scripted_model.ScriptedModel` — a deterministic
  OpenAI-compatible model that echoes the context it received.
* the Hermes gateway with this plugin enabled, either as the real ``hermes gateway run``
  subprocess (``mode="subprocess"``, what the demo uses) or in-process through
  ``GatewayRunner.start()`` (``mode="inprocess"``). ``GatewayRunner._run_agent`` is never
  stubbed: every turn goes through the real agent loop to the scripted model.

The Hermes home is a fresh temp directory holding an offline config that makes no
outbound connection (provider ``custom`` with
``context_length``, lazy installs and tirith off, title generation off, environment probe
off, nudges 0, ``onboarding.profile_build: off``) plus ``plugins.enabled: [chatto]`` and a
``platforms.chatto`` block; secrets (``CHATTO_BOT_KEY``) go to ``$HERMES_HOME/.env`` only.

People act over the real Chatto protocol: posts and reads go through a
:class:`hermes_chatto.wire.connect.ChattoClient` holding that person's bearer token.
Waiting is condition-based with timeouts (no fixed sleeps): a turn is over when the model
answered, the bot's messages after the trigger contain that answer, and the gateway reports
no active agent.

Optional: a ``sitecustomize`` socket hook (recipe Appendix B) logs every non-loopback DNS
lookup or ``connect()`` of the gateway subprocess (and :func:`install_nethook` does the same
in-process) to ``<run dir>/nethook.jsonl``; :meth:`Harness.outbound_attempts` reads it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chatto_local.hermes_config import LAZY_INSTALLS_OFF_ENV, hermes_config, merge_config
from chatto_local.scripted_model import (
    ModelRequest,
    ScriptedModel,
    earlier_thread_lines,
    split_context,
)
from hermes_chatto.wire.types import ChattoMessage

#: Environment variables never passed to the gateway subprocess (they would redirect the
#: model or leak the caller's Hermes/Chatto profile into the temp home).
_STRIP_ENV_PREFIXES = (
    "HERMES_",
    "CHATTO_",
    "OPENAI_",
    "OPENROUTER_",
    "ANTHROPIC_",
    "CUSTOM_BASE_URL",
    "GATEWAY_ALLOW",
    "GATEWAY_ALLOWED",
)
_STRIP_ENV_EXACT = {"CUSTOM_BASE_URL", "HERMES_INFERENCE_PROVIDER", "PYTHONPATH"}

NETHOOK_SOURCE = r'''
"""Log every non-loopback DNS lookup / connect() (hermes-chatto e2e harness)."""
import json as _json, os as _os, socket as _socket, traceback as _tb

_LOG = _os.environ.get("NETHOOK_LOG", "")
_BLOCK = _os.environ.get("NETHOOK_BLOCK", "0") == "1"


def _loopback(host):
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    h = str(host).strip("[]").lower()
    return (h.startswith("127.") or h in ("::1", "localhost", "localhost.", "")
            or h.startswith("::ffff:127."))


def _note(kind, target):
    if not _LOG:
        return
    rec = {"kind": kind, "target": str(target)[:200], "pid": _os.getpid(),
           "stack": "".join(_tb.format_stack(limit=8)[:-2])[-1500:]}
    try:
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(_json.dumps(rec) + "\n")
    except Exception:
        pass
    if _BLOCK:
        raise OSError("nethook: non-loopback network access blocked: %s" % (target,))


if not getattr(_socket, "_hermes_chatto_nethook", False):
    _socket._hermes_chatto_nethook = True
    if _LOG:
        try:
            import sys as _sys
            with open(_LOG + ".loaded", "a", encoding="utf-8") as _f:
                _f.write(_json.dumps({"pid": _os.getpid(), "argv": [str(a)[-60:] for a in _sys.argv[:3]]}) + "\n")
        except Exception:
            pass
    _orig_gai = _socket.getaddrinfo
    _orig_connect = _socket.socket.connect
    _orig_connect_ex = _socket.socket.connect_ex

    def getaddrinfo(host, *a, **kw):
        if not _loopback(host):
            _note("getaddrinfo", host)
        return _orig_gai(host, *a, **kw)

    def _check(sock, address):
        if sock.family in (_socket.AF_INET, _socket.AF_INET6) and isinstance(address, tuple):
            if not _loopback(address[0]):
                _note("connect", address)

    def connect(self, address):
        _check(self, address)
        return _orig_connect(self, address)

    def connect_ex(self, address):
        _check(self, address)
        return _orig_connect_ex(self, address)

    _socket.getaddrinfo = getaddrinfo
    _socket.socket.connect = connect
    _socket.socket.connect_ex = connect_ex
'''


def install_nethook(log_path: str | os.PathLike) -> None:
    """Install the loopback-only socket logger in THIS process (idempotent). Every
    non-loopback ``getaddrinfo``/``connect`` is appended as a JSON line to ``log_path``."""
    os.environ["NETHOOK_LOG"] = str(log_path)
    ns: dict[str, Any] = {}
    exec(compile(NETHOOK_SOURCE, "<hermes_chatto nethook>", "exec"), ns)  # noqa: S102


def hermes_command() -> list[str]:
    """argv prefix that runs the Hermes CLI of *this* interpreter's environment: the
    ``hermes`` script next to ``sys.executable`` (``.venv/bin/hermes``), else
    ``python -c 'from hermes_cli.main import main; main()'``."""
    cand = Path(sys.executable).with_name("hermes")
    if cand.exists():
        return [str(cand)]
    return [
        sys.executable,
        "-c",
        "import sys; from hermes_cli.main import main; sys.argv[0]='hermes'; sys.exit(main())",
    ]


def utf8_len(s: str | None) -> int:
    """Length of ``s`` in UTF-8 **bytes** (Chatto's body limit unit)."""
    return len((s or "").encode("utf-8"))


def _squash(s: str) -> str:
    return "".join((s or "").split())


async def wait_until(
    pred: Callable[[], Awaitable[Any] | Any],
    *,
    timeout: float,
    interval: float = 0.05,
    what: Any = "condition",
    exc: type[Exception] = TimeoutError,
    progress: Callable[[], Any] | None = None,
    cap: float | None = None,
) -> Any:
    """Poll ``pred`` (sync or async) until it returns a truthy value; return that value.

    A condition wait, not a fixed sleep: returns as soon as the condition holds. Raises
    ``exc`` (default ``TimeoutError``) naming ``what`` after ``timeout`` seconds (the test
    suite's ``support.waits.wait_for`` passes ``exc=AssertionError``).

    With ``progress`` (a callable returning any comparable value, e.g. a tuple of counters),
    ``timeout`` is how long the wait may go without ``progress()`` changing: a slow machine
    that is still getting somewhere gets more time, a stuck one fails as fast as before. It
    still fails after ``cap`` seconds in all (default ``5 * timeout``)."""
    start = time.monotonic()
    limit = start + (cap if cap is not None else 5 * timeout) if progress is not None else start + timeout
    seen = progress() if progress is not None else None
    moved = start
    while True:
        v = pred()
        if inspect.isawaitable(v):
            v = await v
        if v:
            return v
        now = time.monotonic()
        if progress is not None:
            cur = progress()
            if cur != seen:
                seen, moved = cur, now
            if now - moved >= timeout:
                raise exc(
                    f"timed out waiting for {what}: no progress for {timeout:.0f} s "
                    f"({now - start:.0f} s in all; last progress {seen!r})"
                )
        if now >= limit:
            raise exc(f"timed out after {now - start:.0f} s waiting for {what}")
        await asyncio.sleep(interval)


@dataclass
class Turn:
    """One person→bot exchange the harness drove.

    ``trigger`` is the person's message; ``replies`` the bot's messages after it (oldest
    first); ``requests`` the model's main-loop requests during the turn; ``context`` the
    last user message text the model received for the turn (channel context block +
    ``[New message]`` + trigger), ``""`` when the model was not called."""

    label: str
    room_id: str
    trigger: ChattoMessage
    replies: list[ChattoMessage] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)
    seconds: float = 0.0
    #: index of the turn's first request in ``ScriptedModel.turn_requests()`` (for
    #: :meth:`Harness.settle_turn` of a turn driven with ``expect_reply=False``)
    first_request: int = 0

    @property
    def context(self) -> str:
        return self.requests[0].user_text if self.requests else ""

    @property
    def block(self) -> str | None:
        """The channel-context block the model received (``None`` when there was none)."""
        return split_context(self.context)[0]

    @property
    def block_lines(self) -> list[str]:
        """Message lines of the ``[Earlier in this thread]`` block (see
        :func:`chatto_local.scripted_model.earlier_thread_lines`)."""
        return earlier_thread_lines(self.context)

    @property
    def reply_text(self) -> str:
        return "".join(m.body or "" for m in self.replies)


@dataclass
class Peer:
    """Another bot of this plugin on the same local Chatto (see :meth:`Harness.start_peer`)."""

    login: str
    bot_id: str
    bot_key: str
    home: Path
    model: ScriptedModel
    gateway: GatewayProcess

    def idle(self) -> bool:
        """No agent turn running in the peer's gateway."""
        return int(_read_state(self.home).get("active_agents") or 0) == 0


def _read_state(home: Path) -> dict:
    try:
        return json.loads((home / "gateway_state.json").read_text())
    except (OSError, ValueError):
        return {}


def _kill_if_alive(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(Exception):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        if proc.poll() is None:
            with contextlib.suppress(Exception):
                os.killpg(proc.pid, signal.SIGKILL)


class GatewayProcess:
    """The real ``hermes gateway run`` as a subprocess with its own environment.

    ``env`` is the full child environment; stdout+stderr go to ``log_path`` (appended)."""

    def __init__(self, home: Path, env: dict[str, str], log_path: Path) -> None:
        self.home, self.env, self.log_path = home, env, log_path
        self.proc: subprocess.Popen | None = None
        self.exit_codes: list[int] = []

    def start(self) -> None:
        """Launch ``hermes gateway run --replace`` (``--replace`` clears a stale pid file of
        this temp home only)."""
        self._log = open(self.log_path, "ab")
        self._log.write(f"\n===== gateway start {datetime.now().isoformat()} =====\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            hermes_command() + ["gateway", "run", "--replace", "-v"],
            env=self.env,
            cwd=str(self.home),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        # Own process group (so a timeout can kill the whole tree); make sure it never
        # outlives this process if the caller is interrupted before stop().
        atexit.register(_kill_if_alive, self.proc)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL. Returns the exit code (Hermes
        exits 1 on SIGTERM by design, so that systemd ``Restart=on-failure`` revives it)."""
        p, self.proc = self.proc, None
        if p is None:
            return None
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
        self.exit_codes.append(p.returncode)
        with contextlib.suppress(Exception):
            self._log.close()
        return p.returncode

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


#: the directory holding this ``chatto_local`` (and, in a checkout, ``hermes_chatto``)
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


class Harness:
    """Local Chatto + scripted model + real Hermes gateway, driven as people in Chatto.

    ``mode``: ``"subprocess"`` (real ``hermes gateway run``) or ``"inprocess"``
    (``GatewayRunner.start()`` in this event loop; sets ``HERMES_HOME`` and the Chatto env
    vars in ``os.environ`` for the life of the harness — one in-process harness per process
    at a time). ``allow_all_users``: authorise via ``CHATTO_ALLOW_ALL_USERS`` instead of
    the ``CHATTO_ALLOWED_USERS`` allowlist (alice, bob). ``nethook``: log non-loopback
    connects of the gateway subprocess. ``turn_timeout``: seconds a wait may go without
    :meth:`progress` (at the latest five times that in all).
    ``extra_platform_config`` goes into ``platforms.chatto.extra``; ``extra_config`` is
    merged into the top level of ``config.yaml`` (dicts merged key by key, e.g.
    ``{"display": {"busy_input_mode": "queue"}}``).

    Use as ``async with Harness() as h:`` or ``await h.start()`` / ``await h.stop()``."""

    def __init__(
        self,
        *,
        mode: str = "subprocess",
        allow_all_users: bool = False,
        nethook: bool = True,
        turn_timeout: float = 60.0,
        run_dir: str | os.PathLike | None = None,
        keep: bool = False,
        extra_platform_config: dict | None = None,
        extra_config: dict | None = None,
    ) -> None:
        if mode not in ("subprocess", "inprocess"):
            raise ValueError("mode must be 'subprocess' or 'inprocess'")
        self.mode = mode
        self.allow_all_users = allow_all_users
        self.nethook = nethook
        self.turn_timeout = turn_timeout
        self.keep = keep
        self.extra_platform_config = dict(extra_platform_config or {})
        self.extra_config = dict(extra_config or {})
        self.run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="hermes-chatto-e2e-"))
        self.home = self.run_dir / "hermes-home"
        self.nethook_log = self.run_dir / "nethook.jsonl"
        self.chatto: Any = None
        self.model: ScriptedModel | None = None
        self.gateway: GatewayProcess | None = None
        self.runner: Any = None
        self.turns: list[Turn] = []
        self.notes: list[str] = []
        self.clients: dict[str, Any] = {}
        self.users: dict[str, str] = {}  # login -> user id
        self.names: dict[str, str] = {}  # user id -> display label
        self.rooms: dict[str, str] = {}  # "general" / "dm" -> room id
        self.bot_id = ""
        self.bot_login = "helper_bot"
        self._bot_key = ""
        self._saved_env: dict[str, str | None] = {}
        self.gateway_starts = 0
        self.hermes_send_runs = 0
        self.peers: list[Peer] = []

    @property
    def started_model(self) -> ScriptedModel:
        """The scripted model :meth:`start` runs; raises ``RuntimeError`` before the start."""
        if self.model is None:
            raise RuntimeError("Harness: start() first (no scripted model yet)")
        return self.model

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Harness:
        """Start; a start that fails stops what it already started before raising."""
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    async def start(
        self, *, model: Callable[[], ScriptedModel] | None = None, before_gateway: Callable[[], Any] | None = None
    ) -> None:
        """Start Chatto, the model, write the Hermes home, start the gateway and wait until
        the bot's realtime session is subscribed. Raises ``TimeoutError`` /
        ``RuntimeError`` (with the gateway log tail) when the gateway does not come up.

        ``model``: factory for the model (default :class:`ScriptedModel`; tests pass a
        subclass). ``before_gateway``: called (sync) after the Hermes home is written,
        right before the gateway starts."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        await self._start_chatto()
        self.model = (model or ScriptedModel)()
        self.model.start()
        self.write_home()
        if before_gateway is not None:
            before_gateway()
        await self.start_gateway()

    async def stop(self) -> None:
        """Stop the gateway, close clients, stop model and Chatto; remove the run dir unless
        ``keep``. Never raises for an already stopped component."""
        with contextlib.suppress(Exception):
            await self.stop_gateway()
        for peer in self.peers:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(peer.gateway.stop)
            peer.model.stop()
        for c in list(self.clients.values()):
            with contextlib.suppress(Exception):
                await c.aclose()
        self.clients.clear()
        if self.model is not None:
            self.model.stop()
        if self.chatto is not None:
            with contextlib.suppress(Exception):
                await self.chatto.stop()
        self._restore_env()
        if not self.keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # ------------------------------------------------------------------ chatto world
    async def _start_chatto(self) -> None:
        from chatto_local import LocalChatto

        self.chatto = LocalChatto.demo()
        await self.chatto.start()
        w = _world(self.chatto)
        self.bot_id, self._bot_key = w["bot_id"], w["bot_key"]
        self.bot_login = w["bot_login"]
        self.users = {"alice": w["alice_id"], self.bot_login: self.bot_id}
        self.rooms = {"general": w["general_id"], "dm": w["dm_id"]}
        # bob: a second person on the allowlist; carol: a member who is NOT authorised
        # to use the bot (her thread messages are seen, never turns).
        for login, name in (("bob", "Bob"), ("carol", "Carol")):
            uid = _id_of(self.chatto.create_user(login, name))
            self.users[login] = uid
            self.chatto.add_member(self.rooms["general"], uid)
        self.names = {uid: login for login, uid in self.users.items()}

    def client(self, login: str = "alice"):
        """A :class:`ChattoClient` with ``login``'s bearer token (cached per login)."""
        from hermes_chatto.wire.connect import ChattoClient

        c = self.clients.get(login)
        if c is None:
            c = ChattoClient(self.chatto.base_url, self.chatto.user_token(self.users[login]), timeout=15.0)
            self.clients[login] = c
        return c

    def skip_clock(self, seconds: float) -> None:
        """Move the local Chatto server's clock forward by ``seconds`` (s), e.g. 3600 for
        "an hour later"; later messages get later ``created_at``."""
        _advance_clock(self.chatto, seconds)
        self.notes.append(f"clock +{seconds:.0f} s")

    # ------------------------------------------------------------------ hermes home
    def write_home(self) -> None:
        """Write ``$HERMES_HOME/config.yaml`` (the offline settings above + the chatto platform) and
        ``$HERMES_HOME/.env`` (bot key, URL, authorisation). Re-writing keeps Hermes'
        own additions out: call before the first gateway start only."""
        assert self.model is not None
        env = {"CHATTO_BOT_KEY": self._bot_key, "CHATTO_URL": self.chatto.base_url}
        self._write_home_to(self.home, self.model, self.extra_platform_config, env)

    def _write_home_to(self, home: Path, model: ScriptedModel, extra_platform: dict, env: dict[str, str]) -> None:
        import yaml

        general = self.rooms["general"]
        cfg = hermes_config(
            model={
                "provider": "custom",
                "default": model.model_id,
                "base_url": model.base_url,
                "api_key": "sk-scripted-local",
                "context_length": 131072,
            },
            platform={
                "enabled": True,
                # The "Gateway online / shutting down" notices would land in #general.
                "gateway_restart_notification": False,
                "home_channel": {"platform": "chatto", "chat_id": general, "name": "general"},
                "extra": {"url": self.chatto.base_url, **extra_platform},
            },
        )
        merge_config(cfg, self.extra_config)
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        env = dict(env)
        if self.allow_all_users:
            env["CHATTO_ALLOW_ALL_USERS"] = "true"
        else:
            env["CHATTO_ALLOWED_USERS"] = f"{self.users['alice']},{self.users['bob']}"
        fd = os.open(home / ".env", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds the bot key
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{k}={v}\n" for k, v in env.items()))
        os.chmod(home / ".env", 0o600)

    async def start_peer(
        self,
        login: str,
        display_name: str,
        *,
        extra_platform_config: dict | None = None,
        model: ScriptedModel | None = None,
    ) -> Peer:
        """A second bot account (``login``, usual bot permissions, member of ``general``) served
        by its own real ``hermes gateway run`` (own Hermes home, own :class:`ScriptedModel`, or
        ``model``, not started yet), with this harness' authorisation and config. Started and
        subscribed when this returns; :meth:`stop` stops it."""
        bot, key = self.chatto.create_bot(login, display_name)
        from chatto_local.state import BOT_USUAL_PERMISSIONS

        self.chatto.state.grant(None, bot.id, *BOT_USUAL_PERMISSIONS)
        self.chatto.add_member(self.rooms["general"], bot.id)
        self.chatto.state.grant(self.rooms["general"], bot.id, *BOT_USUAL_PERMISSIONS)
        self.users[login] = bot.id
        self.names[bot.id] = login
        model = model if model is not None else ScriptedModel()
        model.start()
        home = self.run_dir / f"peer-{login}" / "hermes-home"
        self._write_home_to(
            home, model, dict(extra_platform_config or {}), {"CHATTO_BOT_KEY": key, "CHATTO_URL": self.chatto.base_url}
        )
        gw = GatewayProcess(home, self.child_env(home), home.parent / "gateway.log")
        peer = Peer(login, bot.id, key, home, model, gw)
        self.peers.append(peer)
        gw.start()

        def ready() -> bool:
            if not gw.alive():
                raise RuntimeError(f"peer gateway exited; log:\n{gw.log_tail()}")
            st = _read_state(home)
            return st.get("pid") == gw.pid and (st.get("platforms") or {}).get("chatto", {}).get("state") == "connected"

        await wait_until(ready, timeout=90, what=f"the peer gateway of {login} to connect")
        await wait_until(lambda: _bot_socket_subscribed(self.chatto, bot.id), timeout=30, what=f"{login}'s socket")
        return peer

    def child_env(self, home: Path | None = None) -> dict[str, str]:
        """Environment for Hermes subprocesses: the caller's, minus anything that could
        redirect the model or select another profile, plus ``HERMES_HOME``,
        ``HERMES_API_TIMEOUT=30``, ``HERMES_DISABLE_LAZY_INSTALLS=1``, and on ``PYTHONPATH`` the
        source tree of this ``chatto_local`` (when it holds ``hermes_chatto``) and (with
        ``nethook``) the socket-logging ``sitecustomize``."""
        env = {
            k: v for k, v in os.environ.items() if k not in _STRIP_ENV_EXACT and not k.startswith(_STRIP_ENV_PREFIXES)
        }
        env.update(
            {
                "HERMES_HOME": str(home or self.home),
                "HERMES_API_TIMEOUT": "30",
                "PYTHONUNBUFFERED": "1",
                "NO_COLOR": "1",
                # config.yaml says it too; this covers a home a test writes by hand.
                **LAZY_INSTALLS_OFF_ENV,
            }
        )
        # the child imports the plugin from the same tree as this process (a git worktree's
        # tests must not run an editable install's other checkout)
        path = [str(_SOURCE_ROOT)] if (_SOURCE_ROOT / "hermes_chatto" / "__init__.py").is_file() else []
        if self.nethook:
            hook_dir = self.run_dir / "nethook"
            hook_dir.mkdir(exist_ok=True)
            (hook_dir / "sitecustomize.py").write_text(NETHOOK_SOURCE)
            path.insert(0, str(hook_dir))
            env["NETHOOK_LOG"] = str(self.nethook_log)
        if path:
            env["PYTHONPATH"] = os.pathsep.join(path)
        return env

    def hooked_processes(self) -> list[dict]:
        """Processes that loaded the nethook (``{"pid", "argv"}`` each; the demo process,
        every gateway start and every ``hermes send``)."""
        try:
            lines = Path(str(self.nethook_log) + ".loaded").read_text().splitlines()
        except OSError:
            return []
        return [json.loads(ln) for ln in lines if ln.strip()]

    def outbound_attempts(self) -> list[dict]:
        """Non-loopback DNS lookups / connects logged by the nethook (empty = none)."""
        try:
            lines = self.nethook_log.read_text().splitlines()
        except OSError:
            return []
        return [json.loads(ln) for ln in lines if ln.strip()]

    # ------------------------------------------------------------------ gateway
    async def start_gateway(self) -> None:
        """Start the gateway (subprocess or in-process) and wait until it is running, the
        chatto platform is connected and the bot's realtime socket is subscribed on the
        server."""
        self.gateway_starts += 1
        t0 = time.monotonic()
        if self.mode == "subprocess":
            if self.gateway is None:
                self.gateway = GatewayProcess(self.home, self.child_env(), self.run_dir / "gateway.log")
            self.gateway.start()
            try:
                await wait_until(
                    self._subprocess_ready,
                    timeout=90,
                    what="hermes gateway run to connect the chatto platform",
                    progress=self.progress,
                    cap=300,
                )
            except Exception as exc:
                tail = self.gateway.log_tail()
                raise RuntimeError(f"gateway did not come up: {exc}\n--- gateway log ---\n{tail}") from exc
        else:
            await self._start_inprocess()
        await wait_until(
            self._bot_subscribed,
            timeout=30,
            what="the bot's realtime socket to subscribe on the local Chatto",
            progress=self.progress,
            cap=300,
        )
        self.notes.append(f"gateway start #{self.gateway_starts} ready in {time.monotonic() - t0:.1f} s")

    async def stop_gateway(self) -> int | None:
        """Stop the gateway (SIGTERM for the subprocess, ``runner.stop()`` in-process).
        Returns the subprocess exit code (1 is Hermes' normal SIGTERM exit)."""
        if self.mode == "subprocess":
            if self.gateway is None:
                return None
            return await asyncio.to_thread(self.gateway.stop)
        if self.runner is not None:
            r, self.runner = self.runner, None
            await r.stop()
        return None

    async def restart_gateway(self) -> None:
        """Stop the gateway and start it again with the same Hermes home (its
        ``state.db``, sessions and the plugin's frontier store are kept; process memory is
        lost)."""
        await self.wait_idle()
        await self.stop_gateway()
        await self.start_gateway()

    def _gateway_state(self) -> dict:
        return _read_state(self.home)

    def _subprocess_ready(self) -> bool:
        g = self.gateway
        assert g is not None
        if not g.alive():
            raise RuntimeError(f"hermes gateway run exited with code {g.proc.returncode if g.proc else '?'}")
        st = self._gateway_state()
        return (
            st.get("pid") == g.pid
            and st.get("gateway_state") == "running"
            and (st.get("platforms") or {}).get("chatto", {}).get("state") == "connected"
        )

    def _bot_subscribed(self) -> bool:
        return _bot_socket_subscribed(self.chatto, self.bot_id)

    async def _start_inprocess(self) -> None:
        self._set_env({"HERMES_HOME": str(self.home), "HERMES_API_TIMEOUT": "30", "CUSTOM_BASE_URL": None})
        from dotenv import dotenv_values

        self._set_env(dict(dotenv_values(self.home / ".env")))
        from gateway.config import load_gateway_config
        from gateway.run import GatewayRunner

        cfg = load_gateway_config()
        runner = GatewayRunner(cfg)
        ok = await runner.start()
        if ok is False:
            raise RuntimeError("GatewayRunner.start() returned False")
        self.runner = runner

    def _set_env(self, values: dict[str, str | None]) -> None:
        for k, v in values.items():
            if k not in self._saved_env:
                self._saved_env[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def _restore_env(self) -> None:
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env.clear()

    def progress(self) -> tuple[int, ...]:
        """What moves while the gateway is getting somewhere: bytes in its logs (the
        subprocess' output and ``$HERMES_HOME/logs``), the model's requests, messages and
        reactions on the server. The harness' waits fail after :attr:`turn_timeout` (or their
        own timeout) seconds in which this stood still, not at a fixed wall time: a busy
        machine is slower, not stuck (issue 28)."""
        sizes = 0
        logs = [self.run_dir / "gateway.log", *sorted((self.home / "logs").glob("*.log"))]
        for f in logs:
            with contextlib.suppress(OSError):
                sizes += f.stat().st_size
        state = getattr(self.chatto, "state", None)
        messages = len(state.messages) if state is not None else 0
        reactions = sum(len(v) for m in list(state.messages.values()) for v in m.reactions.values()) if state else 0
        requests = len(self.model.requests) if self.model is not None else 0
        return (sizes, requests, messages, reactions)

    def gateway_idle(self) -> bool:
        """True when the gateway runs no agent turn (``active_agents == 0`` in
        ``gateway_state.json``; in-process: no running agent and no active adapter
        session)."""
        if self.mode == "inprocess":
            r = self.runner
            if r is None:
                return True
            if getattr(r, "_running_agents", {}):
                return False
            return all(not getattr(a, "_active_sessions", {}) for a in r.adapters.values())
        st = self._gateway_state()
        return int(st.get("active_agents") or 0) == 0 and self._triggers_settled()

    def _triggers_settled(self) -> bool:
        """No trigger of this harness still carries the bot's accepted reaction (👀, the
        default ``ack_reaction``): the host has run ``on_processing_complete`` for each, so
        its session guard is released. ``active_agents`` drops to 0 earlier than that, and
        with streaming on the answer is visible before the agent's run ends: a person who
        writes in that window meets a busy session."""
        state = getattr(self.chatto, "state", None)
        if state is None:
            return True
        for t in self.turns[-8:]:
            m = state.messages.get(t.trigger.event_id)
            if m is not None and self.bot_id in (m.reactions.get("eyes") or ()):
                return False
        return True

    async def wait_idle(self, timeout: float | None = None) -> None:
        await wait_until(
            self.gateway_idle,
            timeout=timeout or self.turn_timeout,
            what="the gateway to finish its turn",
            progress=self.progress,
        )

    # ------------------------------------------------------------------ acting as people
    async def post(
        self, room: str, text: str, *, thread_root: str = "", user: str = "alice", files: Any = ()
    ) -> ChattoMessage:
        """Post ``text`` as ``user`` over the real protocol (``MessageService/CreateMessage``).
        ``room`` is a room id or a key of :attr:`rooms`. ``files``: ``(filename, bytes,
        content type)`` each, uploaded first (``AssetUploadService``) and attached."""
        room_id = self.rooms.get(room, room)
        ids: list[str] = []
        if files:
            from hermes_chatto.wire.assets import AssetClient

            assets = AssetClient(self.client(user))
            for name, data, ctype in files:
                ids.append((await assets.upload_bytes(room_id, name, data, ctype)).id)
        return await self.client(user).create_message(
            room_id, text, thread_root_event_id=thread_root, attachment_asset_ids=ids
        )

    async def bot_messages_since(self, trigger: ChattoMessage) -> list[ChattoMessage]:
        """The bot's messages posted at or after ``trigger`` in its room: top-level and in
        the trigger's thread (the thread it is in, or the one it roots), oldest first.
        Read from the local server's state (no RPC, so the server's request log only
        holds what the gateway and the people did)."""
        return await asyncio.to_thread(self._bot_messages_since_sync, trigger)

    def _bot_messages_since_sync(self, trigger: ChattoMessage) -> list[ChattoMessage]:
        room = trigger.room_id
        alice = self.users["alice"]
        seen: dict[str, ChattoMessage] = {}
        for m in self.chatto.room_messages(room, viewer=alice):
            seen[m.event_id] = m
        try:
            for m in self.chatto.thread_messages(room, trigger.thread_key, viewer=alice):
                seen[m.event_id] = m
        except KeyError:
            pass
        t0 = trigger.created_at or 0.0
        out = [
            m
            for m in seen.values()
            if m.author_id == self.bot_id
            and m.event_id != trigger.event_id
            and (m.created_at or 0.0) >= t0
            and not m.is_echo
            and not m.is_deleted
        ]
        out.sort(key=lambda m: (m.created_at or 0.0, m.event_id))
        return out

    #: Whether :meth:`skip_clock` can move the server's clock (the local server's can; a real
    #: server's cannot, see tests/support/live.py).
    can_skip_clock = True

    async def read_room(self, room: str) -> list[ChattoMessage]:
        """:meth:`room_messages`, awaitable: the scenarios use this so that a harness on a real
        server (which reads over the API) can serve them too."""
        return self.room_messages(room)

    async def read_thread(self, room: str, root_event_id: str) -> list[ChattoMessage]:
        """:meth:`thread`, awaitable (see :meth:`read_room`)."""
        return self.thread(room, root_event_id)

    async def delete_as_bot(self, room_id: str, event_id: str) -> None:
        """Delete one of the bot's messages (the local server's driver; over the API elsewhere)."""
        self.chatto.delete(self.bot_id, room_id, event_id)

    def thread(self, room: str, root_event_id: str) -> list[ChattoMessage]:
        """Replies of a thread, oldest first, from the server state (as alice)."""
        room_id = self.rooms.get(room, room)
        return self.chatto.thread_messages(room_id, root_event_id, viewer=self.users["alice"])

    def room_messages(self, room: str) -> list[ChattoMessage]:
        """Top-level room timeline, oldest first, from the server state (as alice)."""
        room_id = self.rooms.get(room, room)
        return self.chatto.room_messages(room_id, viewer=self.users["alice"])

    async def turn(
        self,
        label: str,
        room: str,
        text: str,
        *,
        thread_root: str = "",
        user: str = "alice",
        expect_reply: bool = True,
        files: Any = (),
    ) -> Turn:
        """Post ``text`` as ``user`` and wait for the whole turn: the model's main-loop
        request, the bot's messages carrying the model's final answer (whitespace-
        insensitive match of their concatenation), and the gateway idle again.

        Raises ``TimeoutError`` naming the step that did not happen."""
        model = self.started_model
        await self.wait_idle()
        n0 = len(model.turn_requests())
        c0 = len(model.chat_requests())
        t0 = time.monotonic()
        trigger = await self.post(room, text, thread_root=thread_root, user=user, files=files)
        turn = Turn(label, trigger.room_id, trigger, first_request=n0)
        self.turns.append(turn)
        if not expect_reply:
            return turn
        try:
            await wait_until(
                lambda: len(model.turn_requests()) > n0,
                timeout=self.turn_timeout,
                what=f"[{label}] the model to be called",
                progress=self.progress,
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc} ({self._dispatch_diagnosis(trigger)})") from None

        def final_answer() -> str | None:
            reqs = model.chat_requests()[c0:]
            finals = [r for r in reqs if r.stream and not r.tool_calls and r.reply]
            return finals[-1].reply if finals else None

        expected = await wait_until(
            final_answer, timeout=self.turn_timeout, what=f"[{label}] the model's final answer", progress=self.progress
        )

        async def delivered() -> list[ChattoMessage] | None:
            msgs = await self.bot_messages_since(trigger)
            got = _squash("".join(m.body or "" for m in msgs))
            return msgs if _squash(expected) in got else None

        turn.replies = await wait_until(
            delivered,
            timeout=self.turn_timeout,
            interval=0.1,
            what=f"[{label}] the bot's reply in Chatto",
            progress=self.progress,
        )
        await self.wait_idle()
        turn.requests = model.turn_requests()[n0:]
        turn.replies = await self.bot_messages_since(trigger)
        turn.seconds = time.monotonic() - t0
        return turn

    async def settle_turn(self, turn: Turn) -> Turn:
        """Fill in ``requests`` and ``replies`` of a turn driven with ``expect_reply=False``
        once the caller saw it end (the model's requests since the trigger; the bot's messages
        after it). Without this its ``context`` stayed empty and the demo printed "(model not
        called)" for a turn the model answered."""
        turn.requests = self.started_model.turn_requests()[turn.first_request :]
        turn.replies = await self.bot_messages_since(turn.trigger)
        return turn

    def _dispatch_diagnosis(self, trigger: ChattoMessage) -> str:
        """Why a turn may not have started, from the gateway log (subprocess mode)."""
        if self.mode != "subprocess" or self.gateway is None:
            return "in-process gateway: see the adapter's stats"
        if not self.gateway.alive():
            return "the gateway process exited"
        try:
            log = self.gateway.log_path.read_text(errors="replace")
        except OSError:
            return "no gateway log"
        probe = (trigger.body or "")[:30]
        inbound = [ln for ln in log.splitlines() if "inbound message:" in ln and probe in ln]
        if not inbound:
            return (
                "the gateway never dispatched this message: the adapter did not turn it into "
                "a MessageEvent (e.g. judged not addressed to the bot)"
            )
        return "the gateway received the message but the model was not called; see " + str(self.gateway.log_path)

    # ------------------------------------------------------------------ hermes send
    async def hermes_send(self, text: str, target: str = "chatto", *, json_mode: bool = True) -> tuple[int, str, str]:
        """Run ``hermes send --to <target> <text>`` as a subprocess with this Hermes home
        (the cron-script path; goes through the plugin's ``standalone_sender_fn`` because no
        gateway runs in that process). Returns ``(exit code, stdout, stderr)``."""
        self.hermes_send_runs += 1
        argv = hermes_command() + ["send", "--to", target]
        if json_mode:
            argv.append("--json")
        argv.append(text)
        p = await asyncio.to_thread(
            subprocess.run,
            argv,
            env=self.child_env(),
            cwd=str(self.home),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return p.returncode, p.stdout, p.stderr

    # ------------------------------------------------------------------ transcript
    async def room_transcript(self) -> list[tuple[str, list[tuple[ChattoMessage, list[ChattoMessage]]]]]:
        """Per known room (``general``, ``dm``): its top-level messages, each with its thread
        replies, read as alice over the real protocol."""
        c = self.client("alice")
        out = []
        for key, room_id in self.rooms.items():
            page = await c.get_room_events(room_id, limit=200)
            rows = []
            for m in page.messages:
                if m.is_reply:
                    continue
                replies: list[ChattoMessage] = []
                if m.has_thread or m.reply_count:
                    tp = await c.get_thread_events(room_id, m.event_id, limit=200)
                    replies = [r for r in tp.messages if r.event_id != m.event_id]
                rows.append((m, replies))
            out.append((key, rows))
        return out

    def label(self, user_id: str) -> str:
        return self.names.get(user_id, user_id)

    def format_message(self, m: ChattoMessage, *, max_chars: int = 220) -> str:
        """``[HH:MM] author: body`` (body shortened to ``max_chars`` characters, with its
        UTF-8 size when shortened)."""
        ts = datetime.fromtimestamp(m.created_at or 0, tz=UTC).strftime("%H:%M")
        who = self.label(m.author_id) + (" (bot)" if m.author_id == self.bot_id else "")
        body = (m.body or "").replace("\n", " ⏎ ")
        if len(body) > max_chars:
            body = body[:max_chars] + f" … [{utf8_len(m.body)} bytes]"
        return f"[{ts}] {who}: {body}"

    async def format_transcript(self) -> str:
        """A readable dump of the Chatto rooms (threads indented)."""
        lines = []
        for key, rows in await self.room_transcript():
            lines.append(f"── {'#' + key if key != 'dm' else 'DM alice ⇄ helper_bot'} ──")
            for m, replies in rows:
                lines.append("  " + self.format_message(m))
                for r in replies:
                    lines.append("      └ " + self.format_message(r))
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Adapters to the LocalChatto driver API (chatto_local, owned by H3).
# ---------------------------------------------------------------------------------------


def _id_of(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        return obj.get("id") or obj.get("user_id") or ""
    return getattr(obj, "id", "") or getattr(obj, "user_id", "")


def _world(chatto: Any) -> dict[str, str]:
    """Ids and the bot key of the LocalChatto demo world (``LocalChatto.world``)."""
    w = chatto.world
    return {
        "bot_id": w.bot_id,
        "bot_key": w.bot_key,
        "alice_id": w.alice_id,
        "general_id": w.general_id,
        "dm_id": w.dm_id,
        "bot_login": w.bot_login,
    }


def _advance_clock(chatto: Any, seconds: float) -> None:
    chatto.advance_clock(seconds)


def _bot_socket_subscribed(chatto: Any, bot_id: str) -> bool:
    """True when the bot has a caught-up realtime socket on the server."""
    return bool(chatto.connections(bot_id))


__all__ = [
    "Harness",
    "Turn",
    "GatewayProcess",
    "install_nethook",
    "hermes_command",
    "wait_until",
    "utf8_len",
    "NETHOOK_SOURCE",
]
