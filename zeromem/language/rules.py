"""The `rules` reader: the hand-written word tables and grammar zeromem judged with before the seam, frozen for
comparison (`evaluate language` scores it beside `default`). It only wraps them; it adds no rule of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from consolidation.domain.contradictions import CONTRADICTS as RULES_CONTRADICTS
from consolidation.domain.contradictions import SUPERSEDE, Statement, _same_attribute, judge
from consolidation.domain.merging import is_chatter
from zeromem.language import CONTRADICTS, KEEPS, REPLACES, Said


class RulesReader:
    name = "rules"
    features_version = 0  # it stores nothing

    def keys(self, said: Sequence[Said]) -> list[frozenset[str]]:
        statements = [Statement.parse(s.text, s.at) for s in said]
        return [s.attribute | s.heads | s.name_words for s in statements]

    def features(self, texts: Sequence[str]) -> list[dict[str, Any] | None]:
        return [None] * len(texts)  # the rules parse in microseconds: nothing worth storing

    def asks_now(self, question: str) -> bool:
        return True  # the rules never told the two apart

    def about_asked(self, question: str, said: Sequence[Said]) -> list[bool]:
        asked = Statement.parse(question, said[0].at) if said else None
        return [bool(asked and _same(asked, Statement.parse(s.text, s.at))) for s in said]

    def chatter(self, said: Sequence[Said]) -> list[bool]:
        return [is_chatter(s.text) for s in said]

    def change(self, said: Sequence[Said]) -> list[bool]:
        return [bool(Statement.parse(s.text, s.at).abandons) for s in said]

    def same_attribute(self, pairs: Sequence[tuple[Said, Said]]) -> list[bool]:
        return [_same(*_statements(a, b)) for a, b in pairs]

    def relation(self, pairs: Sequence[tuple[Said, Said]]) -> list[str]:
        kinds = {SUPERSEDE: REPLACES, RULES_CONTRADICTS: CONTRADICTS}
        return [kinds.get(judge(*_statements(a, b)).kind, KEEPS) for a, b in pairs]


def _statements(older: Said, newer: Said) -> tuple[Statement, Statement]:
    return Statement.parse(older.text, older.at), Statement.parse(newer.text, newer.at)


def _same(a: Statement, b: Statement) -> bool:
    shared = a.attribute & b.attribute
    overlap = len(shared) / min(len(a.attribute), len(b.attribute)) if a.attribute and b.attribute else 0.0
    return _same_attribute(a, b, shared, overlap, 0.5)
