"""Shared helpers for the benchmark scripts (output format, repo path)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def fmt(value) -> str:
    """Numbers as short human strings: ints plain, floats with 3 significant-ish digits."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value)


def emit(n: int, name: str, value, unit: str, goal: str) -> None:
    """Print one metric line: ``P<n> <name>=<value> <unit> goal=<goal>`` (flushes)."""
    print(f"P{n} {name}={fmt(value)} {unit} goal={goal}", flush=True)


def note(msg: str) -> None:
    """Diagnostics go to stderr so stdout holds only metric lines."""
    print(msg, file=sys.stderr, flush=True)
