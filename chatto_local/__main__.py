"""``python -m chatto_local [COMMAND] [options]``: the local Chatto server's command
line (:mod:`chatto_local.cli`). Without a command it runs ``serve``: the server with
the demo world, printing ``CHATTO_URL``, ``CHATTO_BOT_KEY``, ``CHATTO_USER_KEY`` and
``CHATTO_ADMIN_KEY`` as its first lines."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
