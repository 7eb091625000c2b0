"""P4: memory over a long run: ``P4_MESSAGES`` (default 300,000) messages through the real
adapter path, RSS after 30k / 100k / 300k.

The harness of P3 (``p3_adapter``): a real ``GatewayRunner`` + ``ChattoAdapter`` connected to
the local server in its own process (``ROOMS`` channels), protocol-4 frames fed to the
realtime session's ``_decode`` / ``_on_frame``, ``GetMessage`` / ``GetThreadEvents`` answered
from memory (decoded by the real wire code), ``handle_message`` a counter (the host's turn is
not run: 9,000 model turns are not what this measures).

The stream, like P8's: rooms at random; 60 % roots, 40 % replies to one of the room's last 50
roots; 2 % of roots mention the bot, and a reply in such a thread is addressed too (the bot
takes part). Every message is new (the seen-set, the thread index, the frontier's
observations see 300,000 distinct ids).

RSS (psutil, this process) after ``gc.collect()``: the baseline after a warm-up of 5,000
messages, then at 30k, 100k, 200k and 300k. Goals: growth ≤ 50 MB in all, ≤ 2 MB from 100k
to 300k (every bounded container at its cap by then). Then each bounded container of the
adapter is listed on stderr with its size and cap.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from typing import Any

from _util import emit, note, setup_hermes_home

MESSAGES = int(os.environ.get("P4_MESSAGES", "300000"))
ROOMS = int(os.environ.get("P4_ROOMS", "200"))
CHECKPOINTS = [c for c in (30_000, 100_000, 200_000, 300_000) if c <= MESSAGES] or [MESSAGES]
WARMUP = 5_000


def bounded_containers(root: Any) -> list[tuple[str, int, int]]:
    """``(path, size, cap)`` of every ``BoundedMap`` / ``BoundedSet`` reachable from ``root``
    through the plugin's own objects' attributes (depth ≤ 4)."""
    from hermes_chatto.bounded import BoundedMap, BoundedSet

    found: list[tuple[str, int, int]] = []
    seen: set[int] = set()

    def walk(obj: Any, path: str, depth: int) -> None:
        if id(obj) in seen or depth > 4:
            return
        seen.add(id(obj))
        if isinstance(obj, (BoundedMap, BoundedSet)):
            found.append((path, len(obj), int(getattr(obj, "capacity", 0))))
            return
        if not type(obj).__module__.startswith("hermes_chatto"):
            return
        attrs = getattr(obj, "__dict__", None)
        if attrs is None:
            return
        for name, value in attrs.items():
            walk(value, f"{path}.{name}", depth + 1)

    walk(root, "adapter", 0)
    return sorted(found)


async def run() -> None:
    import psutil

    from _gateway import agent_result, start_gateway, stop_gateway
    from _server_proc import ServerProcess
    from hermes_chatto.wire.connect import encode_json
    from hermes_chatto.wire.proto import chatto_pb2 as pb
    from hermes_chatto.wire.realtime import _Conn
    from p3_adapter import ReadsFromMemory, chatto_frame

    async def run_agent(message, source, session_key):
        return agent_result("ok")

    sp = ServerProcess(people=["bob", "carol"], rooms=ROOMS - 1)
    info = sp.start()
    runner, adapter = await start_gateway(info["base"], info["bot_key"], info["general"], run_agent)
    rt = adapter.conn.realtime
    await asyncio.wait_for(rt.caught_up.wait(), 60)
    bot = adapter.conn.bot_user_id
    rooms = [info["general"], *info["rooms"]]
    people = [info["users"][p] for p in ("alice", "bob", "carol")]
    handled = [0]

    async def record(event: Any) -> None:
        handled[0] += 1

    adapter.handle_message = record
    reads = ReadsFromMemory(adapter.conn.client)
    adapter.conn.client = reads
    live = _Conn(False)
    live.accepted = live.live = True
    rng = random.Random(4)
    roots: dict[str, list[tuple[str, bool]]] = {r: [] for r in rooms}
    proc = psutil.Process()

    async def feed(start: int, stop: int) -> None:
        for n in range(start, stop):
            room = rng.choice(rooms)
            uid = people[n % 3]
            eid = f"E{n:025d}"
            if roots[room] and rng.random() < 0.4:
                root, addressed = rng.choice(roots[room])
                mention = False
            else:
                root, addressed = "", rng.random() < 0.02
                mention = addressed
                roots[room].append((eid, addressed))
                del roots[room][:-50]
            text = "@helper_bot can you check this?" if mention else "a message " + "x" * (n % 80)
            if addressed:
                m = pb.Message(id=eid, room_id=room, actor_id=uid, body=text, thread_root_event_id=root)
                m.created_at.FromSeconds(1_800_000_000 + n)
                reads.bodies[eid] = (encode_json(pb.GetMessageResponse(message=m)), m, None)
            data = chatto_frame(pb, eid, room, root, uid, bot, n, text=text, mention=mention)
            frame = rt._decode(data, live)
            if frame is not None:
                await rt._on_frame(frame, live)
            if n % 1000 == 0:
                reads.bodies.clear()  # a body staged for a message ingress dropped (never read)
                await asyncio.sleep(0)  # let background work (cursor, row writes) run

    def rss_mb() -> float:
        gc.collect()
        return proc.memory_info().rss / 2**20

    t0 = time.monotonic()
    await feed(0, WARMUP)
    base = rss_mb()
    if os.environ.get("P4_TRACE"):  # where the growth is (slow): the top allocation sites
        import tracemalloc

        tracemalloc.start()
        snap0 = tracemalloc.take_snapshot()
        await feed(WARMUP, WARMUP + int(os.environ["P4_TRACE"]))
        gc.collect()
        snap1 = tracemalloc.take_snapshot()
        for stat in snap1.compare_to(snap0, "lineno")[:25]:
            note(f"P4 trace: {stat}")
        return
    at: dict[int, float] = {}
    done = WARMUP
    for cp in CHECKPOINTS:
        await feed(done, WARMUP + cp)
        done = WARMUP + cp
        at[cp] = rss_mb()
        note(f"P4: {cp:,} messages: RSS {at[cp]:.1f} MB (+{at[cp] - base:.1f}), {time.monotonic() - t0:.0f} s")
    note(f"P4: handle_message reached {handled[0]} times; reads {reads.reads}")
    note(f"P4: adapter counters { {k: v for k, v in adapter.conn.counters.items() if v} }")
    for path, size, cap in bounded_containers(adapter):
        note(f"P4: bounded {path}: {size} of {cap}")
    store = runner.session_store
    note(f"P4: Hermes session store entries {len(getattr(store, '_entries', {}))}")
    adapter.conn.client = reads._real
    await stop_gateway(adapter)
    sp.stop()

    for cp, v in at.items():
        emit(4, f"rss_growth_at_{cp // 1000}k", v - base, "MB", "<=50")
    last = CHECKPOINTS[-1]
    mid = 100_000 if 100_000 in at else CHECKPOINTS[0]
    emit(4, f"rss_growth_{mid // 1000}k_to_{last // 1000}k", at[last] - at[mid], "MB", "<=2")
    emit(4, "messages_per_s", (done - WARMUP) / max(1e-9, time.monotonic() - t0), "msg/s", "-")


def main() -> None:
    setup_hermes_home()
    asyncio.run(run())


if __name__ == "__main__":
    main()
