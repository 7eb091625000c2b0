"""adapter.durable.DurableGate: a turn starts only once its message is on disk as seen
(issue 24: answered while the disk was full, then answered again after a restart)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter import durable as D
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.cursor import CursorKeeper
from hermes_chatto.store import SeenStore

from support.disk import make_full
from support.waits import wait_for


def _gate(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "RETRY_S", 0.01)
    conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
    conn.seen = SeenStore(tmp_path / "state.sqlite3")
    holds: list[tuple[bool, str]] = []
    gate = D.DurableGate(
        conn, ErrorBoundary(logging.getLogger("t"), conn.counters), hold_cursor=lambda on, why: holds.append((on, why))
    )
    return conn, gate, holds


def _run(log, eid):
    async def run():
        log.append(eid)

    return run


def test_a_turn_runs_at_once_when_its_id_reaches_the_disk(tmp_path, monkeypatch):
    async def body():
        conn, gate, holds = _gate(tmp_path, monkeypatch)
        ran: list[str] = []
        conn.seen.add("E1")
        await gate.admit("E1", _run(ran, "E1"))
        assert ran == ["E1"] and holds == [] and not gate.waiting
        conn.seen.close()
        again = SeenStore(tmp_path / "state.sqlite3")
        assert "E1" in again  # on disk before the turn ran
        again.close()

    asyncio.run(body())


def test_turns_wait_while_the_seen_set_cannot_be_written_then_run_once_in_order(tmp_path, monkeypatch):
    async def body():
        conn, gate, holds = _gate(tmp_path, monkeypatch)
        disk = make_full(conn.seen)
        ran: list[str] = []
        for eid in ("E1", "E2", "E3"):
            conn.seen.add(eid)
            await gate.admit(eid, _run(ran, eid))
        assert ran == [] and [e for e, _ in gate.waiting] == ["E1", "E2", "E3"]
        assert holds == [(True, "durable")]  # the cursor is not persisted past them
        disk.full = False
        await wait_for(lambda: ran == ["E1", "E2", "E3"], what="the waiting turns")
        await wait_for(lambda: holds[-1] == (False, "durable"), what="cursor released")
        assert conn.counters["turns_waiting_for_disk"] == 3
        conn.seen.close()

    asyncio.run(body())


def test_stopping_while_turns_wait_forgets_their_ids(tmp_path, monkeypatch):
    async def body():
        conn, gate, _holds = _gate(tmp_path, monkeypatch)
        make_full(conn.seen)
        ran: list[str] = []
        conn.seen.add("E1")
        await gate.admit("E1", _run(ran, "E1"))
        assert gate.close() == 1 and ran == [] and "E1" not in conn.seen
        conn.seen.close()

    asyncio.run(body())


def test_the_cursor_is_not_written_while_turns_wait_nor_when_the_seen_flush_fails(tmp_path):
    """A failed seen flush stops the cursor write (the stored cursor stays where every id
    before it was on disk); a ``durable`` hold stops it even when the flush would work."""

    class Store:
        def __init__(self):
            self.writes = []

        def save(self, bot, cursor):
            self.writes.append(cursor)

        def close(self):
            pass

    async def body():
        conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
        conn.seen = SeenStore(tmp_path / "state.sqlite3")
        disk = make_full(conn.seen)
        k = CursorKeeper(conn, interval_s=0.0)
        store = k._store = Store()
        k.cursor = "c1"
        conn.seen.add("E1")
        await k.save()
        assert store.writes == [] and conn.counters["cursor_write_errors"] == 1
        disk.full = False
        k.hold(True, "durable")
        await k.save()
        assert store.writes == []
        k.hold(True, "replay")
        k.hold(False, "durable")  # another reason still holds
        await k.save()
        assert store.writes == []
        k.hold(False, "replay")  # no reason left: a write of the newest cursor is scheduled
        await wait_for(lambda: store.writes, what="the cursor write")
        assert set(store.writes) == {"c1"}
        conn.seen.close()

    asyncio.run(body())


def test_a_memory_seen_set_admits_at_once(monkeypatch):
    async def body():
        from hermes_chatto.ingress import SeenSet

        conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
        conn.seen = SeenSet(10)
        gate = D.DurableGate(conn, ErrorBoundary(logging.getLogger("t"), conn.counters))
        ran: list[str] = []
        await gate.admit("E1", _run(ran, "E1"))
        assert ran == ["E1"]

    asyncio.run(body())


def test_an_uncontended_turn_is_made_durable_on_the_loop(tmp_path, monkeypatch):
    """Issue 27: no thread hop when the seen-set can be written at once (counted)."""

    async def body():
        conn, gate, _holds = _gate(tmp_path, monkeypatch)
        ran: list[str] = []
        conn.seen.add("E1")
        await gate.admit("E1", _run(ran, "E1"))
        assert ran == ["E1"] and conn.counters["durable_inline"] == 1
        assert conn.seen._writer is None
        conn.seen.close()

    asyncio.run(body())
