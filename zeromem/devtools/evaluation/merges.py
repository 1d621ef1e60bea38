"""`manage.py evaluate merges`: what clustering writes on LoCoMo, judged by fixed definitions that do not reuse the
merge code's own decisions (ARCHITECTURE.md, "Quality"):

- `merged_texts`: semantic memories written by clustering (source_type "consolidated");
- `empty_merges`: merged texts with fewer than 4 content words once the speaker prefix, stop words and a fixed
  list of greetings and reactions are set aside;
- `fragments`: unbalanced quotes or brackets, a text cut short ("…"), or a text that is one lone exclamation;
- `paraphrase_pairs`: pairs of sentences in one merged text with cosine ≥ 0.92 under the configured embedder and
  the same numbers and capitalised names;
- `cross_session_joins`, `orphaned_referents` (kept sentences), `content_free` (active semantic memories): see
  written.py; `cross_session_joins_share` and `orphaned_referents_share` are per merged text;
- `statements_lost`: source statements no active memory states any more and no supersede explains (statements.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from zeromem.core import services
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.text import drop_speaker, sentences, word_set
from zeromem.devtools.evaluation import locomo, written
from zeromem.devtools.evaluation.retrieval import turn_items
from zeromem.devtools.evaluation.statements import lost
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.language.readers import reader
from zeromem.language.rules_tables.text import STOP_WORDS
from zeromem.models import Memory, MemoryType

PARAPHRASE_COSINE = 0.92
MIN_CONTENT_WORDS = 4
SAMPLES = 5
# Said to keep a conversation going, never what it is about.
SMALL_TALK_WORDS = word_set("""
    hi hey hello bye goodbye thanks thank please sorry wow whoa oh ah aw aww yay haha lol omg yes yeah yep no nope
    ok okay sure cool nice great awesome amazing wonderful fantastic lovely glad happy congrats congratulations
    good fun sounds seems looks totally absolutely definitely really so much lot too that's it's you're i'm
    you i me my we our your love like know think right true well just
""")
_WORD = re.compile(r"[a-z][a-z']*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))
_EMOTICON = re.compile(r"(?<!\S)(?:[:;=8][-']?[()\[\]DPp]|[()][-']?[:;=])(?!\w)")  # ":)" is no unbalanced bracket


@dataclass
class Findings:
    merged_texts: int = 0
    empty: list[str] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)
    paraphrases: list[tuple[str, str]] = field(default_factory=list)
    cross_session_joins: list[str] = field(default_factory=list)
    orphaned_referents: list[str] = field(default_factory=list)
    content_free: list[str] = field(default_factory=list)
    statements_lost: list[str] = field(default_factory=list)

    def share(self, found: list[Any]) -> float:
        return round(len(found) / self.merged_texts, 4) if self.merged_texts else 0.0

    def figures(self, seconds: float) -> dict[str, Any]:
        written = {"cross_session_joins": self.cross_session_joins, "orphaned_referents": self.orphaned_referents,
                   "content_free": self.content_free, "statements_lost": self.statements_lost}
        return {"merged_texts": self.merged_texts, "empty_merges": len(self.empty), "fragments": len(self.fragments),
                "paraphrase_pairs": len(self.paraphrases), "paraphrase_pairs_share": self.share(self.paraphrases),
                **{key: len(found) for key, found in written.items()},
                "cross_session_joins_share": self.share(self.cross_session_joins),
                "orphaned_referents_share": self.share(self.orphaned_referents),
                "samples": {"empty_merges": self.empty[:SAMPLES], "fragments": self.fragments[:SAMPLES],
                            "paraphrase_pairs": [list(p) for p in self.paraphrases[:SAMPLES]],
                            **{key: found[:SAMPLES] for key, found in written.items()}},
                "seconds": round(seconds, 1)}


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(drop_speaker(text).lower())
            if w not in STOP_WORDS and w not in SMALL_TALK_WORDS and len(w) > 1]


def is_empty(text: str) -> bool:
    return len(content_words(text)) < MIN_CONTENT_WORDS


def is_fragment(text: str) -> bool:
    body = drop_speaker(text).strip()
    bare = _EMOTICON.sub(" ", body)
    unbalanced = bare.count('"') % 2 == 1 or any(bare.count(a) != bare.count(b) for a, b in _PAIRS)
    lone_exclamation = len(sentences(body)) == 1 and body.endswith("!") and len(_WORD.findall(body.lower())) <= 3
    return unbalanced or body.endswith("…") or lone_exclamation


def paraphrase_pairs(text: str) -> list[tuple[str, str]]:
    parts = [s for s in sentences(drop_speaker(text)) if len(_WORD.findall(s.lower())) >= 3]
    if len(parts) < 2:
        return []
    vectors = [v for v in embed_texts(parts)]
    found = []
    for (i, a), (j, b) in combinations(enumerate(parts), 2):
        va, vb = vectors[i], vectors[j]
        if va is None or vb is None:
            continue
        cosine = float(np.dot(va, vb) / (np.linalg.norm(va) * np.linalg.norm(vb)))
        if cosine >= PARAPHRASE_COSINE and _facts(a) == _facts(b):
            found.append((a, b))
    return found


def _facts(sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(_NUMBER.findall(sentence)), frozenset(_NAME.findall(sentence))


def judge_merges(tenant_id: int) -> Findings:
    findings = Findings()
    for text in (Memory.objects.filter(tenant_id=tenant_id, memory_type=MemoryType.SEMANTIC,
                                       metadata__source_type="consolidated")
                 .order_by("created_at", "id").values_list("content", flat=True)):
        findings.merged_texts += 1
        if is_empty(text):
            findings.empty.append(text)
        if is_fragment(text):
            findings.fragments.append(text)
        findings.paraphrases += paraphrase_pairs(text)
    for user_id in written.users_of(tenant_id):
        judge_written(findings, tenant_id, user_id)
    return findings


def judge_written(findings: Findings, tenant_id: int, user_id: str) -> None:
    """The issue 34 figures of one user's store (written.py, statements.py)."""
    merged = written.merged_texts(tenant_id, user_id)
    findings.cross_session_joins += written.cross_session_joins(merged, reader("default"), embed_texts)
    findings.orphaned_referents += written.orphaned_referents(merged)
    findings.content_free += written.content_free(written.active_semantic(tenant_id, user_id))
    findings.statements_lost += [s.text for s in lost(tenant_id, user_id)]


def evaluate_merges(*, conversations: list[locomo.Conversation], cluster: Callable[[int, str], Any],
                    progress: Callable[[str], None]) -> dict[str, Any]:
    """1. ingest LoCoMo; 2. cluster every conversation's user; 3. judge what clustering wrote."""
    started = time.perf_counter()
    tenant = evaluation_tenant("merges")
    for conversation in conversations:
        user_id = f"locomo-{conversation.sample_id}"
        services.memories_import(tenant_id=tenant.id, batches=turn_items(user_id, conversation))
        cluster(tenant.id, user_id)
        progress(f"{user_id}: ingested and clustered")
    return judge_merges(tenant.id).figures(time.perf_counter() - started)
