"""Local Chatto server for tests, the demo and offline bot development.

``LocalChatto`` (in :mod:`chatto_local.server`) is a protocol-faithful subset of
Chatto 0.5 on one loopback port: ConnectRPC JSON under ``/api/connect`` and the realtime
WebSocket (protocol 4, Chatto 0.5.0-beta.10 … beta.20) at ``/api/realtime``. It needs the ``server`` extra
(``starlette``, ``uvicorn``); the import is lazy so that ``chatto_local.*``
helpers that do not need the server import without it.

Run by hand: ``python -m chatto_local --help`` (``serve``, ``post``, ``read``, ``grant`` …;
see :mod:`chatto_local.cli`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["LocalChatto", "DemoWorld"]

if TYPE_CHECKING:  # pragma: no cover
    from .server import DemoWorld, LocalChatto


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import server

        return getattr(server, name)
    raise AttributeError(name)
