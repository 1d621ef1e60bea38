"""Hybrid ranking: BM25 over a candidate pool, fused with cosine similarity. No Django import.

Measured on LoCoMo (ARCHITECTURE.md, "Runtime"): dense MiniLM alone 0.29–0.44 evidence recall@10, BM25 0.52–0.54,
BM25 + cosine 0.55–0.57. So lexical ranking must be IDF-weighted; PostgreSQL's ts_rank only picks the pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Candidate:
    id: str
    cosine: float | None  # None: the memory has no embedding (it still ranks lexically)
    length: int  # document length in lexemes
    term_freqs: Mapping[str, int]  # query lexeme → occurrences in this memory
    weight: float = 1.0  # a prior on the fused score (an assistant's turn ranks below what the user said)


@dataclass(frozen=True)
class CorpusStats:
    doc_count: int
    avg_length: float
    doc_freqs: Mapping[str, int]  # lexeme → number of memories containing it


@dataclass(frozen=True)
class Ranked:
    id: str
    score: float
    bm25: float
    cosine: float | None


def idf(doc_freq: int, doc_count: int) -> float:
    # Lucene's non-negative BM25 idf; a term unknown to the stats counts as rare (df 0).
    return math.log(1.0 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25(candidate: Candidate, stats: CorpusStats, *, k1: float = K1, b: float = B) -> float:
    avg = stats.avg_length or 1.0
    norm = k1 * (1 - b + b * candidate.length / avg)
    total = 0.0
    for term, tf in candidate.term_freqs.items():
        if tf > 0:
            total += idf(stats.doc_freqs.get(term, 0), max(stats.doc_count, 1)) * tf * (k1 + 1) / (tf + norm)
    return total


def fuse(candidates: Sequence[Candidate], stats: CorpusStats, *, vector_weight: float, top_k: int,
         length_norm: float = B) -> list[Ranked]:
    """Max-normalised BM25 and cosine, mixed by `vector_weight`; best first, ties broken by id."""
    raw = [bm25(c, stats, b=length_norm) for c in candidates]
    top = max(raw, default=0.0) or 1.0
    ranked = [
        Ranked(id=c.id, bm25=s, cosine=c.cosine,
               score=c.weight * ((1 - vector_weight) * s / top + vector_weight * max(c.cosine or 0.0, 0.0)))
        for c, s in zip(candidates, raw, strict=True)
    ]
    ranked.sort(key=lambda r: (-r.score, r.id))
    return ranked[:top_k]
