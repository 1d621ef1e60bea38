"""Which sentences are statements, and the values they state, as written.

A statement is a sentence carrying a value by spaCy's parse: a number, an amount, a date with a day, a name — the
values the `default` reader reads facts from (`default._value_tokens`, one definition for both). Each value comes
back as it is written in the sentence (the entity's words, or the number token), so a caller can look for it in
another text without parsing that text: extractive merges copy sentences, they do not reword their values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zeromem.language.default import _value_tokens
from zeromem.language.pipeline import nlp


def stated_values(sentences: Sequence[str]) -> list[tuple[str, ...]]:
    """Per sentence, the values it states as written (empty: the sentence is no statement). One batched parse."""
    return [_written(doc) for doc in nlp().pipe(list(sentences), batch_size=64)]


def _written(doc: Any) -> tuple[str, ...]:
    values: dict[str, None] = {}
    for token, _ in _value_tokens(doc):
        entity = next((e for e in doc.ents if e.start <= token.i < e.end), None)
        values[(entity.text if entity is not None else token.text).strip()] = None
    return tuple(v for v in values if v)
