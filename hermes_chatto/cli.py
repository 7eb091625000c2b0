"""Command line: ``python -m hermes_chatto …``, ``hermes-chatto …`` and ``hermes chatto …``.

Subcommands:

* ``doctor [--json] [--home PATH] [--timeout S]`` — :mod:`hermes_chatto.doctor`; exit 0 when
  no check fails, else 1.
* ``setup`` — the ``hermes gateway setup`` wizard (:func:`hermes_chatto.setup_wizard.setup_fn`).
* ``settings`` — print the settings table (markdown) of :mod:`hermes_chatto.config`.

Without a subcommand the help (subcommands with one line each) is printed; ``--version``
prints ``hermes-chatto <version>`` (the installed distribution's version).

``register_cli(ctx)`` adds ``hermes chatto …`` through ``ctx.register_cli_command(name,
help, setup_fn, handler_fn, description)`` (hermes_cli/plugins.py, 0.19.0). The host
ignores the handler's return value, so the handler raises ``SystemExit(code)``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hermes_chatto.doctor import REALTIME_TIMEOUT

HELP = "Chatto platform: doctor (diagnose), setup, settings table"
#: Shown by ``hermes chatto --help`` / ``hermes-chatto --help`` above the subcommand list.
DESCRIPTION = (
    "Chatto platform plugin for Hermes: a Hermes agent as a Chatto bot account.\n"
    "Start with `setup` (server URL and bot key), then `doctor` to check everything."
)
DIST_NAME = "hermes-chatto"


def package_version() -> str:
    """The installed ``hermes-chatto`` version (``importlib.metadata``); ``"unknown"`` when
    the package runs from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DIST_NAME)
    except PackageNotFoundError:
        return "unknown"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Populate ``parser`` (top-level or the host's ``hermes chatto`` subparser)."""
    parser.add_argument(
        "--version",
        action="version",
        version=f"{DIST_NAME} {package_version()}",
        help="print the hermes-chatto version and exit",
    )
    parser.set_defaults(chatto_parser=parser)
    subs = parser.add_subparsers(dest="chatto_command", title="commands", metavar="COMMAND")
    d = subs.add_parser(
        "doctor",
        help="check URL, key, server version, room permissions and realtime",
        description="Diagnose the Chatto configuration: URL and bot key, server version, the "
        "bot's permissions per room and the realtime connection. Exit 0 when no "
        "check fails, else 1.",
    )
    d.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    d.add_argument("--home", default=None, help="Hermes home (profile directory) to read; default: the current profile")
    d.add_argument(
        "--timeout",
        type=float,
        default=REALTIME_TIMEOUT,
        help=f"seconds to wait for realtime caught_up (default {REALTIME_TIMEOUT:.0f})",
    )
    subs.add_parser(
        "setup",
        help="interactive setup: server URL and bot key, validated live",
        description="Ask for the Chatto server URL and the bot's API key, check them against "
        "the server and save them (the same wizard as `hermes gateway setup`).",
    )
    subs.add_parser(
        "settings",
        help="print the settings table (attribute, env var, config.yaml key)",
        description="Print every setting of the plugin as a Markdown table: attribute, "
        "environment variable, config.yaml key, default.",
    )


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
    parser = getattr(args, "chatto_parser", None)
    if parser is not None:
        parser.print_help()
        return 0
    print("usage: chatto {doctor,setup,settings} (--help lists them)", file=sys.stderr)
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
        description=DESCRIPTION,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``hermes-chatto``, ``python -m hermes_chatto``)."""
    parser = argparse.ArgumentParser(
        prog="hermes-chatto", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    return dispatch(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
