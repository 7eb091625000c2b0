"""The plugin's SQLite state file: the seen-set's write batching and the resume cursor."""

from __future__ import annotations

from hermes_chatto.store import SEEN_FLUSH_AT, ResumeCursorStore, SeenStore


def test_seen_ids_reach_disk_on_flush_not_per_add(tmp_path):
    p = tmp_path / "state.sqlite3"
    s = SeenStore(p, limit=1000)
    assert s.add("E1") and not s.add("E1") and "E1" in s
    peek = SeenStore(p, limit=1000)  # another process's view before the flush
    assert "E1" not in peek
    assert s.flush() == 1
    assert "E1" in SeenStore(p, limit=1000)
    s.add("E2")
    s.close()  # close flushes
    assert "E2" in SeenStore(p, limit=1000)


def test_seen_queue_is_written_when_it_grows(tmp_path):
    p = tmp_path / "state.sqlite3"
    s = SeenStore(p, limit=10_000)
    for i in range(SEEN_FLUSH_AT):
        s.add(f"E{i:014d}")
    s._last.result(timeout=10)  # the batch handed to the writer thread (no flush called)
    assert len(SeenStore(p, limit=10_000)) == SEEN_FLUSH_AT
    s.close()


def test_seen_batch_is_written_off_the_callers_thread(tmp_path):
    """``add`` never runs SQLite on the caller's thread (the adapter's event loop): the batch
    that fills the queue goes to the writer thread, and ``flush`` waits for it."""
    import threading

    p = tmp_path / "state.sqlite3"
    s = SeenStore(p, limit=10_000)
    real, threads = s._conn, []

    class Spy:
        def execute(self, *a, **kw):
            threads.append(threading.get_ident())
            return real.execute(*a, **kw)

        def __getattr__(self, name):
            return getattr(real, name)

    s._conn = Spy()
    for i in range(SEEN_FLUSH_AT + 3):
        s.add(f"E{i:014d}")
    assert s.flush() == 3  # the three queued after the batch, written after it
    assert threads and threading.get_ident() not in threads
    assert len(SeenStore(p, limit=10_000)) == SEEN_FLUSH_AT + 3
    s.close()


def test_seen_set_is_bounded_oldest_first(tmp_path):
    p = tmp_path / "state.sqlite3"
    s = SeenStore(p, limit=10)
    for i in range(25):
        s.add(f"E{i}")
    assert len(s) == 10 and "E24" in s and "E14" not in s
    s.close()
    again = SeenStore(p, limit=10)
    assert "E24" in again and "E0" not in again


def test_resume_cursor_roundtrip_and_15_minute_expiry(tmp_path):
    p = tmp_path / "state.sqlite3"
    c = ResumeCursorStore(p)
    assert c.load("UBOT") is None
    c.save("UBOT", "cursor-1", now=1000.0)
    assert c.load("UBOT", now=1000.0 + 600) == "cursor-1"
    assert c.load("UBOT", now=1000.0 + 3600) is None  # Chatto 0.5 cursors live 15 minutes
    # ... but when it was stored still counts: gap recovery reads back to then
    assert c.load_entry("UBOT", now=1000.0 + 30 * 86400) == ("", 1000.0)
    c.save("UBOT", "", now=1500.0)  # empty cursors are never stored
    assert c.load("UBOT", now=1500.0) == "cursor-1"
    assert c.load("UOTHER", now=2000.0) is None
