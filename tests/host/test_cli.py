"""The plugin's command line: ``hermes chatto``, ``python -m hermes_chatto`` and the
``hermes-chatto`` console script print the subcommands with one line each when called
without one, and ``--version`` prints the installed package version."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from chatto_local.harness import hermes_command
from hermes_chatto import cli

from support.paths import REPO

VERSION = version("hermes-chatto")
SUBCOMMANDS = {"doctor": "check URL, key", "setup": "interactive setup", "settings": "print the settings table"}


def _assert_lists_subcommands(text: str) -> None:
    for name, line in SUBCOMMANDS.items():
        assert any(ln.split()[:1] == [name] and line in ln for ln in text.splitlines()), (name, text)
    assert "--version" in text


def test_version_comes_from_the_installed_metadata():
    assert cli.package_version() == VERSION == "0.1.0"


def test_main_without_a_subcommand_prints_the_help(capsys):
    assert cli.main([]) == 0
    _assert_lists_subcommands(capsys.readouterr().out)


def test_main_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"hermes-chatto {VERSION}"


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def test_python_dash_m_and_the_console_script():
    p = _run([sys.executable, "-m", "hermes_chatto"])
    assert p.returncode == 0, p.stderr
    _assert_lists_subcommands(p.stdout)
    p = _run([sys.executable, "-m", "hermes_chatto", "--version"])
    assert (p.returncode, p.stdout.strip()) == (0, f"hermes-chatto {VERSION}")
    script = Path(sys.executable).with_name("hermes-chatto")
    if not script.exists():
        pytest.skip("no hermes-chatto console script next to this interpreter")
    p = _run([str(script), "--version"])
    assert (p.returncode, p.stdout.strip()) == (0, f"hermes-chatto {VERSION}")


def test_host_subcommand_through_the_real_plugin_context(capsys):
    """register_cli through the real PluginContext, then argparse the way hermes does."""
    from hermes_cli.plugins import PluginContext, PluginManager, PluginManifest

    manager = PluginManager()
    cli.register_cli(PluginContext(PluginManifest(name="chatto", source="entrypoint"), manager))
    info = manager._cli_commands["chatto"]
    parser = argparse.ArgumentParser(prog="hermes")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser(
        info["name"],
        help=info["help"],
        description=info["description"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    info["setup_fn"](p)
    p.set_defaults(func=info["handler_fn"])
    args = parser.parse_args(["chatto"])
    args.func(args)  # exit 0 -> returns normally
    text = capsys.readouterr().out
    _assert_lists_subcommands(text)
    assert text.startswith("usage: hermes chatto")
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["chatto", "--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"hermes-chatto {VERSION}"


def test_real_hermes_chatto_help_and_version(tmp_path):
    home = tmp_path / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text("plugins:\n  enabled: [chatto]\n")
    env = {"HERMES_HOME": str(home), "NO_COLOR": "1"}
    p = _run(hermes_command() + ["chatto"], env)
    assert p.returncode == 0, p.stdout + p.stderr
    _assert_lists_subcommands(p.stdout)
    p = _run(hermes_command() + ["chatto", "--version"], env)
    assert (p.returncode, p.stdout.strip()) == (0, f"hermes-chatto {VERSION}"), p.stderr
