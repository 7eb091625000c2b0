"""Shared test kit for the suite (importable as ``support``: pytest puts ``tests/`` on
``sys.path`` through ``pythonpath`` in pyproject.toml). Test modules import from here, never
from another test module or a ``conftest.py``; fixtures stay in the ``conftest.py`` files.

* :mod:`support.paths`    - the repository root and the golden wire fixture folder.
* :mod:`support.waits`    - condition waits (``wait_for``, ``until``, ``idle``).
* :mod:`support.fakes`    - in-memory stand-ins: the Chatto unary client / realtime session
  over a ``FakeServer``, a ``CreateMessage`` recorder, a settable clock, and the two stubbed
  model calls (``FakeAgent`` for ``GatewayRunner._run_agent``, ``ProfileAgent`` for
  ``_run_agent_inner`` under profile multiplexing).
* :mod:`support.host`     - a real ``GatewayRunner`` + ``ChattoAdapter`` for a LocalChatto
  world (``build_gateway``, ``start_gateway``, ``wire_adapter``, ``world_ids``, ``bot_replies``).
* :mod:`support.frontier` - ``FakeThread`` (GetThreadEvents semantics), ``Sim`` around one
  ``ThreadFrontier``, its ids and block readers.
* :mod:`support.realtime` - ``FakeChatto``, a scripted protocol-4 websocket server (frames encoded with chattolib), and frame builders.
* :mod:`support.text`     - generated message text (``mixed_text``).

Nothing here imports a Hermes module at import time: the top-level ``conftest.py`` must set
``HERMES_HOME`` before any Hermes module is imported.
"""
