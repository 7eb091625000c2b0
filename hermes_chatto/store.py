"""Plugin-owned persistent state: one small SQLite file per Hermes profile.

hermes-agent 0.19.0 has no per-session metadata API (``SessionEntry`` has no ``metadata``,
``SessionStore`` no ``get/set_session_metadata``), so the plugin keeps what must
outlive the process in its own file under the serving profile's Hermes home::

    <hermes_home>/chatto/state.sqlite3

``hermes_home`` is :func:`hermes_chatto.compat.hermes_home` evaluated **when the store
object is created**; it follows Hermes' profile override, so each profile of a
multiplexed gateway gets its own file as long as the store is created inside that
profile's scope (the adapter creates it in ``connect()``, which runs in the scope).

Two tables, each used by one class:

* ``frontier`` — :class:`FrontierStore`: one row per Hermes *session key* holding the
  thread frontier of that session (see :mod:`hermes_chatto.frontier`): the session id
  the row is bound to, room, thread root, the opaque Chatto ``tl:`` thread cursor and the
  ids the session holds past that cursor (JSON list, bounded by the frontier).
* ``seen`` — :class:`SeenStore`: a bounded set of realtime event ids the adapter already
  handled, so a realtime replay after a restart is not dispatched twice.
* ``realtime_cursor`` — :class:`ResumeCursorStore`: the bot's last processed realtime
  resume cursor, so a restarted gateway resumes (the server replays the missed facts) and
  the messages sent while it was down arrive as live events instead of as history.

Every method is synchronous and quick (single-row statements on a local file); callers on
the event loop run :class:`FrontierStore` calls through ``asyncio.to_thread`` (the
frontier does). Each class owns one ``sqlite3`` connection guarded by a lock, opened with
``check_same_thread=False`` so worker threads may use it. The file uses WAL journaling so
the two connections (and a second process of the same profile, e.g. ``hermes send``) do
not block each other for long.

Errors: ``sqlite3.Error`` (``OSError`` when the directory cannot be created) propagates
from the constructors and from the writes; the frontier treats a failing store as "memory
only".

A **damaged** file (SQLite says ``SQLITE_CORRUPT`` / ``SQLITE_NOTADB``, or ``PRAGMA
quick_check`` finds a fault, checked once per path per process when it is first opened) is
moved aside to ``state.sqlite3.corrupt-<UTC time>`` (its ``-wal`` / ``-shm`` with it) and a
fresh file is created in its place, with one WARNING naming both files and what was lost
(:func:`set_aside`). A **failed write** (a full disk: ``database or disk is full``, an I/O
error) is a WARNING once per kind (seen-set, resume cursor, frontier, in-flight turn) until a
write of that kind works again, which is said once at INFO (:class:`WriteHealth`); the
WARNING names the file, the error and what the plugin does about it. The failed write still
raises to its caller.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .logs import get_logger

logger = get_logger(__name__)

#: File name under ``<hermes_home>/chatto/``.
STATE_FILENAME = "state.sqlite3"

#: Default bound of :class:`SeenStore` (rows).
SEEN_LIMIT = 50_000

#: :class:`SeenStore` writes its queue when this many ids are pending.
SEEN_FLUSH_AT = 256

#: Seen-set commits between two WAL checkpoints (run on the seen-set's writer thread).
SEEN_CHECKPOINT_EVERY = 200

#: SQLite busy timeout of the state file's connections (ms): another connection's write.
_BUSY_MS = 10_000

#: :class:`FrontierStore` rows not written for this long are dropped when the store opens
#: (seconds; 180 days). Such a thread, if it ever speaks again, is seeded afresh.
FRONTIER_MAX_AGE = 180 * 86_400.0

_INSERT_SEEN_ONE = "INSERT OR IGNORE INTO seen (event_id, seen_at) VALUES (?, ?)"

# ``seen.seq`` is a plain rowid (no AUTOINCREMENT, whose ``sqlite_sequence`` row is one more
# page written per commit: ~30 % of the on-loop commit, ``make bench`` P3): a new row's seq is
# the largest + 1, and the prune only ever deletes the oldest rows, so seq stays in arrival
# order. Files made before keep their AUTOINCREMENT table; both behave the same.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (
    session_key TEXT PRIMARY KEY,
    session_id  TEXT,
    room_id     TEXT NOT NULL,
    root_id     TEXT NOT NULL,
    cursor      TEXT,
    held        TEXT NOT NULL DEFAULT '[]',
    updated_at  REAL NOT NULL,
    owed        TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS realtime_cursor (
    bot_user_id TEXT PRIMARY KEY,
    cursor      TEXT NOT NULL,
    updated_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS seen (
    seq      INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    seen_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS inflight (
    session_key TEXT PRIMARY KEY,
    event_id    TEXT NOT NULL,
    payload     TEXT NOT NULL,
    started_at  REAL NOT NULL
);
"""


def state_path(home: str | os.PathLike[str] | None = None) -> Path:
    """``<home>/chatto/state.sqlite3``; ``home`` defaults to the serving profile's Hermes
    home (:func:`hermes_chatto.compat.hermes_home`, evaluated now)."""
    if home is None:
        from .compat import hermes_home

        # compat.hermes_home is not annotated yet (compat is being rewritten); warn_unused_ignores
        # flags this line once it is.
        home = hermes_home()  # type: ignore[no-untyped-call]
    return Path(home).expanduser() / "chatto" / STATE_FILENAME


class StateFileDamaged(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` found a fault in the state file."""


#: ``sqlite_errorname`` prefixes that mean the file itself is damaged (not busy, not full).
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")

#: Paths already checked (``PRAGMA quick_check``) by this process: the four stores open the
#: same file; it is checked once.
_checked: set[Path] = set()
_checked_lock = threading.Lock()


def is_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the state file is damaged (corrupt, truncated, not a database),
    as opposed to busy, full or unreadable."""
    if isinstance(exc, StateFileDamaged):
        return True
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name:
        return name.startswith(_DAMAGED)
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text)


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=_BUSY_MS / 1000, check_same_thread=False, isolation_level=None)
    try:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:  # e.g. a filesystem without shared memory: keep the default journal
            if is_damaged(exc):
                raise
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-256")  # KiB: small rows, tiny working set; keeps RSS flat
        key = path.resolve()
        with _checked_lock:
            fresh = key not in _checked
        if fresh:
            verdict = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
            if verdict != ["ok"]:
                raise StateFileDamaged("; ".join(verdict) or "quick_check gave no answer")
        conn.executescript(_SCHEMA)
        cols = {r[1] for r in conn.execute("PRAGMA table_info(frontier)")}
        if "owed" not in cols:  # a state file written before the column existed
            conn.execute("ALTER TABLE frontier ADD COLUMN owed TEXT NOT NULL DEFAULT '[]'")
        if fresh:
            with _checked_lock:
                _checked.add(key)
    except BaseException:
        conn.close()
        raise
    return conn


def set_aside(path: Path, exc: BaseException, *, now: float | None = None) -> Path:
    """Move the damaged state file ``path`` (and its ``-wal`` / ``-shm``) to
    ``<path>.corrupt-<UTC time>`` and log one WARNING naming both files, the fault and what
    is lost with it. Returns the new path. ``now``: epoch seconds (default: the clock)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():  # two in one second: keep both
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, aside.with_name(aside.name + suffix))
    logger.warning(
        "Chatto: the state file %s is damaged (%s); moved it aside to %s and started a fresh one. "
        "Lost with it: the resume point (messages posted while the gateway was down are not "
        "recovered this time; from now on they are), which messages were already handled, each "
        "thread's frontier (a thread's next turn may quote messages its session already saw) and the "
        "record of a turn interrupted by a crash",
        path,
        exc,
        aside,
    )
    return aside


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (another connection is writing)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) if name else "locked" in str(exc).lower()


def _connect(path: Path) -> sqlite3.Connection:
    """Open ``path`` (schema created, upgraded); a damaged file is set aside and a fresh one
    opened (:func:`set_aside`). Other errors propagate."""
    try:
        return _open(path)
    except sqlite3.DatabaseError as exc:
        if not is_damaged(exc) or not path.exists():
            raise
        set_aside(path, exc)
    with _checked_lock:
        _checked.discard(path.resolve())
    return _open(path)


class WriteHealth:
    """Says once that writes of one ``kind`` to ``path`` fail, and once that they work again.

    :meth:`failed` logs a WARNING the first time a write fails after it last worked (naming
    the file, the error and ``consequence``: what the plugin does about it); later failures
    are DEBUG. :meth:`ok` after a failure logs one INFO line. Thread-safe."""

    def __init__(self, kind: str, path: Path, consequence: str) -> None:
        self.kind, self.path, self.consequence = kind, path, consequence
        #: whether the last write of this kind failed
        self.failing = False
        #: failed writes since the store opened
        self.failures = 0
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        """A write of this kind raised ``exc``."""
        with self._lock:
            self.failures += 1
            first, self.failing = not self.failing, True
        if first:
            logger.warning(
                "Chatto: could not write the %s to %s (%s: %s); %s",
                self.kind,
                self.path,
                getattr(exc, "sqlite_errorname", None) or type(exc).__name__,
                exc,
                self.consequence,
            )
        else:
            logger.debug("Chatto: writing the %s to %s still fails (%s)", self.kind, self.path, exc)

    def ok(self) -> None:
        """A write of this kind worked."""
        if not self.failing:
            return
        with self._lock:
            was, self.failing = self.failing, False
        if was:
            logger.info("Chatto: writing the %s to %s works again", self.kind, self.path)


#: What the plugin does when a write of each kind fails (the WARNING's last part).
SEEN_FAILED = (
    "the ids stay queued in memory and are written when it works again; until then a message for "
    "the bot waits unanswered (answered now, it would be answered again after a restart) and the "
    "resume cursor is not moved past it"
)
CURSOR_FAILED = "the stored resume cursor stays at the last point that was written: a restart resumes from there"
FRONTIER_FAILED = (
    "thread context is kept in memory and each thread's row is written whole by its next turn; a "
    "restart before that may quote messages a thread's session already saw"
)
INFLIGHT_FAILED = "a turn interrupted by a crash before it works again may not run again after the restart"


@dataclass(frozen=True, slots=True)
class FrontierRow:
    """One persisted thread frontier (the ``frontier`` table).

    ``session_id`` is the Hermes session id the row is bound to (``None`` = not bound yet:
    the thread's first turn ran before the runner had created the session).
    ``cursor`` is an opaque Chatto thread cursor (``tl:…``) or ``None`` (never anchored);
    ``held`` are the event ids the session holds *past* the cursor, oldest first (with no
    cursor: every id it holds). ``updated_at`` is epoch seconds.
    """

    session_key: str
    session_id: str | None
    room_id: str
    root_id: str
    cursor: str | None = None
    held: tuple[str, ...] = field(default_factory=tuple)
    updated_at: float = 0.0
    owed: tuple[str, ...] = field(default_factory=tuple)


def _ids(text: str | None) -> tuple[str, ...]:
    """A JSON id list column; ``()`` when it is not valid JSON (a row then only
    re-delivers, never skips)."""
    try:
        return tuple(str(x) for x in json.loads(text or "[]"))
    except (ValueError, TypeError):
        return ()


class FrontierStore:
    """Thread frontiers keyed by Hermes session key (table ``frontier``).

    ``path`` defaults to :func:`state_path` (the current profile's Hermes home, evaluated
    here). One row per session key; :meth:`save` replaces the row (one small upsert).
    Thread-safe; blocking — call from a worker thread when on the event loop. Rows older
    than ``max_age`` seconds (default :data:`FRONTIER_MAX_AGE`; ``None`` = keep all) are
    pruned when the store opens, so the table does not grow with every thread ever seen.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_age: float | None = FRONTIER_MAX_AGE):
        self.path = Path(path) if path is not None else state_path()
        self._lock = threading.Lock()
        self._conn = _connect(self.path)
        self.health = WriteHealth("thread frontier", self.path, FRONTIER_FAILED)
        if max_age is not None:
            self.prune(time.time() - float(max_age))

    def _write(self, sql: str, args: tuple[object, ...]) -> sqlite3.Cursor:
        """One write statement; a failure is reported (:class:`WriteHealth`) and raised."""
        with self._lock:
            try:
                cur = self._conn.execute(sql, args)
            except sqlite3.Error as exc:
                self.health.failed(exc)
                raise
        self.health.ok()
        return cur

    def load(self, session_key: str) -> FrontierRow | None:
        """The row for ``session_key`` or ``None``. A row whose ``held`` / ``owed`` column is
        not valid JSON loads with that column empty."""
        with self._lock:
            r = self._select(session_key)
        return self._row(r)

    def load_now(self, session_key: str) -> FrontierRow | None | bool:
        """:meth:`load` on the calling thread (the event loop) when that needs no wait: the
        store's lock is free right now (no save in flight). ``False`` when it is not (call
        :meth:`load` off the loop). One primary-key ``SELECT`` (a WAL reader takes no lock a
        writer holds). Raises ``sqlite3.Error`` as :meth:`load` does."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            r = self._select(session_key)
        finally:
            self._lock.release()
        return self._row(r)

    def _select(self, session_key: str) -> Any:
        cur = self._conn.execute(
            "SELECT session_key, session_id, room_id, root_id, cursor, held, updated_at, owed "
            "FROM frontier WHERE session_key = ?",
            (session_key,),
        )
        return cur.fetchone()

    @staticmethod
    def _row(r: Any) -> FrontierRow | None:
        if r is None:
            return None
        return FrontierRow(
            session_key=r[0],
            session_id=r[1],
            room_id=r[2],
            root_id=r[3],
            cursor=r[4] or None,
            held=_ids(r[5]),
            updated_at=float(r[6] or 0.0),
            owed=_ids(r[7]),
        )

    def save(self, row: FrontierRow) -> None:
        """Insert or replace the row of ``row.session_key`` (``updated_at`` = now if 0)."""
        updated = row.updated_at or time.time()
        self._write(
            "INSERT INTO frontier (session_key, session_id, room_id, root_id, cursor, held, updated_at, owed) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(session_key) DO UPDATE SET session_id=excluded.session_id, "
            "room_id=excluded.room_id, root_id=excluded.root_id, cursor=excluded.cursor, "
            "held=excluded.held, updated_at=excluded.updated_at, owed=excluded.owed",
            (
                row.session_key,
                row.session_id,
                row.room_id,
                row.root_id,
                row.cursor or None,
                json.dumps(list(row.held), separators=(",", ":")),
                updated,
                json.dumps(list(row.owed), separators=(",", ":")),
            ),
        )

    def delete(self, session_key: str) -> None:
        """Remove the row of ``session_key`` (no error when absent)."""
        self._write("DELETE FROM frontier WHERE session_key = ?", (session_key,))

    def count(self) -> int:
        """Number of rows."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM frontier").fetchone()[0])

    def prune(self, older_than: float) -> int:
        """Delete rows not updated since ``older_than`` (epoch seconds); returns the count."""
        cur = self._write("DELETE FROM frontier WHERE updated_at < ?", (older_than,))
        return int(cur.rowcount or 0)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass


class SeenStore:
    """A bounded, persistent set of event ids (table ``seen``) for the adapter's ingress
    dedupe: a message handled before a restart is recognised when the realtime stream
    replays it afterwards.

    ``limit`` is the number of ids kept (oldest evicted first, in insertion order). The
    ids are also held in memory as their hashes (loaded when the store opens: a set for
    ``in`` plus a deque in insertion order for O(1) eviction; ~80 bytes per id), so
    :meth:`contains` / ``in`` never touches the disk and :meth:`add` only queues the id; the
    queue is written in one transaction every :data:`SEEN_FLUSH_AT` ids or on :meth:`flush`
    (WAL, ``synchronous=NORMAL``: no fsync per insert) — the hot path of ingest, measured by
    ``bench/p3_adapter.py``. The writes run on one writer thread, in order: the event loop
    that calls :meth:`add` never waits for SQLite (a batch cost ~4 µs per id there);
    :meth:`flush` (the cursor keeper calls it, off the loop, before each cursor write) waits
    until everything queued is on disk; :meth:`write_now` (the durable gate, AGENTS 57)
    writes a turn's id on the loop when nothing is in the way. Thread-safe.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, limit: int = SEEN_LIMIT):
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.path = Path(path) if path is not None else state_path()
        self.limit = int(limit)
        self._slack = max(1, self.limit // 10)
        self._lock = threading.Lock()
        self._conn = _connect(self.path)
        self.health = WriteHealth("seen-set", self.path, SEEN_FAILED)
        rows = self._conn.execute("SELECT event_id FROM seen ORDER BY seq DESC LIMIT ?", (self.limit,)).fetchall()
        ids = [r[0] for r in reversed(rows)]
        # In memory an id is kept as its str hash (64 bits, SipHash, this process's seed):
        # ~80 bytes per id instead of ~360 for the strings in a set and a deque (50,000 ids:
        # 4 MB instead of 18). Two ids of one process's last SEEN_LIMIT sharing a hash (odds
        # ~n/2^64 per message, 3e-15 at the limit) would drop the second as a duplicate.
        hashes = [hash(i) for i in ids]
        self._mem: set[int] = set(hashes)
        self._order: deque[int] = deque(hashes)  # oldest first; same hashes as _mem
        self._pending: list[str] = []
        #: the writer thread (started with the first batch), the batch handed to it last, and
        #: the lock that keeps the connection to one thread at a time
        self._writer: ThreadPoolExecutor | None = None
        self._last: Future[int] | None = None
        self._write_lock = threading.Lock()
        self._count = int(self._conn.execute("SELECT count(*) FROM seen").fetchone()[0])
        # neither connection checkpoints inside a commit (see _after_commit); the second one
        # (write_now, on the event loop) never waits for a lock
        self._conn.execute("PRAGMA wal_autocheckpoint=0")
        self._fast = _connect(self.path)
        self._fast.execute("PRAGMA busy_timeout=0")
        self._fast.execute("PRAGMA wal_autocheckpoint=0")
        self._commits = 0
        if self._count > self.limit:
            with self._lock:
                self._prune_locked()

    def add(self, event_id: str) -> bool:
        """Remember ``event_id``; ``True`` if it was not there yet. Never touches the disk:
        every :data:`SEEN_FLUSH_AT` ids the queue goes to the writer thread."""
        h = hash(event_id)
        if not event_id or h in self._mem:
            return False
        with self._lock:
            if h in self._mem:
                return False
            mem = self._mem
            mem.add(h)
            self._order.append(h)
            if len(mem) > self.limit:
                mem.discard(self._order.popleft())
            self._pending.append(event_id)  # stamped when written: one clock read per batch
            if len(self._pending) >= SEEN_FLUSH_AT:
                self._submit_locked()
            return True

    def flush(self) -> int:
        """Write every queued id (one transaction, on the writer thread, after the batches
        handed to it before) and wait until they are on disk; returns how many were queued.
        Raises ``sqlite3.Error`` when that write failed (its ids stay queued)."""
        with self._lock:
            n = len(self._pending)
        fut = self.flush_future()
        if fut is not None:
            fut.result()
        return n

    def flush_future(self) -> Future[int] | None:
        """Hand every queued id to the writer thread without waiting: the future of the batch
        that puts them (and everything queued before) on disk, ``None`` when nothing is queued
        or being written. Its result raises ``sqlite3.Error`` when that write failed (the ids
        stay queued). An event loop awaits it with ``asyncio.wrap_future``: one hop to the
        writer thread, no worker thread blocked on it."""
        with self._lock:
            if self._pending:
                return self._submit_locked()
            last = self._last
            return last if last is not None and not last.done() else None

    def _submit_locked(self) -> Future[int]:
        """Hand the queue to the writer thread (one worker: batches land in order)."""
        pending, self._pending = self._pending, []
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatto-seen-writer")
        fut = self._last = self._writer.submit(self._write, pending)
        return fut

    def write_now(self) -> bool:
        """Write the queued ids on the calling thread, when that needs no wait: no batch is
        in flight on the writer thread, its lock is free, at most :data:`SEEN_FLUSH_AT` ids
        are queued and no other connection holds the file's write lock (this store's second
        connection has a busy timeout of 0). One ``INSERT`` statement (its own transaction;
        WAL, ``synchronous=NORMAL``: no fsync; this store's connections never checkpoint or
        prune inside a commit of this path: the writer thread does). ``True``: every queued
        id is on disk; ``False``: it would have had to wait (nothing written; use
        :meth:`flush_future`). Raises ``sqlite3.Error`` when the write failed (the ids stay
        queued; the failure is reported as by the writer thread)."""
        with self._lock:
            if self._last is not None and not self._last.done():
                return False
            if not self._pending:
                return True
            if len(self._pending) > SEEN_FLUSH_AT or not self._write_lock.acquire(blocking=False):
                return False
            pending, self._pending = self._pending, []
        try:
            now = time.time()
            try:
                if len(pending) == 1:  # the usual case: one turn's id (the statement is cached as is)
                    cur = self._fast.execute(_INSERT_SEEN_ONE, (pending[0], now))
                else:
                    cur = self._fast.execute(
                        "INSERT OR IGNORE INTO seen (event_id, seen_at) VALUES " + ",".join(["(?, ?)"] * len(pending)),
                        [x for eid in pending for x in (eid, now)],
                    )
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                with self._lock:
                    self._pending = pending + self._pending
                return False
            self._count += max(0, cur.rowcount)
        except sqlite3.Error as exc:
            with self._lock:
                self._pending = pending + self._pending
            self.health.failed(exc)
            raise
        finally:
            self._write_lock.release()
        self.health.ok()
        self._after_commit(inline=True)
        return True

    def _write(self, pending: list[str]) -> int:
        """The writer thread: insert ``pending`` in one transaction, prune past the limit. On
        ``sqlite3.Error`` the ids go back to the front of the queue (the next flush retries) and
        the failure is reported (:class:`WriteHealth`: a WARNING the first time)."""
        with self._write_lock:
            try:
                self._insert_locked(pending)
            except sqlite3.Error as exc:
                with self._lock:
                    self._pending = pending + self._pending
                self.health.failed(exc)
                raise
            self._after_commit(inline=False)
            return len(pending)

    def _insert_locked(self, pending: list[str]) -> None:
        """One transaction inserting ``pending`` (``_write_lock`` held). Rolls back and raises
        ``sqlite3.Error`` on failure."""
        inserted = 0
        now = time.time()
        conn = self._conn
        try:
            conn.execute("BEGIN")
            # One multi-row INSERT per SEEN_FLUSH_AT ids instead of one statement per id
            # (executemany): same rows and seq order, less per-row work (bindings).
            for i in range(0, len(pending), SEEN_FLUSH_AT):
                chunk = pending[i : i + SEEN_FLUSH_AT]
                cur = conn.execute(
                    "INSERT OR IGNORE INTO seen (event_id, seen_at) VALUES " + ",".join(["(?, ?)"] * len(chunk)),
                    [x for eid in chunk for x in (eid, now)],
                )
                inserted += max(0, cur.rowcount)
            conn.execute("COMMIT")
        except sqlite3.Error:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self.health.ok()
        self._count += inserted
        if self._count > self.limit + self._slack:
            self._prune_locked()

    def _after_commit(self, *, inline: bool) -> None:
        """Every :data:`SEEN_CHECKPOINT_EVERY` commits a passive WAL checkpoint, and past the
        limit the prune, on the writer thread (this store's connections never checkpoint
        inside a commit: that would fsync on the caller's thread, the event loop for
        :meth:`write_now`)."""
        with self._lock:
            self._commits += 1
            checkpoint = self._commits >= SEEN_CHECKPOINT_EVERY
            prune = inline and self._count > self.limit + self._slack
            if checkpoint:
                self._commits = 0
            if inline and (checkpoint or prune):
                if self._writer is None:
                    self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatto-seen-writer")
                self._writer.submit(self._maintain, checkpoint, prune)
                return
        if checkpoint:
            self._checkpoint_locked()

    def _maintain(self, checkpoint: bool, prune: bool) -> None:
        """The writer thread: the checkpoint and prune :meth:`write_now` left to it."""
        with self._write_lock:
            if prune and self._count > self.limit + self._slack:
                try:
                    self._prune_locked()
                except sqlite3.Error:  # the next write's prune tries again
                    logger.debug("Chatto: seen-set prune failed", exc_info=True)
            if checkpoint:
                self._checkpoint_locked()

    def _checkpoint_locked(self) -> None:
        """A passive WAL checkpoint (``_write_lock`` held)."""
        try:
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:  # a busy or failing file: the next one tries again
            logger.debug("Chatto: seen-set WAL checkpoint failed", exc_info=True)

    def discard(self, event_id: str) -> None:
        """Forget ``event_id`` if it is not written yet (memory and queue); an id already on
        disk stays. For a message whose turn never ran: a restart must not skip it."""
        with self._lock:
            if event_id not in self._pending:
                return
            self._pending.remove(event_id)
            h = hash(event_id)
            self._mem.discard(h)
            try:
                self._order.remove(h)
            except ValueError:
                pass

    def contains(self, event_id: str) -> bool:
        """Whether ``event_id`` is remembered (memory only; the table mirrors it)."""
        return bool(event_id) and hash(event_id) in self._mem

    def __contains__(self, event_id: object) -> bool:
        return isinstance(event_id, str) and hash(event_id) in self._mem

    def __len__(self) -> int:
        return len(self._mem)

    def _prune_locked(self) -> None:
        # Keep the `limit` newest rows: delete every seq at or below the (limit+1)-th newest
        # (a rowid range; no row is deleted when there are at most `limit`).
        self._conn.execute(
            "DELETE FROM seen WHERE seq <= (SELECT seq FROM seen ORDER BY seq DESC LIMIT 1 OFFSET ?)",
            (self.limit,),
        )
        self._count = int(self._conn.execute("SELECT count(*) FROM seen").fetchone()[0])

    def close(self) -> None:
        """Flush, stop the writer thread and close the connection (idempotent)."""
        try:
            self.flush()
        except sqlite3.Error:
            pass
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        with self._write_lock:
            for conn in (self._conn, self._fast):
                try:
                    conn.close()
                except sqlite3.Error:
                    pass


#: A protocol-4 resume cursor is valid for 15 minutes after issue (Chatto's
#: cli/internal/core/realtime_replay.go, docs/chatto-0.5.md §1.3); an older stored one is not
#: sent: the server would reset anyway, and a stale-cursor subscribe spends its scarce metered
#: catch-up budget (3, then 1 per 20 s).
RESUME_CURSOR_MAX_AGE = 15 * 60.0


class ResumeCursorStore:
    """The last processed realtime resume cursor per bot (table ``realtime_cursor``).

    Opaque base64url strings from ``caught_up.cursor`` / ``projection_event.resume_cursor``
    (proto ``chatto.realtime.v1``). :meth:`load` returns ``None`` for a cursor older than
    :data:`RESUME_CURSOR_MAX_AGE` seconds; :meth:`load_entry` still returns when it was stored
    (gap recovery reads back to then, however long ago). Synchronous single-row statements; thread-safe;
    callers on the event loop use ``asyncio.to_thread``.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else state_path()
        self._lock = threading.Lock()
        self._conn = _connect(self.path)
        self.health = WriteHealth("resume cursor", self.path, CURSOR_FAILED)

    def load(self, bot_user_id: str, *, now: float | None = None) -> str | None:
        """The stored cursor for ``bot_user_id`` if it can still resume (younger than
        :data:`RESUME_CURSOR_MAX_AGE`), else ``None``."""
        entry = self.load_entry(bot_user_id, now=now)
        return entry[0] or None if entry is not None else None

    def load_entry(self, bot_user_id: str, *, now: float | None = None) -> tuple[str, float] | None:
        """``(cursor, saved_at)`` for ``bot_user_id``, ``None`` when nothing was stored.
        ``saved_at`` is epoch seconds (this machine's clock): the last gateway had handled
        every event up to the cursor by then. ``cursor`` is ``""`` when it is older than
        :data:`RESUME_CURSOR_MAX_AGE` (it can no longer resume; ``saved_at`` still tells gap
        recovery where to read back to)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT cursor, updated_at FROM realtime_cursor WHERE bot_user_id = ?", (bot_user_id,)
            ).fetchone()
        if row is None:
            return None
        cursor, updated_at = row
        if (now if now is not None else time.time()) - float(updated_at) > RESUME_CURSOR_MAX_AGE:
            cursor = ""
        return str(cursor or ""), float(updated_at)

    def save(self, bot_user_id: str, cursor: str, *, now: float | None = None) -> None:
        """Store ``cursor`` (ignored when empty). A failed write is reported
        (:class:`WriteHealth`) and raised."""
        if not bot_user_id or not cursor:
            return
        with self._lock:
            try:
                self._conn.execute(
                    "INSERT INTO realtime_cursor (bot_user_id, cursor, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(bot_user_id) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at",
                    (bot_user_id, cursor, now if now is not None else time.time()),
                )
            except sqlite3.Error as exc:
                self.health.failed(exc)
                raise
        self.health.ok()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass


class InflightStore:
    """The turn each session is running, persisted (table ``inflight``) so that a gateway
    killed mid-turn knows after the restart which session was genuinely interrupted.

    One row per Hermes session key: the trigger's Chatto event id (``Message.id``) and an
    opaque payload (the JSON of the event fields the host was handed). Synchronous single-row statements; thread-safe;
    callers on the event loop use ``asyncio.to_thread``.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else state_path()
        self._lock = threading.Lock()
        self._conn = _connect(self.path)
        self.health = WriteHealth("in-flight turn", self.path, INFLIGHT_FAILED)

    def _write(self, sql: str, args: tuple[object, ...]) -> None:
        """One write statement; a failure is reported (:class:`WriteHealth`) and raised."""
        with self._lock:
            try:
                self._conn.execute(sql, args)
            except sqlite3.Error as exc:
                self.health.failed(exc)
                raise
        self.health.ok()

    def put(self, session_key: str, event_id: str, payload: str, *, now: float | None = None) -> None:
        """Record (or replace) the running turn of ``session_key``."""
        self._write(
            "INSERT INTO inflight (session_key, event_id, payload, started_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(session_key) DO UPDATE SET event_id = excluded.event_id, "
            "payload = excluded.payload, started_at = excluded.started_at",
            (session_key, event_id, payload, now if now is not None else time.time()),
        )

    def get(self, session_key: str) -> tuple[str, str, float] | None:
        """``(event_id, payload, started_at)`` of the recorded turn, or ``None``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT event_id, payload, started_at FROM inflight WHERE session_key = ?", (session_key,)
            ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]), float(row[2]))

    def drop(self, session_key: str, event_id: str | None = None) -> None:
        """Forget the session's turn (only when it is ``event_id``, if given)."""
        if event_id is None:
            self._write("DELETE FROM inflight WHERE session_key = ?", (session_key,))
        else:
            self._write("DELETE FROM inflight WHERE session_key = ? AND event_id = ?", (session_key, event_id))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
