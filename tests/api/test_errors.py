"""Everything under the API prefix that is not a success answers in the one error shape with the right status:
unknown paths, wrong methods, unparseable bodies, NUL bytes and lone surrogates, service refusals and crashes; and a
refused request writes nothing."""

from __future__ import annotations

import json
import logging
import uuid
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.test import Client, RequestFactory
from ninja.errors import AuthenticationError, HttpError

from consolidation.selectors import ScopeAmbiguous, ScopeNotFound
from consolidation.triggers import RunBusy
from tests.conftest import ApiClient
from zeromem import urls
from zeromem.api.errors import as_api_error
from zeromem.core import selectors
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.ratelimit import RateLimited
from zeromem.core.selectors import InvalidCursor
from zeromem.core.services import IdempotencyConflict
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")

BASE = ApiClient.base
WRITTEN = ("zeromem.Memory", "zeromem.IdempotencyKey", "zeromem.MemorySource", "consolidation.ConsolidationRun",
           "consolidation.LedgerEntry", "consolidation.SessionEnd", "profiles.MemoryProfile")
MEMORY = {"content": "The billing-api runs on port 8080.", "user_id": "u1", "session_id": "s1"}


def rows() -> dict[str, int]:
    return {name: apps.get_model(name).objects.count() for name in WRITTEN}


def error_of(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"] and isinstance(body["error"]["details"], list)
    if code is not None:
        assert body["error"]["code"] == code
    return body["error"]


def send(api: ApiClient, method: str, path: str, body: str | bytes = "", **headers: str):
    return api.client.generic(method, BASE + path, body, content_type="application/json",
                              headers={**api.headers, **headers})


# --- unknown paths and wrong methods ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/nope", "/memories/", "/memories/a/b/c", "/v3/memories", "/docs/x"])
def test_an_unknown_path_under_the_api_answers_404_in_the_error_shape(api, anonymous_api, path):
    for client in (api, anonymous_api):
        for method in ("GET", "POST", "DELETE"):
            error_of(send(client, method, path, json.dumps({"memories": [MEMORY]})), 404, "not_found")
    assert Memory.objects.count() == 0


def test_a_path_outside_the_api_keeps_djangos_own_404_page(db):
    response = Client().get("/no-such-page")
    assert response.status_code == 404 and not response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("PUT", "/memories", {"GET", "POST"}),
    ("DELETE", "/search", {"POST"}),
    ("GET", "/forget", {"POST"}),
    ("POST", "/profile", {"GET"}),
    ("PUT", f"/memories/{uuid.uuid4()}", {"GET", "DELETE", "PATCH"}),
    ("GET", "/sessions/s1/end", {"POST"}),
])
def test_a_wrong_method_on_a_known_path_answers_405_in_the_error_shape(api, method, path, allowed):
    before = rows()
    response = send(api, method, path, json.dumps({"memories": [MEMORY], "user_id": "u1", "query": "port"}))
    error_of(response, 405, "method_not_allowed")
    assert {m.strip() for m in response["Allow"].split(",")} == allowed
    assert rows() == before


def test_a_wrong_method_without_a_key_is_405_too(anonymous_api):
    error_of(send(anonymous_api, "PUT", "/memories"), 405, "method_not_allowed")


# --- bodies that do not parse ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/memories", "/search", "/context", "/reflect", "/forget", "/sessions/s1/end",
                                  f"/memories/{uuid.uuid4()}/feedback"])
@pytest.mark.parametrize("body", ["{not json", '{"memories": [', b"\xff\xfe{}", "{'single': 'quotes'}"])
def test_a_malformed_json_body_answers_400_in_the_error_shape_and_writes_nothing(api, path, body):
    before = rows()
    error_of(send(api, "POST", path, body), 400, "bad_request")
    assert rows() == before


def test_a_body_of_the_wrong_json_type_answers_422(api):
    for body in ("[1, 2, 3]", '"just a string"', "null", "42"):
        error_of(send(api, "POST", "/memories", body), 422, "invalid_input")
    assert Memory.objects.count() == 0


# --- where a problem is: the request's own fields -----------------------------------------------------------

def locations(response) -> list[list]:
    return [detail["loc"] for detail in error_of(response, 422, "invalid_input")["details"]]


def test_a_body_error_names_the_field_path_as_sent_never_the_views_argument(api):
    bad = {"memories": [{**MEMORY, "surprise": 1}, {"user_id": "u1"}]}
    assert sorted(locations(send(api, "POST", "/memories", json.dumps(bad)))) == [
        ["body", "memories", 0, "surprise"], ["body", "memories", 1, "content"]]
    assert locations(send(api, "POST", "/search", json.dumps({"query": "port", "top_k": 0}))) == [["body", "top_k"]]


def test_an_error_about_the_whole_body_or_path_names_only_where_it_came_from(api):
    assert locations(send(api, "POST", "/memories", "[1, 2]")) == [["body"]]
    assert locations(send(api, "POST", "/reflect", "{}")) == [["body"]]
    assert locations(send(api, "POST", "/sessions/%00/end", json.dumps({"user_id": "u1"}))) == [["path"]]


def test_query_and_path_errors_name_the_parameter(api):
    assert locations(api.get("/memories", limit=0)) == [["query", "limit"]]
    assert locations(send(api, "POST", "/reflect?async=maybe", json.dumps({"user_id": "u1"}))) == [["query", "async"]]
    assert locations(send(api, "GET", "/memories/not-a-uuid")) == [["path", "memory_id"]]


# --- NUL bytes and lone surrogates, in one place -----------------------------------------------------------------

UNSTORABLE = ["nul \x00 byte", "lone \ud800 surrogate"]
BODY_CASES = [
    ("/memories", {"memories": [{**MEMORY, "content": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "user_id": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "entity_id": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "session_id": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "namespace": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "role": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "window": "{bad}"}]}),
    ("/memories", {"memories": [{**MEMORY, "tags": ["ok", "{bad}"]}]}),
    ("/memories", {"memories": [{**MEMORY, "entities": ["{bad}"]}]}),
    ("/memories", {"memories": [{**MEMORY, "metadata": {"nested": ["ok", {"deep": "{bad}"}]}}]}),
    ("/memories", {"memories": [{**MEMORY, "metadata": {"{bad}": 1}}]}),
    ("/memories", {"memories": [MEMORY, {**MEMORY, "content": "{bad}"}]}),
    ("/search", {"query": "{bad}"}),
    ("/search", {"query": "port", "user_id": "{bad}"}),
    ("/context", {"query": "port", "user_id": "{bad}"}),
    ("/context", {"query": "{bad}", "user_id": "u1"}),
    ("/reflect", {"entity_id": "{bad}"}),
    ("/reflect", {"user_id": "u1", "namespace": "{bad}"}),
    ("/forget", {"user_id": "{bad}"}),
    ("/sessions/s1/end", {"user_id": "{bad}"}),
]


def with_bad(value: object, bad: str) -> object:
    if isinstance(value, str):
        return value.replace("{bad}", bad)
    if isinstance(value, list):
        return [with_bad(v, bad) for v in value]
    if isinstance(value, dict):
        return {with_bad(k, bad): with_bad(v, bad) for k, v in value.items()}
    return value


@pytest.mark.parametrize("bad", UNSTORABLE)
@pytest.mark.parametrize(("path", "body"), BODY_CASES)
def test_a_nul_or_lone_surrogate_in_any_body_string_is_refused_and_nothing_is_written(api, path, body, bad):
    api.post("/memories", {"memories": [{**MEMORY, "user_id": "u1", "entity_id": "alice"}]})
    before = rows()
    error_of(send(api, "POST", path, json.dumps(with_bad(body, bad))), 422, "invalid_input")
    assert rows() == before


@pytest.mark.parametrize("bad", UNSTORABLE)
def test_a_nul_or_lone_surrogate_in_a_correction_is_refused_and_the_memory_is_unchanged(api, bad):
    memory_id = api.post("/memories", {"memories": [MEMORY]}).json()["ids"][0]
    before = rows()
    error_of(send(api, "PATCH", f"/memories/{memory_id}", json.dumps({"content": f"port {bad}"})), 422,
             "invalid_input")
    assert rows() == before and Memory.objects.get(id=memory_id).content == MEMORY["content"]


@pytest.mark.parametrize(("path", "query"), [
    ("/memories", {"user_id": "u\x00"}),
    ("/memories", {"entity_id": "e\x00"}),
    ("/memories", {"namespace": "\x00"}),
    ("/memories", {"cursor": "\x00abc"}),
    ("/profile", {"user_id": "u\x00"}),
    ("/profile", {"user_id": "u1", "namespace": "n\x00"}),
])
def test_a_nul_in_a_query_string_is_refused(api, path, query):
    error_of(api.get(path, **query), 422, "invalid_input")


def test_a_nul_in_the_session_path_is_refused_and_nothing_is_written(api):
    before = rows()
    error_of(send(api, "POST", "/sessions/s%00x/end", json.dumps({"user_id": "u1"})), 422, "invalid_input")
    assert rows() == before


def test_a_session_id_past_200_characters_is_refused(api):
    error_of(send(api, "POST", "/sessions/" + "s" * 201 + "/end", json.dumps({"user_id": "u1"})), 422,
             "invalid_input")


# --- crashes and service refusals -----------------------------------------------------------------------------

def test_an_unhandled_error_answers_500_in_the_shape_without_the_traceback(api, monkeypatch, caplog):
    def crash(**kwargs):
        raise RuntimeError("internal detail: password=hunter2")

    monkeypatch.setattr(selectors, "memories_page", crash)
    with caplog.at_level(logging.ERROR):
        response = api.get("/memories")
    error_of(response, 500, "internal_error")
    assert b"hunter2" not in response.content and b"Traceback" not in response.content
    assert any(r.exc_info and "hunter2" in str(r.exc_info[1]) for r in caplog.records)  # logged, not answered


def test_djangos_error_handlers_answer_the_shape_under_the_api_prefix_only():
    inside, outside = RequestFactory().get(BASE + "/memories"), RequestFactory().get("/elsewhere")
    for handler, status, code in ((urls.handler400, 400, "bad_request"), (urls.handler403, 403, "forbidden"),
                                  (urls.handler404, 404, "not_found")):
        assert json.loads(handler(inside, Exception("x")).content)["error"]["code"] == code
        assert handler(inside, Exception("x")).status_code == status
        assert not handler(outside, Exception("x"))["Content-Type"].startswith("application/json")
    crashed = urls.handler500(inside)
    assert crashed.status_code == 500 and json.loads(crashed.content)["error"]["code"] == "internal_error"
    assert not urls.handler500(outside)["Content-Type"].startswith("application/json")


RUN = SimpleNamespace(kind="clustering", id=uuid.UUID(int=7))


@pytest.mark.parametrize(("exc", "status", "code", "headers"), [
    (Memory.DoesNotExist("memory 1 does not exist in this tenant"), 404, "not_found", {}),
    (ScopeNotFound("no memories for user 'u'"), 404, "not_found", {}),
    (ScopeAmbiguous("entity 'e' has memories under 2 users"), 400, "ambiguous_entity", {}),
    (RunBusy(RUN), 409, "run_in_progress", {"Retry-After": "30"}),
    (RateLimited(retry_after=12), 429, "rate_limited", {"Retry-After": "12"}),
    (TransitionRefused("unmerge moves consolidated → raw; the memory is archived"), 409, "conflict", {}),
    (IdempotencyConflict("used with a different request"), 409, "idempotency_conflict", {}),
    (InvalidCursor("cursor is not one this API issued"), 400, "invalid_cursor", {}),
    (AuthenticationError(), 401, "unauthorized", {}),
    (HttpError(400, "Cannot parse request body"), 400, "bad_request", {}),
    (ValueError("a bug"), 500, "internal_error", {}),
])
def test_service_exceptions_map_to_statuses_through_one_table(exc, status, code, headers):
    error = as_api_error(exc)
    assert (error.status, error.code, error.headers) == (status, code, headers)
    assert set(error.body()["error"]) == {"code", "message", "details"}


def test_a_busy_run_names_the_run_in_the_details():
    assert as_api_error(RunBusy(RUN)).details == [{"run_id": str(RUN.id)}]


def test_a_crash_never_shows_its_message():
    assert "a bug" not in as_api_error(ValueError("a bug")).message
