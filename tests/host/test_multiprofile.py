"""Several Hermes profiles (several Chatto bots) in ONE gateway process — hermes-agent
0.19.0 ``gateway.multiplex_profiles`` (Hermes spec §4, issue 6 "Done when").

Real pieces: ``GatewayRunner`` (0.19.0), the plugin loaded through entry-point discovery,
``ChattoAdapter`` over real loopback sockets to a :class:`LocalChatto`, the host's own
secondary-profile start (``_start_secondary_profile_adapters`` →
``profiles_to_serve`` → ``_start_one_profile_adapters`` → ``_profile_runtime_scope`` →
duplicate-credential check → ``_configure_profile_adapter``). Only the model call is
stubbed: ``GatewayRunner._run_agent_inner`` (see :class:`support.fakes.ProfileAgent` for why
not ``_run_agent``).

Layout: ``$HERMES_HOME`` is the default profile (``config.yaml`` with
``gateway.multiplex_profiles: true``; its ``.env`` is also in ``os.environ`` because a real
gateway process loads the default ``.env`` there at import of ``gateway.run``), each
secondary profile is ``$HERMES_HOME/profiles/<name>/`` with its own ``config.yaml`` and
``.env`` holding ``CHATTO_BOT_KEY`` of a DIFFERENT bot. Every bot is a member of its own
rooms only (one channel, one DM with alice, one DM with bob).

Per-request attribution: the local server records every RPC as (procedure, bearer); this
file additionally wraps the server's handlers to record, per request, the bearer, the
authenticated user and the ``room_id`` the request touched, and wraps the client side
(``httpx.AsyncClient.send``) to record which profile scope was active when the request
left. Tokens are only ever compared in memory and turned into profile labels before any
assertion message is built; an autouse fixture scans every captured log line and all
captured stdout/stderr of these tests for a ``cht_BK_`` key.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chatto_local.hermes_config import write_hermes_config

from support.fakes import ProfileAgent
from support.host import wire_adapter
from support.waits import wait_for

pytestmark = pytest.mark.timeout(120)

#: Any Chatto bot key (chatto-protocol §1.3): ``cht_BK_U<14 alnum>.<base64url secret>``.
KEY_RE = re.compile(r"cht_BK_U[0-9A-Za-z]{14}\.[A-Za-z0-9_-]{8,}")

#: The bearer of the RPC currently being handled by the local server (set in the server's
#: ``_record`` hook, read by the handler wrapper in the same request task).
_REQ_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("mp_req_token", default=None)


# ---------------------------------------------------------------------------------------
# no key in any log or captured output (issue 6: "No test log ... contains a key")


@pytest.fixture(autouse=True)
def no_key_in_logs(caplog, capfd):
    """Capture every logger at DEBUG for the whole test (also the wire layer, httpx,
    websockets, uvicorn, the Hermes gateway) and, afterwards, scan the log text, the log
    records' messages/arguments and everything written to fd 1/2 for a bot key."""
    caplog.set_level(logging.DEBUG)
    keys: list[str] = []
    yield keys
    out, err = capfd.readouterr()
    # caplog.text / caplog.records only hold the CURRENT phase (teardown here): collect
    # the records of setup, call and teardown, formatted (with tracebacks) the way any
    # log handler would write them.
    haystack = "\n".join([*_formatted_records(caplog), out, err])
    # The scan must be able to fail: every key this test used matches the pattern.
    assert all(KEY_RE.fullmatch(k) for k in keys), "KEY_RE does not match the keys of this test"
    leaked = len(KEY_RE.findall(haystack)) + sum(haystack.count(k) for k in keys)
    assert leaked == 0, f"{leaked} occurrence(s) of a Chatto bot key in the captured logs/output"


def _formatted_records(caplog) -> list[str]:
    fmt = logging.Formatter("%(levelname)s %(name)s %(message)s")
    texts = []
    for r in [*caplog.get_records("setup"), *caplog.get_records("call"), *caplog.records]:
        try:
            texts.append(fmt.format(r))
        except Exception:
            texts.append(f"{r.name} {r.msg} {r.args!r}")
    return texts


# ---------------------------------------------------------------------------------------
# recorders


@dataclass(frozen=True)
class Row:
    """One RPC as the server handled it: who (label of the bearer), as whom (authenticated
    user), what, where (room id or "")."""

    method: str
    who: str
    user: str | None
    room: str


@dataclass
class Prof:
    """One Hermes profile serving one Chatto bot."""

    name: str
    home: Path
    bot_id: str
    login: str
    key: str = field(repr=False)
    channel: str
    channel_name: str
    dm_alice: str
    dm_bob: str

    @property
    def rooms(self) -> set[str]:
        return {self.channel, self.dm_alice, self.dm_bob}


class Mux:
    """A LocalChatto with one bot per profile, the profiles on disk, and a real
    ``GatewayRunner`` with multiplexing started the way ``GatewayRunner.start`` does it."""

    def __init__(self, root: Path, monkeypatch, keys_out: list[str]):
        self.root = root
        self.mp = monkeypatch
        self.keys_out = keys_out
        self.srv: Any = None
        self.alice: Any = None
        self.bob: Any = None
        self.profiles: dict[str, Prof] = {}
        self.rows: list[Row] = []
        self.client_rows: list[tuple[str, str, str]] = []  # (profile scope at send, key label, method)
        self.runner: Any = None
        self.agent = ProfileAgent()
        self._multiplex_prev: bool | None = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- server + world

    async def start_server(self) -> None:
        from chatto_local import LocalChatto

        self.srv = LocalChatto()
        self._instrument_server()
        await self.srv.start("127.0.0.1", 0)
        self.alice = self.srv.create_user("alice", "Alice")
        self.bob = self.srv.create_user("bob", "Bob")

    def _instrument_server(self) -> None:
        from chatto_local import rpc

        srv = self.srv
        orig_record = srv._record

        def record(procedure: str, token: str | None) -> None:
            _REQ_TOKEN.set(token)
            orig_record(procedure, token)

        srv._record = record

        def wrap(proc: str, handler):
            def wrapped(ctx, req):
                room = req.room_id if "room_id" in req.DESCRIPTOR.fields_by_name else ""
                with self._lock:
                    self.rows.append(Row(proc.rsplit("/", 1)[-1], self.label(_REQ_TOKEN.get()), ctx.user_id, room))
                return handler(ctx, req)

            return wrapped

        for proc, (cls, handler, public) in list(rpc.METHODS.items()):
            self.mp.setitem(rpc.METHODS, proc, (cls, wrap(proc, handler), public))

        import httpx

        orig_send = httpx.AsyncClient.send
        mux = self

        async def send(client, request, *a, **kw):
            if request.url.port == mux.srv.port and "/api/connect/" in request.url.path:
                from hermes_cli.profiles import get_active_profile_name

                auth = request.headers.get("authorization", "")
                tok = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
                mux.client_rows.append((get_active_profile_name(), mux.label(tok), request.url.path.rsplit("/", 1)[-1]))
            return await orig_send(client, request, *a, **kw)

        self.mp.setattr(httpx.AsyncClient, "send", send)

    def label(self, token: str | None) -> str:
        """Profile name owning a bot key; ``"human"`` for a human's bearer, ``"none"``
        without a bearer, ``"unknown"`` otherwise. Never returns the token."""
        if not token:
            return "none"
        for p in self.profiles.values():
            if token == p.key:
                return p.name
        for u in (self.alice, self.bob):
            if u is not None and token in getattr(u, "tokens", ()):
                return "human"
        return "unknown"

    def add_bot(self, profile: str, login: str, channel_name: str) -> Prof:
        from chatto_local.state import BOT_USUAL_PERMISSIONS

        srv = self.srv
        bot, key = srv.create_bot(login, login.replace("_", " ").title())
        srv.grant(None, bot.id, *BOT_USUAL_PERMISSIONS)
        chan = srv.create_channel(channel_name, [self.alice.id, self.bob.id, bot.id], created_by=self.alice.id)
        srv.grant(chan, bot.id, *BOT_USUAL_PERMISSIONS)
        home = self.root if profile == "default" else self.root / "profiles" / profile
        p = Prof(
            name=profile,
            home=home,
            bot_id=bot.id,
            login=login,
            key=key,
            channel=chan,
            channel_name=channel_name,
            dm_alice=srv.open_dm(self.alice.id, bot.id),
            dm_bob=srv.open_dm(self.bob.id, bot.id),
        )
        self.profiles[profile] = p
        self.keys_out.append(key)
        return p

    def room_owner(self, room: str) -> str | None:
        for p in self.profiles.values():
            if room in p.rooms:
                return p.name
        return None

    # ---------------------------------------------------------------- profiles on disk

    def write_profile(self, p: Prof, *, key: str | None = "own") -> None:
        """``config.yaml`` (+ ``gateway.multiplex_profiles: true`` for the default profile)
        and ``.env``. ``key="own"``: the profile's bot key; ``None``: no key line; any
        other value: that key (duplicate-credential scenario)."""
        p.home.mkdir(parents=True, exist_ok=True)
        top = {"gateway": {"multiplex_profiles": True}} if p.name == "default" else {}
        write_hermes_config(p.home, platform={"enabled": True}, top=top)
        self.write_env(p, key=key)

    def write_env(self, p: Prof, *, key: str | None = "own") -> None:
        env = {
            "CHATTO_URL": self.srv.base_url,
            "CHATTO_ALLOW_ALL_USERS": "true",
            "CHATTO_HOME_CHANNEL": p.channel,
            "CHATTO_WIRE_LOG_LEVEL": "DEBUG",
        }
        if key is not None:
            env["CHATTO_BOT_KEY"] = p.key if key == "own" else key
        (p.home / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
        if p.name == "default":
            # A real gateway process has the default profile's .env in os.environ
            # (gateway/run.py load_hermes_dotenv at import); its primary adapters are
            # built unscoped and read it from there (compat.get_secret fallback).
            for k, v in env.items():
                self.mp.setenv(k, v)

    # ---------------------------------------------------------------- gateway

    async def start_gateway(self) -> int:
        """Build the runner like ``hermes gateway run`` (``load_gateway_config_for_runner``),
        start the primary adapter like ``GatewayRunner.start`` does, then the host's own
        ``_start_secondary_profile_adapters``. Returns the number of secondary adapters
        that connected."""
        from agent import secret_scope
        from gateway.config import Platform
        from gateway.run import GatewayRunner, load_gateway_config_for_runner
        from hermes_cli.plugins import discover_plugins

        from hermes_chatto.config import clear_settings_cache

        clear_settings_cache()
        discover_plugins(force=True)
        agent = self.agent

        async def fake_inner(runner, message, context_prompt, history, source, session_id, session_key=None, **kw):
            return await agent.run(runner, message, context_prompt, history, source, session_id, session_key, **kw)

        self.mp.setattr(GatewayRunner, "_run_agent_inner", fake_inner)
        # Loopback only: keep the host's command-scanner from trying to download its binary.
        self.mp.setenv("TIRITH_ENABLED", "false")
        self._multiplex_prev = secret_scope.is_multiplex_active()
        cfg = load_gateway_config_for_runner()
        assert cfg.multiplex_profiles is True
        runner = GatewayRunner(cfg)
        self.runner = runner
        assert secret_scope.is_multiplex_active()
        plat = Platform("chatto")
        pconfig = cfg.platforms[plat]
        assert pconfig.enabled
        # GatewayRunner.start(), primary loop (0.19.0 run.py), minus unrelated start-up work.
        adapter = runner._create_adapter(plat, pconfig)
        assert adapter is not None, "registry refused to create the default profile's Chatto adapter"
        wire_adapter(runner, adapter)
        ok = await runner._connect_adapter_with_timeout(adapter, plat)
        assert ok, f"default profile's adapter did not connect: {adapter.fatal_error_message}"
        runner.adapters[plat] = adapter
        runner._running = True
        return await runner._start_secondary_profile_adapters()

    def adapter(self, profile: str):
        from gateway.config import Platform

        plat = Platform("chatto")
        if profile == "default":
            return self.runner.adapters.get(plat)
        return self.runner._profile_adapters.get(profile, {}).get(plat)

    def all_adapters(self) -> list:
        out = list(self.runner.adapters.values()) if self.runner else []
        for m in self.runner._profile_adapters.values() if self.runner else []:
            out.extend(m.values())
        return out

    async def idle(self, timeout: float = 20.0) -> None:
        await wait_for(
            lambda: all(not a._active_sessions for a in self.all_adapters()) and not self.runner._running_agents,
            timeout=timeout,
            what="all profiles idle",
        )

    async def close(self) -> None:
        try:
            if self.runner is not None:
                self.runner._running = False
                for ad in self.all_adapters():
                    try:
                        await ad.cancel_background_tasks()
                    except Exception:
                        pass
                    try:
                        await ad.disconnect()
                    except Exception:
                        pass
        finally:
            if self._multiplex_prev is not None:
                from agent import secret_scope

                secret_scope.set_multiplex_active(self._multiplex_prev)
            if self.srv is not None:
                await self.srv.stop()

    # ---------------------------------------------------------------- observations

    def bot_messages(self, p: Prof) -> list[Any]:
        """Every non-echo message the profile's bot authored, anywhere on the server."""
        with self.srv.state.lock:
            return [m for m in self.srv.state.messages.values() if m.actor_id == p.bot_id and not m.echo_of_event_id]

    def replies_to(self, p: Prof, room: str, trigger_id: str | None) -> list[Any]:
        """The bot's messages in ``room``: in the thread of ``trigger_id`` (channel) or
        flat (DM, ``trigger_id=None``)."""
        return [m for m in self.bot_messages(p) if m.room_id == room and m.thread_root_event_id == (trigger_id or "")]

    def assert_every_request_attributed(self) -> None:
        """Per request: the bearer is a bot key of one of the profiles; the authenticated
        user is that bot; the room the request touched (if any) is one of that bot's
        rooms. Per request on the client side: the key that left is the key of the
        profile whose scope was active. Per realtime socket: a bot of a profile."""
        assert self.srv.requests, "no RPC reached the server"
        labels = {self.label(r.token) for r in self.srv.requests}
        assert labels <= set(self.profiles), f"requests with non-profile credentials: {labels}"
        bots = {p.name: p.bot_id for p in self.profiles.values()}
        bad = []
        for r in list(self.rows):
            if r.who not in bots or r.user != bots[r.who]:
                bad.append(r)
            elif r.room and self.room_owner(r.room) != r.who:
                bad.append(Row(r.method, r.who, r.user, f"{r.room} (owned by {self.room_owner(r.room)})"))
        assert not bad, "requests carrying the wrong profile's key:\n" + "\n".join(map(str, bad))
        wrong = [row for row in self.client_rows if row[0] != row[1]]
        assert not wrong, "(profile scope, key used, method) mismatches:\n" + "\n".join(map(str, wrong))
        hello_users = {u for u, kind in self.srv.realtime_hellos}
        assert hello_users <= {p.bot_id for p in self.profiles.values()}


@pytest.fixture()
async def mux(hermes_home, monkeypatch, no_key_in_logs):
    m = Mux(hermes_home, monkeypatch, no_key_in_logs)
    await m.start_server()
    try:
        yield m
    finally:
        await m.close()


def _scope(home: Path):
    from gateway.run import _profile_runtime_scope

    return _profile_runtime_scope(home)


def _tool_in_scope(home: Path, args: dict) -> dict:
    """``chatto_send_message`` called from a worker thread under a profile's scope (what
    the agent's tool executor does for a turn of that profile)."""
    from hermes_chatto.tools import chatto_send_message

    with _scope(home):
        return json.loads(chatto_send_message(args))


async def _standalone(p: Prof, room: str, text: str) -> dict:
    """The REGISTERED ``standalone_sender_fn`` (cron / ``hermes send`` path) under the
    profile's scope, with the profile's own ``PlatformConfig``."""
    from gateway.config import Platform, load_gateway_config
    from gateway.platform_registry import platform_registry

    entry = platform_registry.get("chatto")
    assert entry is not None and entry.standalone_sender_fn is not None
    with _scope(p.home):
        pconfig = load_gateway_config().platforms[Platform("chatto")]
        return await entry.standalone_sender_fn(pconfig, room, text)


# ---------------------------------------------------------------------------------------
# 1. traffic in both profiles at once


async def test_two_profiles_traffic_at_once_every_request_carries_its_profiles_key(mux):
    main = mux.add_bot("default", "main_bot", "main-room")
    beta = mux.add_bot("beta", "beta_bot", "beta-room")
    mux.write_profile(main)
    mux.write_profile(beta)
    assert await mux.start_gateway() == 1
    a_main, a_beta = mux.adapter("default"), mux.adapter("beta")
    assert a_main is not None and a_beta is not None and a_main is not a_beta
    assert (a_main.bot_user_id, a_beta.bot_user_id) == (main.bot_id, beta.bot_id)
    assert a_main.is_connected and a_beta.is_connected

    # Eight turns (two channel mentions + two DMs per profile), all posted at once from
    # several threads; the fake model holds every turn until all eight are in flight.
    mux.agent.expect = 8
    srv = mux.srv
    A, B = mux.alice.id, mux.bob.id
    posts = []
    for p, other in ((main, beta), (beta, main)):
        posts += [
            (p, A, p.channel, f"@{p.login} q-{p.name}-chan-alice", True),
            (p, B, p.channel, f"@{p.login} q-{p.name}-chan-bob", True),
            (p, A, p.dm_alice, f"q-{p.name}-dm-alice TOOL->{p.channel_name}", False),
            (p, B, p.dm_bob, f"q-{p.name}-dm-bob TOOL->{other.channel_name}", False),
        ]
    sent = await asyncio.gather(*(asyncio.to_thread(srv.post, user, room, body) for _p, user, room, body, _c in posts))
    # Cross-talk: a mention of main's bot in beta's room (main's bot is not a member; beta's
    # bot is not addressed) — nobody answers.
    stray = srv.post(A, beta.channel, f"@{main.login} are you here? q-stray")

    triggers = [
        (p, room, m.event_id if is_chan else None, body)
        for (p, _u, room, body, is_chan), m in zip(posts, sent, strict=True)
    ]
    await wait_for(
        lambda: all(mux.replies_to(p, room, tid) for p, room, tid, _b in triggers),
        timeout=30,
        what="a reply to every trigger",
    )
    await mux.idle()

    # Each trigger: exactly one reply, by its own bot, in its own room/thread, from a turn
    # the host ran in that profile's scope.
    for p, room, tid, body in triggers:
        replies = mux.replies_to(p, room, tid)
        assert len(replies) == 1, (p.name, room, len(replies))
        tag = body.split()[1] if tid else body.split()[0]
        (call,) = [c for c in mux.agent.calls if tag in c.message]
        # group turns reach the model as "[Alice] <text>" (host's shared-session prefix)
        assert call.message.endswith(body) and (call.chat_id, call.thread_id) == (room, tid)
        assert replies[0].body == f"[{p.name}] pong: {call.message}", replies[0].body
    assert len(mux.agent.calls) == 8
    for c in mux.agent.calls:
        owner = mux.room_owner(c.chat_id)
        assert owner is not None and c.profile == owner, (c.profile, owner)
        assert f"q-{owner}-" in c.message
        if owner != "default":
            assert c.source_profile == owner  # stamped by _make_profile_message_handler
    assert not any("q-stray" in c.message for c in mux.agent.calls)
    assert (
        mux.replies_to(main, beta.channel, stray.event_id) == mux.replies_to(beta, beta.channel, stray.event_id) == []
    )

    # In-turn tool sends: own room posted with the profile's bot; the other profile's room
    # refused (the bot is not a member) without any request to it.
    tool_calls = {c.message.split()[0]: c.tool for c in mux.agent.calls if c.tool is not None}
    for p in (main, beta):
        own = tool_calls[f"q-{p.name}-dm-alice"]
        assert own.get("ok") and own["room_id"] == p.channel, own
        posted = [m for m in mux.bot_messages(p) if m.id in own["message_ids"]]
        assert [(m.room_id, m.body) for m in posted] == [(p.channel, f"tool post by {p.name}")]
        other = tool_calls[f"q-{p.name}-dm-bob"]
        assert "error" in other and "not a member" in other["error"], other

    # Tool and standalone sends outside turns, both profiles at once, each under its scope.
    t_main, t_beta, s_main, s_beta = await asyncio.gather(
        asyncio.to_thread(_tool_in_scope, main.home, {"room": main.channel_name, "text": "tool outside turn main"}),
        asyncio.to_thread(_tool_in_scope, beta.home, {"room": beta.channel_name, "text": "tool outside turn beta"}),
        _standalone(main, main.channel, "standalone from main"),
        _standalone(beta, beta.channel, "standalone from beta"),
    )
    for p, t, s in ((main, t_main, s_main), (beta, t_beta, s_beta)):
        assert t.get("ok"), t
        assert s.get("success"), s
        ids = set(t["message_ids"]) | set(s["message_ids"])
        assert {(m.room_id, m.actor_id) for m in mux.bot_messages(p) if m.id in ids} == {(p.channel, p.bot_id)}
        assert len([m for m in mux.bot_messages(p) if m.id in ids]) == 2

    # Every request so far carried the key of the profile that made it.
    assert {"CreateMessage", "GetViewer", "ListRooms"} <= {r.method for r in mux.rows}
    assert {r.who for r in mux.rows if r.method == "CreateMessage"} == {"default", "beta"}
    mux.assert_every_request_attributed()
    assert {u for u, _k in srv.realtime_hellos} == {main.bot_id, beta.bot_id}

    # Negative control: a standalone send under beta's scope aimed at main's room leaves with
    # BETA's key (and the server refuses it: beta's bot is not a member there).
    n = len(mux.rows)
    res = await _standalone(beta, main.channel, "wrong room on purpose")
    assert "error" in res and not res.get("success"), res
    attempted = [r for r in mux.rows[n:] if r.room == main.channel]
    assert attempted and {r.who for r in attempted} == {"beta"}
    assert not [m for m in mux.bot_messages(beta) if m.room_id == main.channel]
    assert not [m for m in mux.bot_messages(main) if m.body == "wrong room on purpose"]


# ---------------------------------------------------------------------------------------
# 2. duplicate credentials


async def test_two_profiles_with_the_same_bot_key_the_host_refuses_the_duplicate(mux, caplog):
    from gateway.config import Platform
    from gateway.run import GatewayRunner

    main = mux.add_bot("default", "main_bot", "main-room")
    beta = mux.add_bot("beta", "beta_bot", "beta-room")
    # gamma is configured with the DEFAULT profile's key, delta with beta's key (copies of
    # those profiles under another name and home; not registered as profiles of their own).
    gamma = dataclasses.replace(main, name="gamma", home=mux.root / "profiles" / "gamma")
    delta = dataclasses.replace(beta, name="delta", home=mux.root / "profiles" / "delta")
    for p in (main, beta, gamma, delta):
        mux.write_profile(p)

    connected = await mux.start_gateway()
    assert connected == 1
    plat = Platform("chatto")
    assert set(mux.runner._profile_adapters["beta"]) == {plat}
    assert mux.runner._profile_adapters.get("gamma", {}) == {}
    assert mux.runner._profile_adapters.get("delta", {}) == {}

    # The credential is where the host's check looks, as a log-safe fingerprint.
    fp_main = GatewayRunner._adapter_credential_fingerprint(mux.adapter("default"))
    fp_beta = GatewayRunner._adapter_credential_fingerprint(mux.adapter("beta"))
    assert fp_main and fp_beta and fp_main != fp_beta
    assert main.key not in repr(mux.adapter("default").token) and main.key not in f"{mux.adapter('default').token}"

    refusals = [r.getMessage() for r in caplog.records if "same credential" in r.getMessage()]
    assert any("'default' and 'gamma'" in m for m in refusals), refusals
    assert any("'beta' and 'delta'" in m for m in refusals), refusals

    # Each bot is served exactly once: one realtime socket, one GetViewer per key.
    hellos = [u for u, _k in mux.srv.realtime_hellos]
    assert sorted(hellos) == sorted([main.bot_id, beta.bot_id])
    assert sorted(r.who for r in mux.rows if r.method == "GetViewer") == ["beta", "default"]
    # ... and still answers (once) in its own room.
    m = mux.srv.post(mux.alice.id, beta.dm_alice, "q-beta-after-dup")
    await wait_for(lambda: mux.replies_to(beta, beta.dm_alice, None), what="beta's reply")
    await mux.idle()
    assert [r.body for r in mux.replies_to(beta, beta.dm_alice, None)] == ["[beta] pong: q-beta-after-dup"]
    assert m.event_id
    mux.assert_every_request_attributed()


# ---------------------------------------------------------------------------------------
# 3. a key added later


async def test_profile_whose_key_arrives_later_starts_without_restarting_the_others(mux, caplog):
    """hermes-agent 0.19.0 has no watcher for a profile's ``.env``: a secondary profile whose
    adapter could not be created at start-up (no key → ``validate_config`` False →
    ``_create_adapter`` returns None) is not retried by the host (the reconnect loop only
    exists for adapters that connected and then hit a fatal error). What does run later
    in the same process, without touching the other profiles, is (a) every stand-alone
    send (cron, ``hermes send``), which resolves the settings at call time, and (b) the
    host's per-profile start ``_start_one_profile_adapters(name, home, claimed)`` — the
    only entry point 0.19.0 has for bringing one profile's adapters up. Both must see the
    key once it is written, i.e. the plugin must not have cached the key-less resolution."""
    from gateway.config import Platform

    from hermes_chatto.config import ChattoConfigError, load_settings

    main = mux.add_bot("default", "main_bot", "main-room")
    beta = mux.add_bot("beta", "beta_bot", "beta-room")
    late = mux.add_bot("late", "late_bot", "late-room")
    mux.write_profile(main)
    mux.write_profile(beta)
    mux.write_profile(late, key=None)

    assert await mux.start_gateway() == 1
    plat = Platform("chatto")
    assert mux.runner._profile_adapters.get("late", {}) == {}
    assert mux.adapter("beta") is not None
    assert any(
        "bot_key" in r.getMessage() and "not set" in r.getMessage()
        for r in caplog.records
        if r.name.startswith("hermes_plugins.chatto")
    ), "the missing key was not reported"
    assert not [r for r in mux.rows if r.who == "late"]

    # Not configured yet, as seen by cron / hermes send and by the agent tool of that
    # profile (no live adapter in its scope → the tool's own short-lived client path).
    res = await _standalone(late, late.channel, "too early")
    assert "error" in res and "not configured" in res["error"], res
    tool = await asyncio.to_thread(_tool_in_scope, late.home, {"room": late.channel_name, "text": "too early"})
    assert "error" in tool and "bot_key" in tool["error"], tool
    with _scope(late.home):
        with pytest.raises(ChattoConfigError):
            load_settings(None)

    a_main, a_beta = mux.adapter("default"), mux.adapter("beta")
    rt_main, rt_beta = a_main._realtime, a_beta._realtime
    connects = (rt_main.stats["connects"], rt_beta.stats["connects"])
    viewer_calls = len([r for r in mux.rows if r.method == "GetViewer"])

    # The operator adds the key to the late profile's .env (no process restart).
    mux.write_env(late, key="own")

    res = await _standalone(late, late.channel, "standalone after the key was added")
    assert res.get("success"), res
    tool = await asyncio.to_thread(
        _tool_in_scope, late.home, {"room": late.channel_name, "text": "tool after the key was added"}
    )
    assert tool.get("ok"), tool
    assert {(m.room_id, m.body) for m in mux.bot_messages(late)} == {
        (late.channel, "standalone after the key was added"),
        (late.channel, "tool after the key was added"),
    }
    with _scope(late.home):
        assert load_settings(None).bot_user_id == late.bot_id

    claimed = {}
    for name in ("default", "beta"):
        fp = mux.runner._adapter_credential_fingerprint(mux.adapter(name))
        claimed[(plat, fp)] = name
    n = await mux.runner._start_one_profile_adapters("late", late.home, claimed)
    assert n == 1
    a_late = mux.adapter("late")
    assert a_late is not None and a_late.is_connected and a_late.bot_user_id == late.bot_id

    # The other profiles were not restarted: same adapter objects, same realtime sessions,
    # no new socket, no new GetViewer with their keys.
    assert mux.adapter("default") is a_main and mux.adapter("beta") is a_beta
    assert (a_main._realtime, a_beta._realtime) == (rt_main, rt_beta)
    assert (rt_main.stats["connects"], rt_beta.stats["connects"]) == connects
    new_viewers = [r.who for r in mux.rows if r.method == "GetViewer"][viewer_calls:]
    assert new_viewers == ["late"]

    # All three answer, each in its own room, at once.
    mux.agent.expect = len(mux.agent.calls) + 3
    mux.agent.all_started = asyncio.Event()
    trig = await asyncio.gather(
        asyncio.to_thread(mux.srv.post, mux.alice.id, late.dm_alice, "q-late-dm"),
        asyncio.to_thread(mux.srv.post, mux.alice.id, main.dm_alice, "q-default-dm"),
        asyncio.to_thread(mux.srv.post, mux.bob.id, beta.channel, f"@{beta.login} q-beta-chan"),
    )
    await wait_for(
        lambda: (
            mux.replies_to(late, late.dm_alice, None)
            and mux.replies_to(main, main.dm_alice, None)
            and mux.replies_to(beta, beta.channel, trig[2].event_id)
        ),
        timeout=30,
        what="three replies",
    )
    await mux.idle()
    assert [m.body for m in mux.replies_to(late, late.dm_alice, None)] == ["[late] pong: q-late-dm"]
    assert [m.body for m in mux.replies_to(main, main.dm_alice, None)] == ["[default] pong: q-default-dm"]
    assert len(mux.replies_to(beta, beta.channel, trig[2].event_id)) == 1
    assert {r.who for r in mux.rows if r.method == "CreateMessage"} == {"default", "beta", "late"}
    mux.assert_every_request_attributed()
    assert {u for u, _k in mux.srv.realtime_hellos} == {main.bot_id, beta.bot_id, late.bot_id}


# ---------------------------------------------------------------------------------------
# 4. key fragments in DEBUG logs (the literal-key scan of every test above cannot see them)


def _hex_windows(secret: str, width: int = 6) -> set[str]:
    """Every ``width``-byte window of ``secret`` as websockets prints frame bytes
    (``"63 68 74 ..."``)."""
    raw = secret.encode()
    return {" ".join(f"{b:02x}" for b in raw[i : i + width]) for i in range(len(raw) - width + 1)}


async def test_debug_logging_does_not_expose_pieces_of_the_bot_keys(mux, caplog):
    """Each profile's realtime socket starts with ``hello`` (chatto-protocol §3), a frame
    that is ``0a 31 08 02 12 2d`` + the bot key. websockets logs every frame at DEBUG as
    hex — the first 16 and the LAST 8 payload bytes — so with DEBUG logging on, the end of
    every profile's key secret lands in the gateway log. Client side only: the
    ``uvicorn.*`` records are the local test server's, not the plugin's."""
    main = mux.add_bot("default", "main_bot", "main-room")
    beta = mux.add_bot("beta", "beta_bot", "beta-room")
    mux.write_profile(main)
    mux.write_profile(beta)
    assert await mux.start_gateway() == 1
    assert mux.srv.realtime_hellos, "no realtime hello was sent"
    lines = [t for t in _formatted_records(caplog) if not t.split(" ", 2)[1].startswith("uvicorn")]
    exposed: dict[str, set[str]] = {}
    for p in (main, beta):
        windows = _hex_windows(p.key.split(".", 1)[1])
        for t in lines:
            if any(w in t for w in windows):
                exposed.setdefault(p.name, set()).add(t.split(" ", 2)[1])
    assert not exposed, f"hex-encoded pieces of the bot key secret in DEBUG logs (profile -> loggers): {exposed}"
