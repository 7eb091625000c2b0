"""P1/P2: thread reads (``GetThreadEvents``) and store writes per turn, by turn kind.

Runs the real :class:`hermes_chatto.frontier.ThreadFrontier` against the local Chatto
server (``LocalChatto.demo()`` on 127.0.0.1:0) through the real ``ChattoClient``
(``ThreadService/GetThreadEvents``), calling the three hooks in the order the adapter
does: ``observe`` for every realtime thread message (own echoes included),
``block_for_turn`` before a thread turn, ``note_sent`` after the bot's reply went out.
Thread reads are counted **by the server** (recorded ``GetThreadEvents`` requests, and
cross-checked with ``frontier.counters["thread_reads"]``); store writes by wrapping
``FrontierStore.save`` (after ``frontier.flush()``), per turn including its reply.

Turn kinds, over ``THREADS`` threads each:

* ``first_root`` - a channel root mentioning the bot opens the thread (root == trigger);
* ``quiet`` - a reply in a thread where realtime showed nothing the session lacks;
* ``delivering`` - a reply after someone else's reply and a cron post by the bot (both
  not held by the session) - the block delivers them;
* ``first_reply`` - the first turn of a session in a thread that already has history
  (a person answers a cron post): the seed read;
* ``after_restart`` - first turn in a known thread after a gateway restart (new
  frontier, same store): realtime did not watch the gap.

Lines: ``P1 reads_per_turn_<kind>`` (goal quiet 0, delivering 1, first_root 0,
first_reply 1, after_restart 1) and ``P2 store_writes_per_turn_<kind>`` (goal ≤ 1).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from _util import emit, note, setup_hermes_home

THREADS = 10

GOALS_READS = {"first_root": "0", "quiet": "0", "delivering": "1", "first_reply": "1", "after_restart": "1"}


class CountingStore:
    """Wraps a FrontierStore, counting ``save`` calls (rows written)."""

    def __init__(self, inner):
        self.inner = inner
        self.saves = 0

    def save(self, row):
        self.saves += 1
        return self.inner.save(row)

    def __getattr__(self, name):
        return getattr(self.inner, name)


async def run() -> dict[str, list[tuple[int, int, bool]]]:
    from chatto_local import LocalChatto
    from hermes_chatto.frontier import ThreadFrontier
    from hermes_chatto.store import FrontierStore
    from hermes_chatto.wire.connect import ChattoClient

    srv = LocalChatto.demo()
    base = await srv.start()
    w = srv.world
    assert w is not None  # demo() builds the world
    bob = srv.create_user("bob", "Bob").id
    srv.add_member(w.general_id, bob)
    room = w.general_id
    store = CountingStore(FrontierStore(Path(os.environ["HERMES_HOME"]) / "frontier-bench.sqlite3"))
    results: dict[str, list[tuple[int, int, bool]]] = {k: [] for k in GOALS_READS}
    client = ChattoClient(base, w.bot_key)
    fr = ThreadFrontier(store, client.get_thread_events, w.bot_id)

    def reads() -> int:
        return len(srv.requests_for("/GetThreadEvents"))

    async def turn(kind, frontier, key, sid, trigger, *, observe_trigger=True):
        """One thread turn as the adapter runs it; returns the bot's reply message."""
        r0, s0 = reads(), store.saves
        c0 = frontier.counters["thread_reads"]
        if observe_trigger and trigger.thread_root_event_id:
            frontier.observe(trigger, True)
        block = await frontier.block_for_turn(key, sid, trigger, True)
        root = trigger.thread_key
        reply = srv.post(w.bot_id, room, f"answer to {trigger.event_id}", thread_root_event_id=root)
        frontier.note_sent(room, root, [reply.event_id], key, turn_trigger=trigger.event_id)
        frontier.observe(reply, True)  # the echo arrives on the realtime stream
        await frontier.flush()
        n_reads = reads() - r0
        assert n_reads == frontier.counters["thread_reads"] - c0, "server and frontier disagree on reads"
        results[kind].append((n_reads, store.saves - s0, block is not None))
        return reply

    def seen(msg, frontier=None):
        (frontier or fr).observe(msg, True)
        return msg

    threads = []
    for t in range(THREADS):
        key, sid = f"agent:main:chatto:group:{room}:t{t}", f"sess-{t}"
        root = srv.post(w.alice_id, room, f"@helper_bot question {t}?")
        await turn("first_root", fr, key, None, root)
        q = seen(srv.post(w.alice_id, room, f"follow-up {t}", thread_root_event_id=root.event_id))
        await turn("quiet", fr, key, sid, q)
        seen(srv.post(bob, room, f"bob's aside {t}", thread_root_event_id=root.event_id))
        cron = srv.post(w.bot_id, room, f"cron report {t}", thread_root_event_id=root.event_id)
        fr.note_sent(room, root.event_id, [cron.event_id], None)
        seen(cron)
        d = seen(srv.post(w.alice_id, room, f"and now? {t}", thread_root_event_id=root.event_id))
        await turn("delivering", fr, key, sid, d)
        q2 = seen(srv.post(w.alice_id, room, f"thanks {t}", thread_root_event_id=root.event_id))
        await turn("quiet", fr, key, sid, q2)
        threads.append((key, sid, root))

        # a session's first turn in a thread that has history: a person answers a cron post
        croot = srv.post(w.bot_id, room, f"nightly build report {t}: 3 failures")
        seen(srv.post(bob, room, f"flaky again {t}", thread_root_event_id=croot.event_id))
        trig = srv.post(w.alice_id, room, f"@helper_bot why did build {t} fail?", thread_root_event_id=croot.event_id)
        await turn("first_reply", fr, f"agent:main:chatto:group:{room}:c{t}", f"csess-{t}", trig)

    await fr.aclose()
    # gateway restart: memory lost, store kept
    fr2 = ThreadFrontier(store, client.get_thread_events, w.bot_id)
    for key, sid, root in threads:
        m = srv.post(w.alice_id, room, "back after the restart", thread_root_event_id=root.event_id)
        await turn("after_restart", fr2, key, sid, m)
    await fr2.aclose()
    note(f"P1/P2: frontier counters { {k: v for k, v in fr.counters.items() if v} }")
    note(f"P1/P2: after-restart counters { {k: v for k, v in fr2.counters.items() if v} }")
    await client.aclose()
    await srv.stop()
    return results


def main() -> None:
    setup_hermes_home()
    results = asyncio.run(run())
    for kind, rows in results.items():
        n = len(rows)
        blocks = sum(1 for r in rows if r[2])
        note(f"P1/P2: {kind}: {n} turns, reads={[r[0] for r in rows]}, writes={[r[1] for r in rows]}, blocks={blocks}")
        emit(1, f"reads_per_turn_{kind}", sum(r[0] for r in rows) / n, "reads", GOALS_READS[kind])
    for kind, rows in results.items():
        emit(2, f"store_writes_per_turn_{kind}", sum(r[1] for r in rows) / len(rows), "writes", "<=1")


if __name__ == "__main__":
    main()
