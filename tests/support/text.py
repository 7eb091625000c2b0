"""Generated message text for the delivery and adapter tests."""

from __future__ import annotations

import random


def mixed_text(nbytes: int, seed: int = 7) -> str:
    """ASCII words, umlauts, CJK and emoji, paragraphs and lines, about ``nbytes`` bytes."""
    rnd = random.Random(seed)
    pieces = ["hello", "wörld", "Grüße", "ÄÖÜß", "日本語", "中文字符", "😀", "👍🏽", "🚀✨", "x" * 30]
    out, size = [], 0
    while size < nbytes + 8:
        p = rnd.choice(pieces)
        sep = rnd.choice([" ", " ", " ", "\n", "\n\n"])
        out.append(p + sep)
        size += len((p + sep).encode())
    return "".join(out).strip()  # the host strips replies
