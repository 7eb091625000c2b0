"""P6: the latency the plugin adds to a turn, in and out, idle and under background load.

Set-up: the local Chatto server in its own process (``_server_proc``; its work and the load
generator do not share the plugin's interpreter), a real ``GatewayRunner`` with the real
``ChattoAdapter`` in this one (``_gateway``; the model call answers at once). Ten threads in the
demo channel, each opened by a root that mentions the bot; then, per measured turn, a person
(alice) posts a reply into one of them through the real ``CreateMessage`` RPC of her own client
(in the server's process) and the bot answers; the next turn starts when the answer has landed
and the session is idle. Every fifth turn is a *delivering* turn: just before it, the bot's
own cron post lands in that thread (a post from another process: realtime shows it, the session
does not hold it), so the turn's block must read it — one ``GetThreadEvents`` besides the message read
(``GetMessage``: protocol-4 events are thin, a message that dispatches is read once). The
others are *quiet* (nothing new in the thread besides the trigger: the message read only), except that every ~50th turn of a
session is a *compaction* turn: the session then holds over ``HELD_COMPACT_AT`` (100) ids past
its cursor (two per turn: the trigger and the reply) and the frontier reads once to move the
cursor past them, by design.

Timestamps (``time.monotonic_ns``, one clock for both processes):

* (a) **ingress** = the adapter's call of the host's ``handle_message`` − alice's
  ``CreateMessage`` returning to her client. The server broadcasts before it answers, so this
  can be negative; the figures are from the return, as the goal says;
* (b) **host** = the model request (``GatewayRunner._run_agent`` entered) − ``handle_message``:
  Hermes' own share (sessions, transcript, hooks), not the plugin's;
* (c) **egress** = the last ``CreateMessage`` of the answer returning − the host's call of
  ``adapter.send``; ``egress_overhead`` = that minus the time inside the ``CreateMessage`` calls.

``ROUNDS`` measured turns per scenario (each reported over all turns of its kind): ``idle`` and
``load`` (``LOAD_RATE`` posts/s by carol, no mention, round-robin over ten other channels the bot
is a member of, streamed by its socket — the plugin decides each from the thin event and
drops it without a read). RPCs per turn are
the bot's requests the server recorded (``GetThreadEvents``, ``GetThreadEventsAround``,
``GetMessage``, ``GetRoom``) between the trigger and the answer.
"""

from __future__ import annotations

import asyncio
import re
import time

from _util import emit, note, setup_hermes_home

ROUNDS = int(
    __import__("os").environ.get("P6_ROUNDS", "600")
)  # measured turns per scenario: 480 quiet + 120 delivering
THREADS = 10
LOAD_RATE = 200.0
READ_RPCS = ("GetThreadEvents", "GetThreadEventsAround", "GetMessage", "GetUser", "GetRoom", "ListRooms")
TAG = re.compile(r"\bq(\d+)\b")


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


class Probe:
    """Wraps the adapter's ``handle_message``, ``send`` and its client's ``create_message``
    and the stub model, recording per turn (keyed by the ``q<n>`` tag in the text) the
    monotonic ns of each step."""

    def __init__(self) -> None:
        self.rec: dict[int, dict[str, int]] = {}
        self.done: dict[int, asyncio.Event] = {}
        self.current: int | None = None

    def tag(self, text: str | None) -> int | None:
        m = TAG.search(text or "")
        return int(m.group(1)) if m else None

    async def run_agent(self, message, source, session_key):
        t = self.tag(message)
        if t is not None:
            self.rec.setdefault(t, {})["model"] = time.monotonic_ns()
        from _gateway import agent_result

        return agent_result(f"answer q{t}" if t is not None else "ok")

    def install(self, adapter) -> None:
        hm, send = adapter.handle_message, adapter.send
        client = adapter.conn.client
        create = client.create_message

        async def handle_message(event):
            t = self.tag(getattr(event, "text", ""))
            if t is not None:
                self.rec.setdefault(t, {})["handle"] = time.monotonic_ns()
            return await hm(event)

        async def send_(chat_id, content, reply_to=None, metadata=None):
            t = self.tag(content)
            self.current = t
            if t is not None:
                r = self.rec.setdefault(t, {})
                r["send"], r["rpc_ns"], r["rpcs"] = time.monotonic_ns(), 0, 0
            try:
                return await send(chat_id, content, reply_to=reply_to, metadata=metadata)
            finally:
                self.current = None
                if t is not None:
                    self.rec[t]["send_end"] = time.monotonic_ns()
                    self.done.setdefault(t, asyncio.Event()).set()

        async def create_message(*a, **kw):
            t0 = time.monotonic_ns()
            out = await create(*a, **kw)
            t1 = time.monotonic_ns()
            t = self.current
            if t is not None:
                r = self.rec[t]
                r["rpc_ns"] += t1 - t0
                r["rpcs"] += 1
                r["last_rpc"] = t1
            return out

        adapter.handle_message = handle_message
        adapter.send = send_
        client.create_message = create_message


async def wait_idle(adapter, timeout: float = 10.0) -> None:
    from hermes_chatto import compat

    end = time.monotonic() + timeout
    while compat.active_sessions(adapter) or compat.pending_messages(adapter):
        if time.monotonic() > end:
            raise TimeoutError("the session did not go idle")
        await asyncio.sleep(0.001)


def compacting(adapter, root: str) -> bool:
    """Whether the session of thread ``root`` will hold more ids than the frontier keeps past
    its cursor (``HELD_COMPACT_AT``) with the next trigger: that turn reads once to move the
    cursor, by design,
    even with nothing new in the thread (each turn adds its trigger and its reply)."""
    from hermes_chatto.frontier.plan import HELD_COMPACT_AT

    fr = adapter.conn.frontier
    # the block holds the trigger before it plans the read, hence >=
    return any(st.root_id == root and len(st.view.held) >= HELD_COMPACT_AT for st in fr.ledgers())


def reads(counts: dict[str, int]) -> int:
    return sum(v for k, v in counts.items() if k.rsplit("/", 1)[-1] in READ_RPCS)


async def scenario(
    sp, adapter, probe: Probe, roots: list[str], name: str, first_tag: int
) -> dict[str, dict[str, list]]:
    """``ROUNDS`` turns; returns per kind (``quiet``/``delivering``) the lists of
    ingress/host/egress/overhead (ms) and reads per turn."""
    general = sp.info["general"]
    out: dict[str, dict[str, list]] = {
        k: {"ingress": [], "ingress_from_send": [], "host": [], "egress": [], "overhead": [], "reads": [], "rpcs": []}
        for k in ("quiet", "delivering", "compaction")
    }
    loop = asyncio.get_running_loop()
    for i in range(ROUNDS):
        tag = first_tag + i
        root = roots[i % len(roots)]
        kind = "delivering" if i % 5 == 4 else "quiet"
        if kind == "quiet" and compacting(adapter, root):
            kind = "compaction"
        if kind == "delivering":
            cron = await loop.run_in_executor(None, sp.ask, "post_direct", "bot", general, f"cron report {tag}", root)
            await wait_for(lambda c=cron: c in adapter.threads.own)  # realtime showed it to the plugin
        before = await loop.run_in_executor(None, sp.ask, "requests")
        probe.done[tag] = asyncio.Event()
        _eid, t_sent, t_ret = await loop.run_in_executor(
            None, sp.ask, "post", "alice", general, f"status q{tag}?", root
        )
        await asyncio.wait_for(probe.done[tag].wait(), 20)
        await wait_idle(adapter)
        after = await loop.run_in_executor(None, sp.ask, "requests")
        r = probe.rec[tag]
        o = out[kind]
        o["ingress"].append((r["handle"] - t_ret) / 1e6)
        o["ingress_from_send"].append((r["handle"] - t_sent) / 1e6)
        o["host"].append((r["model"] - r["handle"]) / 1e6)
        o["egress"].append((r["last_rpc"] - r["send"]) / 1e6)
        o["overhead"].append((r["last_rpc"] - r["send"] - r["rpc_ns"]) / 1e6)
        n_reads = reads(after) - reads(before)
        o["reads"].append(n_reads)
        if n_reads > 1 and kind == "quiet":  # a read beyond the message's own
            diff = {k.rsplit("/", 1)[-1]: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
            note(f"P6 {name}: quiet turn {i} (thread {i % len(roots)}) made reads: {diff}")
        o["rpcs"].append(r["rpcs"])
    return out


async def wait_for(cond, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.001)


async def run() -> dict[str, dict]:
    from _gateway import start_gateway, stop_gateway
    from _server_proc import ServerProcess

    sp = ServerProcess(people=["bob", "carol"], rooms=10)
    info = sp.start()
    probe = Probe()
    runner, adapter = await start_gateway(
        info["base"], info["bot_key"], info["general"], probe.run_agent, env={"CHATTO_WIRE_LOG_LEVEL": "INFO"}
    )
    probe.install(adapter)
    loop = asyncio.get_running_loop()
    roots = []
    for k in range(THREADS):  # open the threads: a root mentioning the bot, its answer
        tag = 100_000 + k
        probe.done[tag] = asyncio.Event()
        eid, *_ = await loop.run_in_executor(
            None, sp.ask, "post", "alice", info["general"], f"@helper_bot hi q{tag}", ""
        )
        await asyncio.wait_for(probe.done[tag].wait(), 20)
        await wait_idle(adapter)
        roots.append(eid)
    results = {}
    results["idle"] = await scenario(sp, adapter, probe, roots, "idle", 0)
    posted0 = await loop.run_in_executor(None, sp.ask, "load_stop")
    await loop.run_in_executor(None, sp.ask, "load_start", LOAD_RATE, 0, "carol", None)
    t0 = time.monotonic()
    results["load"] = await scenario(sp, adapter, probe, roots, "load", 10_000)
    elapsed = time.monotonic() - t0
    posted = await loop.run_in_executor(None, sp.ask, "load_stop") - posted0
    note(f"P6: load scenario: {posted} background posts in {elapsed:.1f} s = {posted / elapsed:.0f} msg/s")
    counters = adapter.conn.counters
    note(f"P6: adapter counters dispatched={counters['dispatched']} dropped={counters['dropped']}")
    rt = adapter.conn.realtime
    if rt is not None and hasattr(rt, "stats"):
        note(f"P6: realtime stats { {k: v for k, v in rt.stats.items() if v} }")
    await stop_gateway(adapter)
    sp.stop()
    return results


def main() -> None:
    setup_hermes_home()
    import logging
    import sys

    # the plugin's INFO lines (connects, disconnects with their reason) to stderr
    info = logging.StreamHandler(sys.stderr)
    info.setFormatter(logging.Formatter("P6 log: %(name)s %(levelname)s %(message)s"))
    plugin = logging.getLogger("hermes_plugins.chatto")
    plugin.setLevel(logging.INFO)
    plugin.addHandler(info)
    results = asyncio.run(run())
    for scen, by_kind in results.items():
        q, d, c = by_kind["quiet"], by_kind["delivering"], by_kind["compaction"]
        note(
            f"P6 {scen}: {len(q['ingress'])} quiet + {len(d['ingress'])} delivering + {len(c['ingress'])} compaction "
            f"turns; ingress from the "
            f"request being sent p50 {pct(q['ingress_from_send'], 50):.2f} ms; "
            f"delivering ingress p50 {pct(d['ingress'], 50):.2f} / p99 {pct(d['ingress'], 99):.2f} ms; "
            f"CreateMessage calls per answer {sorted(set(q['rpcs'] + d['rpcs'] + c['rpcs']))}"
        )
        emit(6, f"{scen}_ingress_quiet_p50", pct(q["ingress"], 50), "ms", "<=5")
        emit(6, f"{scen}_ingress_quiet_p99", pct(q["ingress"], 99), "ms", "<=25")
        emit(6, f"{scen}_reads_per_quiet_turn", sum(q["reads"]) / len(q["reads"]), "rpcs", "<=1")
        emit(6, f"{scen}_reads_per_delivering_turn", sum(d["reads"]) / len(d["reads"]), "rpcs", "<=2")
        emit(6, f"{scen}_compaction_turns", len(c["reads"]), "turns", "-")
        if c["reads"]:
            emit(6, f"{scen}_reads_per_compaction_turn", sum(c["reads"]) / len(c["reads"]), "rpcs", "<=2")
        allh = q["host"] + d["host"] + c["host"]
        emit(6, f"{scen}_host_p50", pct(allh, 50), "ms", "-")
        emit(6, f"{scen}_host_p99", pct(allh, 99), "ms", "-")
        alle = q["egress"] + d["egress"] + c["egress"]
        allo = q["overhead"] + d["overhead"] + c["overhead"]
        emit(6, f"{scen}_egress_p50", pct(alle, 50), "ms", "-")
        emit(6, f"{scen}_egress_overhead_p50", pct(allo, 50), "ms", "<=2")
        emit(6, f"{scen}_egress_overhead_p99", pct(allo, 99), "ms", "-")


if __name__ == "__main__":
    main()
