"""P1/P2: ConnectRPC reads and frontier store writes per turn, by turn kind, on the real path.

Set-up: the local Chatto server (realtime protocol 4) in its own process (``_server_proc``),
a real ``GatewayRunner`` with the real ``ChattoAdapter`` here (``_gateway``; the model answers
at once). People post through the server's ``CreateMessage`` RPC with their own tokens; the
bot's "cron" posts go in directly (another process of the bot's). Reads are counted **by the
server**: the bot's recorded requests whose procedure is a read (``Get*``, ``List*``,
``BatchGet*``) from just before the trigger is posted until the bot's answer has landed and
the session is idle (the per-RPC breakdown goes to stderr). Store writes are the frontier's
``store_writes`` counter over the same span (after ``frontier.flush()``).

Turn kinds, over ``P1_THREADS`` threads in the demo channel (each turn waits for the previous
one to finish):

* ``first_root`` — alice (known from the realtime snapshot) opens a thread with a root that
  mentions the bot: the message read (``GetMessage``);
* ``quiet`` — a follow-up in the thread where nothing happened since the bot's last reply
  (alice's, then bob's: the thread's session is shared): goal ≤ 1 read (the message);
* ``delivering`` — alice's follow-up after another bot's reply (not answered: ``allow_bots``
  is ``none``) and the bot's own cron post: goal ≤ 2 (the message, one thread read);
* ``first`` — a new person's first mention (an account created after the gateway connected,
  so not in the snapshot): + the author read (``GetUser``), goal ≤ 3;
* ``not_for_bot`` — a channel root by carol that mentions nobody: goal 0;
* ``dm`` — alice in her DM with the bot: goal ≤ 1.

Lines: ``P1 reads_per_turn_<kind>`` and ``P2 store_writes_per_turn_<kind>`` (goal ≤ 1).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections import Counter
from typing import Any

from _util import emit, note, setup_hermes_home

THREADS = int(os.environ.get("P1_THREADS", "8"))
KINDS = ("first_root", "quiet", "delivering", "first", "not_for_bot", "dm")
GOALS_READS = {
    "first_root": "<=1",
    "quiet": "<=1",
    "delivering": "<=2",
    "first": "<=3",
    "not_for_bot": "0",
    "dm": "<=1",
}
TAG = re.compile(r"\bq(\d+)\b")


def is_read(procedure: str) -> bool:
    name = procedure.rsplit("/", 1)[-1]
    return name.startswith(("Get", "List", "BatchGet"))


def read_diff(before: dict[str, int], after: dict[str, int]) -> Counter[str]:
    """Reads by RPC name between two ``requests`` snapshots of the server."""
    out: Counter[str] = Counter()
    for k, v in after.items():
        if is_read(k) and v > before.get(k, 0):
            out[k.rsplit("/", 1)[-1]] += v - before.get(k, 0)
    return out


class Probe:
    """The stub model (answers ``answer q<n>``) and a wrapped ``adapter.send`` that signals
    when the answer to ``q<n>`` has been sent."""

    def __init__(self) -> None:
        self.done: dict[int, asyncio.Event] = {}

    def event(self, tag: int) -> asyncio.Event:
        return self.done.setdefault(tag, asyncio.Event())

    async def run_agent(self, message, source, session_key):
        from _gateway import agent_result

        m = TAG.search(message or "")
        return agent_result(f"answer q{m.group(1)}" if m else "ok")

    def install(self, adapter: Any) -> None:
        send = adapter.send

        async def send_(chat_id, content, reply_to=None, metadata=None):
            try:
                return await send(chat_id, content, reply_to=reply_to, metadata=metadata)
            finally:
                m = TAG.search(content or "")
                if m:
                    self.event(int(m.group(1))).set()

        adapter.send = send_


async def wait_for(cond, timeout: float = 20.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def wait_idle(adapter: Any) -> None:
    from hermes_chatto import compat

    await wait_for(
        lambda: not compat.active_sessions(adapter) and not compat.pending_messages(adapter), what="an idle session"
    )


async def run() -> dict[str, list[tuple[Counter[str], int]]]:
    from _gateway import start_gateway, stop_gateway
    from _server_proc import ServerProcess

    sp = ServerProcess(people=["bob", "carol"])
    info = sp.start()
    loop = asyncio.get_running_loop()

    async def ask(*cmd: Any) -> Any:
        return await loop.run_in_executor(None, sp.ask, *cmd)

    await ask("person", "deploy_bot", [], True)  # another bot (before connect: a grant resets sockets)
    probe = Probe()
    runner, adapter = await start_gateway(
        info["base"], info["bot_key"], info["general"], probe.run_agent, before_connect=probe.install
    )
    general, dm = info["general"], info["dm"]
    results: dict[str, list[tuple[Counter[str], int]]] = {k: [] for k in KINDS}
    tags = iter(range(1, 1_000_000))

    def writes() -> int:
        fr = adapter.conn.frontier
        return int(fr.counters["store_writes"]) if fr is not None else 0

    async def turn(kind: str, login: str, room: str, text: str, root: str = "") -> str:
        """``login`` posts ``text`` (tagged) and the bot answers; returns the post's id."""
        tag = next(tags)
        done = probe.event(tag)
        before, w0 = await ask("requests"), writes()
        eid, _t0, _t1 = await ask("post", login, room, f"{text} q{tag}", root)
        await asyncio.wait_for(done.wait(), 20)
        await wait_idle(adapter)
        if adapter.conn.frontier is not None:
            await adapter.conn.frontier.flush()
        results[kind].append((read_diff(before, await ask("requests")), writes() - w0))
        return str(eid)

    async def dropped(kind: str, login: str, room: str, text: str) -> None:
        """``login`` posts ``text``, which is not for the bot: wait until the adapter dropped it."""
        n0 = adapter.conn.counters["dropped"]
        before, w0 = await ask("requests"), writes()
        await ask("post", login, room, text, "")
        await wait_for(lambda: adapter.conn.counters["dropped"] > n0, what="the drop")
        results[kind].append((read_diff(before, await ask("requests")), writes() - w0))

    for t in range(THREADS):
        root = await turn("first_root", "alice", general, f"@helper_bot question {t}?")
        await turn("quiet", "alice", general, f"follow-up {t}", root)
        await turn("quiet", "bob", general, f"bob adds something {t}", root)
        # another bot's reply (not answered) and the bot's own cron post: the session holds neither
        n0 = adapter.conn.counters["dropped"]
        await ask("post", "deploy_bot", general, f"deploy {t} finished", root)
        await wait_for(lambda n0=n0: adapter.conn.counters["dropped"] > n0, what="the other bot's reply dropped")
        cron = await ask("post_direct", "bot", general, f"cron report {t}", root)
        await wait_for(lambda c=cron: c in adapter.threads.own, what="the cron post seen")
        await turn("delivering", "alice", general, f"and now? {t}", root)
        newcomer = f"newcomer{t}"
        await ask("person", newcomer, [], False)
        await turn("first", newcomer, general, f"@helper_bot hello, I am new {t}")
        await dropped("not_for_bot", "carol", general, f"lunch at noon? {t}")
        await turn("dm", "alice", dm, f"a private question {t}")
    note(f"P1/P2: adapter counters { {k: v for k, v in adapter.conn.counters.items() if v} }")
    fr = adapter.conn.frontier
    if fr is not None:
        note(f"P1/P2: frontier counters { {k: v for k, v in fr.counters.items() if v} }")
    await stop_gateway(adapter)
    sp.stop()
    return results


def main() -> None:
    setup_hermes_home()
    results = asyncio.run(run())
    for kind in KINDS:
        rows = results[kind]
        total: Counter[str] = Counter()
        for r, _w in rows:
            total.update(r)
        per = ", ".join(f"{k} {v / len(rows):.2f}" for k, v in sorted(total.items())) or "none"
        note(
            f"P1: {kind}: {len(rows)} turns, reads per turn by RPC: {per}; per turn {[sum(r.values()) for r, _ in rows]}"
        )
        emit(1, f"reads_per_turn_{kind}", sum(total.values()) / len(rows), "reads", GOALS_READS[kind])
    for kind in KINDS:
        rows = results[kind]
        emit(2, f"store_writes_per_turn_{kind}", sum(w for _r, w in rows) / len(rows), "writes", "<=1")


if __name__ == "__main__":
    main()
