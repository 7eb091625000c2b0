"""adapter.cursor.CursorKeeper: throttled, seen-set-first cursor persistence."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.cursor import CursorKeeper


class Store:
    def __init__(self, saved=None):
        self.saved = saved
        self.writes = []
        self.closed = False

    def load_entry(self, bot):
        return (self.saved, 1234.5) if self.saved else None

    def save(self, bot, cursor):
        self.writes.append((bot, cursor))

    def close(self):
        self.closed = True


class Seen:
    def __init__(self, log):
        self.log = log

    def flush(self):
        self.log.append("flush")


def test_load_throttle_and_close():
    async def body():
        conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
        k = CursorKeeper(conn, interval_s=0.05)
        store = k._store = Store(saved="c0")
        await k.open()
        assert k.cursor == "c0" and k.loaded_at == 1234.5
        log = []
        conn.seen = Seen(log)
        await k.on_cursor("c1")
        await k.on_cursor("c2")  # coalesced into the pending write
        await asyncio.sleep(0.02)
        assert store.writes == [("Ubot", "c2")] and conn.counters["cursor_writes"] == 1 and log == ["flush"]
        await k.on_cursor("c3")
        await k.close()  # writes now, without waiting for the interval
        assert store.writes[-1] == ("Ubot", "c3") and store.closed
        await k.save()  # no store: nothing

    asyncio.run(body())
