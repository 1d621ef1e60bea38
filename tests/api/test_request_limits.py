"""Limits on everything a client sends: a memory's metadata (size, nesting, keys, strings) and the filters of a
search or a listing. Each answers 422 in the one error shape, with a message naming the field as the request
spells it, and writes nothing; the OpenAPI document advertises them."""

from __future__ import annotations

import json

import pytest

from tests.api.test_errors import error_of, rows, send
from zeromem.api.routes import api as ninja_api
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")

MEMORY = {"content": "The billing-api runs on port 8080.", "user_id": "u1", "session_id": "s1"}


def nested(depth: int) -> dict:
    """An object `depth` levels deep (the metadata object itself is level 1)."""
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"inner": value}
    return value


def store(api, metadata, **fields):
    return send(api, "POST", "/memories", json.dumps({"memories": [{**MEMORY, **fields, "metadata": metadata}]}))


def refused(response, field: str) -> dict:
    error = error_of(response, 422, "invalid_input")
    assert error["message"].startswith(f"{field}: "), error["message"]
    return error


# --- metadata --------------------------------------------------------------------------------------------------

def test_a_five_million_character_metadata_value_is_refused_and_nothing_is_written(api):
    before = rows()
    error = refused(store(api, {"blob": "x" * 5_000_000}), "memories[0].metadata")
    assert error["details"][0]["loc"][-3:] == ["memories", 0, "metadata"]
    assert rows() == before


def test_metadata_larger_than_the_byte_limit_is_refused(api, settings):
    settings.ZEROMEMORY_MAX_METADATA_BYTES = 1000
    many_small = {f"k{i}": "v" * 40 for i in range(30)}  # every string short, ~1,400 bytes together
    error = refused(store(api, many_small), "memories[0].metadata")
    assert "bytes" in error["message"] and "1000" in error["message"]
    assert Memory.objects.count() == 0


def test_the_byte_limit_counts_utf8_bytes_not_characters(api, settings):
    settings.ZEROMEMORY_MAX_METADATA_BYTES = 100
    assert store(api, {"k": "é" * 47}).status_code == 422  # {"k":"…"}: 8 + 94 bytes
    assert store(api, {"k": "e" * 47}).status_code == 201  # 8 + 47 bytes


def test_metadata_nested_past_the_depth_limit_is_refused(api, settings):
    settings.ZEROMEMORY_MAX_METADATA_DEPTH = 4
    error = refused(store(api, nested(5)), "memories[0].metadata")
    assert "deeper than 4" in error["message"]
    refused(store(api, {"list": [[[["too deep"]]]]}), "memories[0].metadata")  # lists count as levels too
    assert Memory.objects.count() == 0
    assert store(api, nested(4)).status_code == 201


def test_very_deep_metadata_answers_422_not_a_crash(api):
    before = rows()
    # Deeper than the limit by far, shallow enough for the JSON parser to accept.
    refused(store(api, nested(900)), "memories[0].metadata")
    assert rows() == before


def test_metadata_with_too_many_keys_counted_at_every_depth_is_refused(api, settings):
    settings.ZEROMEMORY_MAX_METADATA_KEYS = 10
    refused(store(api, {f"k{i}": i for i in range(11)}), "memories[0].metadata")
    spread = {f"group{g}": {f"k{i}": i for i in range(3)} for g in range(3)}  # 3 + 9 keys
    error = refused(store(api, spread), "memories[0].metadata")
    assert "more than 10 keys" in error["message"]
    assert Memory.objects.count() == 0


def test_a_long_string_inside_metadata_is_refused_wherever_it_sits(api, settings):
    settings.ZEROMEMORY_MAX_METADATA_STRING_CHARS = 50
    for metadata in ({"note": "x" * 51}, {"a": {"b": ["ok", "x" * 51]}}):
        error = refused(store(api, metadata), "memories[0].metadata")
        assert "string longer than 50" in error["message"]
    assert Memory.objects.count() == 0


def test_a_metadata_key_longer_than_a_name_is_refused(api):
    refused(store(api, {"k" * 201: 1}), "memories[0].metadata")
    refused(store(api, {"outer": {"k" * 201: 1}}), "memories[0].metadata")
    assert Memory.objects.count() == 0


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_number_json_cannot_hold_in_metadata_is_refused(api, number):
    body = '{"memories": [{"content": "c", "user_id": "u1", "metadata": {"x": NUMBER}}]}'.replace("NUMBER", number)
    refused(send(api, "POST", "/memories", body), "memories[0].metadata")
    assert Memory.objects.count() == 0


def test_metadata_at_every_limit_is_stored_and_returned_as_sent(api, settings):
    settings.ZEROMEMORY_MAX_METADATA_KEYS = 12
    settings.ZEROMEMORY_MAX_METADATA_STRING_CHARS = 100
    settings.ZEROMEMORY_MAX_METADATA_DEPTH = 4
    # 12 keys (a, k0–k8, b, c); 4 levels: the metadata, a's object, b's list, the object holding c.
    metadata = {"a": {"b": ["x" * 100, {"c": True}]}, **{f"k{i}": None for i in range(9)}}
    settings.ZEROMEMORY_MAX_METADATA_BYTES = len(json.dumps(metadata, separators=(",", ":")))
    response = store(api, metadata)
    assert response.status_code == 201, response.content
    assert api.get(f"/memories/{response.json()['ids'][0]}").json()["metadata"] == metadata


def test_one_oversized_item_refuses_the_whole_batch_and_names_it(api):
    body = {"memories": [MEMORY, {**MEMORY, "content": "second", "metadata": {"blob": "x" * 20_000}}]}
    refused(send(api, "POST", "/memories", json.dumps(body)), "memories[1].metadata")
    assert Memory.objects.count() == 0


# --- filters ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("states", ["raw", "archived", "raw", "consolidated"]),
    ("memory_types", ["episodic"] * 4),
    ("namespace", "n" * 101),
])
def test_a_search_filter_past_its_limit_is_refused(api, field, value):
    refused(send(api, "POST", "/search", json.dumps({"query": "port", field: value})), field)


def test_a_search_filter_of_a_million_states_is_refused(api):
    refused(send(api, "POST", "/search", json.dumps({"query": "port", "states": ["raw"] * 1_000_000})), "states")


@pytest.mark.parametrize("path", ["/memories", "/profile"])
def test_a_namespace_filter_longer_than_a_namespace_is_refused(api, path):
    refused(api.get(path, user_id="u1", namespace="n" * 101), "namespace")


def test_the_batch_limit_names_the_field(api, settings):
    settings.ZEROMEMORY_MAX_BATCH = 2
    refused(send(api, "POST", "/memories", json.dumps({"memories": [MEMORY] * 3})), "memories")
    assert Memory.objects.count() == 0


# --- the OpenAPI document --------------------------------------------------------------------------------------

def test_the_openapi_document_advertises_the_limits_the_server_enforces(settings):
    settings.ZEROMEMORY_MAX_METADATA_KEYS = 77
    settings.ZEROMEMORY_MAX_METADATA_STRING_CHARS = 555
    schemas = ninja_api.get_openapi_schema()["components"]["schemas"]
    metadata = schemas["MemoryIn"]["properties"]["metadata"]
    assert metadata["type"] == "object" and metadata["maxProperties"] == 77
    assert metadata["propertyNames"] == {"maxLength": 200}
    assert metadata["additionalProperties"] == {"maxLength": 555}
    assert "ZEROMEMORY_MAX_METADATA_BYTES" in metadata["description"]
    search = schemas["SearchIn"]["properties"]
    assert search["states"]["maxItems"] == 3 and search["namespace"]["anyOf"][0]["maxLength"] == 100
