"""The OpenAPI document describes every operation, every field and the error answers, and the error answers are what
it says they are."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from ninja import Schema

from zeromem.api import schemas
from zeromem.api.routes import api as ninja_api
from zeromem.api.schemas import ErrorOut

ERROR_REF = "#/components/schemas/ErrorOut"


def document() -> dict[str, Any]:
    return ninja_api.get_openapi_schema(path_prefix="")


def operations() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{method.upper()} {path}", operation) for path, item in document()["paths"].items()
            for method, operation in item.items()]


def test_every_operation_has_a_summary_and_a_description():
    for name, operation in operations():
        default = operation["operationId"].rsplit("_api_routes_", 1)[-1].replace("_", " ").title()
        assert operation.get("summary") and operation["summary"] != default, f"{name}: no summary of its own"
        assert operation.get("description", "").strip(), f"{name}: no description"


def test_every_operation_documents_its_error_answers_in_the_one_shape():
    assert sum(bool(operation.get("security")) for _, operation in operations()) >= 14  # every route takes a key
    for name, operation in operations():
        responses = {int(status): response for status, response in operation["responses"].items()}
        keyed = bool(operation.get("security"))
        assert {422} | ({401, 429} if keyed else set()) <= set(responses), f"{name}: {sorted(responses)}"
        for status, response in responses.items():
            if status >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": ERROR_REF}, f"{name} {status}: {schema}"


def test_every_property_of_every_component_schema_has_a_description():
    components = document()["components"]["schemas"]
    undocumented = [f"{name}.{prop}" for name, schema in components.items()
                    for prop, details in schema.get("properties", {}).items()
                    if not details.get("description", "").strip()]
    assert not undocumented
    assert {"ErrorOut", "MemoryIn", "MemoryOut", "ListQuery"} <= set(components)


def test_every_field_of_every_schema_in_the_module_has_a_description():
    models = [model for _, model in inspect.getmembers(schemas, inspect.isclass)
              if issubclass(model, Schema) and model.__module__ == schemas.__name__]
    undocumented = [f"{model.__name__}.{name}" for model in models for name, info in model.model_fields.items()
                    if not (info.description or "").strip()]
    assert len(models) > 30 and not undocumented


@pytest.mark.django_db
@pytest.mark.parametrize(("request_kwargs", "status", "code"), [
    ({"method": "GET", "path": "/memories", "headers": {}}, 401, "unauthorized"),
    ({"method": "POST", "path": "/search", "body": {"query": "tea", "top_k": "3"}}, 422, "invalid_input"),
    ({"method": "GET", "path": "/memories/00000000-0000-0000-0000-000000000000"}, 404, "not_found"),
    ({"method": "GET", "path": "/memories?cursor=forged"}, 400, "invalid_cursor"),
    ({"method": "POST", "path": "/memories", "body": "{not json"}, 400, "bad_request"),
])
def test_error_answers_are_exactly_the_documented_error_schema(api, request_kwargs, status, code):
    body = request_kwargs.get("body", "")
    response = api.client.generic(request_kwargs["method"], api.base + request_kwargs["path"],
                                  body if isinstance(body, str) else json.dumps(body),
                                  content_type="application/json", headers=request_kwargs.get("headers", api.headers))

    answer = response.json()
    assert response.status_code == status and answer["error"]["code"] == code
    assert ErrorOut.model_validate(answer).model_dump() == answer


@pytest.mark.django_db
def test_a_rate_limited_answer_is_the_documented_error_schema_too(api, settings):
    settings.ZEROMEMORY_RATE_LIMIT_REQUESTS = 1
    settings.ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = 3600
    api.get("/runs")

    response = api.get("/runs")

    assert response.status_code == 429 and response["Retry-After"]
    assert ErrorOut.model_validate(response.json()).model_dump() == response.json()
