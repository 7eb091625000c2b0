"""Logger names of the package: every logger lives under :data:`LOGGER_ROOT`.

Why not ``hermes_chatto.*`` (the module names): Hermes' ``hermes_logging.setup_logging(
mode="gateway")`` writes to ``gateway.log`` only the records of loggers whose name starts
with ``gateway``, ``hermes_plugins`` or ``plugins.platforms`` (its ``COMPONENT_PREFIXES``).
A ``hermes_chatto.*`` record would reach ``agent.log`` / ``errors.log`` only, so an operator
reading ``gateway.log`` would never see the plugin's connect, disconnect and reconnect lines
or its warnings.

Every logger :func:`get_logger` returns carries :class:`hermes_chatto.redact.RedactingFilter`:
no record of the package holds key material, whatever a server's error text echoed.

Pure: imports only :mod:`logging` and :mod:`hermes_chatto.redact` (stdlib and ``bounded``),
so every layer (the wire layer included) may use it.
"""

from __future__ import annotations

import logging

from .redact import RedactingFilter

#: The one filter instance every package logger carries.
_REDACTING = RedactingFilter()

#: Parent of every logger of the package (``hermes_plugins.chatto.wire.realtime`` …).
LOGGER_ROOT = "hermes_plugins.chatto"
#: The package's import name, which :func:`logger_name` replaces by :data:`LOGGER_ROOT`.
PACKAGE = "hermes_chatto"


def logger_name(module: str) -> str:
    """The logger name for ``module`` (a dotted module name, usually ``__name__``).

    ``"hermes_chatto"`` → ``"hermes_plugins.chatto"``; ``"hermes_chatto.wire.realtime"`` →
    ``"hermes_plugins.chatto.wire.realtime"``; a name already under :data:`LOGGER_ROOT` is
    returned as is. Raises ``ValueError`` for a name outside the package (a typo would
    otherwise silently log to a logger ``gateway.log`` never sees)."""
    if module == LOGGER_ROOT or module.startswith(LOGGER_ROOT + "."):
        return module
    if module == PACKAGE:
        return LOGGER_ROOT
    if module.startswith(PACKAGE + "."):
        return LOGGER_ROOT + module[len(PACKAGE) :]
    raise ValueError(f"not a module of {PACKAGE}: {module!r}")


def get_logger(module: str) -> logging.Logger:
    """``logging.getLogger(logger_name(module))`` with the redacting filter attached (once);
    raises ``ValueError`` like :func:`logger_name`."""
    logger = logging.getLogger(logger_name(module))
    if _REDACTING not in logger.filters:
        logger.addFilter(_REDACTING)
    return logger
