"""Every logger of the package lives under ``hermes_plugins.chatto`` (``hermes_chatto.logs``).

Why: Hermes' ``hermes_logging.setup_logging(mode="gateway")`` writes to ``gateway.log`` only
the records of loggers named ``gateway*``, ``hermes_plugins*`` or ``plugins.platforms*``
(``COMPONENT_PREFIXES["gateway"]``). A ``hermes_chatto.*`` logger would reach ``agent.log``
and ``errors.log`` only, and the operator reading ``gateway.log`` would miss the plugin's
connect / reconnect lines and warnings. These tests run the real ``setup_logging``.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

import pytest

import hermes_chatto
from hermes_chatto.logs import LOGGER_ROOT, get_logger, logger_name

from support.host import drop_log_handlers_added_since


def test_logger_name_maps_the_package_onto_the_plugin_namespace():
    assert logger_name("hermes_chatto") == "hermes_plugins.chatto"
    assert logger_name("hermes_chatto.wire.realtime") == "hermes_plugins.chatto.wire.realtime"
    assert logger_name("hermes_plugins.chatto.adapter") == "hermes_plugins.chatto.adapter"
    assert get_logger("hermes_chatto.adapter") is logging.getLogger("hermes_plugins.chatto.adapter")
    with pytest.raises(ValueError):
        logger_name("hermes_chattox.wire")
    with pytest.raises(ValueError):
        logger_name("gateway.run")


def _package_modules() -> list[str]:
    names = ["hermes_chatto"]
    for info in pkgutil.walk_packages(hermes_chatto.__path__, "hermes_chatto."):
        if info.name.endswith(("__main__", "_pb2")):
            continue
        names.append(info.name)
    return names


def test_every_module_level_logger_is_under_the_plugin_namespace():
    """Each module's ``logger`` / ``log`` / ``*_LOGGER`` object (a Logger or LoggerAdapter)."""
    found = {}
    for name in _package_modules():
        mod = importlib.import_module(name)
        for attr, value in vars(mod).items():
            lg = value.logger if isinstance(value, logging.LoggerAdapter) else value
            if isinstance(lg, logging.Logger) and not attr.startswith("__"):
                found[f"{name}.{attr}"] = lg.name
    assert "hermes_chatto.wire.realtime.log" in found and "hermes_chatto.adapter.facade.logger" in found
    wrong = {k: v for k, v in found.items() if v != LOGGER_ROOT and not v.startswith(LOGGER_ROOT + ".")}
    assert not wrong, f"loggers outside {LOGGER_ROOT}: {wrong}"


def test_wire_and_adapter_warnings_reach_gateway_log(tmp_path, monkeypatch):
    import hermes_logging

    from hermes_chatto.adapter import facade
    from hermes_chatto.wire import connect, realtime

    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    root = logging.getLogger()
    noisy = {n: logging.getLogger(n).level for n in hermes_logging._NOISY_LOGGERS}
    level, was_initialized = root.level, hermes_logging._logging_initialized
    before = hermes_logging.rotating_file_handlers()
    try:
        log_dir = hermes_logging.setup_logging(mode="gateway", force=True)
        assert log_dir == tmp_path / "logs"
        realtime.log.warning("routing-probe: realtime reconnect")
        connect.log.warning("routing-probe: unary call")
        facade.logger.warning("routing-probe: adapter")
        logging.getLogger("hermes_chatto.elsewhere").warning("routing-probe: old namespace")
        hermes_logging.flush_log_queue()
        gateway = (log_dir / "gateway.log").read_text(encoding="utf-8")
        errors = (log_dir / "errors.log").read_text(encoding="utf-8")
    finally:
        drop_log_handlers_added_since(before)
        root.setLevel(level)
        hermes_logging._logging_initialized = was_initialized
        for n, lv in noisy.items():
            logging.getLogger(n).setLevel(lv)
    for probe, name in [
        ("realtime reconnect", "hermes_plugins.chatto.wire.realtime"),
        ("unary call", "hermes_plugins.chatto.wire.connect"),
        ("adapter", "hermes_plugins.chatto.adapter"),
    ]:
        (line,) = [ln for ln in gateway.splitlines() if f"routing-probe: {probe}" in ln]
        assert name in line and "WARNING" in line
        assert line in errors
    # the control: a logger outside the prefixes is filtered out of gateway.log
    assert "old namespace" not in gateway and "old namespace" in errors
