"""Bounded, insertion-ordered map and set: the one LRU helper of the package.

Every memory the plugin keeps about a live server (event id → thread root, reply counts,
known projection rows, seen ids, per-session frontier state, the resume registry) must stay
bounded on a bot that runs for months. They all use these two types instead of a hand-rolled
``OrderedDict`` + ``popitem(last=False)`` loop each.

Pure: stdlib only, no I/O, no clock. Safe to import from the wire layer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

__all__ = ["BoundedMap", "BoundedSet"]


class BoundedMap(Generic[K, V]):
    """A mapping of at most ``capacity`` entries; the least recently put is evicted first.

    ``put`` refreshes an existing key's position unless ``touch=False`` (a hot path that only
    needs "at most N, oldest out" skips the move). ``get`` never reorders: reads are not
    uses, so a key read often but never re-put still ages out. Raises ``ValueError`` for a
    ``capacity`` below 1.
    """

    __slots__ = ("capacity", "_d")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"BoundedMap capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._d: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V, *, touch: bool = True) -> None:
        """Store ``key → value``; evicts the oldest entries past ``capacity``."""
        d = self._d
        if touch and key in d:
            d.move_to_end(key)
        d[key] = value
        if len(d) > self.capacity:
            while len(d) > self.capacity:
                d.popitem(last=False)

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        return self._d.get(key, default)

    def pop(self, key: K, default: V | None = None) -> V | None:
        return self._d.pop(key, default)

    def __getitem__(self, key: K) -> V:
        return self._d[key]

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator[K]:
        return iter(self._d)

    def items(self) -> Iterable[tuple[K, V]]:
        return self._d.items()

    def values(self) -> Iterable[V]:
        return self._d.values()

    def oldest(self) -> K | None:
        """The key next in line for eviction, or ``None`` when empty."""
        return next(iter(self._d), None)

    def popoldest(self) -> tuple[K, V]:
        """Remove and return the oldest entry. Raises ``KeyError`` when empty."""
        return self._d.popitem(last=False)

    def clear(self) -> None:
        self._d.clear()

    def __repr__(self) -> str:
        return f"BoundedMap({len(self._d)}/{self.capacity})"


class BoundedSet(Generic[K]):
    """A set of at most ``capacity`` members; the least recently added is evicted first.

    Re-adding a member refreshes it. Empty strings and ``None`` are ignored by ``add`` (an
    event id is never empty; a blank one is a parse gap, not a member). Raises
    ``ValueError`` for a ``capacity`` below 1.

    Keeps its own ``OrderedDict`` rather than wrapping a :class:`BoundedMap`: membership is
    tested for every ingested message (``ingress.SeenSet``), and one Python-level call per
    test instead of two is measurable there.
    """

    __slots__ = ("capacity", "_d")

    def __init__(self, capacity: int, initial: Iterable[K] = ()) -> None:
        if capacity < 1:
            raise ValueError(f"BoundedSet capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._d: OrderedDict[K, None] = OrderedDict()
        for k in initial:
            self.add(k)

    def add(self, key: K) -> None:
        if key is None or key == "":
            return
        d = self._d
        if key in d:
            d.move_to_end(key)
            return
        d[key] = None
        if len(d) > self.capacity:
            while len(d) > self.capacity:
                d.popitem(last=False)

    def discard(self, key: K) -> None:
        self._d.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator[K]:
        return iter(self._d)

    def clear(self) -> None:
        self._d.clear()

    def __repr__(self) -> str:
        return f"BoundedSet({len(self._d)}/{self.capacity})"
