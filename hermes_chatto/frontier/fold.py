"""Look-alike folding for the block's marks (pure: strings in, strings out).

The ``[Earlier in this thread]`` block marks the bot's own lines ``(you)`` and other bots'
``(bot)``, and opens with a bracketed header. Display names and message texts are written by
anyone in the room, so a name such as ``Ops Helper （you）`` (fullwidth), ``﹙you﹚`` (small
form), ``(y<ZWJ>o<ZWJ>u)`` or ``(yоu)`` (Cyrillic о) must never reach the model looking like a
mark, and ``［Earlier in this thread］`` inside a message must not look like the header.

:func:`fold` is the view used to *find* such look-alikes; it is never shown to the model:

1. every Unicode ``Cf`` (format) character and every other default-ignorable code point
   (variation selectors, combining grapheme joiner, Hangul fillers, tags) is removed;
2. each character is decomposed (NFKD, so fullwidth, small-form, mathematical, circled and
   superscript forms become their plain letters) and its combining marks are dropped;
3. the look-alikes of the letters and brackets the marks are made of are mapped to them
   (:data:`LOOKALIKES`, taken from Unicode's ``confusables.txt``, see below; the other case
   of a listed letter too, so Cyrillic ``т`` folds like ``Т``), ``0`` to ``o``;
4. the result is case-folded; every opening bracket (``(``, ``[``, any other ``Ps``
   character and their look-alikes) becomes ``(``, every closing one ``)``; ``{``, ``<`` and
   their look-alikes become ``<``, ``}``, ``>`` and theirs ``>``; blank look-alikes
   (braille blank) become a space.

:func:`neutralise` rewrites, in the *original* text, every span whose fold is a mark
(``(you)``, ``(bot)``, with any bracket, spacing or case) to the bare word (``you``/``bot``),
until none is left, and every span whose fold is a bracketed pseudo-header
(``[Earlier in this thread]``, ``［New message］``, ``〔System note: …〕``) to ``(…)`` with
ASCII parentheses. After it, the marks appear in a block only where the plugin writes them.

:data:`LOOKALIKES` is the part of Unicode's confusables data (UTS #39, as shipped in the
``confusable-homoglyphs`` 3.3.1 package, Unicode 14) whose prototype is ``y``, ``o``, ``u``,
``b``, ``t`` (either case, and ``0``) or a bracket, less the characters that steps 2 and 4
already fold to the same thing. It was generated once and is committed: the plugin takes no
dependency for it (the package's data is a 900 KB table of which 131 entries matter here,
and has no skeleton function). Letters outside the marks need no mapping: the pseudo-header
rule matches any letters.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable

__all__ = ["LOOKALIKES", "fold", "neutralise", "strip_format"]

#: prototype → the characters Unicode lists as confusable with it (see the module doc).
LOOKALIKES: dict[str, str] = {
    "y": "\u0263\u028f\u03a5\u03b3\u0423\u0443\u04ae\u04af\u10e7\u13a9\u13bd\u1d8c\u1eff\u2ca8\ua4ec\uab5a"
    "\U000102b2\U000118a4\U000118dc\U00016f43",
    "o": "\u039f\u03bf\u03c3\u041e\u043e\u0555\u0585\u06f5\u0966\u09e6\u0a66\u0ae6\u0b20\u0b66\u0be6\u0c02"
    "\u0c66\u0c82\u0ce6\u0d02\u0d20\u0d66\u0d82\u0e50\u0ed0\u101d\u1040\u10ff\u12d0\u1d0f\u1d11\u2c9e"
    "\u2c9f\u2d54\u3007\ua4f3\uab3d\U00010292\U000102ab\U00010404\U0001042c\U000104c2\U000104ea"
    "\U00010516\U000114d0\U000118b5\U000118c8\U000118d7\U000118e0",
    "u": "\u028b\u03c5\u054d\u057d\u1200\u144c\u1d1c\u222a\u22c3\ua4f4\ua79f\uab4e\uab52\U000104ce"
    "\U000104f6\U000118b8\U000118d8\U00016f42",
    "b": "\u0184\u0392\u0412\u042c\u13cf\u13f4\u1472\u15af\u15f7\ua4d0\ua7b4\U00010282\U000102a1\U00010301",
    "t": "\u03a4\u0422\u13a2\u22a4\u27d9\u2ca6\ua4d4\U00010297\U000102b1\U00010315\U000118bc\U00016f0a\U0001f768",
    "(": "\ufd3e\U0001d114",
    ")": "\ufd3f",
    "<": "{\u02c2\u1438\u16b2\u2039\u276e\U0001d236",
    ">": "}\u02c3\u1433\u203a\u276f\U00016f3f\U0001d237",
}

_TABLE: dict[str, str] = {c: proto for proto, chars in LOOKALIKES.items() for c in chars}
_TABLE.update({"0": "o", "[": "(", "]": ")", "\u2800": " "})
#: Default-ignorable code points that are not ``Cf`` (DerivedCoreProperties.txt), as ranges.
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)

_MARK = re.compile(r"[(<]\s*(y\s*o\s*u|b\s*o\s*t)\s*[)>]")
_PSEUDO_HEADER = re.compile(r"\((\s*[^\W\d_][\w \t:.,'\u2019/-]{1,58})\)")


def _ignorable(c: str) -> bool:
    if unicodedata.category(c) == "Cf":
        return True
    o = ord(c)
    return any(lo <= o <= hi for lo, hi in _IGNORABLE)


class _Memo(dict[int, str]):
    """A ``str.translate`` table computed on demand: code point → its replacement. It memoises
    a pure function of Unicode data (nothing about a server), so it is cleared when it
    outgrows :data:`_MEMO_MAX` entries rather than kept in LRU order: bounded, and one C-level
    ``translate`` per text on the common path."""

    def __init__(self, f: Callable[[str], str]) -> None:
        super().__init__()
        self._f = f

    def __missing__(self, o: int) -> str:
        if len(self) >= _MEMO_MAX:
            self.clear()
        v = self[o] = self._f(chr(o))
        return v


_MEMO_MAX = 16_384


def _strip_cf(c: str) -> str:
    return "" if c not in "\u200c\u200d" and unicodedata.category(c) == "Cf" else c


def _strip_ignorable(c: str) -> str:
    return "" if _ignorable(c) else c


_STRIP_CF = _Memo(_strip_cf)
_STRIP_IGNORABLE = _Memo(_strip_ignorable)


def strip_format(s: str, *, keep_joiners: bool = False) -> str:
    """``s`` without its ``Cf`` (format) characters: zero-width spaces and joiners, bidi
    controls, soft hyphens, tags. ``keep_joiners``: ZWNJ/ZWJ stay (emoji sequences and some
    scripts need them) and so do the other default-ignorables (variation selectors); without
    it every default-ignorable code point goes too (author names)."""
    if s.isascii():
        return s
    return s.translate(_STRIP_CF if keep_joiners else _STRIP_IGNORABLE)


def _fold_char(c: str) -> str:
    if _ignorable(c):
        return ""
    out = []
    for d in unicodedata.normalize("NFKD", c):
        if unicodedata.combining(d) or _ignorable(d):
            continue
        mapped = _TABLE.get(d) or _TABLE.get(d.lower()) or _TABLE.get(d.upper())
        if mapped is None:
            cat = unicodedata.category(d)
            mapped = "(" if cat == "Ps" else ")" if cat == "Pe" else d.casefold()
        out.append(mapped)
    return "".join(out)


_FOLD = _Memo(_fold_char)


def _folded(s: str) -> str:
    """The fold of ``s`` alone (no index map): one ``str.translate``."""
    return s.translate(_FOLD)


def fold(s: str) -> tuple[str, list[int]]:
    """The look-alike fold of ``s`` (see the module doc) and, for each folded character, the
    index in ``s`` of the character it came from."""
    if s.isascii():
        return _folded(s), list(range(len(s)))
    chars: list[str] = []
    origin: list[int] = []
    for i, c in enumerate(s):
        f = _FOLD[ord(c)]
        chars.append(f)
        origin.extend([i] * len(f))
    return "".join(chars), origin


def _rewrite(s: str, pattern: re.Pattern[str], repl: Callable[[re.Match[str], str | None], str]) -> str:
    """``s`` with every span whose fold matches ``pattern`` replaced.

    ``repl(m, inner)`` gives the replacement of match ``m`` (of the fold); ``inner`` is the
    original text between the span's first and last character when those two fold to exactly
    the match's first and last character, else ``None``. Folded text a boundary character
    yields outside the match (``⒴`` folds to ``(y)``) is kept around the replacement.
    """
    if not pattern.search(_folded(s)):
        return s  # the common case: one translate, no index map
    folded, origin = fold(s)
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(folded):
        start, end = origin[m.start()], origin[m.end() - 1] + 1
        if start < pos:
            continue
        lo, hi = bisect_left(origin, start), bisect_right(origin, end - 1)
        aligned = lo == m.start() and hi == m.end() and end - start >= 2
        aligned = aligned and len(_FOLD[ord(s[start])]) == 1 and len(_FOLD[ord(s[end - 1])]) == 1
        out.append(s[pos:start])
        out.append(folded[lo : m.start()] + repl(m, s[start + 1 : end - 1] if aligned else None) + folded[m.end() : hi])
        pos = end
    out.append(s[pos:])
    return "".join(out)


def _mark_word(m: re.Match[str], _inner: str | None) -> str:
    return "".join(m.group(1).split())


def _parenthesise(m: re.Match[str], inner: str | None) -> str:
    return "(" + (m.group(1) if inner is None else inner) + ")"


def neutralise(s: str, *, headers: bool = True) -> str:
    """``s`` with no look-alike of a mark and (``headers``) no bracketed pseudo-header left
    (see the module doc). Idempotent; text without either comes back unchanged."""
    for _ in range(len(s) + 1):  # each pass removes two brackets of the fold
        t = _rewrite(s, _MARK, _mark_word)
        if t == s:
            break
        s = t
    return _rewrite(s, _PSEUDO_HEADER, _parenthesise) if headers else s
