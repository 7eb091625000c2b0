"""The reaction shortcodes Chatto accepts: GitHub's gemoji set (pure, stdlib only).

Chatto's ``MessageService/AddReaction`` and ``RemoveReaction`` take a shortcode name
(``eyes``, ``white_check_mark``, ``+1``), never Unicode, and answer any name outside the
gemoji dataset with ``invalid_argument`` "unsupported emoji" (Chatto's
cli/internal/core/emoji.go ``resolveEmojiInput``, called from
cli/internal/core/reactions.go ``mutateAuthorizedReaction``). A misspelled reaction
setting would silently do nothing in production, so :mod:`hermes_chatto.config` checks
every reaction setting here at configuration time, the local Chatto server
(:mod:`chatto_local`) rejects unknown names the same way, and the adapter's
lifecycle reactions and approval prompts use it.

The data is ``hermes_chatto/data/gemoji_shortcodes.tsv`` (gemoji, MIT; source commit and
licence in its header and ``data/LICENSE-gemoji``): 1,913 shortcodes, every alias of every
emoji. ``python -m hermes_chatto.emoji <gemoji>/db/emoji.json <commit>`` prints a fresh
file.
"""

from __future__ import annotations

import difflib
import json
import sys
from functools import lru_cache
from importlib import resources

DATA_FILE = "data/gemoji_shortcodes.tsv"


@lru_cache(maxsize=1)
def shortcodes() -> dict[str, str]:
    """Every gemoji shortcode → its emoji (Unicode ``str``); read once from the data file."""
    text = resources.files("hermes_chatto").joinpath(DATA_FILE).read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, char = line.partition("\t")
        out[name] = char
    return out


def is_shortcode(name: str) -> bool:
    """Whether Chatto accepts ``name`` as a reaction (exact, case-sensitive, no colons)."""
    return name in shortcodes()


def glyph(name: str) -> str:
    """The emoji of shortcode ``name`` (``""`` for an unknown name)."""
    return shortcodes().get(name, "")


def suggestions(name: str, n: int = 3) -> list[str]:
    """Known shortcodes close to ``name`` (for an error message), best first."""
    return difflib.get_close_matches(name.strip(":").lower(), list(shortcodes()), n=n, cutoff=0.6)


def unknown_shortcode_problem(name: str) -> str:
    """The configuration error text for an unknown reaction name."""
    hint = suggestions(name)
    close = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    return (
        f"{name!r} is not a gemoji shortcode, and Chatto rejects reactions outside that set "
        f"(invalid_argument \"unsupported emoji\"){close} Use a name like 'eyes' or "
        "'white_check_mark' (https://github.com/github/gemoji), or 'off'"
    )


def render_tsv(emoji_json: str, commit: str = "") -> str:
    """A fresh data file from gemoji's ``db/emoji.json`` text (header + sorted lines)."""
    rows = sorted({(alias, e["emoji"]) for e in json.loads(emoji_json) for alias in e["aliases"]})
    head = [
        '# gemoji shortcodes: the reaction names Chatto accepts (one "shortcode<TAB>emoji" a line).',
        '# Source: GitHub\'s gemoji, db/emoji.json (every "aliases" entry), github.com/github/gemoji',
        f"# commit {commit or '<commit>'}. MIT License, Copyright (c) 2019 GitHub, Inc. (licence: LICENSE-gemoji).",
        "# Regenerate: python -m hermes_chatto.emoji <gemoji checkout>/db/emoji.json <commit> > this file",
    ]
    return "\n".join(head + [f"{a}\t{c}" for a, c in rows]) + "\n"


if __name__ == "__main__":  # pragma: no cover - maintainer tool
    with open(sys.argv[1], encoding="utf-8") as fh:
        sys.stdout.write(render_tsv(fh.read(), sys.argv[2] if len(sys.argv) > 2 else ""))
