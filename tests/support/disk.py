"""A disk that fills up, for the store's write-failure tests.

* :func:`small_tmpfs` – a real tmpfs of ``size`` bytes mounted on a directory (root only;
  ``pytest.skip`` when this machine does not allow the mount), unmounted afterwards;
  :func:`fill` takes every free byte of it (returns the filler file: delete it and the disk
  has room again).
* :class:`FullDisk` – the fallback and the gateway tests' tool: wraps a store's
  ``sqlite3.Connection`` so that, while ``full`` is set, every write statement raises
  ``sqlite3.OperationalError("database or disk is full")`` (SQLite's SQLITE_FULL text), as
  a real full disk makes it do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "BEGIN", "COMMIT")


@contextlib.contextmanager
def small_tmpfs(where: Path, size: int = 512 * 1024) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` bytes on ``where`` (created) for the ``with`` block."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> Path:
    """Write a file in ``where`` until the filesystem is full; returns it."""
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


class FullDisk:
    """A ``sqlite3.Connection`` stand-in whose writes fail while :attr:`full` is set."""

    def __init__(self, conn: sqlite3.Connection, full: bool = True) -> None:
        self._conn = conn
        self.full = full

    def execute(self, sql: str, *args: Any) -> Any:
        if self.full and sql.lstrip().upper().startswith(_WRITES):
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _SameDisk(FullDisk):
    """A second connection of the same store on the same :class:`FullDisk` (its ``full``)."""

    def __init__(self, conn: sqlite3.Connection, disk: FullDisk) -> None:
        super().__init__(conn)
        self._disk = disk

    @property  # type: ignore[override]
    def full(self) -> bool:
        return self._disk.full

    @full.setter
    def full(self, value: bool) -> None:
        pass


def make_full(store: Any) -> FullDisk:
    """Put a :class:`FullDisk` under ``store`` (any of the state file's stores; the seen-set's
    second connection, ``_fast``, too); returns it (set ``.full = False`` and the disk "has
    room again")."""
    disk = FullDisk(store._conn)
    store._conn = disk
    fast = getattr(store, "_fast", None)
    if fast is not None:
        store._fast = _SameDisk(fast, disk)
    return disk
