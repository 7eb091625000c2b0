"""Reliability under faults (issue 8): the wire layer, the local Chatto server and the real
adapter + ``GatewayRunner`` (only ``GatewayRunner._run_agent`` stubbed) under socket drops,
projection resets, stale cursors, gateway restarts, garbage frames, a revoked key and
failing ``CreateMessage`` calls.

Cases (issue 8 "Fault suite"):

1. 20 socket drops at random points during a burst of 2,000 messages across 10 rooms
   and threads → every message becomes exactly one turn or one block line.
2. ``projection_reset_required`` and a 25-hour-old resume cursor mid-stream → the full
   reset is handled, nothing re-dispatched.
3. gateway stopped and restarted during a burst → same guarantee as 1 for every message the
   server accepted.
4. 10,000 mutated / truncated / oversized frames → decoder, classifier and ingress never
   crash; a live socket that receives garbage keeps working.
5. revoked key mid-session → one fatal, operator-visible error, connection attempts
   counted (no reconnect storm).
6. ``CreateMessage`` failures: slow mode on chunk 2, timeout after send on chunk 3 → no chunk
   delivered twice; the errors say which chunk and whether it may have landed.
7. the logs of every test in this file contain no bot key (autouse fixture).

Everything is loopback (``LocalChatto`` on 127.0.0.1:0); randomness is seeded; loops are
bounded; waits are condition-based with timeouts (no fixed sleeps). The reconnect backoff
of the realtime session is shortened in 1–3 (``fast_reconnect``) so that 20 drops fit the
time budget; the backoff itself is tested in ``tests/test_realtime.py``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.fakes import FakeAgent
from support.host import Gateway, build_gateway, world_ids
from support.paths import WIRE_FIXTURES
from support.waits import wait_for

pytestmark = pytest.mark.timeout(170)

TOKEN_RE = re.compile(r"\btok\d{5}\b")

# ---------------------------------------------------------------------------------
# case 7: no key in any log line of this file (autouse)

_SECRETS: set[str] = set()


def remember_key(key: str) -> str:
    """Register a bot key so the autouse log scan looks for it (whole key and secret part)."""
    if key:
        _SECRETS.add(key)
        _SECRETS.add(key.split(".", 1)[-1])
    return key


def _leaks(text: str) -> list[str]:
    found = []
    for s in _SECRETS:
        if len(s) >= 8 and s in text:
            found.append(s[:10] + "…")
    if _KEY_SHAPE.search(text):
        found.append("a cht_BK_<user>.<secret> shaped string")
    return found


_KEY_SHAPE = re.compile(r"cht_BK_[A-Za-z0-9]{6,}\.[A-Za-z0-9_-]{6,}")


@pytest.fixture(autouse=True)
def no_key_in_logs(caplog, capfd):
    """Case 7: capture every log record of the test at DEBUG (root logger; the wire loggers
    included) plus stdout/stderr, and fail if a bot key (or its secret part, or anything
    shaped like ``cht_BK_<user>.<secret>``) appears in any of them."""
    caplog.set_level(logging.DEBUG)
    for name in ("hermes_plugins.chatto", "gateway", "httpx"):
        caplog.set_level(logging.DEBUG, logger=name)
    # frame-level traces of the socket libraries are scanned by test_wire_debug_logs_hold_no_key_material
    for name in ("websockets", "httpcore", "uvicorn"):
        caplog.set_level(logging.INFO, logger=name)
    yield
    texts = [r.getMessage() for r in caplog.records]
    texts += [caplog.text]
    out, err = capfd.readouterr()
    texts += [out, err]
    leaks = sorted({leak for t in texts for leak in _leaks(t)})
    assert not leaks, f"bot key material in the logs/output of this test: {leaks}"


# ---------------------------------------------------------------------------------
# fixtures: a fast real gateway (offline model config) and a fast-reconnecting session

#: Hermes model config that resolves instantly without network (spec hermes-offline-agent
#: §2.2); the model is never called because ``_run_agent`` is stubbed.
OFFLINE_TOP = {
    "model": {
        "provider": "custom",
        "default": "fake-model",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-fake-local",
        "context_length": 131072,
    },
    "security": {"allow_lazy_installs": False, "tirith_enabled": False},
    "auxiliary": {"title_generation": {"enabled": False}},
    "agent": {"environment_probe": False},
    "memory": {"nudge_interval": 0},
    "skills": {"creation_nudge_interval": 0},
    "onboarding": {"profile_build": "off"},
}


@pytest.fixture()
def fast_reconnect(monkeypatch):
    """Shorten the realtime session's reconnect backoff (0.05 s, max 0.5 s) for sessions the
    adapter creates from now on (it imports ``RealtimeSession`` at connect time)."""
    import hermes_chatto.wire.realtime as rt

    base = rt.RealtimeSession

    class FastSession(base):
        def __init__(self, *a, **kw):
            kw.setdefault("reconnect_delay", 0.05)
            kw.setdefault("max_reconnect_delay", 0.5)
            super().__init__(*a, **kw)

    monkeypatch.setattr(rt, "RealtimeSession", FastSession)
    return FastSession


@pytest.fixture()
async def gw_factory(hermes_home, write_config, chatto_world, monkeypatch):
    """``await gw_factory(reply=..., extra=...)`` → a connected :class:`conftest.Gateway`:
    real ``GatewayRunner`` + real ``ChattoAdapter`` for ``chatto_world`` with the offline
    model config, every user allowed, ``_run_agent`` stubbed by a :class:`FakeAgent`
    (shared across restarts: pass ``agent=``). Torn down after the test."""
    made: list[Gateway] = []

    async def _build(*, reply: Any = "ack", extra: dict | None = None, agent: FakeAgent | None = None) -> Gateway:
        remember_key(world_ids(chatto_world)["bot_key"])
        gw = await build_gateway(
            chatto_world,
            monkeypatch,
            write_config,
            agent=agent or FakeAgent(reply),
            home_channel=False,
            env={"CUSTOM_BASE_URL": None},
            extra={"ack_reaction": "", **(extra or {})},
            top=OFFLINE_TOP,
        )
        made.append(gw)
        return gw

    try:
        yield _build
    finally:
        for gw in made:
            try:
                await gw.stop()
            except Exception:
                pass


def busy_state(gw: Gateway) -> dict[str, int]:
    """Counts of in-flight work: adapter active sessions / pending slots, runner running
    agents / FIFO-queued events (hermes-agent 0.19.0 attribute names)."""
    ad, run = gw.adapter, gw.runner
    queued = getattr(run, "_queued_events", None) or {}
    return {
        "active": len(ad._active_sessions),
        "pending": len(ad._pending_messages),
        "running": len(run._running_agents),
        "queued": sum(len(v) for v in queued.values()),
    }


def gateway_idle(gw: Gateway) -> bool:
    """No turn running or queued in the adapter or the runner."""
    return not any(busy_state(gw).values())


_LEDGERS: dict[int, tuple[list, int, dict[str, list[str]]]] = {}


def token_ledger(agent: FakeAgent) -> dict[str, list[str]]:
    """``token -> ["turn"|"block", ...]``: where each message token reached the agent —
    in a turn's own text (the trigger, possibly merged) or as an ``[Earlier in this
    thread]`` block line. Incremental (``agent.calls`` only grows), so polling it is cheap."""
    from chatto_local.scripted_model import earlier_thread_lines, split_context

    calls = agent.calls
    cached = _LEDGERS.get(id(agent))
    if cached is None or cached[0] is not calls or cached[1] > len(calls):
        cached = (calls, 0, {})
    _, done, ledger = cached
    for call in calls[done:]:
        _block, trigger = split_context(call.message)
        for t in TOKEN_RE.findall(trigger):
            ledger.setdefault(t, []).append("turn")
        for line in earlier_thread_lines(call.message):
            for t in TOKEN_RE.findall(line):
                ledger.setdefault(t, []).append("block")
    _LEDGERS[id(agent)] = (calls, len(calls), ledger)
    return ledger


def assert_exactly_once(agent: FakeAgent, expected: list[str]) -> Counter:
    """Every token in ``expected`` reached the agent exactly once (turn or block line);
    no other token appeared. Returns the Counter of ``turn``/``block``."""
    ledger = token_ledger(agent)
    lost = [t for t in expected if t not in ledger]
    dup = {t: v for t, v in ledger.items() if len(v) > 1}
    extra = sorted(set(ledger) - set(expected))
    assert not lost and not dup and not extra, (
        f"{len(lost)} lost {lost[:10]}, {len(dup)} duplicated {list(dup.items())[:5]}, "
        f"{len(extra)} unexpected {extra[:5]} (of {len(expected)}; {len(agent.calls)} agent calls); "
        f"{_newer_than_trigger(agent, expected)} block lines were posted AFTER their turn's trigger"
    )
    return Counter(v[0] for v in ledger.values())


def _newer_than_trigger(agent: FakeAgent, expected: list[str]) -> int:
    """How many block lines carry a message posted after the trigger of the turn whose
    block they are in (tokens are numbered in posting order)."""
    from chatto_local.scripted_model import earlier_thread_lines, split_context

    order = {t: i for i, t in enumerate(expected)}
    n = 0
    for call in list(agent.calls):
        _b, trigger = split_context(call.message)
        trig = [order[t] for t in TOKEN_RE.findall(trigger) if t in order]
        if not trig:
            continue
        for line in earlier_thread_lines(call.message):
            n += sum(1 for t in TOKEN_RE.findall(line) if order.get(t, -1) > max(trig))
    return n


class World:
    """10 channels (``general`` + 9) with alice, bob and the bot as members."""

    def __init__(self, srv):
        self.srv = srv
        w = srv.world
        self.alice, self.bot = w.alice_id, w.bot_id
        self.bob = srv.create_user("bob", "Bob").id
        srv.add_member(w.general_id, self.bob)
        self.rooms = [w.general_id] + [
            srv.create_channel(f"ops-{i}", [self.alice, self.bob, self.bot]) for i in range(9)
        ]
        self.n = 0
        self.tokens: list[str] = []
        self.where: dict[str, str] = {}  # token -> thread root ("" for a root message)

    def token(self) -> str:
        t = f"tok{self.n:05d}"
        self.n += 1
        self.tokens.append(t)
        return t

    def open_threads(self, per_room: int) -> list[tuple[str, str]]:
        """Root messages mentioning the bot (each one a turn that opens a thread)."""
        roots = []
        for room in self.rooms:
            for _ in range(per_room):
                m = self.srv.post(self.alice, room, f"@helper_bot new topic {self.token()}")
                roots.append((room, m.event_id))
        return roots

    def reply(self, rng: random.Random, roots) -> None:
        room, root = rng.choice(roots)
        who = self.alice if rng.random() < 0.6 else self.bob
        tok = self.token()
        self.where[tok] = root
        self.srv.post(who, room, f"more detail {tok}", thread_root_event_id=root)


def progress_of(gw: Gateway) -> tuple[int, ...]:
    """What moves while the gateway is getting somewhere: agent calls, messages that reached
    the agent, messages through ingress, realtime frames, events and (re)connects. The
    waits below fail when this stands still, not at a wall-clock deadline tuned on a quiet
    machine (issue 28: under CPU contention the burst needed longer than 30 s per socket)."""
    rt = gw.adapter._realtime
    st = rt.stats if rt is not None else {}
    return (
        len(gw.agent.calls),
        len(token_ledger(gw.agent)),
        gw.adapter.stats.get("dispatched", 0),
        st.get("frames", -1),
        st.get("events", -1),
        st.get("connects", -1),
        st.get("reconnects", -1),
    )


async def settle(gw: Gateway, world: World, timeout: float, quiet: float = 5.0, lag: int = 0) -> None:
    """Wait until every token (all but ``lag``) reached the agent and, for ``lag == 0``,
    the gateway is idle.

    Fails early when the system is quiescent - gateway idle and no new agent call, ledger
    entry or realtime frame for ``quiet`` seconds - while tokens are still missing (they
    will not come); when nothing moved (:func:`progress_of`) for ``timeout`` seconds while
    busy; and at the latest after ``3 * timeout`` seconds in all."""
    loop = asyncio.get_running_loop()
    cap = loop.time() + 3 * timeout
    last_sig, last_change = None, loop.time()
    while True:
        n = len(token_ledger(gw.agent))
        idle = gateway_idle(gw)
        if n >= len(world.tokens) - lag and (idle or lag):
            return
        sig = progress_of(gw)
        now = loop.time()
        if sig != last_sig:
            last_sig, last_change = sig, now
        elif idle and now - last_change > quiet:
            raise AssertionError(
                f"quiescent for {quiet:.0f} s with {len(world.tokens) - n} of "
                f"{len(world.tokens)} messages never reaching the agent"
            )
        if now - last_change > timeout or now > cap:
            why = f"no progress for {timeout:.0f} s" if now - last_change > timeout else f"{3 * timeout:.0f} s in all"
            raise AssertionError(
                f"timed out ({why}): {n} of {len(world.tokens)} messages reached the agent; in flight: {busy_state(gw)}"
            )
        await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------------
# case 4: garbage frames

FIXTURES = WIRE_FIXTURES


def _fixture_dir() -> Path:
    import os

    return Path(os.environ.get("CHATTO_WIRE_FIXTURES") or FIXTURES)


def _templates(rng: random.Random) -> list[bytes]:
    """Valid server frames to mutate: the golden protocol-4 fixtures (``tests/data/chatto-wire``)
    plus seeded ``message_posted`` frames of every shape a bot meets (roots, replies, echoes,
    mentions of the bot, other users and everyone, DMs)."""
    from hermes_chatto.wire.proto import chatto_pb2 as pb

    out = [p.read_bytes() for p in sorted((_fixture_dir() / "realtime" / "server").glob("*.bin"))]
    for i in range(40):
        f = pb.RealtimeServerFrame()
        ev = f.event
        ev.id = f"E{i:014d}"
        ev.actor_id = rng.choice(["Ualice000000000", "Ubot00000000000", "Uother000000000"])
        ev.cursor = f"c{i}"
        ev.created_at.seconds = 1_800_000_000 + i
        mp = ev.message_posted
        mp.room_id = rng.choice(["Rgeneral0000000", "Rdm00000000000a"])
        mp.room_kind = rng.choice([1, 2])
        if i % 3:
            mp.thread_root_event_id = f"E{rng.randrange(i + 1):014d}"
        if i % 7 == 0:
            mp.echo_of_event_id = f"E{i + 1:014d}"
        mp.body_plaintext = rng.choice(["@helper_bot hi", "hello `@helper_bot`", "> @helper_bot quoted", "x" * 300])
        m = mp.mentions.add()
        m.direct.user_id = rng.choice(["Ubot00000000000", "Ualice000000000"])
        m.includes_viewer = m.direct.user_id == "Ubot00000000000"
        if i % 5 == 0:
            mp.mentions.add().all.SetInParent()
        out.append(f.SerializeToString(deterministic=True))
    return out


def _mutate(rng: random.Random, data: bytes, templates: list[bytes]) -> bytes:
    """One seeded corruption of ``data``: bit flips, byte overwrite, truncation, insertion,
    slice duplication, splicing, a huge valid or lying length prefix, random bytes, or
    deep nesting."""
    b = bytearray(data)
    op = rng.randrange(10)
    if op == 0 and b:  # flip bits
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif op == 1 and b:  # overwrite a run
        i = rng.randrange(len(b))
        n = rng.randint(1, 32)
        b[i : i + n] = rng.randbytes(n)
    elif op == 2:  # truncate
        b = b[: rng.randrange(len(b) + 1)]
    elif op == 3:  # insert
        i = rng.randrange(len(b) + 1)
        b[i:i] = rng.randbytes(rng.randint(1, 64))
    elif op == 4 and b:  # duplicate a slice
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 200))
        b[j:j] = b[i:j]
    elif op == 5:  # splice two frames
        other = rng.choice(templates)
        b = b[: rng.randrange(len(b) + 1)] + other[rng.randrange(len(other) + 1) :]
    elif op == 6:  # oversized: a valid 1-3 MB body appended as an extra operation
        from hermes_chatto.wire.proto import chatto_pb2 as pb

        f = pb.RealtimeServerFrame()
        f.event.message_posted.body_plaintext = "x" * rng.randint(1 << 20, 3 << 20)
        b += f.SerializeToString(deterministic=True)
    elif op == 7:  # a length prefix that lies (claims far more than there is)
        b += bytes([0x0A, 0xFF, 0xFF, 0xFF, 0x7F]) + rng.randbytes(rng.randint(0, 16))
    elif op == 8:  # pure noise
        b = bytearray(rng.randbytes(rng.randint(0, 2048)))
    else:  # deep nesting of length-delimited field 1 (event)
        inner = b""
        for _ in range(rng.randint(50, 400)):
            inner = bytes([0x0A]) + _varint(len(inner)) + inner
        b = bytearray(inner)
    return bytes(b)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _random_message(rng: random.Random, msg, depth: int = 0) -> None:
    """Fill a protobuf message with seeded random but *valid* values (structure-aware
    fuzzing): random subsets of fields, one member per oneof, odd strings (empty, huge,
    control characters, RTL marks, emoji), extreme integers, nested messages to depth 6."""
    from google.protobuf.descriptor import FieldDescriptor as F

    strings = [
        "",
        "E",
        "@helper_bot",
        "\x00\x1b[31m",
        "\u202e/stop",
        "🙂" * 50,
        "tl:",
        "a" * 5000,
        "[Earlier in this thread]",
        "Ex" * 8,
        "\n\n> quote\n```\ncode",
    ]
    real = [o for o in msg.DESCRIPTOR.oneofs if len(o.fields) > 1 or not o.name.startswith("_")]
    chosen_oneofs = {o.name: rng.choice(o.fields) for o in real if o.fields}
    for field in msg.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.name not in chosen_oneofs:
            oneof = None  # proto3 ``optional``: a synthetic one-field oneof
        if oneof is not None and chosen_oneofs.get(oneof.name) is not field:
            continue
        if oneof is None and rng.random() < 0.4:
            continue
        repeated = field.is_repeated
        count = rng.randint(0, 3) if repeated else 1
        for _ in range(count):
            if field.type == F.TYPE_MESSAGE:
                if depth >= 6:
                    break
                if field.message_type.GetOptions().map_entry:
                    target = getattr(msg, field.name)
                    key = rng.choice(strings[:6])
                    vfield = field.message_type.fields_by_name["value"]
                    if vfield.type == F.TYPE_MESSAGE:
                        _random_message(rng, target[key], depth + 1)
                    else:
                        target[key] = rng.choice(strings)
                    continue
                sub = getattr(msg, field.name).add() if repeated else getattr(msg, field.name)
                _random_message(rng, sub, depth + 1)
                if not repeated:
                    sub.SetInParent()
                continue
            if field.type == F.TYPE_STRING:
                v = rng.choice(strings)
            elif field.type == F.TYPE_BOOL:
                v = rng.random() < 0.5
            elif field.type == F.TYPE_BYTES:
                v = rng.randbytes(rng.randint(0, 8))
            elif field.type == F.TYPE_ENUM:
                v = rng.choice([0, 1, 2, 7])
            elif field.type in (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64):
                v = rng.choice([0, -1, 1, 2**62, -(2**62)])
            elif field.type in (F.TYPE_UINT64, F.TYPE_FIXED64):
                v = rng.choice([0, 1, 2**63])
            elif field.type in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
                v = rng.choice([0, -1, 1, 2**31 - 1, -(2**31)])
            elif field.type in (F.TYPE_UINT32, F.TYPE_FIXED32):
                v = rng.choice([0, 1, 2**32 - 1])
            else:
                v = rng.random() * 1e12
            if field.message_type is None and field.full_name.endswith("nanos"):
                v = rng.choice([0, 999_999_999, -1, 2**31 - 1])
            try:
                if repeated:
                    getattr(msg, field.name).append(v)
                else:
                    setattr(msg, field.name, v)
            except (TypeError, ValueError):
                pass


def _garbage_corpus(seed: int, n: int) -> list[bytes]:
    """``n`` seeded bad frames: 70 % byte-level mutations of valid frames, 30 %
    structure-aware random frames (valid protobuf, nonsense content)."""
    from hermes_chatto.wire.proto import chatto_pb2 as pb

    rng = random.Random(seed)
    templates = _templates(rng)
    out = []
    for i in range(n):
        if i % 10 < 7:
            out.append(_mutate(rng, rng.choice(templates), templates))
        else:
            f = pb.RealtimeServerFrame()
            _random_message(rng, f)
            if rng.random() < 0.7:  # bias toward the event path
                f.event.id = rng.choice(["", "E" + "x" * 14])
                _random_message(rng, f.event, 1)
            out.append(f.SerializeToString(deterministic=True))
    return out


def test_10k_garbage_frames_never_crash_decoder_events_ingress():
    """Case 4: 10,000 mutated / truncated / oversized / random-but-valid frames go through
    decode_server_frame → event_of → ingress (decide on every message, the mention parser,
    the frontier's observe and its inert renderer). The only exception allowed is
    FrameDecodeError from the decoder."""
    from hermes_chatto.adapter.inbound import thin_message
    from hermes_chatto.frontier import ThreadFrontier, render_block
    from hermes_chatto.ingress import IngressContext, SeenSet, decide
    from hermes_chatto.wire import events as E
    from hermes_chatto.wire.frames import FrameDecodeError, decode_server_frame, event_of

    corpus = _garbage_corpus(seed=8, n=10_000)
    assert len(corpus) == 10_000
    assert sum(1 for d in corpus if len(d) > 1 << 20) >= 50, "oversized frames missing from the corpus"
    seen = SeenSet(5_000)

    async def no_fetch(*a, **kw):  # pragma: no cover - observe never reads
        raise AssertionError("observe must not read")

    frontier = ThreadFrontier(None, no_fetch, "Ubot00000000000")
    ctxs = [
        IngressContext(bot_user_id="Ubot00000000000", bot_login="helper_bot", room_kind=k, bot_in_thread=b)
        for k in ("channel", "dm", "")
        for b in (False, True)
    ]
    stats = Counter()
    crashes: dict[str, list[str]] = {}

    def crashed(stage: str, i: int, exc: BaseException) -> None:
        crashes.setdefault(stage, []).append(f"frame {i}: {type(exc).__name__}: {str(exc)[:80]}")

    for i, data in enumerate(corpus):
        try:
            frame = decode_server_frame(data)
        except FrameDecodeError as exc:
            if "\\x" in str(exc) or "b'" in str(exc):
                crashed("decode message leaks frame bytes", i, exc)
            stats["undecodable"] += 1
            continue
        except Exception as exc:  # noqa: BLE001 - the finding
            crashed("decode", i, exc)
            continue
        stats["decoded"] += 1
        if frame.WhichOneof("frame") != "event":
            continue
        try:
            ev = event_of(frame.event, "Ubot00000000000")
        except Exception as exc:  # noqa: BLE001
            crashed("event_of", i, exc)
            continue
        stats[type(ev).__name__] += 1
        if not isinstance(ev, E.MessagePosted):
            continue
        m = thin_message(ev)
        try:
            d = decide(m, ctxs[i % len(ctxs)], seen)
            stats["dispatch" if d.dispatch else "drop"] += 1
        except Exception as exc:  # noqa: BLE001
            crashed("ingress.decide", i, exc)
        try:
            frontier.observe(m, bool(i % 2))
        except Exception as exc:  # noqa: BLE001
            crashed("frontier.observe", i, exc)
        try:
            text = render_block([m], bot_user_id="Ubot00000000000", users={}, more_pending=False, max_bytes=4_000)
            assert len(text.encode()) <= 4_000, "block over its byte bound"
        except Exception as exc:  # noqa: BLE001
            crashed("frontier.render_block", i, exc)
    # the corpus really exercised every stage
    assert stats["undecodable"] >= 1_000, stats
    assert stats["decoded"] >= 3_000, stats
    assert stats["MessagePosted"] >= 300 and stats["dispatch"] >= 50 and stats["drop"] >= 100, stats
    assert not crashes, ({k: (len(v), v[:3]) for k, v in crashes.items()}, dict(stats))


def _socket_garbage(seed: int, n: int) -> list[bytes]:
    """Garbage safe to push down a live socket: frames that do not decode, or decode to a
    kind the session must shrug off (unknown frame kind, projection events with nonsense
    or unknown events, heartbeats with odd content). Real ``close``/``caught_up``/``snapshot``
    frames and durable events with a cursor are excluded: a server that sends those means them."""
    from hermes_chatto.wire.frames import FrameDecodeError, decode_server_frame

    out = []
    for data in _garbage_corpus(seed, n * 3):
        if len(data) > 1 << 20:
            continue
        try:
            f = decode_server_frame(data)
        except FrameDecodeError:
            out.append(data)
            continue
        kind = f.WhichOneof("frame")
        if kind in ("close", "caught_up", "snapshot"):
            continue
        if kind == "event" and f.event.WhichOneof("event") is not None and f.event.cursor:
            continue  # a real durable event: its cursor would be stored
        out.append(data)
        if len(out) >= n:
            break
    return out[:n]


async def test_live_session_survives_garbage_frames(chatto_world):
    """Case 4, live: 300 garbage frames pushed down a caught-up RealtimeSession by the
    local server; the session stays connected (one connection attempt in total), counts
    the undecodable ones, and the next real message arrives as a MessagePosted."""
    from hermes_chatto.wire import events as E
    from hermes_chatto.wire.realtime import RealtimeSession

    srv = chatto_world
    w = srv.world
    key = remember_key(srv.world.bot_key)
    got: list[Any] = []

    async def on_event(ev):
        got.append(ev)

    session = RealtimeSession(
        srv.base_url,
        key,
        on_event=on_event,
        bot_user_id=w.bot_id,
        reconnect_delay=0.05,
    )
    task = asyncio.create_task(session.run())
    try:
        await asyncio.wait_for(session.caught_up.wait(), 10)
        garbage = _socket_garbage(seed=44, n=300)
        assert len(garbage) == 300
        srv.hub.for_user(w.bot_id, lambda c: [c.send(g) for g in garbage])
        await wait_for(lambda: session.stats["frames"] >= 300, timeout=20, what="garbage frames received")
        msg = srv.post(w.alice_id, w.general_id, "@helper_bot still there?")
        await wait_for(
            lambda: any(isinstance(e, E.MessagePosted) and e.event_id == msg.event_id for e in got),
            timeout=10,
            what="the real message after the garbage",
        )
        assert not task.done(), "the session died on garbage"
        assert session.stats["connects"] == 1, session.stats
        assert session.stats["decode_errors"] >= 100, session.stats
        assert session.connected and session.caught_up.is_set()
    finally:
        await session.stop()
        await asyncio.wait_for(task, 10)


# ---------------------------------------------------------------------------------
# case 5: revoked key


def _bot_hellos(srv, bot_id: str) -> int:
    """Realtime ``hello`` frames the server received that carried a bot credential for
    ``bot_id`` or a rejected one (user id ``None``) - i.e. connection attempts by the bot."""
    return sum(1 for uid, kind in list(srv.realtime_hellos) if uid == bot_id or uid is None)


@pytest.mark.parametrize("when", ["live", "while_disconnected"])
async def test_revoked_key_is_one_fatal_error_no_reconnect_storm(chatto_world, when):
    """Case 5 at the session: the key is rotated while the socket is live (the server
    sends close{authentication_required, reconnect=false}) or while the socket is down
    (the reconnect's hello gets error{authentication_required, fatal}). ``run()`` raises
    ChattoCredentialError exactly once, after 1 resp. 2 connection attempts, and makes no
    further attempt (the server sees no more hellos)."""
    from hermes_chatto.wire.errors import ChattoCredentialError
    from hermes_chatto.wire.realtime import RealtimeSession

    srv = chatto_world
    w = srv.world
    key = remember_key(srv.world.bot_key)
    states: list[str] = []

    async def on_event(ev):
        return None

    session = RealtimeSession(
        srv.base_url,
        key,
        on_event=on_event,
        reconnect_delay=0.05,
        max_reconnect_delay=0.2,
        on_state=states.append,
    )
    task = asyncio.create_task(session.run())
    await asyncio.wait_for(session.caught_up.wait(), 10)
    assert _bot_hellos(srv, w.bot_id) == 1
    if when == "live":
        remember_key(srv.rotate_key(w.bot_id))
        expected_attempts = 1
    else:
        srv.drop_sockets(w.bot_id)
        remember_key(srv.rotate_key(w.bot_id))
        expected_attempts = 2
    with pytest.raises(ChattoCredentialError) as info:
        await asyncio.wait_for(task, 15)
    assert info.value.code == "authentication_required"
    assert "cht_BK_" not in str(info.value) and key not in repr(info.value)
    assert session.stats["connects"] == expected_attempts, session.stats
    # the run task is over: nothing can reconnect any more; the server agrees
    assert _bot_hellos(srv, w.bot_id) == expected_attempts
    assert states.count("failed") == 1 and states[-1] == "failed", states


async def test_revoked_key_through_the_gateway(gw_factory, chatto_world, caplog, monkeypatch):
    """Case 5 through the real adapter and GatewayRunner: rotating the key mid-session
    gives exactly one fatal error (code ``chatto_unauthenticated``, not retryable), visible
    to the operator as an ERROR log line and as the runner's platform status, the runner
    does not queue the platform for reconnection, and the bot made no further connection
    attempt."""
    srv = chatto_world
    w = srv.world
    gw = await gw_factory()
    calls: list[tuple] = []
    orig = gw.adapter._set_fatal_error

    def spy(code, message, *, retryable):
        calls.append((code, message, retryable))
        return orig(code, message, retryable=retryable)

    monkeypatch.setattr(gw.adapter, "_set_fatal_error", spy)
    hellos_before = _bot_hellos(srv, w.bot_id)
    remember_key(srv.rotate_key(w.bot_id))
    await wait_for(lambda: calls, timeout=10, what="the fatal error")
    from gateway.config import Platform

    plat = Platform("chatto")
    await wait_for(lambda: plat not in gw.runner.adapters, timeout=10, what="runner to take the adapter down")
    assert len(calls) == 1, calls
    code, message, retryable = calls[0]
    assert code == "chatto_unauthenticated" and retryable is False
    assert "key" in message.lower()
    assert plat not in getattr(gw.runner, "_failed_platforms", {}), "a revoked key must not be retried"
    assert _bot_hellos(srv, w.bot_id) == hellos_before, "the bot tried to reconnect with a revoked key"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and "unauthenticated" in r.getMessage()]
    assert errors, "no operator-visible ERROR line for the revoked key"


# ---------------------------------------------------------------------------------
# case 6: CreateMessage failures mid-reply


def _long_reply(n_chunks_target: int = 4) -> str:
    """~31 kB of prose with a fenced code block: four 9,000-byte chunks."""
    para = (
        "Step {i}: the payments worker drained the queue and the retry budget held; "
        "Schröder confirmed the replica lag stayed under 200 ms. "
    ) * 6
    parts = [para.format(i=i) + "\n\n" for i in range(n_chunks_target * 10)]
    parts.insert(12, "```python\n" + "\n".join(f"print({i})" for i in range(300)) + "\n```\n\n")
    return "".join(parts)


async def test_chunk2_slow_mode_chunk3_timeout_after_send_no_duplicates(chatto_world):
    """Case 6 on the one send path (``adapter.deliver_text`` → ``delivery.deliver_chunks``
    → ``ChattoClient.create_message``): a 4-chunk reply meets slow mode on chunk 2, then
    (after the operator lifts slow mode) a timeout after the write of chunk 3. Each report
    names the failed chunk and whether it may have landed; retries of the same text resume
    where it stopped and never re-post a chunk; the thread ends with every chunk exactly
    once, in order."""
    from hermes_chatto.adapter import deliver_text
    from hermes_chatto.delivery import split_body
    from hermes_chatto.wire.connect import ChattoClient
    from hermes_chatto.wire.errors import ChattoAmbiguousWriteError, ChattoResourceExhausted

    srv = chatto_world
    w = srv.world
    key = remember_key(srv.world.bot_key)
    text = _long_reply()
    chunks = split_body(text)
    assert len(chunks) == 4, [len(c.encode()) for c in chunks]
    root = srv.post(w.alice_id, w.general_id, "@helper_bot the long answer please")
    srv.set_slow_mode(w.general_id, 60)
    creates = lambda: len(srv.requests_for("/CreateMessage"))  # noqa: E731

    async with ChattoClient(srv.base_url, key, timeout=1.0) as client:
        # attempt 1: chunk 1 lands, chunk 2 hits slow mode
        r1 = await deliver_text(client, w.general_id, text, thread_root_event_id=root.event_id)
        assert r1.failed_index == 1 and len(r1.sent_ids) == 1, r1
        assert isinstance(r1.error, ChattoResourceExhausted)
        assert not r1.may_have_landed
        assert r1.retry_after is not None and 0 < r1.retry_after <= 61
        assert "chunk 2 of 4" in r1.describe() and "retry after" in r1.describe()
        assert creates() == 2

        # the operator lifts slow mode; the next CreateMessage after chunk 2 (= chunk 3)
        # is applied by the server but its response never comes (client timeout 1 s)
        srv.set_slow_mode(w.general_id, 0)
        srv.fail_rpc("MessageService/CreateMessage", nth=2, code="hang", after_write=True, hang_seconds=3)
        r2 = await deliver_text(client, w.general_id, text, thread_root_event_id=root.event_id)
        assert r2.failed_index == 2, r2
        assert isinstance(r2.error, ChattoAmbiguousWriteError) and r2.may_have_landed
        assert "chunk 3 of 4" in r2.describe() and "may have landed" in r2.describe()
        assert len(r2.sent_ids) == 2 and r2.sent_ids[0] == r1.sent_ids[0]
        assert creates() == 4  # chunk 2 once more (it had been refused) + chunk 3 once

        # attempt 3 resumes after chunk 3 (it may have landed: never blindly repeated)
        r3 = await deliver_text(client, w.general_id, text, thread_root_event_id=root.event_id)
        assert r3.ok, r3.describe()
        assert creates() == 5

    bodies = [m.body for m in srv.thread_messages(w.general_id, root.event_id) if m.author_id == w.bot_id]
    assert bodies == chunks, f"thread has {len(bodies)} bot messages; expected the 4 chunks once each, in order"
    assert len(set(bodies)) == len(bodies)


async def test_slow_mode_through_the_adapter_send(gw_factory, chatto_world):
    """Case 6 through ``ChattoAdapter.send`` (what the runner calls): the SendResult names
    the failed chunk, carries ``retry_after``, is retryable (slow mode refused the write,
    nothing landed), and a resend of the same text continues at that chunk."""
    srv = chatto_world
    w = srv.world
    gw = await gw_factory()
    text = _long_reply()
    root = srv.post(w.alice_id, w.general_id, "@helper_bot status report?")
    await wait_for(lambda: gw.agent.calls, timeout=15, what="the turn for the root")
    await wait_for(lambda: gateway_idle(gw), timeout=15, what="idle")

    def bot_bodies():
        return [m.body for m in srv.thread_messages(w.general_id, root.event_id) if m.author_id == w.bot_id]

    base = bot_bodies()  # the turn's own answer: the bot posted just now, so slow mode bites at once
    srv.set_slow_mode(w.general_id, 60)
    res = await gw.adapter.send(w.general_id, text, metadata={"thread_id": root.event_id})
    assert not res.success
    assert re.search(r"chunk [12] of 4", res.error or ""), res.error
    assert res.retry_after is not None and 0 < res.retry_after <= 61
    assert res.retryable is True, "slow mode refused the write: resending is safe"
    srv.set_slow_mode(w.general_id, 0)
    res2 = await gw.adapter.send(w.general_id, text, metadata={"thread_id": root.event_id})
    assert res2.success, res2.error
    from hermes_chatto.delivery import split_body

    assert bot_bodies()[len(base) :] == split_body(text), "every chunk exactly once, in order"


# ---------------------------------------------------------------------------------
# case 7: wire-level DEBUG logs


def _hex_fragments(secret: str, width: int = 6) -> set[str]:
    """Space-separated hex of every ``width``-byte window of ``secret`` (how websockets'
    DEBUG frame log renders binary payloads: ``> BINARY 0a 31 08 02 ...``)."""
    raw = secret.encode()
    return {" ".join(f"{b:02x}" for b in raw[i : i + width]) for i in range(max(0, len(raw) - width + 1))}


async def test_wire_debug_logs_hold_no_key_material(chatto_world, caplog):
    """Case 7 at the most verbose setting an operator can pick: every logger (websockets
    frame traces, httpx/httpcore, uvicorn, the plugin's wire loggers) at DEBUG while the
    bot connects the realtime socket and makes unary calls. No log line may contain the
    key, its secret part, or a hex rendering of any 6-byte piece of the secret."""
    from hermes_chatto.wire.connect import ChattoClient
    from hermes_chatto.wire.realtime import RealtimeSession

    srv = chatto_world
    w = srv.world
    key = remember_key(srv.world.bot_key)
    secret = key.split(".", 1)[1]
    for name in ("", "websockets", "websockets.client", "httpx", "httpcore", "hermes_plugins.chatto"):
        caplog.set_level(logging.DEBUG, logger=name or None)

    async def on_event(ev):
        return None

    session = RealtimeSession(srv.base_url, key, on_event=on_event)
    task = asyncio.create_task(session.run())
    try:
        await asyncio.wait_for(session.caught_up.wait(), 10)
        async with ChattoClient(srv.base_url, key) as client:
            await client.get_viewer()
            await client.create_message(w.general_id, "debug-level hello")
    finally:
        await session.stop()
        await asyncio.wait_for(task, 10)
    lines = [r.getMessage() for r in caplog.records]
    assert any("BINARY" in ln or "Request" in ln or "HTTP" in ln for ln in lines), "no wire-level DEBUG lines captured"
    frags = _hex_fragments(secret)
    hits = [ln[:120] for ln in lines if key in ln or secret in ln or any(f in ln for f in frags)]
    assert not hits, f"{len(hits)} DEBUG line(s) carry bot key material (hex of the realtime hello): {hits[:2]}"


# ---------------------------------------------------------------------------------
# cases 1-3: bursts through the real gateway

BURST = 2_000
ROOMS = 10
THREADS_PER_ROOM = 4
DROPS = 20


def bot_socket_open(srv, bot_id: str) -> bool:
    """The bot has a subscribed realtime socket on the server (caught up or still catching
    up; ``LocalChatto.hub.conns``)."""
    return any(c.user_id == bot_id and not c.closing for c in list(srv.hub.conns))


async def drop_bot_socket(srv, bot_id: str, progress: Callable[[], Any] | None = None) -> None:
    """Wait for the bot's realtime socket, abort it (TCP drop, no close frame) and wait
    until the server has let go of it - so consecutive drops hit distinct connections.
    ``progress`` (e.g. ``lambda: progress_of(gw)``): the wait for the socket fails after 30 s
    in which it did not change (at the latest after 300 s), not after 30 s in all: a gateway
    still working through a burst on a busy machine reconnects later, not never."""
    await wait_for(
        lambda: bot_socket_open(srv, bot_id),
        timeout=30,
        what="the bot's socket to (re)open",
        progress=progress,
        cap=300,
    )
    ids = {c.id for c in list(srv.hub.conns) if c.user_id == bot_id and not c.closing}
    srv.drop_sockets(bot_id)
    await wait_for(
        lambda: not any(c.id in ids and not c.closing for c in list(srv.hub.conns)),
        timeout=10,
        what="the dropped socket to close",
    )


def _diagnose(gw: Gateway, world: World) -> str:
    """Where the missing messages are (for failure messages)."""
    ledger = token_ledger(gw.agent)
    lost = [t for t in world.tokens if t not in ledger]
    stuck = []
    for ev in list(gw.adapter._pending_messages.values()):
        stuck += TOKEN_RE.findall(getattr(ev, "text", "") or "")
    for evs in (getattr(gw.runner, "_queued_events", None) or {}).values():
        for ev in evs:
            stuck += TOKEN_RE.findall(getattr(ev, "text", "") or "")
    later = []
    order = {t: i for i, t in enumerate(world.tokens)}
    for t in lost[:3]:
        root = world.where.get(t)
        if not root:
            continue
        turns = [
            c
            for c in gw.agent.calls
            if c.source.thread_id == root and any(order.get(x, -1) > order[t] for x in TOKEN_RE.findall(c.message))
        ]
        later.append(
            f"{t}: {len(turns)} later turn(s) in its thread, {sum(1 for c in turns if '[Earlier' in c.message)} "
            f"with a block"
        )
    return (
        f"lost={len(lost)} {lost[:8]}; {later}; stuck in host queues={sorted(set(stuck) & set(lost))[:8]}; "
        f"busy={busy_state(gw)}; adapter={gw.adapter.stats}; frontier={getattr(gw.adapter._frontier, 'counters', {})}; "
        f"realtime={_rt_info(gw)}; server catch-ups={list(gw.world.catchups)[-4:]}"
    )


def _rt_info(gw: Gateway) -> str:
    rt = gw.adapter._realtime
    if rt is None:
        return "none"
    return f"state={rt.state} connected={rt.connected} stats={ {k: v for k, v in rt.stats.items() if v} }"


# Under CPU contention the burst takes minutes, not seconds; its waits fail on no progress.
@pytest.mark.timeout(600)
async def test_burst_2000_messages_20_socket_drops_exactly_once(gw_factory, chatto_world, fast_reconnect):
    """Case 1: 2,000 messages across 10 rooms x 4 threads (40 roots mentioning the bot, then
    1,960 replies by two people, seeded), posted in slices of 100 as fast as the gateway
    keeps within 300 messages of the server (a burst the realtime replay can bridge: the
    resume cursor stays usable), and 20 realtime socket drops (TCP abort, no close frame)
    at seeded random points of the burst. Every message reaches the agent exactly once: as
    (part of) a turn's own text or as one ``[Earlier in this thread]`` line."""
    srv = chatto_world
    # Chatto admits 3 stale-cursor resumes per 20 s (realtime_catchup.go): 20 drops within
    # seconds would wait 20 s per three drops. Run its admission ten times faster.
    srv.admission.replay_interval_s, srv.admission.min_retry_s = 2.0, 0.1
    world = World(srv)
    gw = await gw_factory()
    rng = random.Random(2000)
    roots = world.open_threads(THREADS_PER_ROOM)
    drop_at = set(rng.sample(range(len(roots) + 1, BURST), DROPS))
    dropped = 0
    try:
        while world.n < BURST:
            world.reply(rng, roots)
            if world.n in drop_at:
                await drop_bot_socket(srv, world.bot, progress=lambda: progress_of(gw))
                dropped += 1
            if world.n % 100 == 0:
                await settle(gw, world, timeout=60, lag=300)
        await settle(gw, world, timeout=150)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_diagnose(gw, world)}") from None
    assert dropped == DROPS
    rt = gw.adapter._realtime
    assert rt is not None and rt.stats["reconnects"] >= DROPS, getattr(rt, "stats", None)
    kinds = assert_exactly_once(gw.agent, world.tokens)
    assert kinds["turn"] >= len(roots)
    assert not any(c.reason == "too_many_facts" for c in srv.catchups), "the burst was meant to stay replayable"


async def test_projection_reset_and_25h_old_cursor_mid_stream(gw_factory, chatto_world, fast_reconnect):
    """Case 2: mid-stream, (a) an RBAC change closes the socket with
    ``projection_reset_required`` and (b) the bot's resume cursor becomes 25 hours old
    (server clock) when its socket drops. Both reconnects take Chatto's reset path (full
    ``room_timeline_replace`` catch-up). Nothing that was already handled is dispatched
    again, and every message - including the ones posted while the socket was down, roots
    mentioning the bot and thread replies - reaches the agent exactly once (a thread reply
    missed by the reset at the latest as a block line of the next turn in its thread; the
    test posts one more message in every thread at the end)."""
    srv = chatto_world
    world = World(srv)
    gw = await gw_factory()
    rng = random.Random(25)
    roots = world.open_threads(1)[:4]
    for _ in range(20):
        world.reply(rng, roots)
    await settle(gw, world, timeout=60)
    before = len(gw.agent.calls)

    # (a) projection_reset_required in the middle of a burst
    for _ in range(10):
        world.reply(rng, roots)
    resets_before = len(srv.catchups)
    srv.force_projection_reset()
    for _ in range(5):  # posted while the socket is being re-established
        world.reply(rng, roots)
    srv.post(world.alice, world.rooms[5], f"@helper_bot during the reset {world.token()}")
    for _ in range(10):
        world.reply(rng, roots)
    await wait_for(
        # the session drops its cursor on projection_reset_required: a cursorless reset
        lambda: any(c.path == "reset" for c in srv.catchups[resets_before:]),
        timeout=20,
        what="a reset catch-up after projection_reset_required",
    )

    # (b) a 25-hour-old resume cursor: the socket drops, then the clock jumps. In this order:
    # the server stamps a cursor when it sends it, so an event sent between a jump and the
    # drop (the bot's own answer to (a)'s mention, say) gave the bot a fresh cursor and the
    # reconnect resumed instead of resetting (one CI failure, Python 3.13, 2026-12-04)
    await wait_for(lambda: bot_socket_open(srv, world.bot), timeout=20, what="socket back")
    srv.drop_sockets(world.bot)
    srv.advance_clock(25 * 3600)
    for _ in range(5):
        world.reply(rng, roots)
    srv.post(world.alice, world.rooms[6], f"@helper_bot while the cursor was stale {world.token()}")
    await wait_for(
        lambda: any(c.reason == "cursor_expired" for c in srv.catchups),
        timeout=20,
        what="a reset catch-up for the 25 h old cursor",
    )
    for _ in range(10):
        world.reply(rng, roots)
    for room, root in roots:  # thread replies missed in a reset reach "the next turn" of their thread
        tok = world.token()
        world.where[tok] = root
        srv.post(world.bob, room, f"last word {tok}", thread_root_event_id=root)
    try:
        await settle(gw, world, timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_diagnose(gw, world)}") from None
    assert len(gw.agent.calls) > before
    rt = gw.adapter._realtime
    assert rt is not None and rt.connected and not gw.adapter.has_fatal_error, "the adapter did not recover"
    assert_exactly_once(gw.agent, world.tokens)


async def test_gateway_restart_during_burst_every_accepted_message_once(gw_factory, chatto_world):
    """Case 3: the gateway is killed (in-flight turns cancelled, transport torn down, no
    graceful flush) during a burst and a new runner + adapter is started on the same Hermes
    home. Every message the server accepted - before, during and after the outage,
    including roots mentioning the bot posted while the gateway was down - reaches the
    agent exactly once, as its own completed turn or as a line of the next turn's block in
    its thread. A turn cut off by the kill (its answer never landed) does not count: its
    message must come again.

    The lost messages this test used to catch (1-2 of 288 in about 1 of 5 runs): a turn
    cancelled by the kill before its reply landed while a later turn of the same session
    still ran and replied (``cancel_background_tasks`` does not stop ingress), or the host
    running a follow-up ahead of an older queued one — the later turn's frontier, stored
    in the row, held the older trigger. Fixed by ``ThreadFrontier.turn_finished`` (owed
    messages) and the row's ``owed`` list (``tests/test_adapter_unanswered.py``,
    ``tests/test_frontier.py``)."""
    srv = chatto_world
    world = World(srv)
    counter = iter(range(1_000_000))
    reply = lambda call: f"ack#{next(counter)}"  # noqa: E731 - unique answer per call
    agent = FakeAgent(reply)
    gw = await gw_factory(agent=agent)
    rng = random.Random(3)
    roots = world.open_threads(1)[:6]
    await settle(gw, world, timeout=30)
    for _ in range(150):
        world.reply(rng, roots)
        if world.n % 25 == 0:
            await asyncio.sleep(0)
    await wait_for(lambda: len(agent.calls) >= 30, timeout=30, what="turns running when the gateway is killed")
    # kill: cancel every in-flight turn and drop the transport, no graceful drain
    await gw.adapter.cancel_background_tasks()
    await gw.adapter.disconnect()
    for _ in range(60):  # the server keeps accepting while the gateway is down
        world.reply(rng, roots)
    for room in world.rooms[7:9]:
        srv.post(world.alice, room, f"@helper_bot anyone there? {world.token()}")
    gw2 = await gw_factory(agent=agent)
    for _ in range(60):
        world.reply(rng, roots)
    for room, root in roots:  # one more message per thread: "the next turn" of each thread
        srv.post(world.bob, room, f"last word {world.token()}", thread_root_event_id=root)
    try:
        await settle(gw2, world, timeout=90)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_diagnose(gw2, world)}") from None
    landed = {m.body for room in world.rooms for m in srv.room_messages(room)}
    landed |= {m.body for room, root in roots for m in srv.thread_messages(room, root)}
    for room in world.rooms:
        for m in srv.room_messages(room):
            if m.has_thread:
                landed |= {r.body for r in srv.thread_messages(room, m.event_id)}
    answered = FakeAgent()
    answered.calls = [c for i, c in enumerate(agent.calls) if f"ack#{i}" in landed]
    cut_off = len(agent.calls) - len(answered.calls)
    kinds = assert_exactly_once(answered, world.tokens)
    assert kinds["block"] >= 1, f"nothing reached a block after the restart ({cut_off} cut-off turns)"


async def test_reply_ingested_after_a_later_block_carried_it_is_not_a_second_turn(gw_factory, chatto_world):
    """Issue 18's root cause, with the ordering injected instead of left to timing.

    After a projection reset the adapter reads a moved thread's newest replies and runs them
    through ingress (``GapRecovery``) while the live events of older replies of the same
    thread are still queued behind that read on the socket. The newer reply's turn gets a
    block that carries the older reply as a line (it is before the trigger and not held);
    when the older reply's own live event is handled next, it must not start a turn of its
    own: the agent would see it twice ("block" and "turn"). Red before the fix
    (``ThreadFrontier.start_turn`` → ``TurnStart.duplicate``), green after."""
    srv = chatto_world
    world = World(srv)
    gw = await gw_factory()
    room = world.rooms[0]
    root = srv.post(world.alice, room, f"@helper_bot new topic {world.token()}").event_id
    await settle(gw, world, timeout=30)

    inbound = gw.adapter.inbound
    live = inbound.on_new_message
    gate = asyncio.Event()
    gated: list[str] = []
    handled: list[str] = []

    async def gated_live(msg, *a, **kw):
        if not gate.is_set():
            gated.append(msg.event_id)
            await gate.wait()
        await live(msg, *a, **kw)
        handled.append(msg.event_id)

    inbound.on_new_message = gated_live
    older = srv.post(world.bob, room, f"more detail {world.token()}", thread_root_event_id=root)
    newer = srv.post(world.alice, room, f"more detail {world.token()}", thread_root_event_id=root)
    await wait_for(lambda: gated == [older.event_id], timeout=10, what="the older reply's live event held")

    # the reset: realtime may have missed replies, so the room's sessions read on their next
    # turn (what GapRecovery does on a later room_timeline_replace) ...
    gw.adapter._frontier.realtime_gap(room)
    # ... and the gap read: the newest reply of the thread, through ingress, ahead of the live queue
    page = await gw.adapter._client.get_thread_events(room, root, limit=1)
    assert [m.event_id for m in page.messages if m.thread_root_event_id] == [newer.event_id]
    await live(page.messages[-1])
    gate.set()
    await wait_for(
        lambda: {older.event_id, newer.event_id} <= set(handled), timeout=10, what="both live events handled"
    )
    await settle(gw, world, timeout=30)
    counts = assert_exactly_once(gw.agent, world.tokens)
    assert counts == Counter({"turn": 2, "block": 1}), counts
