"""POST/GET /memories: validation, all-or-nothing batches, idempotency, cursors, one error shape."""

from __future__ import annotations

import json

import pytest

from zeromem.models import IdempotencyKey, Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")


def memory(content="Caroline went to the LGBTQ support group on 7 May 2023.", **extra):
    return {"content": content, "user_id": "u1", "session_id": "s1", **extra}


def test_it_stores_a_batch_and_fills_entities_and_kind(api):
    response = api.post("/memories", {"memories": [memory(), memory("Do you like pottery?", entity_id="mel")]})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["created"] == 2 and body["deduplicated"] == 0 and body["embedded"] == 2
    first, second = (Memory.objects.get(id=i) for i in body["ids"])
    assert "Caroline" in first.entities and first.embedding is not None
    assert second.kind == "question" and second.entity_id == "mel"


def test_given_entities_and_kind_are_kept(api):
    response = api.post("/memories", {"memories": [memory(entities=["x-service"], kind="decision")]})
    stored = Memory.objects.get(id=response.json()["ids"][0])
    assert stored.entities == ["x-service"] and stored.kind == "decision"


@pytest.mark.parametrize("body,status", [
    ("{not json", 400),
    ({"memories": [{"content": 5, "user_id": "u1"}]}, 422),
    ({"memories": [{"user_id": "u1"}]}, 422),
    ({"memories": [memory(colour="red")]}, 422),
    ({"memories": [memory()], "extra": True}, 422),
    ({"memories": []}, 422),
    ({"memories": [memory(importance=1.5)]}, 422),
    ({"memories": [memory(memory_type="semantic")]}, 422),
    ({"memories": [memory(content="x" * 16_001)]}, 422),
    ({"memories": [memory(content="nul \x00 byte")]}, 422),
    ({"memories": [memory(created_at="yesterday")]}, 422),
    ({"memories": [memory(content=f"m{i}") for i in range(1001)]}, 422),
])
def test_bad_input_answers_4xx_in_one_shape_and_writes_nothing(api, body, status):
    response = api.post("/memories", body)
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"} and error["message"]
    assert Memory.objects.count() == 0


def test_a_bad_item_rejects_the_whole_batch(api):
    response = api.post("/memories", {"memories": [memory(), memory(content="")]})
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["loc"][-2:] == [1, "content"]
    assert Memory.objects.count() == 0


def test_an_oversize_body_answers_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.post("/memories", {"memories": [memory(content="y" * 2000)]})
    assert response.status_code == 413
    assert Memory.objects.count() == 0


def test_a_retried_batch_with_the_same_idempotency_key_stores_nothing_twice(api):
    body = {"memories": [memory(), memory("The deploy failed at 03:00 UTC.")]}
    first = api.post("/memories", body, **{"Idempotency-Key": "req-1"})
    second = api.post("/memories", body, **{"Idempotency-Key": "req-1"})
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert Memory.objects.count() == 2 and IdempotencyKey.objects.count() == 1


def test_a_reused_idempotency_key_with_another_body_is_a_conflict(api):
    api.post("/memories", {"memories": [memory()]}, **{"Idempotency-Key": "req-2"})
    response = api.post("/memories", {"memories": [memory("something else")]}, **{"Idempotency-Key": "req-2"})
    assert response.status_code == 409 and response.json()["error"]["code"] == "idempotency_conflict"
    assert Memory.objects.count() == 1


def test_the_same_content_in_the_same_session_is_stored_once_without_a_key(api):
    first = api.post("/memories", {"memories": [memory(), memory()]}).json()
    again = api.post("/memories", {"memories": [memory()]}).json()
    assert first["created"] == 1 and first["deduplicated"] == 1 and again["created"] == 0
    assert first["ids"][0] == first["ids"][1] == again["ids"][0]
    other_session = api.post("/memories", {"memories": [memory(session_id="s2")]}).json()
    assert other_session["created"] == 1


def test_listing_pages_with_a_cursor_and_filters(api):
    api.post("/memories", {"memories": [memory(f"note number {i}", created_at=f"2024-01-{i + 1:02d}T00:00:00Z")
                                        for i in range(7)] + [memory("elsewhere", user_id="u2")]})
    seen, cursor = [], None
    while True:
        params = {"user_id": "u1", "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = api.get("/memories", **params).json()
        seen += [m["content"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [f"note number {i}" for i in reversed(range(7))]
    ranged = api.get("/memories", user_id="u1", created_after="2024-01-03T00:00:00Z",
                     created_before="2024-01-05T00:00:00Z").json()
    assert [m["content"] for m in ranged["memories"]] == ["note number 3", "note number 2"]


def test_a_forged_cursor_is_a_clear_400(api):
    response = api.get("/memories", cursor="not-a-cursor")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_cursor"


def test_reading_one_memory_shows_its_sources(api, tenant):
    from zeromem.models import MemorySource

    ids = api.post("/memories", {"memories": [memory("first"), memory("second")]}).json()["ids"]
    semantic = Memory.objects.create(tenant=tenant, user_id="u1", content="first and second", content_hash="h",
                                     memory_type="semantic", created_at=Memory.objects.get(id=ids[0]).created_at)
    for source_id in ids:
        source = Memory.objects.get(id=source_id)
        MemorySource.objects.create(memory=semantic, source=source, source_memory_id=source.id,
                                    source_content_hash=source.content_hash)
    body = api.get(f"/memories/{semantic.id}").json()
    assert sorted(s["content"] for s in body["sources"]) == ["first", "second"]
    assert api.get("/memories/00000000-0000-0000-0000-000000000000").status_code == 404


def test_openapi_docs_are_published(api):
    schema = api.client.get(api.base + "/openapi.json").json()
    assert {"/api/v1/public/memory/v2/memories", "/api/v1/public/memory/v2/search"} <= set(schema["paths"])


def test_requests_without_a_valid_key_are_401(anonymous_api):
    assert anonymous_api.get("/memories").status_code == 401
    bad = anonymous_api.client.get(anonymous_api.base + "/memories", headers={"Authorization": "Bearer zm_x_y"})
    assert bad.status_code == 401 and json.loads(bad.content)["error"]["code"] == "unauthorized"


def test_a_used_key_records_when_it_was_last_used(api, tenant):
    from zeromem.models import ApiKey

    assert api.get("/memories").status_code == 200
    assert ApiKey.objects.get(tenant=tenant).last_used_at is not None


def test_search_and_context_answer_scores_to_four_decimals(api):
    api.post("/memories", {"memories": [memory("The billing-api runs on port 8080 behind nginx."),
                                        memory("The search-api runs on port 9090.", importance=1 / 3)]})
    hits = api.post("/search", {"query": "which port does the billing-api run on", "user_id": "u1"}).json()["results"]
    context = api.post("/context", {"query": "billing-api port", "user_id": "u1"}).json()["memories"]
    shown = [v for hit in hits for v in (hit["score"], hit["bm25"], hit["cosine"], hit["memory"]["importance"],
                                          hit["memory"]["confidence"])] + [m["score"] for m in context]
    assert len(hits) == 2 and context
    assert all(round(value, 4) == value for value in shown), shown
    assert round(1 / 3, 4) in [hit["memory"]["importance"] for hit in hits]
