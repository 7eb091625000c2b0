"""The docs' checkable claims hold for the tree (issue 28: "every claim in AGENTS is true").

* AGENTS.md's file map names every module of ``hermes_chatto/`` and ``adapter/``,
  ``frontier/``, ``wire/`` and nothing that does not exist;
* every private Hermes attribute AGENTS.md names in "Hermes only through compat" is listed in
  ``compat.HOST_PRIVATES``, and every listed one is named there;
* the door (``docs/architecture.md``) and the README stay within their line budgets.

Read as text and ``ast``; nothing is imported but ``compat`` (which imports no Hermes module
at its top).
"""

from __future__ import annotations

import re

from support.paths import REPO

AGENTS = (REPO / "AGENTS.md").read_text(encoding="utf-8")
PKG = REPO / "hermes_chatto"
#: Line budgets of the door pages (issue 28).
ARCHITECTURE_MAX_LINES = 200
README_MAX_LINES = 400


def _file_map_block() -> list[str]:
    section = AGENTS.split("## File map", 1)[1]
    block = section.split("```", 2)[1]
    return block.splitlines()[1:]


def _file_map_paths() -> set[str]:
    """Paths the file map names: ``name.py`` / ``dir/`` tokens at the start of a line, nested
    by indentation (two spaces a level); description lines (indented past the names) and
    words after the first non-path token are ignored."""
    paths: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in _file_map_block():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > 8:  # a description's continuation line
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = stack[-1][1] if stack else ""
        for token in line.split():
            if not re.fullmatch(r"[\w.\-/]+(\.py|\.md|/|run)", token):
                break
            path = prefix + token
            paths.add(path)
            if token.endswith("/"):
                stack.append((indent, path))
    return paths


def test_the_file_map_names_only_files_that_exist():
    missing = sorted(p for p in _file_map_paths() if not (REPO / p).exists())
    assert not missing, f"AGENTS.md's file map names paths that do not exist: {missing}"


def test_the_file_map_names_every_module_of_the_plugin():
    named = _file_map_paths()
    modules = {
        str(p.relative_to(REPO))
        for p in PKG.rglob("*.py")
        if "__pycache__" not in p.parts and p.name != "__init__.py" and "proto" not in p.parts and "data" not in p.parts
    }
    unnamed = sorted(m for m in modules if m not in named)
    assert not unnamed, f"modules missing from AGENTS.md's file map: {unnamed}"


def test_agents_names_exactly_the_host_privates_compat_lists():
    from hermes_chatto import compat

    listed = {entry.name for entry in compat.HOST_PRIVATES}
    section = AGENTS.split("## Hermes only through `compat`", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(?:\w+\.)?(_[a-z]\w*)`", section))
    assert listed - named == set(), f"HOST_PRIVATES entries AGENTS.md does not name: {listed - named}"
    assert named - listed == set(), f"AGENTS.md names privates HOST_PRIVATES lacks: {named - listed}"


def test_the_door_is_within_its_budget():
    door = REPO / "docs" / "architecture.md"
    lines = door.read_text(encoding="utf-8").count("\n")
    assert lines <= ARCHITECTURE_MAX_LINES, f"docs/architecture.md has {lines} lines"
    for link in re.findall(r"\]\(([^)#]+)", door.read_text(encoding="utf-8")):
        if "://" not in link:
            assert (door.parent / link).resolve().exists(), f"docs/architecture.md links to missing {link}"


def test_the_readme_is_within_its_budget_and_its_links_resolve():
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (budget {README_MAX_LINES}): move detail to docs/"
    for link in re.findall(r"\]\(([^)#]+)", text):
        if "://" not in link:
            assert (REPO / link).exists(), f"README.md links to missing {link}"


def test_every_test_file_agents_names_exists():
    named = set(re.findall(r"\b(test_\w+\.py)\b", AGENTS))
    present = {p.name for p in (REPO / "tests").rglob("test_*.py")}
    assert named - present == set(), f"AGENTS.md names test files that do not exist: {sorted(named - present)}"
