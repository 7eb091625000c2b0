"""P8: a bot in 500 rooms at 50 msg/s and at 5× that, with a CPU hog on the other core
(realtime protocol 4: one socket streams every room; there is no retained set).

Set-up: the local Chatto server in its own process (``_server_proc``) with 500 channels the
bot and three people are members of, a real ``GatewayRunner`` + ``ChattoAdapter`` here
(``_gateway``; the model answers at once), and a **CPU hog**: a busy-loop process started
before the load and stopped after it (``P8_HOG=0`` leaves it out), so the plugin, the host
and the server share what is left of the machine.

1. **History**: ``HISTORY`` messages per room (roots and thread replies) are posted before the
   gateway starts. **Connect → caught up**: from ``adapter.connect`` to the plugin handling
   ``caught_up`` on a fresh socket (no resume cursor: the snapshot) — goal ≤ 5 s on loopback.
2. **Load**, one phase per rate of ``P8_RATES`` (default ``50,250`` msg/s), each
   ``P8_SECONDS`` long (default 60). Rooms uniformly at random; 60 % roots, 40 % replies to
   an earlier root of the same room; 2 % of roots mention the bot. *Addressed* = a mention,
   or a reply in a thread whose root mentioned the bot (the bot answered there, so it takes
   part). Each must reach ``handle_message`` exactly once: ``lost`` = addressed and never
   handled, ``duplicated`` = handled more than once, by kind. ``reconnects``: the realtime
   session's reconnects during the phase (the server drops a slow consumer: a reconnect the
   plugin caused itself); ``slow_consumer``: the server's catch-ups of the bot.
3. **Lag** of an addressed message, split (``time.monotonic_ns``, one clock for both
   processes): *plugin in* = its ``CreateMessage`` returned in the server → the adapter calls
   ``handle_message``; *host* = ``handle_message`` → the runner calls ``adapter.send`` with
   the answer; *plugin out* = ``send`` called → returned (the answer posted). Reported for
   the phase's last addressed post and as p50 / p99 over the phase.
4. **RSS growth** (psutil, this process: the gateway) from after the catch-up to after the
   load (``gc.collect()`` first); **RPCs per message not for the bot** = the bot's read RPCs
   the server recorded during the load minus the reads its turns account for (the adapter's
   ``message_reads`` and ``user_reads``, the frontier's ``thread_reads``), divided by the
   messages not for the bot — goal 0 (a thin event decides such a message without a read).
5. **Resume**: disconnect, connect again (the persisted resume cursor): connect → caught up.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from collections import Counter

from _util import emit, note, setup_hermes_home

ROOMS = 500  # the demo channel + 499
HISTORY = int(os.environ.get("P8_HISTORY", "40"))
RATES = [float(r) for r in os.environ.get("P8_RATES", "50,250").split(",") if r]
SECONDS = float(os.environ.get("P8_SECONDS", "60"))
HOG = os.environ.get("P8_HOG", "1") != "0"
PEOPLE = ("alice", "bob", "carol")


DROPS: dict[str, str] = {}


class _DropLog:
    """Collects the adapter's DEBUG ``drop <id> (<reason>)`` lines (``P8_DEBUG``)."""

    level = 10

    def handle(self, record) -> None:
        if record.msg == "Chatto: drop %s (%s)":
            DROPS[record.args[0]] = record.args[1]


class Watch:
    """Wraps the adapter's event handler, ``handle_message`` and ``send``."""

    def __init__(self) -> None:
        self.caught_up_at: float | None = None
        self.recovery = ""
        self.handled: Counter[str] = Counter()
        #: trigger id -> monotonic_ns of: its handle_message, its answer's send call and return
        self.handle_ns: dict[str, int] = {}
        self.send_ns: dict[str, tuple[int, int]] = {}

    def reset_connect(self) -> None:
        self.caught_up_at, self.recovery = None, ""

    def install(self, adapter) -> None:
        from hermes_chatto.wire import events as E

        on_event, hm, send = adapter.inbound.on_event, adapter.handle_message, adapter.send

        async def watched(ev):
            await on_event(ev)
            if isinstance(ev, E.CaughtUp) and self.caught_up_at is None:
                self.caught_up_at = time.monotonic()
                self.recovery = ev.recovery

        async def handle_message(event):
            mid = getattr(event, "message_id", "") or ""
            self.handled[mid] += 1
            self.handle_ns.setdefault(mid, time.monotonic_ns())
            return await hm(event)

        async def watched_send(chat_id, content, reply_to=None, metadata=None, **kw):
            t0 = time.monotonic_ns()
            try:
                return await send(chat_id, content, reply_to=reply_to, metadata=metadata, **kw)
            finally:
                if reply_to:
                    self.send_ns.setdefault(str(reply_to), (t0, time.monotonic_ns()))

        adapter.inbound.on_event = watched
        adapter.handle_message = handle_message
        adapter.send = watched_send


async def run_agent(message, source, session_key):
    from _gateway import agent_result

    return agent_result("on it")


def history(rooms: list[str], rng: random.Random) -> list:
    script: list = []
    for room in rooms:
        roots: list[int] = []
        for _ in range(HISTORY):
            if roots and rng.random() < 0.4:
                script.append((rng.choice(PEOPLE), room, "earlier reply", rng.choice(roots)))
            else:
                roots.append(len(script))
                script.append((rng.choice(PEOPLE), room, "earlier root message", ""))
    return script


def load(rooms: list[str], rng: random.Random, count: int) -> tuple[list, list[str]]:
    """The load script and the kind of each entry (``root``, ``reply``) with ``+`` appended
    when addressed."""
    script: list = []
    kinds: list[str] = []
    roots: dict[str, list[tuple[int, bool]]] = {r: [] for r in rooms}  # per room: (index, mentions)
    for _ in range(count):
        room = rng.choice(rooms)
        who = rng.choice(PEOPLE)
        if roots[room] and rng.random() < 0.4:
            i, m = rng.choice(roots[room])
            script.append((who, room, "a reply", i))
            kinds.append("reply" + ("+" if m else ""))
        else:
            m = rng.random() < 0.02
            roots[room].append((len(script), m))
            script.append((who, room, "@helper_bot can you check this?" if m else "a root message", ""))
            kinds.append("root" + ("+" if m else ""))
    return script, kinds


def is_read(procedure: str) -> bool:
    return procedure.rsplit("/", 1)[-1].startswith(("Get", "List", "BatchGet"))


async def wait_caught_up(watch: Watch, timeout: float = 120.0) -> float:
    """The monotonic time the plugin handled ``caught_up``."""
    end = time.monotonic() + timeout
    while watch.caught_up_at is None:
        if time.monotonic() > end:
            raise TimeoutError("no caught_up")
        await asyncio.sleep(0.002)
    return watch.caught_up_at


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


async def phase(sp, adapter, watch: Watch, rooms: list[str], rng: random.Random, rate: float) -> dict:
    """One load phase at ``rate`` msg/s for ``SECONDS``; its figures."""
    import psutil

    loop = asyncio.get_running_loop()
    ask = sp.ask
    proc = psutil.Process()
    gc.collect()
    rss0 = proc.memory_info().rss
    script, kinds = load(rooms, rng, int(rate * SECONDS))
    req0 = await loop.run_in_executor(None, ask, "requests")
    catchups0 = len(await loop.run_in_executor(None, ask, "catchups"))
    counters0 = dict(adapter.conn.counters)
    fr = adapter.conn.frontier
    thread_reads0 = int(fr.counters["thread_reads"]) if fr is not None else 0
    rt = adapter.conn.realtime
    reconnects0 = int(rt.stats["reconnects"]) if rt is not None else 0
    t0 = time.monotonic()
    await loop.run_in_executor(None, ask, "script_start", rate, script)
    while await loop.run_in_executor(None, ask, "script_progress") < len(script):
        await asyncio.sleep(0.5)
    ids = await loop.run_in_executor(None, ask, "script_wait")
    posted_ns = await loop.run_in_executor(None, ask, "script_times")
    posting_s = time.monotonic() - t0
    refused = sum(1 for i in ids if not i)
    if refused:
        raise RuntimeError(f"the server refused {refused} scripted posts")
    addressed = {i: k for i, k in zip(ids, kinds, strict=True) if k.endswith("+")}
    # drain: until every addressed message was handled and answered, or nothing moved for 5 s
    last, still = -1, time.monotonic()
    while True:
        n = sum(1 for i in addressed if watch.handled[i]) + sum(1 for i in addressed if i in watch.send_ns)
        if n == 2 * len(addressed):
            break
        if n != last:
            last, still = n, time.monotonic()
        elif time.monotonic() - still > 5:
            break
        await asyncio.sleep(0.1)
    drain_s = time.monotonic() - t0 - posting_s
    req1 = await loop.run_in_executor(None, ask, "requests")
    catchups = (await loop.run_in_executor(None, ask, "catchups"))[catchups0:]
    gc.collect()
    rss1 = proc.memory_info().rss
    rpcs = {k.rsplit("/", 1)[-1]: v - req0.get(k, 0) for k, v in req1.items() if v - req0.get(k, 0)}
    reads = sum(v - req0.get(k, 0) for k, v in req1.items() if is_read(k))
    turn_reads = sum(adapter.conn.counters[k] - counters0.get(k, 0) for k in ("message_reads", "user_reads"))
    if fr is not None:
        turn_reads += int(fr.counters["thread_reads"]) - thread_reads0
    not_for_bot = sum(1 for k in kinds if not k.endswith("+"))
    lost = Counter(k for i, k in addressed.items() if not watch.handled[i])
    dup = Counter(k for i, k in addressed.items() if watch.handled[i] > 1)
    by_kind = Counter(addressed.values())
    # lag, split: post returned -> handle_message -> send called -> send returned
    posted_at = dict(zip(ids, posted_ns, strict=False))
    lag_in, lag_host, lag_out, last_split = [], [], [], None
    for i in ids:
        if i not in addressed or i not in watch.handle_ns or i not in watch.send_ns or i not in posted_at:
            continue
        s0, s1 = watch.send_ns[i]
        split = ((watch.handle_ns[i] - posted_at[i]) / 1e6, (s0 - watch.handle_ns[i]) / 1e6, (s1 - s0) / 1e6)
        lag_in.append(split[0])
        lag_host.append(split[1])
        lag_out.append(split[2])
        last_split = split
    unanswered = sum(1 for i in addressed if watch.handled[i] and i not in watch.send_ns)
    note(
        f"P8 @{rate:g}: {len(script)} messages in {posting_s:.1f} s ({len(script) / posting_s:.0f} msg/s), drained "
        f"{drain_s:.1f} s later; addressed by kind {dict(by_kind)}; lost {dict(lost)}; duplicated {dict(dup)}; "
        f"handled but answered under another trigger (merged follow-ups) {unanswered}"
    )
    note(f"P8 @{rate:g}: bot RPCs during the load {rpcs}; reads {reads}, of which turns' {turn_reads}")
    note(f"P8 @{rate:g}: server catch-ups of the bot {catchups}")
    if os.environ.get("P8_DEBUG"):
        for i, k in addressed.items():
            if not watch.handled[i]:
                note(f"P8 debug: lost {k} {i} (#{ids.index(i)}) drop reason {DROPS.get(i)}")
    return {
        "messages": len(script),
        "rate": len(script) / posting_s,
        "addressed": len(addressed),
        "lost": lost,
        "dup": dup,
        "by_kind": by_kind,
        "reconnects": (int(rt.stats["reconnects"]) - reconnects0) if rt is not None else -1,
        "slow_consumer": len(catchups),
        "drain_s": drain_s,
        "rpcs_not_for_bot": (reads - turn_reads) / max(1, not_for_bot),
        "rss_mb": (rss1 - rss0) / 2**20,
        "lag": (lag_in, lag_host, lag_out),
        "last": last_split,
    }


def start_hog():
    """A busy loop in its own process (the "CPU hog on the other core"); ``None`` when off."""
    import subprocess
    import sys

    if not HOG:
        return None
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


async def run() -> None:
    from _gateway import start_gateway, stop_gateway
    from _server_proc import ServerProcess

    rng = random.Random(8)
    sp = ServerProcess(people=["bob", "carol"], rooms=ROOMS - 1)
    info = sp.start()
    ask = sp.ask
    loop = asyncio.get_running_loop()
    rooms = [info["general"], *info["rooms"]]
    t0 = time.monotonic()
    await loop.run_in_executor(None, ask, "script_start", 0, history(rooms, rng))
    await loop.run_in_executor(None, ask, "script_wait")
    note(f"P8: {ROOMS} rooms, {ROOMS * HISTORY} history messages posted in {time.monotonic() - t0:.1f} s")

    watch = Watch()
    t_connect: list[float] = []

    def before(adapter) -> None:
        watch.install(adapter)
        t_connect.append(time.monotonic())

    runner, adapter = await start_gateway(
        info["base"],
        info["bot_key"],
        info["general"],
        run_agent,
        before_connect=before,
        env={"CHATTO_WIRE_LOG_LEVEL": "INFO"},
    )
    fresh_s = await wait_caught_up(watch) - t_connect[0]
    note(f"P8: connect → caught_up {fresh_s:.2f} s (recovery {watch.recovery or '?'})")

    hog = start_hog()
    results: dict[float, dict] = {}
    try:
        for rate in RATES:
            results[rate] = await phase(sp, adapter, watch, rooms, rng, rate)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    note(f"P8: adapter counters { {k: v for k, v in adapter.conn.counters.items() if v} }")
    rt = adapter.conn.realtime
    if rt is not None and hasattr(rt, "stats"):
        note(f"P8: realtime stats { {k: v for k, v in rt.stats.items() if v} }")

    # resume: a reconnect with the persisted cursor
    await adapter.disconnect()
    watch.reset_connect()
    t_r = time.monotonic()
    ok = await adapter.connect(is_reconnect=True)
    resume_s = float("nan")
    if ok:
        resume_s = await wait_caught_up(watch) - t_r
        note(f"P8: resume → caught_up {resume_s:.2f} s (recovery {watch.recovery or '?'})")
    await stop_gateway(adapter)
    sp.stop()

    emit(8, "rooms", ROOMS, "rooms", "500")
    emit(8, "cpu_hog", HOG, "", "-")
    emit(8, "connect_to_caught_up", fresh_s, "s", "<=5")
    for rate, r in results.items():
        tag = f"at{rate:g}"
        lag_in, lag_host, lag_out = r["lag"]
        emit(8, f"{tag}_messages", r["messages"], "messages", "-")
        emit(8, f"{tag}_rate", r["rate"], "msg/s", "-")
        emit(8, f"{tag}_addressed", r["addressed"], "messages", "-")
        emit(8, f"{tag}_lost", sum(r["lost"].values()), "messages", "0")
        emit(8, f"{tag}_duplicated", sum(r["dup"].values()), "messages", "0")
        emit(8, f"{tag}_reconnects", r["reconnects"], "reconnects", "0")
        emit(8, f"{tag}_slow_consumer_catchups", r["slow_consumer"], "catch-ups", "0")
        emit(8, f"{tag}_drain_after_last_post", r["drain_s"], "s", "-")
        emit(8, f"{tag}_rpcs_per_message_not_for_bot", r["rpcs_not_for_bot"], "rpcs", "0")
        if r["last"] is not None:
            a, b, c = r["last"]
            emit(8, f"{tag}_last_lag_plugin", a + c, "ms", "-")
            emit(8, f"{tag}_last_lag_host", b, "ms", "-")
        emit(8, f"{tag}_lag_plugin_in_p50", pct(lag_in, 0.5), "ms", "-")
        emit(8, f"{tag}_lag_plugin_in_p99", pct(lag_in, 0.99), "ms", "-")
        emit(8, f"{tag}_lag_host_p50", pct(lag_host, 0.5), "ms", "-")
        emit(8, f"{tag}_lag_host_p99", pct(lag_host, 0.99), "ms", "-")
        emit(8, f"{tag}_lag_plugin_out_p50", pct(lag_out, 0.5), "ms", "-")
        emit(8, f"{tag}_rss_growth", r["rss_mb"], "MB", "-")
    emit(8, "resume_to_caught_up", resume_s, "s", "<=5")


def main() -> None:
    setup_hermes_home()
    import logging
    import sys

    # the plugin's INFO lines (connects, disconnects with their reason, reconnects) to stderr
    info = logging.StreamHandler(sys.stderr)
    info.setLevel(logging.INFO)
    info.setFormatter(logging.Formatter("P8 log: %(name)s %(levelname)s %(message)s"))
    plugin = logging.getLogger("hermes_plugins.chatto")
    plugin.setLevel(logging.INFO)
    plugin.addHandler(info)
    if os.environ.get("P8_DEBUG"):
        import logging

        h = logging.Handler()
        h.emit = _DropLog().handle  # type: ignore[method-assign]
        lg = logging.getLogger("hermes_plugins.chatto")
        lg.setLevel(logging.DEBUG)
        lg.addHandler(h)
    asyncio.run(run())


if __name__ == "__main__":
    main()
