"""Hybrid ranking: BM25 over a candidate pool, fused with cosine similarity. No Django import.

Measured on LoCoMo (ARCHITECTURE.md, "Runtime"): dense MiniLM alone 0.29–0.44 evidence recall@10, BM25 0.52–0.54,
BM25 + cosine 0.55–0.57. So lexical ranking must be IDF-weighted; PostgreSQL's ts_rank only picks the pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

K1 = 1.2
B = 0.75


class Candidate(NamedTuple):  # a tuple: a search builds a few hundred, a frozen dataclass costs ~4x as much each
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


def bm25_scores(candidates: Sequence[Candidate], stats: CorpusStats, *, k1: float = K1, b: float = B) -> list[float]:
    """Each candidate's BM25 over its query terms; a term's idf is worked out once for all of them."""
    avg, docs = stats.avg_length or 1.0, max(stats.doc_count, 1)
    idfs: dict[str, float] = {}
    scores = []
    for candidate in candidates:
        norm = k1 * (1 - b + b * candidate.length / avg)
        total = 0.0
        for term, tf in candidate.term_freqs.items():
            if tf > 0:
                weight = idfs.get(term)
                if weight is None:
                    weight = idfs[term] = idf(stats.doc_freqs.get(term, 0), docs)
                total += weight * tf * (k1 + 1) / (tf + norm)
        scores.append(total)
    return scores


def fuse(candidates: Sequence[Candidate], stats: CorpusStats, *, vector_weight: float, top_k: int,
         length_norm: float = B) -> list[Ranked]:
    """Max-normalised BM25 and cosine, mixed by `vector_weight`; best first, ties broken by id. Only the top_k
    become Ranked (a search pools a few hundred candidates for ten hits)."""
    raw = bm25_scores(candidates, stats, b=length_norm)
    top = max(raw, default=0.0) or 1.0
    scores = [c.weight * ((1 - vector_weight) * s / top + vector_weight * max(c.cosine or 0.0, 0.0))
              for c, s in zip(candidates, raw, strict=True)]
    best = sorted(range(len(candidates)), key=lambda n: (-scores[n], candidates[n].id))[:top_k]
    return [Ranked(id=candidates[n].id, score=scores[n], bm25=raw[n], cosine=candidates[n].cosine) for n in best]
