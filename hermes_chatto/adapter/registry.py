"""Which adapter is live in this process, per profile scope (for the agent tool).

Several profiles can run in one gateway process (multiplexing); each has its own adapter.
The agent tool runs in the agent's worker thread inside a profile scope and looks its
adapter up here by :func:`hermes_chatto.compat.scope_key`. Weak references: a dropped
adapter is never kept alive by the registry.
"""

from __future__ import annotations

import weakref
from typing import Any

from .. import compat

#: scope key -> live adapter (weak)
_LIVE: dict[str, weakref.ReferenceType[Any]] = {}


def register_live(scope: str, adapter: Any) -> None:
    """Make ``adapter`` the live adapter of ``scope``."""
    _LIVE[scope] = weakref.ref(adapter)


def unregister_live(scope: str, adapter: Any) -> None:
    """Forget ``adapter`` as the live adapter of ``scope`` (only if it is the one registered)."""
    ref = _LIVE.get(scope)
    if ref is not None and ref() is adapter:
        _LIVE.pop(scope, None)


def live_adapter(scope: str | None = None) -> Any:
    """The connected ``ChattoAdapter`` of the given profile scope (default: the current
    one), or ``None``."""
    ref = _LIVE.get(scope or compat.scope_key())
    ad = ref() if ref is not None else None
    if ad is None or not ad.is_connected:
        return None
    return ad
