"""``python -m hermes_chatto.testing [COMMAND] [options]``: the local Chatto server's command
line (:mod:`hermes_chatto.testing.cli`). Without a command it runs ``serve``: the server with
the demo world, printing ``CHATTO_URL``, ``CHATTO_BOT_KEY``, ``CHATTO_USER_KEY`` and
``CHATTO_ADMIN_KEY`` as its first lines."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
