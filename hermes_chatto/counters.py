"""One counters type for every unit that counts what it did (reads, writes, errors, frames).

Operators and ``hermes chatto status`` read these; tests and ``bench/`` assert on them (counts,
never timings). A missing name reads as 0, so a unit never pre-declares every name it may bump.

Pure: stdlib only; safe to import from the wire layer.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["Counters"]


class Counters(Counter[str]):
    """Named non-negative event counts: ``c["thread_reads"] += 1``; ``c["never_bumped"] == 0``.

    ``snapshot()`` gives a plain ``dict[str, int]`` of the non-zero counts (for logs and
    status output), sorted by name.
    """

    def bump(self, name: str, n: int = 1) -> None:
        self[name] += n

    def snapshot(self) -> dict[str, int]:
        return {k: v for k, v in sorted(self.items()) if v}
