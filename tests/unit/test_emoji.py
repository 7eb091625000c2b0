"""hermes_chatto.emoji: the gemoji shortcode set Chatto validates reactions against."""

from __future__ import annotations

import json

from hermes_chatto import emoji


def test_the_set_has_chattos_size_and_the_names_the_adapter_uses():
    # Chatto's cli/internal/core/emoji_gen.go: "Total entries: 1913 (including aliases)"
    names = emoji.shortcodes()
    assert len(names) == 1913
    for name, char in {"eyes": "👀", "white_check_mark": "✅", "x": "❌", "+1": "👍", "-1": "👎"}.items():
        assert emoji.is_shortcode(name) and emoji.glyph(name) == char
    assert not emoji.is_shortcode("eyse") and not emoji.is_shortcode(":eyes:") and not emoji.is_shortcode("👀")
    assert "eyes" in emoji.suggestions("eyse")


def test_render_tsv_reads_gemoji_aliases():
    db = json.dumps([{"emoji": "👀", "aliases": ["eyes"]}, {"emoji": "👍", "aliases": ["+1", "thumbsup"]}])
    lines = [ln for ln in emoji.render_tsv(db, "abc").splitlines() if not ln.startswith("#")]
    assert lines == ["+1\t👍", "eyes\t👀", "thumbsup\t👍"]
