"""Command line: ``python -m hermes_chatto …``, ``hermes-chatto …`` and ``hermes chatto …``.

Subcommands:

* ``doctor [--json] [--home PATH] [--timeout S]`` — :mod:`hermes_chatto.doctor`; exit 0 when
  no check fails, else 1.
* ``setup`` — the ``hermes gateway setup`` wizard (:func:`hermes_chatto.setup_wizard.setup_fn`).
* ``settings`` — print the settings table (markdown) of :mod:`hermes_chatto.config`.

``register_cli(ctx)`` adds ``hermes chatto …`` through ``ctx.register_cli_command(name,
help, setup_fn, handler_fn, description)`` (hermes_cli/plugins.py, 0.19.0). The host
ignores the handler's return value, so the handler raises ``SystemExit(code)``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from hermes_chatto.doctor import REALTIME_TIMEOUT

HELP = "Chatto platform: doctor (diagnose), setup, settings table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Populate ``parser`` (top-level or the host's ``hermes chatto`` subparser)."""
    subs = parser.add_subparsers(dest="chatto_command")
    d = subs.add_parser("doctor", help="check URL, key, server version, room permissions and realtime")
    d.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    d.add_argument("--home", default=None,
                   help="Hermes home (profile directory) to read; default: the current profile")
    d.add_argument("--timeout", type=float, default=REALTIME_TIMEOUT,
                   help=f"seconds to wait for realtime caught_up (default {REALTIME_TIMEOUT:.0f})")
    subs.add_parser("setup", help="interactive setup: server URL and bot key, validated live")
    subs.add_parser("settings", help="print the settings table (attribute, env var, config.yaml key)")


def dispatch(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; returns the exit code."""
    cmd = getattr(args, "chatto_command", None)
    if cmd == "doctor":
        from hermes_chatto.doctor import run

        return run(bool(args.json), home=args.home, timeout=args.timeout)
    if cmd == "setup":
        from hermes_chatto.setup_wizard import setup_fn

        setup_fn()
        return 0
    if cmd == "settings":
        from hermes_chatto.config import settings_table_markdown

        sys.stdout.write(settings_table_markdown())
        return 0
    print("usage: chatto {doctor [--json],setup,settings}", file=sys.stderr)
    return 2


def _host_handler(args: argparse.Namespace) -> None:
    code = dispatch(args)
    if code:
        raise SystemExit(code)


def register_cli(ctx) -> None:
    """Register ``hermes chatto …`` on the plugin context (call from ``register(ctx)``)."""
    ctx.register_cli_command(
        name="chatto",
        help=HELP,
        setup_fn=add_arguments,
        handler_fn=_host_handler,
        description="Chatto platform plugin: `hermes chatto doctor [--json]` diagnoses configuration, "
                    "server, bot key, room permissions and realtime.",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``hermes-chatto``, ``python -m hermes_chatto``)."""
    parser = argparse.ArgumentParser(prog="hermes-chatto", description=HELP)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return dispatch(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
