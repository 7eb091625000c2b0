"""P9: recovery after downtime beyond Chatto's resume window (``adapter/gap.py``).

Set-up: the local Chatto server (realtime protocol 4) in its own process (``_server_proc``), a
real ``GatewayRunner`` with the real ``ChattoAdapter`` here (``_gateway``; the model answers at
once, with text that carries no tag). Two scenarios on the same server and Hermes home, one
after the other: ``1h`` (scale 1, 4 channels) and ``1d`` (scale 10, 21 channels).

1. **Before**: the gateway is up; alice opens ``4 × scale`` threads with a root that mentions
   the bot, and the bot answers each (it now takes part in them).
2. **Down**: the gateway stops cleanly (``adapter.disconnect``: resume cursor and seen-set
   stored). While it is down people post ``60 × scale`` messages through the server's
   ``CreateMessage`` RPC with their own tokens, the server clock moving forward between posts
   so that they spread over the downtime (1 h or 1 d; the resume cursor's 15-minute lifetime
   then has run out, as after a real downtime — the server's catch-up reason is printed). Per
   scale unit, in a seeded random order: 6 channel roots that mention the bot (6
   conversations); 10 replies in the bot's threads (spread over its 4 threads); one thread a
   person started with 3 replies that mention the bot (1 conversation, 3 mentions); 3 DMs by
   alice and 2 by bob (2 conversations); 35 messages not for the bot (roots, and replies in
   threads the bot is not in).
3. **Back**: a new gateway connects (same Hermes home) and runs until idle: the recovery task
   done, no turn running or queued, nothing moving for ``SETTLE_S``.

Lines, per scenario (``P9 recovery_<1h|1d>_…``):

* ``reads`` — the bot's read RPCs (``Get*``/``List*``/``BatchGet*``) from connect to idle,
  counted by the server; ``reads_<Rpc>`` for the main ones (all of them on stderr);
* ``connect_to_idle`` — seconds from ``adapter.connect`` to idle;
* ``lost`` — addressed messages (mentions, DMs, replies in the bot's threads) that reached no
  turn, neither as its trigger nor in its context (the thread block or the DM context);
  goal 0; by kind on stderr;
* ``answered_twice`` — addressed messages delivered more than once (trigger or context), plus
  messages answered before the downtime that became a trigger again; goal 0;
* ``turns_per_conversation_max`` — turns after the restart per conversation (a thread with
  several missed mentions gets one); goal 1; ``conversations`` and ``turns`` beside it.

For reference (a note line): Hermes' Discord adapter's opt-in backfill looks back 6 h, scans at
most 100 messages and dispatches at most 10.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from _util import emit, note, setup_hermes_home

SETTLE_S = float(os.environ.get("P9_SETTLE_S", "1.0"))
#: (name, scale, downtime seconds, channels used)
SCENARIOS = [("1h", 1, 3600.0, 4), ("1d", int(os.environ.get("P9_DAY_SCALE", "10")), 86400.0, 21)]
TAG = re.compile(r"\bm(\d+)\b")
MAIN_READS = ("ListNotificationOccurrences", "GetRoomEvents", "GetMessage", "GetThreadEvents", "GetUser")


def is_read(procedure: str) -> bool:
    return procedure.rsplit("/", 1)[-1].startswith(("Get", "List", "BatchGet"))


@dataclass
class Post:
    """One message of the downtime script: ``root`` is an event id or an earlier post (its
    thread); ``conv`` names the conversation of an addressed post (else ``""``)."""

    login: str
    room: str
    text: str
    root: str | Post = ""
    kind: str = "chatter"
    conv: str = ""
    event_id: str = ""


@dataclass
class Watch:
    """The turns the host got (wrapped ``handle_message``) and the adapter's idle state."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    last_change: float = 0.0

    def install(self, adapter: Any) -> None:
        hm = adapter.handle_message

        async def handle_message(event):
            src = event.source
            self.turns.append(
                {
                    "id": getattr(event, "message_id", "") or "",
                    "text": getattr(event, "text", "") or "",
                    "context": getattr(event, "channel_context", None) or "",
                    "chat": src.chat_id,
                    "thread": src.thread_id or "",
                }
            )
            self.last_change = time.monotonic()
            return await hm(event)

        adapter.handle_message = handle_message


async def run_agent(message, source, session_key):
    from _gateway import agent_result

    return agent_result("noted")


async def wait_for(cond, timeout: float = 60.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def busy(adapter: Any) -> bool:
    from hermes_chatto import compat

    gap = adapter.inbound.gap
    return bool(
        compat.active_sessions(adapter)
        or compat.pending_messages(adapter)
        or (gap is not None and gap.task is not None and not gap.task.done())
    )


async def wait_idle(adapter: Any, watch: Watch, timeout: float = 300.0) -> float:
    """Until the adapter is idle and nothing moved for ``SETTLE_S``; returns the monotonic time
    it last became idle."""
    end = time.monotonic() + timeout
    idle_since: float | None = None
    sends = -1
    while True:
        now = time.monotonic()
        if now > end:
            raise TimeoutError("the gateway did not go idle")
        n = adapter.conn.counters["sends"]
        if busy(adapter) or n != sends:
            idle_since, sends = None, n
        elif idle_since is None:
            idle_since = now
        elif now - idle_since >= SETTLE_S and now - watch.last_change >= SETTLE_S:
            return idle_since
        await asyncio.sleep(0.01)


def downtime_script(scale: int, rooms: list[str], bot_threads: list[tuple[str, str]], rng: random.Random) -> list[Post]:
    """The posts of one downtime (see the module docstring), in a seeded random order with
    every reply after its root."""
    units: list[list[Post]] = []  # each unit's posts keep their order
    people = ("alice", "bob", "carol")
    for _ in range(scale):
        for _ in range(6):
            units.append(
                [Post(rng.choice(people), rng.choice(rooms), "@helper_bot can you look at this", kind="root_mention")]
            )
        mine = rng.sample(bot_threads, k=min(4, len(bot_threads)))
        for k in range(10):
            room, root = mine[k % len(mine)]
            units.append(
                [Post(rng.choice(("alice", "bob")), room, "one more detail for you", root, kind="thread_reply")]
            )
        room = rng.choice(rooms)
        first = Post("carol", room, "deploy is stuck again")
        units.append(
            [first]
            + [
                Post(w, room, "@helper_bot any idea?", first, kind="several_mentions")
                for w in ("alice", "bob", "alice")
            ]
        )
        units += [[Post("alice", "dm:alice", "a private question", kind="dm")] for _ in range(3)]
        units += [[Post("bob", "dm:bob", "a question from bob", kind="dm")] for _ in range(2)]
        for _ in range(7):  # 7 threads of chatter the bot is not in: a root and 4 replies
            room, who = rng.choice(rooms), rng.choice(("bob", "carol"))
            top = Post(who, room, "lunch plans, nothing for the bot")
            units.append([top] + [Post(rng.choice(("bob", "carol")), room, "sounds good", top) for _ in range(4)])
    out: list[Post] = []
    pending = [list(u) for u in units]
    while pending:  # interleave the units, each unit's posts in order
        i = rng.randrange(len(pending))
        out.append(pending[i].pop(0))
        if not pending[i]:
            pending.pop(i)
    return out


async def scenario(sp: Any, name: str, scale: int, downtime: float, n_rooms: int, seq: list[int]) -> dict[str, Any]:
    from _gateway import start_gateway, stop_gateway

    info = sp.info
    loop = asyncio.get_running_loop()

    async def ask(*cmd: Any) -> Any:
        return await loop.run_in_executor(None, sp.ask, *cmd)

    rooms = [info["general"], *info["rooms"]][:n_rooms]
    dms = {"dm:alice": info["dm"], "dm:bob": info["dm_bob"]}
    rng = random.Random(9 + scale)

    def tag() -> str:
        seq[0] += 1
        return f"m{seq[0]}"

    # 1. before: the bot takes part in 4 × scale threads
    watch = Watch()
    runner, adapter = await start_gateway(
        info["base"], info["bot_key"], info["general"], run_agent, before_connect=watch.install
    )
    await wait_for(lambda: adapter.conn.realtime is not None and adapter.conn.bot_user_id, what="connected")
    bot_threads: list[tuple[str, str]] = []
    answered_before: set[str] = set()
    for k in range(4 * scale):
        room = rooms[k % len(rooms)]
        n = adapter.conn.counters["sends"]
        eid, _t0, _t1 = await ask("post", "alice", room, f"@helper_bot please watch job {k} {tag()}", "")
        await wait_for(lambda n=n: adapter.conn.counters["sends"] > n, what="the answer before the downtime")
        bot_threads.append((room, str(eid)))
        answered_before.add(str(eid))
    await wait_idle(adapter, watch)
    await stop_gateway(adapter)
    turns_before = len(watch.turns)

    # 2. down: people post, the server clock moves through the downtime
    script = downtime_script(scale, rooms, bot_threads, rng)
    step = downtime / len(script)
    for p in script:
        await ask("call", "advance_clock", (step,), {})
        room = dms.get(p.room, p.room)
        root = p.root.event_id if isinstance(p.root, Post) else p.root
        p.text = f"{p.text} {tag()}"
        eid, _t0, _t1 = await ask("post", p.login, room, p.text, root)
        p.event_id = str(eid)
        if p.kind == "root_mention":
            p.conv = f"thread:{p.event_id}"
        elif p.kind in ("thread_reply", "several_mentions"):
            p.conv = f"thread:{root}"
        elif p.kind == "dm":
            p.conv = f"dm:{room}"
    addressed = [p for p in script if p.kind != "chatter"]

    # 3. back: a new gateway, the same home
    watch2 = Watch()
    t_connect: list[float] = []

    def before(adapter: Any) -> None:
        watch2.install(adapter)
        t_connect.append(time.monotonic())

    req0 = await ask("requests")
    cu0 = len(await ask("catchups"))
    runner, adapter = await start_gateway(
        info["base"], info["bot_key"], info["general"], run_agent, before_connect=before
    )
    t_idle = await wait_idle(adapter, watch2)
    req1 = await ask("requests")
    catchups = (await ask("catchups"))[cu0:]
    counters = {k: v for k, v in adapter.conn.counters.items() if v}
    await stop_gateway(adapter)

    reads = Counter(
        {k.rsplit("/", 1)[-1]: v - req0.get(k, 0) for k, v in req1.items() if is_read(k) and v > req0.get(k, 0)}
    )
    by_id = {p.event_id: p for p in script}
    delivered: Counter[str] = Counter()  # event id → deliveries (trigger or context)
    by_tag = {m.group(0): p.event_id for p in script if (m := TAG.search(p.text)) is not None}
    turns_per_conv: Counter[str] = Counter()
    retriggered = 0
    for t in watch2.turns:
        if t["id"] in answered_before:
            retriggered += 1
        trigger = by_id.get(t["id"])
        conv = trigger.conv if trigger is not None and trigger.conv else f"other:{t['chat']}:{t['thread']}"
        turns_per_conv[conv] += 1
        ids = {t["id"]} | {by_tag[m.group(0)] for m in TAG.finditer(t["context"]) if m.group(0) in by_tag}
        for i in ids:
            delivered[i] += 1
    lost = [p for p in addressed if not delivered[p.event_id]]
    twice = [p for p in addressed if delivered[p.event_id] > 1]
    convs = {p.conv for p in addressed}
    note(
        f"P9 {name}: {len(script)} posts over {downtime / 3600:.0f} h of server clock in {len(rooms)} channels + 2 DMs; "
        f"{len(addressed)} addressed in {len(convs)} conversations, by kind {dict(Counter(p.kind for p in addressed))}; "
        f"{turns_before} turns before the downtime"
    )
    note(f"P9 {name}: server catch-ups at the reconnect (path, reason): {catchups}")
    note(f"P9 {name}: bot reads from connect to idle: {dict(reads)}")
    note(f"P9 {name}: adapter counters {counters}")
    note(
        f"P9 {name}: {len(watch2.turns)} turns after the restart; lost by kind {dict(Counter(p.kind for p in lost))}; "
        f"answered twice by kind {dict(Counter(p.kind for p in twice))}; pre-downtime triggers again {retriggered}; "
        f"turns per conversation {sorted(Counter(turns_per_conv.values()).items())} (turns: conversations)"
    )
    return {
        "reads": reads,
        "connect_to_idle": t_idle - t_connect[0],
        "lost": len(lost),
        "answered_twice": len(twice) + retriggered,
        "turns": len(watch2.turns),
        "conversations": len(convs),
        "turns_per_conversation_max": max(turns_per_conv.values(), default=0),
        "addressed": len(addressed),
        "posts": len(script),
    }


async def run() -> dict[str, dict[str, Any]]:
    from _server_proc import ServerProcess

    n_rooms = max(s[3] for s in SCENARIOS)
    sp = ServerProcess(people=["bob", "carol"], rooms=n_rooms - 1)
    info = sp.start()
    info["dm_bob"] = sp.ask("call", "open_dm", (info["users"]["bob"], info["users"]["bot"]), {})
    out: dict[str, dict[str, Any]] = {}
    seq = [0]
    try:
        for name, scale, downtime, rooms in SCENARIOS:
            out[name] = await scenario(sp, name, scale, downtime, rooms, seq)
    finally:
        sp.stop()
    return out


def main() -> None:
    setup_hermes_home()
    results = asyncio.run(run())
    for name, r in results.items():
        pre = f"recovery_{name}"
        emit(9, f"{pre}_posts", r["posts"], "messages", "-")
        emit(9, f"{pre}_addressed", r["addressed"], "messages", "-")
        emit(9, f"{pre}_reads", sum(r["reads"].values()), "reads", "-")
        for rpc in MAIN_READS:
            emit(9, f"{pre}_reads_{rpc}", r["reads"].get(rpc, 0), "reads", "-")
        emit(9, f"{pre}_connect_to_idle", r["connect_to_idle"], "s", "-")
        emit(9, f"{pre}_lost", r["lost"], "messages", "0")
        emit(9, f"{pre}_answered_twice", r["answered_twice"], "messages", "0")
        emit(9, f"{pre}_conversations", r["conversations"], "conversations", "-")
        emit(9, f"{pre}_turns", r["turns"], "turns", "-")
        emit(9, f"{pre}_turns_per_conversation_max", r["turns_per_conversation_max"], "turns", "1")
    from hermes_chatto.adapter.gap import MAX_RECOVERY_TURNS

    note(
        f"P9 note: the plugin answers at most {MAX_RECOVERY_TURNS} conversations after one gap "
        "(adapter/gap.py MAX_RECOVERY_TURNS); a scenario with more loses the oldest"
    )
    note(
        "P9 note: peer mark — Hermes Discord's opt-in backfill looks back 6 h, scans <= 100 messages, "
        "dispatches <= 10 (recovery here: up to 7 days, every conversation, one turn each)"
    )


if __name__ == "__main__":
    main()
