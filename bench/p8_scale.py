"""P8: a bot in 500 rooms (64 retained by its socket) under 50 msg/s for 10 minutes.

Set-up: the local Chatto server in its own process (``_server_proc``) with 500 channels the
bot and three people are members of, a real ``GatewayRunner`` + ``ChattoAdapter`` here
(``_gateway``; the model answers at once). The plugin picks which 64 rooms its socket retains;
the benchmark asks the server which ones it subscribed.

1. **History**: ``HISTORY`` messages per room (roots and thread replies) are posted before the
   gateway starts. **Connect → caught up**: from ``adapter.connect`` to the plugin handling
   ``caught_up`` on a fresh socket (no resume cursor: the reset path, one
   ``room_timeline_replace`` per retained room first) — goal ≤ 5 s on loopback.
2. **Load, compressed time**: the 30,000 messages of 10 minutes at 50 msg/s are posted at
   ``50 × SPEEDUP`` msg/s of wall time (``P8_SPEEDUP``, default 3: 200 s of wall time;
   timestamps are the server's real clock — nothing in the plugin's ingest depends on the
   spacing, only the backlog does). Rooms uniformly at random. Retained rooms: 60 % roots, 40 %
   replies to an earlier root of the same room. Unretained rooms: roots, and (5 %) replies
   that mention the bot in threads whose root mentioned it. 2 % of roots mention the bot.
   *Addressed* = a mention, or a reply in a thread whose root mentioned the bot (the plugin
   answers in the thread, so it takes part). Each must reach ``handle_message`` exactly once:
   ``lost`` = addressed and never handled, ``duplicated`` = handled more than once, by kind.
3. **RSS growth** (psutil, this process: the gateway) from after the catch-up to after the
   load (``gc.collect()`` first); **RPCs per root message in unretained rooms** = the bot's
   ``GetMessage`` requests the server recorded ÷ root messages posted in unretained rooms.
4. **Resume**: disconnect, connect again (the persisted resume cursor): connect → caught up.

Depends on: the server announcing a root message in an unretained room with
``room_activity`` (and a reply there with no content at all), the plugin fetching it with
``GetMessage``, ``caught_up`` after the retained rooms' ``room_timeline_replace``, and rooms
retained by ``subscribe_events`` (no ``hydrate_room`` at connect). If the plugin moves to
``hydrate_room`` at connect, Chatto's pacing (20 admitted, then 1/s) puts the 64-room catch-up
near 45 s, and this benchmark shows it.
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
MESSAGES = int(os.environ.get("P8_MESSAGES", "30000"))  # 10 minutes at 50 msg/s
SPEEDUP = float(os.environ.get("P8_SPEEDUP", "3"))
PEOPLE = ("alice", "bob", "carol")


DROPS: dict[str, str] = {}


class _DropLog:
    """Collects the adapter's DEBUG ``drop <id> (<reason>)`` lines (``P8_DEBUG``)."""

    level = 10

    def handle(self, record) -> None:
        if record.msg == "Chatto: drop %s (%s)":
            DROPS[record.args[0]] = record.args[1]


class Watch:
    """Wraps the adapter's event handler and ``handle_message``."""

    def __init__(self) -> None:
        self.caught_up_at: float | None = None
        self.replaced = 0
        self.handled: Counter[str] = Counter()

    def reset_connect(self) -> None:
        self.caught_up_at, self.replaced = None, 0

    def install(self, adapter) -> None:
        from hermes_chatto.wire import events as E

        on_event, hm = adapter.inbound.on_event, adapter.handle_message

        async def watched(ev):
            await on_event(ev)
            if isinstance(ev, E.TimelineReplaced):
                self.replaced += 1
            elif isinstance(ev, E.CaughtUp) and self.caught_up_at is None:
                self.caught_up_at = time.monotonic()

        async def handle_message(event):
            self.handled[getattr(event, "message_id", "") or ""] += 1
            return await hm(event)

        adapter.inbound.on_event = watched
        adapter.handle_message = handle_message


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


def load(rooms: list[str], retained: set[str], rng: random.Random) -> tuple[list, list[str]]:
    """The load script and the kind of each entry (``retained_root``, ``retained_reply``,
    ``unretained_root``, ``unretained_reply``) with ``+`` appended when addressed."""
    script: list = []
    kinds: list[str] = []
    roots: dict[str, list[tuple[int, bool]]] = {r: [] for r in rooms}  # per room: (index, mentions)
    for _ in range(MESSAGES):
        room = rng.choice(rooms)
        who = rng.choice(PEOPLE)
        kept = room in retained
        where = "retained" if kept else "unretained"
        mentioned = [i for i, m in roots[room] if m]
        if kept and roots[room] and rng.random() < 0.4:
            i, m = rng.choice(roots[room])
            script.append((who, room, "a reply", i))
            kinds.append(f"{where}_reply" + ("+" if m else ""))
        elif not kept and mentioned and rng.random() < 0.05:
            script.append((who, room, "@helper_bot and one more thing", rng.choice(mentioned)))
            kinds.append(f"{where}_reply+")
        else:
            m = rng.random() < 0.02
            roots[room].append((len(script), m))
            script.append((who, room, "@helper_bot can you check this?" if m else "a root message", ""))
            kinds.append(f"{where}_root" + ("+" if m else ""))
    return script, kinds


async def wait_caught_up(watch: Watch, timeout: float = 120.0) -> float:
    """The monotonic time the plugin handled ``caught_up``."""
    end = time.monotonic() + timeout
    while watch.caught_up_at is None:
        if time.monotonic() > end:
            raise TimeoutError("no caught_up")
        await asyncio.sleep(0.002)
    return watch.caught_up_at


async def run() -> None:
    import psutil

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
    fresh_replaced = watch.replaced
    conns = await loop.run_in_executor(None, ask, "call", "connections", (info["users"]["bot"],), {})
    retained = set(conns[0]["retained"]) if conns else set()
    note(f"P8: connect → caught_up {fresh_s:.2f} s, {fresh_replaced} timeline_replace, {len(retained)} retained")

    proc = psutil.Process()
    gc.collect()
    rss0 = proc.memory_info().rss
    script, kinds = load(rooms, retained, rng)
    req0 = await loop.run_in_executor(None, ask, "requests")
    rate = 50 * SPEEDUP
    t0 = time.monotonic()
    await loop.run_in_executor(None, ask, "script_start", rate, script)
    while await loop.run_in_executor(None, ask, "script_progress") < len(script):
        await asyncio.sleep(0.5)
    ids = await loop.run_in_executor(None, ask, "script_wait")
    posting_s = time.monotonic() - t0
    refused = sum(1 for i in ids if not i)
    if refused:
        raise RuntimeError(f"the server refused {refused} scripted posts")
    addressed = {i: k for i, k in zip(ids, kinds, strict=True) if k.endswith("+")}
    # drain: until every addressed message was handled or nothing moved for 5 s
    last, still = -1, time.monotonic()
    while True:
        n = sum(1 for i in addressed if watch.handled[i])
        if n == len(addressed):
            break
        if n != last:
            last, still = n, time.monotonic()
        elif time.monotonic() - still > 5:
            break
        await asyncio.sleep(0.1)
    drain_s = time.monotonic() - t0 - posting_s
    req1 = await loop.run_in_executor(None, ask, "requests")
    gc.collect()
    rss1 = proc.memory_info().rss
    rpcs = {k.rsplit("/", 1)[-1]: v - req0.get(k, 0) for k, v in req1.items() if v - req0.get(k, 0)}
    unretained_roots = sum(1 for k in kinds if k.startswith("unretained_root"))
    lost = Counter(k for i, k in addressed.items() if not watch.handled[i])
    dup = Counter(k for i, k in addressed.items() if watch.handled[i] > 1)
    by_kind = Counter(addressed.values())
    note(
        f"P8: {len(script)} messages in {posting_s:.1f} s ({len(script) / posting_s:.0f} msg/s), drained "
        f"{drain_s:.1f} s later; addressed by kind {dict(by_kind)}; lost {dict(lost)}; duplicated {dict(dup)}"
    )
    note(f"P8: bot RPCs during the load {rpcs}")
    if os.environ.get("P8_DEBUG"):
        for i, k in addressed.items():
            if not watch.handled[i] and "retained_reply" == k.rstrip("+"):
                j = ids.index(i)
                root = ids[script[j][3]]
                note(
                    f"P8 debug: lost {k} {i} (#{j}) drops={DROPS.get(i)}; root {root} (#{script[j][3]}) "
                    f"handled={watch.handled[root]} drop={DROPS.get(root)} kind={kinds[script[j][3]]}"
                )
    note(f"P8: adapter counters { {k: v for k, v in adapter.conn.counters.items() if v} }")
    rt = adapter.conn.realtime
    reconnects = int(rt.stats["reconnects"]) if rt is not None and hasattr(rt, "stats") else -1
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
    await stop_gateway(adapter)
    sp.stop()

    emit(8, "rooms", ROOMS, "rooms", "500")
    emit(8, "retained_rooms", len(retained), "rooms", "64")
    emit(8, "connect_to_caught_up", fresh_s, "s", "<=5")
    emit(8, "timeline_replace_at_connect", fresh_replaced, "rooms", "-")
    emit(8, "messages", len(script), "messages", "30000")
    emit(8, "compressed_rate", len(script) / posting_s, "msg/s", "-")
    emit(8, "addressed", len(addressed), "messages", "-")
    emit(8, "reconnects_under_load", reconnects, "reconnects", "0")
    emit(8, "lost", sum(lost.values()), "messages", "0")
    for kind in ("retained_root", "retained_reply", "unretained_root", "unretained_reply"):
        emit(8, f"lost_{kind}", lost[kind + "+"], f"of {by_kind[kind + '+']}", "0")
    emit(8, "duplicated", sum(dup.values()), "messages", "0")
    emit(8, "rpcs_per_unretained_root", rpcs.get("GetMessage", 0) / max(1, unretained_roots), "rpcs", "-")
    emit(8, "rss_growth", (rss1 - rss0) / 2**20, "MB", "-")
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
