"""The pure clustering core: candidates, hub entities, scopes, capped union-find. No database."""

from __future__ import annotations

import numpy as np

from consolidation.domain.clustering import (
    Item,
    Pair,
    Params,
    candidate_pairs,
    capped_union_find,
    cluster,
    hub_entities,
    session_pairs,
)

SCOPE = ("global", None, None)


def unit(rows):
    vectors = np.asarray(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def near(base, cosine, rng):
    """A unit vector at the given cosine to `base`."""
    noise = rng.normal(size=base.shape)
    noise -= noise.dot(base) * base
    noise /= np.linalg.norm(noise)
    return cosine * base + np.sqrt(1 - cosine ** 2) * noise


def test_two_shared_entities_make_a_candidate_without_any_vector():
    items = [Item(SCOPE, frozenset({"Redis", "billing-api", "a"})), Item(SCOPE, frozenset({"Redis", "billing-api"})),
             Item(SCOPE, frozenset({"Redis"}))]
    groups, pairs = cluster(items, None, [False] * 3, Params())
    assert groups == [[0, 1]]
    assert {(p.a, p.b, p.reason) for p in pairs} == {(0, 1, "entities")}


def test_facts_link_on_entity_jaccard_but_observations_need_two_shared_entities():
    facts = [Item(SCOPE, frozenset({"Caroline"}), is_fact=True), Item(SCOPE, frozenset({"Caroline"}), is_fact=True)]
    observations = [Item(SCOPE, frozenset({"Caroline"})), Item(SCOPE, frozenset({"Caroline"}))]
    assert cluster(facts, None, [False, False], Params(hub_share=1.0))[0] == [[0, 1]]
    assert cluster(observations, None, [False, False], Params(hub_share=1.0))[0] == []


def test_hub_entities_are_ignored():
    items = [Item(SCOPE, frozenset({"prod", "user", f"x{i}"})) for i in range(10)]
    assert hub_entities(items, Params(hub_share=0.3, hub_min_count=5)) == {"prod", "user"}
    assert cluster(items, None, [False] * 10, Params(hub_share=0.3, hub_min_count=5))[0] == []


def test_cosine_above_the_floor_links_and_below_does_not():
    rng = np.random.default_rng(3)
    base = unit([rng.normal(size=384)])[0]
    vectors = unit([base, near(base, 0.8, rng), near(base, 0.4, rng)])
    groups, _ = cluster([Item(SCOPE, frozenset())] * 3, vectors, [True] * 3, Params(cosine_floor=0.62))
    assert groups == [[0, 1]]


def test_no_cluster_spans_two_namespaces_windows_or_entity_ids():
    scopes = [("a", None, None), ("b", None, None), ("a", "alice", None), ("a", None, "incident-7")]
    items = [Item(scope, frozenset({"Redis", "billing-api"})) for scope in scopes]
    vectors = unit([np.ones(8)] * 4)
    groups, _ = cluster(items, vectors, [True] * 4, Params())
    assert groups == []


def test_union_find_never_grows_a_cluster_past_the_cap():
    pairs = [Pair(i, i + 1, 0.9, "cosine") for i in range(49)]
    groups = capped_union_find(50, pairs, max_cluster=20)
    assert max(len(g) for g in groups) <= 20 and sum(len(g) for g in groups) == 50


def test_the_strongest_links_form_clusters_first():
    pairs = [Pair(0, 1, 0.95, "cosine"), Pair(1, 2, 0.7, "cosine"), Pair(2, 3, 0.99, "cosine")]
    assert capped_union_find(4, pairs, max_cluster=2) == [[0, 1], [2, 3]]


def test_a_memory_without_an_embedding_still_clusters_by_entities():
    rng = np.random.default_rng(5)
    vectors = unit([rng.normal(size=16), rng.normal(size=16)])
    items = [Item(SCOPE, frozenset({"Postgres", "pgvector"})), Item(SCOPE, frozenset({"Postgres", "pgvector"}))]
    groups, _ = cluster(items, vectors, [True, False], Params())
    assert groups == [[0, 1]]


def test_the_index_finds_the_same_pairs_as_exact_search():
    rng = np.random.default_rng(11)
    centres = unit(rng.normal(size=(60, 64)))
    vectors = unit([near(centres[i % 60], 0.9, rng) for i in range(600)])
    items = [Item(SCOPE, frozenset())] * 600
    exact = {(p.a, p.b) for p in candidate_pairs(items, vectors, [True] * 600, Params(exact_limit=10_000))}
    indexed = {(p.a, p.b) for p in candidate_pairs(items, vectors, [True] * 600, Params(exact_limit=0))}
    assert exact and len(exact & indexed) / len(exact) >= 0.99


def test_the_second_level_pairs_what_is_left_within_one_session_and_scope_at_the_looser_floor():
    rng = np.random.default_rng(7)
    base = unit([rng.normal(size=16)])[0]
    vectors = np.stack([base, near(base, 0.45, rng), near(base, 0.45, rng), near(base, 0.45, rng),
                        near(base, 0.45, rng)]).astype(np.float32)
    other_scope = ("global", "Sam", None)
    items = [Item(scope, frozenset()) for scope in (SCOPE, SCOPE, SCOPE, other_scope, SCOPE)]
    sessions = ["s1", "s1", "s2", "s1", "s1"]
    pairs = session_pairs(items, vectors, sessions, left=[0, 1, 2, 3], floor=0.4)
    assert {(p.a, p.b) for p in pairs} == {(0, 1)}  # 2: another session; 3: another scope; 4: not left over
    assert all(p.reason == "session" and p.strength >= 0.4 for p in pairs)
    assert session_pairs(items, vectors, sessions, left=[0, 1, 2, 3], floor=0.6) == []
    # A first-level member of the session may take a leftover; two first-level members are never paired again.
    joined = session_pairs(items, vectors, sessions, left=[1], floor=0.4, clustered=[0, 4])
    assert {frozenset((p.a, p.b)) for p in joined} == {frozenset((0, 1))}  # 0–4 are as near, but both clustered
