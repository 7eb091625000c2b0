"""Shared helpers for the benchmark scripts (output format, repo path, a temp Hermes home)."""

from __future__ import annotations

import os
import sys
import tempfile
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


def goal_met(value, goal: str) -> bool | None:
    """Whether ``value`` meets ``goal``: ``<=x``, ``<x``, ``>=x``, ``>x`` or a bare number
    (equality); ``None`` for ``-`` (informational) or a goal that is not a number."""
    g = goal.strip()
    for op in ("<=", ">=", "<", ">", "=="):
        if g.startswith(op):
            rest = g[len(op) :]
            break
    else:
        op, rest = "==", g
    try:
        x = float(rest)
    except ValueError:
        return None
    v = float(value)
    return {"<=": v <= x, ">=": v >= x, "<": v < x, ">": v > x, "==": abs(v - x) < 1e-9}[op]


def emit(n: int, name: str, value, unit: str, goal: str, met: bool | None = None) -> None:
    """Print one metric line: ``P<n> <name>=<value> <unit> goal=<goal> met=<yes|no|->``
    (flushes). ``met`` defaults to :func:`goal_met` (compared on the unrounded value)."""
    if met is None:
        met = goal_met(value, goal)
    flag = "-" if met is None else ("yes" if met else "NO")
    print(f"P{n} {name}={fmt(value)} {unit} goal={goal} met={flag}", flush=True)


def note(msg: str) -> None:
    """Diagnostics go to stderr so stdout holds only metric lines."""
    print(msg, file=sys.stderr, flush=True)


def setup_hermes_home() -> str:
    """Point HERMES_HOME at a fresh temp dir (before Hermes modules are imported); it is
    removed when the process exits."""
    import atexit
    import shutil

    home = tempfile.mkdtemp(prefix="hermes-chatto-bench-")
    os.environ["HERMES_HOME"] = home
    atexit.register(shutil.rmtree, home, True)
    return home
