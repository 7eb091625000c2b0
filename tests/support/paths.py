"""Where things are, independent of which test folder a module lives in."""

from __future__ import annotations

from pathlib import Path

#: The repository root (``tests/support/paths.py`` → two levels up).
REPO = Path(__file__).resolve().parents[2]
#: The test folder (``tests/``).
TESTS = REPO / "tests"
#: The repository's own copy of the golden wire fixtures (``CHATTO_WIRE_FIXTURES`` overrides it).
WIRE_FIXTURES = TESTS / "data" / "chatto-wire"
