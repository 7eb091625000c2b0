"""P3: CPU per message on the path a message really takes, side by side with Hermes' own
Mattermost adapter (hermes-agent 0.19.0 ``plugins/platforms/mattermost``).

Both adapters are built by Hermes and wired to one real ``GatewayRunner`` the way
``GatewayRunner.start`` wires them (message handler, session store, busy handler, the
authorization check): the Chatto adapter through ``_gateway.start_gateway`` (connected to the
local server in its own process), Mattermost by its plugin's factory with the same setters.
The same logical stream goes to both: people replying in ``THREADS`` threads per round (new
ones every round, each already bound to a runner session; ten replies each), every message
mentioning the bot, so every one reaches ``handle_message``; ``handle_message`` itself is
replaced by a recorder on both (the host's turn is the same for every adapter and is not
measured here). Also measured: replies without a mention in threads the bot is not in (a
message not for the bot), and Mattermost with its dedupe cache past its 2,000 ids.

* **Chatto, real path**: the raw protocol-4 frame (protobuf bytes) → the realtime session's
  ``_decode`` / ``_on_frame`` (decode, ``event_of``, the cursor) → ``Inbound`` (ingress, the
  seen-set, the author, the ``GetMessage`` answer decoded from its Connect-JSON body, the
  durable-before-answered gate, the session lookup, the thread frontier's block) →
  ``handle_message``. The two reads a turn may make (``GetMessage``; ``GetThreadEvents``
  when the thread moved) are answered from memory: their bodies are decoded by the real
  wire code, the HTTP round trip is left out (Mattermost's REST calls would be too).
* **Chatto, thread context off**: the same, with ``ThreadFrontier(window=0)``.
* **Mattermost**: the JSON text frame → ``json.loads`` → ``_handle_ws_event`` (its own
  ``json.loads`` of the post, dedupe, mention gate, ``build_source``, ``MessageEvent``) →
  ``handle_message``.
* **floor**: ``build_source`` + ``MessageEvent`` alone (what every adapter must do).

CPU is ``time.process_time`` (every thread of the process: work pushed to a thread counts),
per batch of ``P3_MESSAGES`` messages, the variants interleaved in a rotating order for
``P3_ROUNDS`` rounds; the figure is the median over rounds of µs per message, the ratio the
median of the per-round ratios (both measured in the same round, so machine load cancels).

Probes instead of the figures: ``P3_STAGES=on|off|skip`` prints the event loop thread's CPU per
stage of the Chatto path for one round's batch (``P3_FRONTIER_STAGES=1`` adds the frontier's
steps), ``P3_PROFILE=on|off`` a cProfile (``P3_SORT`` its order), ``P3_SLICES=1`` the cost of a
round in slices of 200 (the first slice is the threads' first turns), ``P3_THREADS=1`` each
batch's loop-thread and garbage-collector CPU; ``P3_FIRST=1|quiet`` limits ``P3_STAGES`` and
``P3_PROFILE`` to a round's first or quiet turns.

The stderr line "reads answered from memory" counts ``GetMessage`` reads of the turns' messages
and, as ``unstaged``, of thread roots the bench never posted (a reply not for the bot in a
thread whose root is unknown reads its root once, to learn whether the bot wrote it).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from typing import Any

from _util import emit, note, setup_hermes_home

ROUNDS = int(os.environ.get("P3_ROUNDS", "7"))
PER_ROUND = int(os.environ.get("P3_MESSAGES", "2000"))
THREADS = 200  # 10 turns per thread per round
TEXT = "@helper_bot can you check this?"


class ReadsFromMemory:
    """The adapter's ``ChattoClient`` with ``GetMessage`` / ``GetThreadEvents`` answered from
    memory (the Connect-JSON bodies decoded by the real wire code; no HTTP). Every other call
    goes to the real client."""

    def __init__(self, real: Any) -> None:
        self._real = real
        #: event id -> (GetMessageResponse JSON, its pb.Message, (room, root) or None); a message
        #: joins its thread's page when it is read (a thread read holds what was posted before)
        self.bodies: dict[str, tuple[bytes, Any, tuple[str, str] | None]] = {}
        self.threads: dict[tuple[str, str], list[Any]] = {}  # (room, root) -> pb.Message list
        self.reads = {"GetMessage": 0, "GetThreadEvents": 0}
        # resolved once: the bench's own lookups are not the plugin's CPU
        from hermes_chatto.wire.types import ChattoMessage

        try:
            from hermes_chatto.wire.connect import decode_get_message
        except ImportError:  # an older plugin (before issue 27): the protobuf JSON parser
            from hermes_chatto.wire.connect import decode_json
            from hermes_chatto.wire.proto import chatto_pb2 as pb
            from hermes_chatto.wire.types import message_from_pb

            def decode_get_message(body: bytes) -> ChattoMessage:
                return message_from_pb(decode_json(pb.GetMessageResponse, body).message)

        self._decode, self._message = decode_get_message, ChattoMessage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    async def get_message(self, room_id: str, event_id: str) -> Any:
        self.reads["GetMessage"] += 1
        staged = self.bodies.pop(event_id, None)
        body = None
        if staged is not None:  # the message is posted now: its thread holds it from here on
            body, msg, thread = staged
            if thread is not None:
                posted = self.threads.setdefault(thread, [])
                posted.append(msg)
                del posted[1:-60]
        if body is None:  # a root read for its author (threads.root_is_own): a person's
            self.reads["unstaged"] = self.reads.get("unstaged", 0) + 1
            return self._message(event_id=event_id, room_id=room_id, author_id="Uperson", body="")
        return self._decode(body)

    async def get_thread_events(self, room_id: str, root: str, *, limit: int | None = None, **kw: Any) -> Any:
        from hermes_chatto.wire.types import TimelinePage, message_from_pb

        self.reads["GetThreadEvents"] += 1
        msgs = self.threads.get((room_id, root), [])[-(limit or 50) :]
        return TimelinePage(messages=tuple(message_from_pb(m) for m in msgs))


def chatto_frame(
    pb: Any, eid: str, room: str, root: str, author: str, bot: str, n: int, *, text: str = TEXT, mention: bool = True
) -> bytes:
    """A protocol-4 ``message_posted`` event frame (serialized ``RealtimeServerFrame``)."""
    ev = pb.RealtimeEvent(id=eid, actor_id=author, cursor=f"rc:{n:012d}")
    ev.created_at.FromSeconds(1_800_000_000 + n)
    mp = ev.message_posted
    mp.room_id, mp.thread_root_event_id, mp.body_plaintext = room, root, text
    mp.room_kind = pb.ROOM_KIND_CHANNEL
    if mention:
        mp.mentions.add(direct=pb.DirectUserMention(user_id=bot), includes_viewer=True)
    return pb.RealtimeServerFrame(event=ev).SerializeToString()


def mattermost_frame(pid: str, channel: str, root: str, author: str, name: str, n: int, text: str = TEXT) -> str:
    post = {
        "id": pid,
        "create_at": 1_800_000_000_000 + n,
        "update_at": 1_800_000_000_000 + n,
        "edit_at": 0,
        "delete_at": 0,
        "is_pinned": False,
        "user_id": author,
        "channel_id": channel,
        "root_id": root,
        "original_id": "",
        "message": text,
        "type": "",
        "props": {"disable_group_highlight": True},
        "hashtags": "",
        "pending_post_id": "",
        "reply_count": 0,
        "metadata": {},
    }
    data = {
        "channel_display_name": "Load",
        "channel_name": "load",
        "channel_type": "O",
        "post": json.dumps(post),
        "sender_name": "@" + name,
        "set_online": True,
        "team_id": "team0000000000000000000000",
    }
    frame = {"event": "posted", "data": data, "broadcast": {"channel_id": channel, "team_id": ""}, "seq": n}
    return json.dumps(frame)


async def run() -> None:
    from _gateway import agent_result, start_gateway, stop_gateway
    from _server_proc import ServerProcess
    from hermes_chatto.frontier.service import ThreadFrontier
    from hermes_chatto.wire.connect import encode_json
    from hermes_chatto.wire.proto import chatto_pb2 as pb
    from hermes_chatto.wire.realtime import _Conn

    async def run_agent(message, source, session_key):
        return agent_result("ok")

    sp = ServerProcess(people=["bob", "carol"], rooms=9)
    info = sp.start()
    runner, adapter = await start_gateway(info["base"], info["bot_key"], info["general"], run_agent)
    rt = adapter.conn.realtime
    await asyncio.wait_for(rt.caught_up.wait(), 60)
    bot = adapter.conn.bot_user_id
    rooms = [info["general"], *info["rooms"]]
    people = [(info["users"][p], p) for p in ("alice", "bob", "carol")]

    got: list[str] = []

    async def record(event: Any) -> None:
        got.append(event.message_id)

    adapter.handle_message = record
    reads = ReadsFromMemory(adapter.conn.client)
    adapter.conn.client = reads
    frontier_on = adapter.conn.frontier
    assert frontier_on is not None and frontier_on.enabled
    frontier_off = ThreadFrontier(None, reads.get_thread_events, bot, window=0)

    # Mattermost, built by its plugin's factory, wired like GatewayRunner.start
    from gateway.config import Platform, PlatformConfig
    from gateway.platforms.base import MessageEvent, MessageType
    from plugins.platforms.mattermost.adapter import MattermostAdapter  # type: ignore[import-untyped]

    mm = MattermostAdapter(PlatformConfig(enabled=True, token="mm-bench", extra={"url": "http://127.0.0.1:9"}))
    mm._bot_user_id, mm._bot_username = "mmbot" + "0" * 21, "helper_bot"
    mm._reply_mode = "thread"
    mm.gateway_runner = runner
    mm.set_message_handler(runner._handle_message)
    mm.set_fatal_error_handler(runner._handle_adapter_fatal_error)
    mm.set_session_store(runner.session_store)
    mm.set_busy_session_handler(runner._handle_active_session_busy_message)
    mm.set_authorization_check(runner._make_adapter_auth_check(Platform("mattermost")))
    mm._busy_text_mode = runner._busy_text_mode
    mm.handle_message = record

    # THREADS threads per round, each bound to a runner session (as after its first turn); new
    # ones every round, so a round's turns are the first 2,000 / THREADS of their threads (the
    # handler here runs no turn, so a thread's ledger only grows: reusing threads across rounds
    # would measure an ever longer unanswered thread)
    threads: list[tuple[str, str]] = []

    def new_threads(r: int) -> None:
        threads.clear()
        for t in range(THREADS):
            room, root = rooms[t % len(rooms)], f"R{r:03d}{t:022d}"
            threads.append((room, root))
            uid, _name = people[t % len(people)]
            src = adapter.build_source(chat_id=room, chat_type="group", user_id=uid, thread_id=root)
            runner.session_store.get_or_create_session(src)
            msrc = mm.build_source(chat_id=room, chat_type="channel", user_id=uid, thread_id=root)
            runner.session_store.get_or_create_session(msrc)
            root_msg = pb.Message(id=root, room_id=room, actor_id=uid, body="a thread")
            reads.threads[(room, root)] = [root_msg]

    new_threads(999)
    seq = [0]

    def batch(kind: str, addressed: bool = True) -> list[Any]:
        """PER_ROUND new frames of ``kind`` (``chatto`` / ``mattermost``), their bodies staged.
        Not ``addressed``: replies without a mention in threads the bot is not in."""
        out: list[Any] = []
        for _ in range(PER_ROUND):
            n = seq[0] = seq[0] + 1
            room, root = threads[n % THREADS]
            uid, name = people[n % len(people)]
            eid = f"E{n:025d}"
            if not addressed:
                other = f"Q{n % 997:025d}"  # a thread of people only
                if kind == "mattermost":
                    out.append(mattermost_frame(eid, room, other, uid, name, n, text="just people talking"))
                else:
                    out.append(
                        chatto_frame(pb, eid, room, other, uid, bot, n, text="just people talking", mention=False)
                    )
                continue
            if kind == "mattermost":
                out.append(mattermost_frame(eid, room, root, uid, name, n))
                continue
            m = pb.Message(id=eid, room_id=room, actor_id=uid, body=TEXT, thread_root_event_id=root)
            m.created_at.FromSeconds(1_800_000_000 + n)
            reads.bodies[eid] = (encode_json(pb.GetMessageResponse(message=m)), m, (room, root))
            out.append(chatto_frame(pb, eid, room, root, uid, bot, n))
        return out

    live = _Conn(False)
    live.accepted = live.live = True

    async def feed_chatto(frames: list[bytes]) -> None:
        for data in frames:
            frame = rt._decode(data, live)
            if frame is not None:
                await rt._on_frame(frame, live)

    from gateway.platforms.helpers import MessageDeduplicator

    async def feed_mattermost(frames: list[str]) -> None:
        # Its dedupe cache (max 2,000 ids for 5 min) is emptied before each batch: past 2,000
        # ids every message rebuilds and sorts it (~0.4 ms); that steady state is "mm_steady".
        mm._dedup = MessageDeduplicator()
        for raw in frames:
            await mm._handle_ws_event(json.loads(raw))

    async def feed_mattermost_steady(frames: list[str]) -> None:
        for raw in frames:
            await mm._handle_ws_event(json.loads(raw))

    async def feed_floor(frames: list[str]) -> None:
        for raw in frames:
            post = json.loads(json.loads(raw)["data"]["post"])  # the ids only; the floor is the two objects
            src = mm.build_source(
                chat_id=post["channel_id"], chat_type="channel", user_id=post["user_id"], thread_id=post["root_id"]
            )
            await record(MessageEvent(text=TEXT, message_type=MessageType.TEXT, source=src, message_id=post["id"]))

    import gc

    gcs: list[tuple[int, float]] = []
    gc_t0 = [0.0]

    def gc_cb(phase: str, info: dict) -> None:
        if phase == "start":
            gc_t0[0] = time.process_time()
        else:
            gcs.append((info["generation"], time.process_time() - gc_t0[0]))

    gc.callbacks.append(gc_cb)

    async def timed(feed: Any, frames: list[Any], expect: int | None = None) -> float:
        await asyncio.sleep(0)
        before = len(got)
        gcs.clear()
        t0, th0 = time.process_time(), time.thread_time()
        await feed(frames)
        spent = time.process_time() - t0
        if os.environ.get("P3_THREADS"):
            g = [0.0, 0.0, 0.0]
            cnt = [0, 0, 0]
            for gen, dt in gcs:
                g[gen] += dt
                cnt[gen] += 1
            note(
                f"{getattr(feed, '__name__', feed)}: loop thread {(time.thread_time() - th0) * 1e6 / len(frames):.1f} µs, all {spent * 1e6 / len(frames):.1f} µs; gc per msg µs {[round(x * 1e6 / len(frames), 1) for x in g]} counts {cnt}"
            )
        if len(got) - before != (len(frames) if expect is None else expect):
            raise RuntimeError(f"{len(got) - before} of {len(frames)} messages reached handle_message")
        return spent * 1e6 / len(frames)

    async def chatto_on(frames: list[bytes]) -> None:
        adapter.conn.frontier = frontier_on
        await feed_chatto(frames)

    async def chatto_off(frames: list[bytes]) -> None:
        adapter.conn.frontier = frontier_off
        await feed_chatto(frames)

    variants = {
        "on": chatto_on,
        "off": chatto_off,
        "mm": feed_mattermost,
        "floor": feed_floor,
        "mm_steady": feed_mattermost_steady,
    }

    async def shutdown() -> None:
        adapter.conn.frontier = frontier_on
        adapter.conn.client = reads._real
        await stop_gateway(adapter)
        sp.stop()

    async def first_or_quiet(feed: Any, frames: list[Any]) -> list[Any]:
        """``P3_FIRST``: a round's first turns (its first ``THREADS`` frames, one per thread),
        or its quiet turns: the rest, after the first turns were fed (untimed), so that
        each thread's first turn is not among them."""
        if os.environ["P3_FIRST"] == "1":
            return frames[:THREADS]
        await feed(frames[:THREADS])
        return frames[THREADS:]

    if os.environ.get("P3_PROFILE"):  # where the Chatto path's time goes (event loop thread only)
        import cProfile
        import pstats

        which = os.environ["P3_PROFILE"]
        await timed(variants[which], batch("chatto")[:200])
        prof = cProfile.Profile()
        new_threads(998)  # a round's mix: one turn in ten is its thread's first
        frames_p = batch("chatto")
        if os.environ.get("P3_FIRST"):  # as for P3_STAGES: a round's first or quiet turns only
            frames_p = await first_or_quiet(variants[which], frames_p)
        prof.enable()
        await timed(variants[which], frames_p)
        prof.disable()
        pstats.Stats(prof).sort_stats(os.environ.get("P3_SORT", "cumulative")).print_stats(45)
        await shutdown()
        return
    if os.environ.get("P3_STAGES"):  # CPU (loop thread) per stage, nested stages included in their callers
        import functools

        spent: dict[str, float] = {}

        def wrap(obj: Any, name: str, label: str) -> None:
            fn = getattr(obj, name)

            @functools.wraps(fn)
            async def timed_stage(*a: Any, **k: Any) -> Any:
                t = time.thread_time()
                try:
                    return await fn(*a, **k)
                finally:
                    spent[label] = spent.get(label, 0.0) + time.thread_time() - t

            setattr(obj, name, timed_stage)

        def wrap_sync(obj: Any, name: str, label: str) -> None:
            fn = getattr(obj, name)

            @functools.wraps(fn)
            def timed_stage(*a: Any, **k: Any) -> Any:
                t = time.thread_time()
                try:
                    return fn(*a, **k)
                finally:
                    spent[label] = spent.get(label, 0.0) + time.thread_time() - t

            setattr(obj, name, timed_stage)

        ib = adapter.inbound
        for nm in ("on_new_message", "_decide", "_author", "_loop_gate", "_read_full", "_hand_over", "dispatch"):
            wrap(ib, nm, nm)
        wrap(ib._rooms, "fetch", "rooms.fetch")
        wrap(ib._turns, "start_turn", "turns.start_turn")
        wrap(ib._turns, "session_id", "turns.session_id")
        wrap(ib.durable, "_durable", "durable")
        wrap(ib._rescue, "rescue", "rescue")
        wrap_sync(ib, "_observe", "_observe")
        wrap_sync(ib, "channel_overlays", "channel_overlays")
        wrap_sync(adapter, "build_source", "build_source")
        wrap_sync(adapter, "session_key_for", "session_key_for")
        wrap(rt, "_on_frame", "rt._on_frame")
        if os.environ.get("P3_FRONTIER_STAGES"):
            import hermes_chatto.frontier.service as fsvc
            from hermes_chatto.frontier import ledger as fled

            fo = frontier_on
            wrap(fo, "_state_for", "f._state_for")
            wrap(fo._reader, "block", "f.block")
            wrap_sync(fo._reader, "_render", "f._render")
            wrap_sync(fled.SessionLedger, "stage", "ledger.stage")
            wrap_sync(fled.SessionLedger, "reached", "ledger.reached")
            wrap_sync(fled.SessionLedger, "take_trigger", "ledger.take_trigger")
            wrap_sync(fsvc, "plan_read", "plan_read")
            wrap_sync(fo, "observe", "f.observe")
        which = os.environ["P3_STAGES"]
        await timed(chatto_on, batch("chatto")[:200])
        new_threads(995)
        fr = batch("chatto", which != "skip")
        if os.environ.get("P3_FIRST"):  # a round's first turns only / its quiet turns only
            fr = await first_or_quiet(chatto_off if which == "off" else chatto_on, fr)
        wrap(ib, "_has_session", "_has_session")
        wrap_sync(rt, "_decode", "rt._decode")
        spent.clear()
        t = time.thread_time()
        await (chatto_off if which == "off" else chatto_on)(fr)
        total = time.thread_time() - t
        note(f"total {total * 1e6 / len(fr):.1f} µs/msg")
        for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
            note(f"  {k:22s} {v * 1e6 / len(fr):7.1f} µs/msg")
        await shutdown()
        return
    if os.environ.get("P3_SLICES"):
        await timed(chatto_on, batch("chatto")[:200])
        for w in ("on", "off"):
            new_threads(997 if w == "on" else 996)
            fr = batch("chatto")
            for i in range(0, len(fr), 200):
                await timed(chatto_on if w == "on" else chatto_off, fr[i : i + 200])
        await shutdown()
        return
    # warm-up: every path once (imports, caches, the first author reads)
    for name, feed in variants.items():
        await timed(feed, batch("mattermost" if name.startswith(("mm", "floor")) else "chatto")[:200])
    skip = {"on_skip": chatto_on, "mm_skip": feed_mattermost}
    for name, feed in skip.items():
        await timed(feed, batch("mattermost" if name == "mm_skip" else "chatto", False)[:200], 0)
    per: dict[str, list[float]] = {k: [] for k in [*variants, *skip]}
    order = list(variants)
    c0, fr0 = dict(adapter.conn.counters), dict(frontier_on.counters)
    r0 = dict(reads.reads)
    for r in range(ROUNDS):
        new_threads(r)
        frames = {k: batch("mattermost" if k.startswith(("mm", "floor")) else "chatto") for k in variants}
        for k in order[r % len(order) :] + order[: r % len(order)]:
            per[k].append(await timed(variants[k], frames[k]))
        for k in ("on_skip", "mm_skip") if r % 2 else ("mm_skip", "on_skip"):
            per[k].append(await timed(skip[k], batch("mattermost" if k == "mm_skip" else "chatto", False), 0))
        note(f"P3 round {r + 1}: " + ", ".join(f"{k} {per[k][-1]:.1f} µs" for k in per))
    n_chatto = 2 * ROUNDS * PER_ROUND
    dc = {k: v - c0.get(k, 0) for k, v in adapter.conn.counters.items() if v - c0.get(k, 0)}
    dfr = {k: v - fr0.get(k, 0) for k, v in frontier_on.counters.items() if v - fr0.get(k, 0)}
    note(f"P3: adapter counters over {n_chatto} Chatto messages: {dc}")
    note(f"P3: frontier counters (context on, {ROUNDS * PER_ROUND} messages): {dfr}")
    note(f"P3: reads answered from memory: { {k: v - r0[k] for k, v in reads.reads.items()} }")
    await shutdown()

    med = {k: statistics.median(v) for k, v in per.items()}
    ratio_on = statistics.median(a / b for a, b in zip(per["on"], per["mm"], strict=True))
    ratio_off = statistics.median(a / b for a, b in zip(per["off"], per["mm"], strict=True))
    lo, hi = (
        min(a / b for a, b in zip(per["on"], per["mm"], strict=True)),
        max(a / b for a, b in zip(per["on"], per["mm"], strict=True)),
    )
    note(f"P3: ratio (context on) per round {lo:.2f}-{hi:.2f}; {ROUNDS} rounds of {PER_ROUND} messages")
    emit(3, "chatto_us_per_message", med["on"], "µs", "-")
    emit(3, "chatto_context_off_us_per_message", med["off"], "µs", "-")
    emit(3, "mattermost_us_per_message", med["mm"], "µs", "-")
    emit(3, "floor_us_per_message", med["floor"], "µs", "-")
    emit(3, "mattermost_steady_us_per_message", med["mm_steady"], "µs", "-")
    emit(3, "chatto_over_mattermost", ratio_on, "x", "<=1.0")
    emit(3, "chatto_context_off_over_mattermost", ratio_off, "x", "-")
    # Mattermost past 2,000 messages in 5 minutes (≥ 6.7 msg/s sustained): its dedupe cache
    # rebuilds and sorts on every message (hermes-agent 0.19.0 MessageDeduplicator)
    ratio_steady = statistics.median(a / b for a, b in zip(per["on"], per["mm_steady"], strict=True))
    emit(3, "chatto_over_mattermost_steady", ratio_steady, "x", "-")
    ratio_skip = statistics.median(a / b for a, b in zip(per["on_skip"], per["mm_skip"], strict=True))
    emit(3, "chatto_not_for_bot_us_per_message", med["on_skip"], "µs", "-")
    emit(3, "mattermost_not_for_bot_us_per_message", med["mm_skip"], "µs", "-")
    emit(3, "chatto_not_for_bot_over_mattermost", ratio_skip, "x", "-")


def main() -> None:
    setup_hermes_home()
    asyncio.run(run())


if __name__ == "__main__":
    main()
