"""The word tables and patterns zeromem judged English with before the language seam, moved here once and frozen as
the `rules` reader's (`zeromem.language.rules`): no module outside `zeromem/language/` may hold a word list, and these
may only shrink (tests/language/test_word_tables.py). One module per module they came from; where two of them wrote
one concept with different words, both stay as they were, and a comment at each names the other."""

from __future__ import annotations


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of a text: long word lists are written as one string."""
    return frozenset(text.split())
