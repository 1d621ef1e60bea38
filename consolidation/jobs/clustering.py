"""The clustering job for one (tenant, user): select, cluster, and write each cluster as a semantic memory.

Merges are written in chunks of ZEROMEMORY_CLUSTERING_WRITE_CHUNK, each in one short transaction that (1) renews
the run's lease (a worker that lost it writes nothing), (2) locks the chunk's memories in id order and leaves out a
cluster another writer moved a source of first, (3) creates or updates the semantic memories and their source
links set-based, (4) moves the sources to consolidated with one conditional UPDATE, and (5) writes one ledger row
per cluster; events go out after commit. A chunk's merged texts are embedded before its transaction, while the
chunk before it is written. A crashed run leaves whole chunks written and resumes by planning from what is raw.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from consolidation.domain import clustering
from consolidation.domain.contradictions import SUPERSEDE
from consolidation.domain.merging import (
    MERGE_REDUNDANCY,
    Chunk,
    Meaning,
    Member,
    Said,
    closing_question,
    condensed,
    condensed_enough,
    joined_length,
    meaning_of,
    member_sentences,
    member_unsaid,
    merge_cluster,
    paraphrase_candidates,
    plain_openers,
    speakers,
    split_speaker,
    statements,
)
from consolidation.jobs.safety import canary_baseline, safety_check
from consolidation.jobs.update_judge import Judge, update_judge
from consolidation.jobs.updates import (
    Decision,
    Parsed,
    Retirement,
    decisions_write,
    features_parse_missing,
    features_store,
    retirement_vectors,
    retirement_write,
    updates_plan,
)
from consolidation.jobs.window_digest import window_digests_write
from consolidation.ledger import (
    ledger_row,
    ledger_write,
    ledger_write_all,
    memories_lock_active,
    memory_transition,
    semantic_snapshot,
)
from consolidation.models import ConsolidationRun, LedgerEntry, RunKind, RunStatus
from consolidation.runs import LeaseLost, RunOutcome, run_fence, run_finish, run_in_process, run_policy
from consolidation.selectors import ClusteringRow, Loaded, clustering_input, clustering_queryset
from zeromem import language
from zeromem.core.adapters.embeddings import MiniLMEmbedder, QueryCacheStats, embed_texts, query_cache_stats
from zeromem.core.domain.policy import ClusteringPolicy, Policy, PolicyInvalid
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit, event_emit_all, semantic_event_data
from zeromem.core.policies import policy_for
from zeromem.core.services import content_hash, search_stats_add
from zeromem.core.tasks import memories_parse_on_commit
from zeromem.language.content import in_an_exchange, text_reports
from zeromem.language.default import FEATURES_VERSION, DefaultReader
from zeromem.language.facts import facts_ahead, remember
from zeromem.models import Memory, MemorySource, MemoryType, Tenant

Progress = Callable[[int, int], None]  # (done, total) clusters
# Word overlap at which a new text's sentence counts as said by another memory (same speaker, every value said
# too), and at which its own sentences collapse when it is written again without them. On LoCoMo 0.6 took
# characters from × 0.755 to × 0.748 with budget recall after clustering 0.684 (0.7 inside one cluster).
UNSAID_REDUNDANCY = 0.6
# Clusters whose sentences with no stored facts (semantic memories', anchored ones) are parsed in one batch before
# they are merged (`zeromem.language.facts.facts_ahead`).
PARSE_AHEAD = 100
# The third level folds a session's units in windows of this many (in said order), and a window gives up after this
# many folds that did not fit in one piece: its cost per unit is bounded whatever the session's length.
FOLD_WINDOW = 64
FOLD_MISSES = 32


def clustering_params(policy: ClusteringPolicy) -> clustering.Params:
    return clustering.Params(cosine_floor=policy.cosine_floor, fact_jaccard=policy.fact_jaccard,
                             hub_share=policy.hub_share, max_cluster=policy.max_size)


@dataclass
class Plan:
    """What a run would write: supersedes, retired claims and flagged contradictions first, then one entry per
    merged text (a cluster too long for one text gives several)."""

    loaded: Loaded
    merges: list[Merge] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    retirements: list[Retirement] = field(default_factory=list)
    uninformative: list[int] = field(default_factory=list)  # episodes to archive: they state nothing durable
    pairs: int = 0
    claim_pairs: int = 0
    parsed: Parsed | None = None  # episodes parsed for the first time, their features for the run to store
    members: list[Member] = field(default_factory=list)  # each memory as a merge reads it, in the rows' order


@dataclass
class Merge:
    base: int | None  # index of an active semantic memory this merge updates, or None for a new one
    members: list[int]  # indexes of the memories folded into it (never the base)
    text: str
    scores: dict[str, float]
    # The memories (members or base) whose words the text keeps: they date it. None: every one of them.
    voiced: list[int] | None = None


def clustering_plan(*, tenant: Tenant, user_id: str, now: datetime, force: bool, policy: Policy,
                    judge: Judge | None = None) -> Plan:
    """What the run would write under `policy`. `judge` (an LLM, when configured) decides the update pairs the
    rules are unsure about before anything is planned from them."""
    loaded = clustering_input(clustering_queryset(tenant=tenant, user_id=user_id, now=now, force=force,
                                                  policy=policy.clustering), settings.ZEROMEMORY_EMBEDDING_DIM)
    params = clustering_params(policy.clustering)
    limit = policy.merging.max_chars
    # Hub entities (the people talking, "prod") are no detail worth keeping a sentence for, and no subject
    # two statements share.
    pairs = clustering.candidate_pairs(loaded.items, loaded.vectors, loaded.has_vector, params)
    common = frozenset(e.lower() for e in clustering.hub_entities(loaded.items, params))
    parsed = features_parse_missing(loaded)
    # Each sentence's facts, parsed when its memory was stored.
    remember((row.features for row in loaded.rows), FEATURES_VERSION)
    updates = updates_plan(loaded, common, judge, policy.updates)
    plan = Plan(loaded=loaded, pairs=len(pairs), claim_pairs=updates.claim_pairs, decisions=updates.decisions,
                retirements=updates.retirements, parsed=parsed)
    # A superseded statement is archived and a memory with retired claims folds into its remainder: neither
    # merges in this run. A flagged pair may still merge: the extractive text keeps both values, and the
    # contradicts relation points the operator at the two statements.
    taken = set(updates.taken)
    # What the learned head calls chatter is small talk: a merge cites it without writing it, and it is archived
    # where none does. The head reads MiniLM's vectors only: another embedder's mean nothing to its weights.
    minilm = MiniLMEmbedder.name == settings.ZEROMEMORY_EMBEDDING_MODEL
    chatter = _chatter(loaded, taken, common) if minilm and policy.merging.chatter_head else set()
    asked = _questions_answered(loaded.rows)
    plan.members = [_member(row, chatter=i in chatter, asked=asked.get(i)) for i, row in enumerate(loaded.rows)]
    linked = [p for p in pairs if p.a not in taken and p.b not in taken]
    span_days = policy.clustering.max_span_days
    times = [r.said_at.timestamp() for r in loaded.rows]
    max_span = span_days * 86400 if span_days else None
    groups = clustering.capped_union_find(len(loaded.items), linked, params.max_cluster, times=times,
                                          max_span=max_span)
    # The first level's clusters stay as they are (their links go first); the second may add to them.
    second = _session_pairs(loaded, groups, taken, policy.clustering.session_floor)
    first = [clustering.Pair(group[0], member, 2.0, "first") for group in groups for member in group[1:]]
    groups = clustering.capped_union_find(len(loaded.items), [*first, *second], params.max_cluster, times=times,
                                          max_span=max_span)
    links = _links_per_group(groups, [*linked, *second])
    clusters = {number: _cluster(loaded, plan.members, group) for number, group in enumerate(groups) if len(group) >= 2}
    # A capitalised opener the user's memories also write in lower case ("Gorgeous!") is no name a merge keeps
    # small talk for (the update rules above keep judging with the hub names alone).
    common = common | plain_openers(row.content for row in loaded.rows)
    meaning = _sentence_meaning([c.members for c in clusters.values()], common, policy.merging.paraphrase_cosine)
    numbers = list(clusters)
    for start in range(0, len(numbers), PARSE_AHEAD):
        batch = numbers[start:start + PARSE_AHEAD]
        facts_ahead(member_sentences(m for number in batch for m in clusters[number].members))
        for number in batch:
            plan.merges += _merges_for(groups[number], clusters[number], links[number], common, meaning, limit)
    plan.uninformative = _small_talk_left(loaded, plan, taken, common)
    plan.merges += _condensed_left(loaded, plan, taken, common, limit)
    plan.merges = _third_level(loaded, plan, taken, common, meaning, limit, policy.clustering.fold_floor)
    plan.merges = _unsaid(loaded, plan, taken, common, meaning, limit)
    return plan


def _unsaid(loaded: Loaded, plan: Plan, taken: set[int], common: frozenset[str], meaning: Meaning,
            limit: int) -> list[Merge]:
    """A new text leaves out the sentences another memory of the user already states (an episode left as said, an
    active semantic memory, a text this run wrote before it); it still cites every member. A text that would say
    nothing of its own, leave a member uncited, or no longer fit in one piece, stays as it was. Each text is
    compared with the few statements `Said` finds for it, so the pass stays linear in the user's memories."""
    rows = loaded.rows
    used = {i for m in plan.merges for i in _touched(m)} | taken | set(plan.uninformative)
    said = Said()
    said.add(statements([plan.members[i] for i in range(len(rows)) if i not in used], common))
    out = []
    for merge in plan.merges:
        members = [plan.members[i] for i in merge.members]
        own = statements(members, common)
        if merge.base is None:
            chunks = merge_cluster(members, limit=limit, common_names=common, meaning=meaning,
                                   said=said.near(own, redundancy=UNSAID_REDUNDANCY, meaning=meaning),
                                   redundancy=UNSAID_REDUNDANCY)
            if len(chunks) == 1 and len(chunks[0].members) == len(members) and len(chunks[0].text) < len(merge.text):
                merge = Merge(base=None, members=merge.members, text=chunks[0].text, scores=merge.scores,
                              voiced=[merge.members[v] for v in chunks[0].voiced])
        said.add(own)
        out.append(merge)
    return out + _episodes_unsaid(plan.members, [i for i, row in enumerate(rows) if i not in used
                                                 and not row.is_semantic], common, limit)


def _episodes_unsaid(members: Sequence[Member], left: list[int], common: frozenset[str], limit: int) -> list[Merge]:
    """An episode left as said becomes a semantic memory of what it adds (citing it): its statements without its
    small talk and without what an earlier episode of the user says, where that drops at least 10 characters and
    what is left still says something. Never longer than the episode, even past `limit`."""
    said = Said()
    out = []
    for i in left:
        member = members[i]
        own = statements([member], common)
        chunks = merge_cluster([member], limit=limit, common_names=common,
                               said=said.near(own, redundancy=MERGE_REDUNDANCY))
        text = chunks[0].text if len(chunks) == 1 else ""
        if text and len(member.text) - len(text) >= 10 and condensed_enough(text):
            out.append(Merge(base=None, members=[i], text=text,
                             scores={"min_link": 0.0, "max_link": 0.0, "size": 1}))
        said.add(own)
    return out


def _third_level(loaded: Loaded, plan: Plan, taken: set[int], common: frozenset[str], meaning: Meaning,
                 limit: int, floor: float) -> list[Merge]:
    """The third level: what this run writes for one session and scope (new semantic memories, and episodes left
    as they were said) folds together, strongest topic first, while the merged text still fits `limit` in one
    piece and the two share a topic (cosine of their members' mean vectors >= `floor`, the policy's
    clustering.fold_floor; 0 = off)."""
    if not floor or loaded.vectors is None:
        return plan.merges
    kept = [m for m in plan.merges if m.base is not None]
    units = [m for m in plan.merges if m.base is None]
    used = {i for m in plan.merges for i in m.members} | taken | set(plan.uninformative)
    # An episode left as said folds like a text of its statements (what a fold writes of it: its small talk
    # gone); unfolded, it stays an episode.
    episodes = [Merge(base=None, members=[i], text=_statements_text(plan.members[i], common),
                      scores={"min_link": 0.0, "max_link": 0.0, "size": 1})
                for i, row in enumerate(loaded.rows) if i not in used and not row.is_semantic]
    units += episodes
    rows = loaded.rows
    by_place: dict[tuple[Any, str], list[int]] = defaultdict(list)
    solo: list[Merge] = []
    for number, unit in enumerate(units):
        sessions = {rows[i].session_id for i in unit.members}
        scopes = {loaded.items[i].scope for i in unit.members}
        if len(sessions) == 1 and len(scopes) == 1 and None not in sessions \
                and all(loaded.has_vector[i] for i in unit.members):
            by_place[(scopes.pop(), sessions.pop() or "")].append(number)
        else:
            solo.append(unit)
    for numbers in by_place.values():
        solo += _fold_session([units[n] for n in numbers], loaded, plan.members, limit, floor, common, meaning)
    unfolded = {id(e) for e in episodes}
    return kept + [m for m in solo if id(m) not in unfolded]


def _statements_text(member: Member, common: frozenset[str]) -> str:
    """An episode's informative sentences (a fold writes no more of it), under its speaker."""
    speaker, body = split_speaker(member.text)[0], " ".join(s.text for s in statements([member], common))
    return f"{speaker}: {body}" if speaker and body else body


def _fold_session(units: list[Merge], loaded: Loaded, members: Sequence[Member], limit: int, floor: float,
                  common: frozenset[str], meaning: Meaning) -> list[Merge]:
    """A session's units folded window by window: at most FOLD_WINDOW of them in the order they were said, so a
    session of any length costs the same per unit (a pair matrix of FOLD_WINDOW², a bounded number of merges)."""
    if len(units) > FOLD_WINDOW:
        units = sorted(units, key=lambda u: min(loaded.rows[i].said for i in u.members))
    return [folded for start in range(0, len(units), FOLD_WINDOW)
            for folded in _fold_window(units[start:start + FOLD_WINDOW], loaded, members, limit, floor, common,
                                       meaning)]


def _fold_window(units: list[Merge], loaded: Loaded, members: Sequence[Member], limit: int, floor: float,
                 common: frozenset[str], meaning: Meaning) -> list[Merge]:
    """Strongest pair first, two units fold while their texts written as one fit `limit` and so does their
    members' merged text. A pair of folds that did not fit is not tried again until one of them grows,
    and after FOLD_MISSES such misses the window stops folding: at most len(units) − 1 + FOLD_MISSES merges."""
    if len(units) < 2:
        return units
    assert loaded.vectors is not None
    means = np.stack([loaded.vectors[u.members].mean(axis=0) for u in units])
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-9)
    sims = means @ means.T
    a, b = np.nonzero(np.triu(sims >= floor, 1))
    groups: dict[int, Merge] = dict(enumerate(units))
    owner, grown = list(range(len(units))), [0] * len(units)
    missed: set[tuple[int, int, int, int]] = set()
    for x, y in sorted(zip(a.tolist(), b.tolist(), strict=True), key=lambda p: (-sims[p[0], p[1]], p)):
        gx, gy = owner[x], owner[y]
        if gx == gy or joined_length(groups[gx].text, groups[gy].text) > limit:
            continue
        state = (gx, grown[gx], gy, grown[gy]) if gx < gy else (gy, grown[gy], gx, grown[gx])
        if state in missed:
            continue
        folded = _folded(groups[gx], groups[gy], float(sims[x, y]), loaded, members, limit, common, meaning)
        if folded is None:
            missed.add(state)
            if len(missed) >= FOLD_MISSES:
                break
            continue
        groups[gx], grown[gx] = folded, grown[gx] + 1
        del groups[gy]
        owner = [gx if o == gy else o for o in owner]
    return list(groups.values())


def _folded(first: Merge, second: Merge, link: float, loaded: Loaded, members: Sequence[Member], limit: int,
            common: frozenset[str], meaning: Meaning) -> Merge | None:
    """The two units as one merged text of their members in said order, or None where it does not fit in one
    piece. (Packed to `limit`, a text that does not fit would become two, and a second one too thin to write would
    leave its members cited by the first without a word of theirs.)"""
    order = sorted([*first.members, *second.members], key=lambda i: loaded.rows[i].said)
    chunks = merge_cluster([members[i] for i in order], limit=2 * limit, common_names=common, meaning=meaning)
    if len(chunks) != 1 or len(chunks[0].text) > limit or len(chunks[0].members) != len(order):
        return None
    scores = {"min_link": min(first.scores["min_link"], second.scores["min_link"], link),
              "max_link": max(first.scores["max_link"], second.scores["max_link"]), "size": len(order)}
    return Merge(base=None, members=order, text=chunks[0].text, scores=scores,
                 voiced=[order[v] for v in chunks[0].voiced])


def _condensed_left(loaded: Loaded, plan: Plan, taken: set[int], common: frozenset[str], limit: int
                    ) -> list[Merge]:
    """Episodes no merge folds become semantic memories of their own where that drops small talk around the
    statement or anchors a relative date: the store says the same in fewer characters, and "yesterday" gets its
    day."""
    left = set(range(len(loaded.rows))) - {i for merge in plan.merges for i in merge.members} - taken \
        - set(plan.uninformative)
    texts = {i: condensed(plan.members[i], limit=limit, common_names=common)
             for i in sorted(left) if not loaded.rows[i].is_semantic}
    return [Merge(base=None, members=[i], text=text, scores={"min_link": 0.0, "max_link": 0.0, "size": 1})
            for i, text in texts.items() if text is not None]


def _session_pairs(loaded: Loaded, groups: list[list[int]], taken: set[int], floor: float
                   ) -> list[clustering.Pair]:
    """Second-level candidates: episodes the first level left alone, paired within their session at the looser
    `floor` (the policy's clustering.session_floor; 0 = off)."""
    if not floor or loaded.vectors is None:
        return []
    grouped = {i for group in groups for i in group}
    usable = [i for i, row in enumerate(loaded.rows)
              if i not in taken and loaded.has_vector[i] and not row.is_semantic]
    return clustering.session_pairs(loaded.items, loaded.vectors, [r.session_id for r in loaded.rows],
                                    [i for i in usable if i not in grouped], floor,
                                    clustered=[i for i in usable if i in grouped])


def _small_talk_left(loaded: Loaded, plan: Plan, taken: set[int], common: frozenset[str]) -> list[int]:
    """Episodes that state nothing durable and no merge folds (a merge cites small talk without repeating it):
    archived, and so is a question that carries no value (the answer after it says what matters). Archiving
    retires a turn with nothing written in its place, so a turn that says something (`text_says_something`: "Let me
    know if you need any advice.") stays as it was said, however much it sounds like small talk."""
    merged = {i for merge in plan.merges for i in merge.members}
    names = common | speakers(row.content for row in loaded.rows)
    return [i for i, row in enumerate(loaded.rows)
            if i not in merged and i not in taken and not row.is_semantic and member_unsaid(plan.members[i], names)]


def _chatter(loaded: Loaded, taken: set[int], common: frozenset[str]) -> set[int]:
    """Episodes the learned chatter head calls chatter, past its strict threshold (a statement lost costs more than
    chatter kept), that state no value and give no account (`text_reports`): pep talk and platitudes ("Keep up the
    great work!", "Family gives us strength.") that the small-talk grammar reads as statements, their verbs taking
    a thing."""
    if loaded.vectors is None:
        return set()
    rows = loaded.rows
    read = [i for i, row in enumerate(rows) if i not in taken and not row.is_semantic and loaded.has_vector[i]]
    said = [language.Said(rows[i].content, rows[i].said_at, loaded.vectors[i]) for i in read]
    verdicts = DefaultReader(strict=True).chatter(said)
    chatty = [i for i, verdict in zip(read, verdicts, strict=True) if verdict]
    if not chatty:  # most runs: no need to read the sessions' exchanges
        return set()
    names = common | speakers(row.content for row in rows)
    exchanged = _in_exchanges(rows)
    return {i for i in chatty if i not in exchanged and not text_reports(rows[i].content, names)}


def _in_exchanges(rows: Sequence[ClusteringRow]) -> set[int]:
    """The rows that ask something or follow a row of their session that does (`in_an_exchange`); a row of no
    session is in none."""
    return {n for order in _sessions_in_order(rows, range(len(rows))) if len(order) > 1
            for n, exchanged in zip(order, in_an_exchange([rows[n].content for n in order]), strict=True)
            if exchanged}


def _sessions_in_order(rows: Sequence[ClusteringRow], among: Iterable[int]) -> list[list[int]]:
    """The row indexes `among` by session, each session's in the order said; rows of no session are left out."""
    sessions: dict[str, list[int]] = defaultdict(list)
    for n in sorted(among, key=lambda n: rows[n].said):
        session = rows[n].session_id
        if session is not None:
            sessions[session].append(n)
    return list(sessions.values())


def _links_per_group(groups: list[list[int]], pairs: Sequence[clustering.Pair]) -> dict[int, list[float]]:
    """The strengths of the candidate pairs inside each cluster (one pass over the pairs)."""
    group_of = {member: number for number, group in enumerate(groups) for member in group}
    links: dict[int, list[float]] = defaultdict(list)
    for pair in pairs:
        number = group_of.get(pair.a)
        if number is not None and number == group_of.get(pair.b):
            links[number].append(pair.strength)
    return links


@dataclass(frozen=True)
class _Cluster:
    """A cluster's memories with the active semantic memory it joins (`base`, if any) first, and each as a merge
    member."""

    base: int | None
    ordered: list[int]
    members: list[Member]


def _cluster(loaded: Loaded, members: Sequence[Member], group: list[int]) -> _Cluster:
    base = next((i for i in group if loaded.rows[i].is_semantic), None)
    ordered = ([base] if base is not None else []) + [i for i in group if i != base]
    return _Cluster(base, ordered, [members[i] for i in ordered])


def _member(row: ClusteringRow, *, chatter: bool, asked: str | None) -> Member:
    """A memory as the merge reads it: its text, the day its relative dates count from, whether the reader
    calls it chatter, and (a reply) the question it answers."""
    return Member(row.content, row.created_at.date(), written=row.is_semantic, chatter=chatter, asked=asked)


def _questions_answered(rows: Sequence[ClusteringRow]) -> dict[int, str]:
    """The episodes that answer a question, by row index, with it: the turn said just before them in their session,
    by another speaker, closes with it (`closing_question`)."""
    out = {}
    for order in _sessions_in_order(rows, (n for n, row in enumerate(rows) if not row.is_semantic)):
        for before, after in itertools.pairwise(order):
            asker, answer = split_speaker(rows[before].content)[0], split_speaker(rows[after].content)[0]
            question = closing_question(rows[before].content) if answer and asker != answer else None
            if question is not None:
                out[after] = question
    return out


def _sentence_meaning(clusters: Sequence[Sequence[Member]], common: frozenset[str], paraphrase_cosine: float
                      ) -> Meaning:
    """The vectors of every sentence that may paraphrase another of its cluster, embedded in one call (outside any
    transaction): paraphrases then collapse by meaning, not only by shared words."""
    texts = sorted({text for members in clusters for text in paraphrase_candidates(members, common)})
    return meaning_of(texts, embed_texts(texts), paraphrase_cosine)


def _merges_for(group: list[int], cluster: _Cluster, links: list[float], common: frozenset[str],
                meaning: Meaning, limit: int) -> list[Merge]:
    chunks = merge_cluster(cluster.members, limit=limit, common_names=common, meaning=meaning)
    scores = {"min_link": min(links, default=0.0), "max_link": max(links, default=0.0), "size": len(group)}
    # The base is updated by the text citing it; a text that does not would overwrite what the base says.
    return [_merge_of(chunk, cluster.ordered, cluster.base if 0 in chunk.members else None, scores)
            for chunk in chunks if len(chunk.members) >= 2]


def _merge_of(chunk: Chunk, ordered: list[int], base: int | None, scores: dict[str, float]) -> Merge:
    members = [ordered[m] for m in chunk.members if ordered[m] != base]
    return Merge(base=base, members=members, text=chunk.text, scores=scores,
                 voiced=[ordered[v] for v in chunk.voiced])


# --- writing -------------------------------------------------------------------------------------------------

def _semantic_fields(rows: Sequence[ClusteringRow], text: str, voiced: Sequence[ClusteringRow]) -> dict[str, Any]:
    importance = max(r.importance for r in rows)
    kinds = Counter(r.kind for r in rows).most_common(1)[0][0]
    entities = list(dict.fromkeys(e for r in rows for e in r.entities))[:50]
    return {
        "content": text, "content_hash": content_hash(text), "importance": importance, "kind": kinds,
        "corroboration_count": sum(r.corroboration_count for r in rows),
        "confidence": min(1.0, max(r.confidence for r in rows) + 0.05 * (len(rows) - 1)),
        "stability_score": sum((r.importance + r.reward_score) / 2 for r in rows) / len(rows),
        # At least as accessible as the most accessed source, and the sources' reads carried over.
        "activation": max(r.activation for r in rows), "access_count": sum(r.access_count for r in rows),
        "entities": entities, "tags": sorted({t for r in rows for t in r.tags}),
        # What the memory states was last said on the date of its newest source whose words it keeps (never the
        # run's time, nor a repeat it dropped: a stale value is not shown as new).
        "valid_from": max(r.said_at for r in voiced or rows),
    }


def merges_write(*, run: ConsolidationRun, worker: str, tenant_id: int, loaded: Loaded, merges: Sequence[Merge],
                 vectors: Sequence[list[float] | None]) -> list[Merge]:
    """Write a chunk of merges in one transaction and return those written:
    1. renew the lease (a worker that lost it writes nothing);
    2. lock every member and base still active, in id order (two writers never deadlock), and leave out a merge
       another writer moved one of its memories of first (its memories stay as they are);
    3. insert the new semantic memories and update the bases, link the sources, count the new texts into the
       BM25 statistics;
    4. consolidate every member with one conditional UPDATE (all or none);
    5. one ledger row per merge; the events go out after commit."""
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        active = memories_lock_active(tenant_id=tenant_id,
                                      memory_ids=[loaded.ids[i] for merge in merges for i in _touched(merge)])
        kept = [(merge, vector) for merge, vector in zip(merges, vectors, strict=True)
                if all(loaded.ids[i] in active for i in _touched(merge))]
        if not kept:
            return []
        written = [(merge, *_semantic(tenant_id, run.user_id, loaded, merge, vector)) for merge, vector in kept]
        created = [memory for merge, memory, _ in written if merge.base is None]
        Memory.objects.bulk_create(created, batch_size=500)
        search_stats_add(memory_ids=[m.id for m in created])
        MemorySource.objects.bulk_create([
            MemorySource(memory=memory, source_id=loaded.ids[i], source_memory_id=loaded.ids[i],
                         source_content_hash=loaded.rows[i].content_hash)
            for merge, memory, _ in written for i in merge.members], ignore_conflicts=True, batch_size=1000)
        memory_transition(tenant_id=tenant_id, memory_ids=[loaded.ids[i] for merge, _ in kept for i in merge.members],
                          operation="consolidate", actor=f"run:{run.id}", run_id=run.id,
                          reason="folded into a semantic memory")
        ledger_write_all([_merge_row(run, tenant_id, loaded, merge, memory, before)
                          for merge, memory, before in written])
        event_emit_all(tenant_id=tenant_id, events=[
            event for merge, memory, _ in written
            for event in _merge_events(memory, [loaded.rows[i] for i in merge.members], created=merge.base is None)])
        # Search and later nights read a written text's stored parse instead of parsing it on every read.
        memories_parse_on_commit(memory.id for _, memory, _ in written)
    return [merge for merge, _ in kept]


def _touched(merge: Merge) -> list[int]:
    return [*merge.members, *([merge.base] if merge.base is not None else [])]


def _semantic(tenant_id: int, user_id: str, loaded: Loaded, merge: Merge, vector: list[float] | None
              ) -> tuple[Memory, dict[str, Any] | None]:
    """(the semantic memory — a new one, not saved yet, or the base updated — and the base's fields before this
    merge, what an undo puts back, or None)."""
    members = [loaded.rows[i] for i in merge.members]
    voiced = [loaded.rows[i] for i in merge.voiced] if merge.voiced is not None else []
    fields = _semantic_fields(members + ([loaded.rows[merge.base]] if merge.base is not None else []), merge.text,
                              voiced)
    if merge.base is not None:
        base = Memory.objects.get(id=loaded.ids[merge.base])  # locked by the caller
        before = semantic_snapshot(base, [*fields, "metadata"])
        for name, value in fields.items():
            setattr(base, name, value)
        base.embedding = vector
        base.metadata = {**base.metadata, "source_type": "consolidated",
                         "source_count": int(base.metadata.get("source_count", 0)) + len(merge.members)}
        base.save()
        return base, before
    namespace, entity_id, window = loaded.items[merge.members[0]].scope
    return Memory(tenant_id=tenant_id, user_id=user_id, namespace=namespace, entity_id=entity_id, window=window,
                  memory_type=MemoryType.SEMANTIC, embedding=vector, created_at=timezone.now(),
                  metadata={"source_type": "consolidated", "source_count": len(merge.members)}, **fields), None


def _merge_row(run: ConsolidationRun, tenant_id: int, loaded: Loaded, merge: Merge, semantic: Memory,
               base_before: dict[str, Any] | None) -> LedgerEntry:
    members = [loaded.rows[i] for i in merge.members]
    return ledger_row(tenant_id=tenant_id, action="merge", actor=f"run:{run.id}", run_id=run.id, user_id=run.user_id,
                      memory_ids=[r.id for r in members],
                      inputs={"members": [{"id": str(r.id), "content_hash": r.content_hash} for r in members],
                              "base": str(semantic.id) if merge.base is not None else None,
                              "base_content": loaded.rows[merge.base].content if merge.base is not None else None,
                              "base_before": base_before},
                      outputs={"semantic_id": str(semantic.id), "content": merge.text,
                               "created": merge.base is None},
                      reason="clustered by shared entities / embedding similarity", scores=merge.scores,
                      undoable=True)


def _merge_events(semantic: Memory, members: Sequence[ClusteringRow], *, created: bool
                  ) -> list[tuple[str, dict[str, Any]]]:
    data = {"semantic_id": str(semantic.id), "user_id": semantic.user_id, "created": created,
            "source_ids": [str(r.id) for r in members], **semantic_event_data(semantic)}
    return [("memory.semantic.updated", data), ("memory.merged", data)]


# --- running -------------------------------------------------------------------------------------------------

def clustering_execute(*, run: ConsolidationRun, worker: str, force: bool = False,
                       progress: Progress | None = None) -> ConsolidationRun:
    """Do the work of a claimed run and close it. A cluster whose sources another writer moved first is
    skipped (its memories stay as they are); a lost lease stops the run without closing it."""
    tenant = Tenant.objects.get(id=run.tenant_id)
    try:
        policy = run_policy(run)
    except PolicyInvalid as invalid:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=str(invalid))
    started, queries = time.perf_counter(), query_cache_stats()
    plan = clustering_plan(tenant=tenant, user_id=run.user_id, now=timezone.now(), force=force, policy=policy,
                           judge=update_judge(run=run, tenant=tenant, policy=policy.updates))
    planned = time.perf_counter()
    if plan.parsed:
        features_store(tenant_id=tenant.id, parsed=plan.parsed)
    claim_vectors = retirement_vectors(plan.retirements)
    embedded = time.perf_counter()
    counts: dict[str, Any] = {"reviewed": len(plan.loaded.ids), "clusters": 0, "merged": 0, "created": 0,
                              "superseded": 0, "claims_retired": 0, "flagged": 0}
    baseline = canary_baseline(run=run, consolidating=_consolidating(plan), neighbours=plan.loaded.rows,
                               policy=policy)
    guarded = time.perf_counter()
    try:
        counts = _write_decisions(run, worker, tenant.id, plan, counts)
        for retirement, vectors_of_claims in zip(plan.retirements, claim_vectors, strict=True):
            counts["claims_retired"] += retirement_write(run, worker, tenant.id, plan.loaded, retirement,
                                                         vectors_of_claims)
        counts["archived"] = _archive_uninformative(run, worker, tenant.id, plan)
        counts, merges_embedding = _write_merges(run, worker, tenant.id, plan, counts, progress)
        digests = window_digests_write(run=run, worker=worker, tenant_id=tenant.id, loaded=plan.loaded,
                                       policy=policy)
        counts = {**counts, "clusters": counts["clusters"] + digests, "created": counts["created"] + digests}
        written = time.perf_counter()
        failure = safety_check(run=run, worker=worker, baseline=baseline)
    except LeaseLost:
        return ConsolidationRun.objects.get(pk=run.id)
    # The merges are embedded while earlier chunks are written: embed_s overlaps write_s.
    counts["timings"] = {"plan_s": round(planned - started, 3),
                         "embed_s": round(embedded - planned + merges_embedding, 3),
                         "write_s": round(written - guarded, 3),
                         "canary_s": round(guarded - embedded + time.perf_counter() - written, 3),
                         "candidate_pairs": plan.pairs, **_query_embeddings(queries)}
    return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED if failure else RunStatus.SUCCEEDED,
                      error=failure or "", counts=counts)


def _query_embeddings(before: QueryCacheStats) -> dict[str, int]:
    """The run's searches (canaries) by how their queries were embedded: the model, or this process's cache."""
    during = query_cache_stats().since(before)
    return {"query_embeddings": during.misses, "query_cache_hits": during.hits}


def _consolidating(plan: Plan) -> list[ClusteringRow]:
    """The memories the plan folds into semantic memories: what must stay findable through them. (Superseded
    statements and the chatter a merge cites without writing it leave search on purpose; an operator's canary can
    still guard one.)"""
    return [plan.loaded.rows[i] for i in sorted({i for merge in plan.merges for i in merge.members})
            if not plan.members[i].chatter]


def _archive_uninformative(run: ConsolidationRun, worker: str, tenant_id: int, plan: Plan,
                           chunk: int = 500) -> int:
    """Archive the small talk with the reason `uninformative`, `chunk` memories a transaction (one ledger row
    each, restorable); a chunk another writer touched first is skipped whole."""
    archived = 0
    rows = [plan.loaded.rows[i] for i in plan.uninformative]
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        try:
            with transaction.atomic():
                run_fence(run_id=run.id, worker=worker)
                memory_transition(tenant_id=tenant_id, memory_ids=[r.id for r in part], operation="uninformative",
                                  actor=f"run:{run.id}", run_id=run.id)
                ledger_write(tenant_id=tenant_id, action="archive.uninformative", actor=f"run:{run.id}",
                             run_id=run.id, user_id=run.user_id, memory_ids=[r.id for r in part],
                             inputs={"memories": [{"id": str(r.id), "content": r.content} for r in part]},
                             reason="states nothing durable: greetings, reactions, thanks", undoable=True)
                event_emit(event="memory.archived", tenant_id=tenant_id,
                           data={"memory_ids": [str(r.id) for r in part], "reason": "uninformative"})
        except TransitionRefused:
            continue
        archived += len(part)
    return archived


def _write_decisions(run: ConsolidationRun, worker: str, tenant_id: int, plan: Plan,
                     counts: dict[str, Any]) -> dict[str, Any]:
    size = settings.ZEROMEMORY_CLUSTERING_WRITE_CHUNK
    for start in range(0, len(plan.decisions), size):
        written = decisions_write(run=run, worker=worker, tenant_id=tenant_id, loaded=plan.loaded,
                                  decisions=plan.decisions[start:start + size])
        superseded = sum(d.verdict.kind == SUPERSEDE for d in written)
        counts = {**counts, "superseded": counts["superseded"] + superseded,
                  "flagged": counts["flagged"] + len(written) - superseded}
    return counts


def _write_merges(run: ConsolidationRun, worker: str, tenant_id: int, plan: Plan, counts: dict[str, Any],
                  progress: Progress | None) -> tuple[dict[str, Any], float]:
    """Embed and write the merges chunk by chunk, the next chunk embedded while this one is written (the embedder
    works outside the GIL, so the two overlap on a second core). Returns the counts and the seconds spent
    embedding."""
    size = settings.ZEROMEMORY_CLUSTERING_WRITE_CHUNK
    chunks = [plan.merges[start:start + size] for start in range(0, len(plan.merges), size)]
    embedding = 0.0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="merge-embed") as embedder:
        upcoming = [embedder.submit(_embedded, chunk) for chunk in chunks[:1]]
        for number, chunk in enumerate(chunks):
            vectors, seconds = upcoming.pop().result()
            embedding += seconds
            upcoming += [embedder.submit(_embedded, next_chunk) for next_chunk in chunks[number + 1:number + 2]]
            written = merges_write(run=run, worker=worker, tenant_id=tenant_id, loaded=plan.loaded,
                                   merges=chunk, vectors=vectors)
            counts = {**counts, "clusters": counts["clusters"] + len(written),
                      "merged": counts["merged"] + sum(len(m.members) for m in written),
                      "created": counts["created"] + sum(m.base is None for m in written)}
            if progress:
                progress(min((number + 1) * size, len(plan.merges)), len(plan.merges))
    return counts, embedding


def _embedded(merges: Sequence[Merge]) -> tuple[list[list[float] | None], float]:
    started = time.perf_counter()
    return embed_texts([m.text for m in merges]), time.perf_counter() - started


def clustering_run_now(*, tenant_id: int, user_id: str, trigger: str, force: bool = False,
                       progress: Progress | None = None, wait_seconds: float = 3600) -> RunOutcome:
    """Cluster one user in this process (CLI, admin), or join the clustering run already under way."""
    return run_in_process(tenant_id=tenant_id, user_id=user_id, kind=RunKind.CLUSTERING, trigger=trigger,
                          wait_seconds=wait_seconds, force=force,
                          execute=lambda run, worker: clustering_execute(run=run, worker=worker, force=run.force,
                                                                         progress=progress))


def clustering_dry_run(*, tenant_id: int, user_id: str, force: bool = False) -> Plan:
    return clustering_plan(tenant=Tenant.objects.get(id=tenant_id), user_id=user_id, now=timezone.now(),
                           force=force, policy=policy_for(tenant_id=tenant_id))
