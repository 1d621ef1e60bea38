"""`manage.py bench search --quick`: the whole bench end to end on its own throwaway services, through gunicorn and a
Celery worker. The figures depend on the machine, so only the report's shape and the sanity of its numbers are
checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.db import connection

from zeromem.core import selectors, services
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.selectors import MemoryFilter
from zeromem.devtools.bench.bulk import indexes_deferred, memories_copy
from zeromem.devtools.bench.openloop import percentile_ms
from zeromem.devtools.bench.search import TARGETS
from zeromem.devtools.bench.searchdata import THREE_K, Queries, synthetic_queries, three_k_corpus
from zeromem.devtools.evaluation import locomo
from zeromem.models import Memory, TermStat, UserSearchStats

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_bench_measures_searches_through_the_http_api_and_reports_each_figure_beside_its_target():
    # Its own throwaway PostgreSQL and Valkey (not this session's): it reads their processes' CPU and the server log.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "ZEROMEM_EMBEDDED"}}
    result = subprocess.run([sys.executable, "manage.py", "bench", "search", "--quick", "--json"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    report = json.loads(lines[-1])

    assert set(TARGETS) <= set(report) and report["targets"] == TARGETS
    assert all(f"{key}: {report[key]} (target <= {target})" in lines for key, target in TARGETS.items())
    cpu = report["cpu_3k"]
    assert report["cpu_ms_per_search_3k"] == cpu["total"] > 0
    assert cpu["web"] > 0 and cpu["postgres"] > 0 and cpu["broker"] >= 0
    assert report["cpu_3k_repeated_query"]["total"] > 0
    statements = report["statements"]
    assert 3 <= report["statements_per_search"] == statements["per_search"] < 100
    assert statements["by_kind"]["SELECT"] >= 1  # the key's lookup at least, counted by the server
    for phase in ("wall_3k_idle", "wall_large", "wall_3k_during_clustering"):
        wall = report[phase]
        assert wall["requests"] > 0 and wall["errors"] == 0, phase
        assert 0 < wall["p50_ms"] <= wall["p99_ms"] <= wall["max_ms"], phase
    assert report["wall_3k_idle"]["cpu_ms_per_search"] > 0 and report["wall_large"]["cpu_ms_per_search"] > 0
    assert report["p99_ms_100k"] == report["wall_large"]["p99_ms"]
    assert report["p99_ms_3k_during_clustering"] == report["wall_3k_during_clustering"]["p99_ms"]
    assert report["wall_3k_during_clustering"]["run_working_s"] > 0
    assert report["machine"]["cores"] == os.cpu_count() and len(report["machine"]["load_average_start"]) == 3
    assert "idle machine" in report["note"]


def test_a_percentile_is_the_nearest_rank_in_milliseconds():
    latencies = [i / 1000 for i in range(1, 101)]  # 1 … 100 ms

    assert percentile_ms(latencies, 99) == 99.0
    assert percentile_ms(latencies, 50) == 50.0
    assert percentile_ms(latencies, 100) == 100.0
    assert percentile_ms([0.2], 99) == 200.0
    assert percentile_ms([], 99) is None


@pytest.mark.django_db
@pytest.mark.usefixtures("hash_embedder")
def test_copied_memories_are_stored_as_ingestion_stores_them_and_counted_for_search(tenant, now):
    texts = ["The billing-api timed out after a schema change", "Priya moved the nightly ETL to Thursday"]
    vectors = np.eye(2, settings.ZEROMEMORY_EMBEDDING_DIM, dtype=np.float32)
    rows = [Memory(id=uuid.uuid4(), tenant=tenant, user_id="u1", content=text, content_hash=services.content_hash(text),
                   embedding=vector, entities=["billing-api"], created_at=now) for text, vector in zip(texts, vectors,
                                                                                                      strict=True)]
    memories_copy(rows)

    stored = Memory.objects.get(id=rows[0].id)
    assert (stored.state, stored.importance, stored.metadata, stored.entities) == ("raw", 0.5, {}, ["billing-api"])
    assert np.allclose(stored.embedding, vectors[0])
    assert UserSearchStats.objects.get(tenant=tenant, user_id="u1").doc_count == 2
    assert TermStat.objects.get(tenant=tenant, user_id="u1", term="etl").doc_count == 1
    hits = selectors.memories_search(scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"), query="nightly ETL",
                                     policy=SearchPolicy())
    assert hits[0].memory.id == rows[1].id


@pytest.mark.django_db
def test_deferred_indexes_come_back_as_they_were():
    def definitions():
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'zeromem_memory'")
            return sorted(cursor.fetchall())

    before = definitions()
    with indexes_deferred("zeromem_memory"):
        assert all(definition.startswith("CREATE UNIQUE") for _, definition in definitions())
    assert definitions() == before


def test_queries_are_distinct_and_each_handed_out_once():
    queries = Queries(["a", "b", "a", "c"])

    assert queries.take(2) + queries.take(1) == ["a", "b", "c"]
    with pytest.raises(RuntimeError, match="out of distinct queries"):
        queries.take(1)
    assert len(set(synthetic_queries())) == len(synthetic_queries()) > 3000


def test_without_the_locomo_file_the_3k_user_is_made_of_the_bench_texts(monkeypatch):
    monkeypatch.setattr(locomo, "available", lambda: False)

    items, queries, source = three_k_corpus(30, ["What happened?"])

    assert source == "synthetic" and queries == ["What happened?"]
    assert len({item.content for item in items}) == 30 and {item.user_id for item in items} == {THREE_K}
