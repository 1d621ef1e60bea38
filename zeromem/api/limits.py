"""Limits on the free-form JSON a client sends (a memory's `metadata`): its size, nesting, keys and strings.

Every other field has a fixed type and a length in its schema; `metadata` is "any JSON object", stored as is and
returned in every list and search answer, so without these a single request could park megabytes in every page
of results. The limits are settings (ZEROMEMORY_MAX_METADATA_*, zeromem/settings.py; only the byte cap is read
from the environment), read when a request is validated and when the OpenAPI document is built, so the document
advertises what the server enforces.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Annotated, Any

from django.conf import settings
from ninja import Field
from pydantic import AfterValidator

# A metadata key is a name, held to the length of every other name the API takes (user_id, entity_id, ...).
METADATA_KEY_CHARS = 200


@dataclass(frozen=True)
class JsonLimits:
    max_bytes: int  # the value as compact JSON, UTF-8 encoded
    max_depth: int  # the object itself is depth 1; each object or list inside adds one
    max_keys: int  # keys of every object inside, counted together
    max_string_chars: int  # each string value, in a list or an object
    max_key_chars: int


def metadata_limits() -> JsonLimits:
    return JsonLimits(max_bytes=settings.ZEROMEMORY_MAX_METADATA_BYTES,
                      max_depth=settings.ZEROMEMORY_MAX_METADATA_DEPTH,
                      max_keys=settings.ZEROMEMORY_MAX_METADATA_KEYS,
                      max_string_chars=settings.ZEROMEMORY_MAX_METADATA_STRING_CHARS,
                      max_key_chars=METADATA_KEY_CHARS)


def json_limit_broken(value: Any, *, limits: JsonLimits) -> str | None:
    """The first limit `value` breaks, in words; None when it keeps them all. The walk is iterative and stops
    past the depth limit, so a deeply nested value costs neither the stack nor time; the size is measured only
    once the shape is known to be within bounds."""
    keys = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, (dict, list)) and depth > limits.max_depth:
            return f"is nested deeper than {limits.max_depth} levels"
        if isinstance(node, dict):
            keys += len(node)
            if keys > limits.max_keys:
                return f"has more than {limits.max_keys} keys (nested objects' keys counted too)"
            if any(len(key) > limits.max_key_chars for key in node):
                return f"has a key longer than {limits.max_key_chars} characters"
            pending.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            pending.extend((child, depth + 1) for child in node)
        elif isinstance(node, str) and len(node) > limits.max_string_chars:
            return f"has a string longer than {limits.max_string_chars} characters"
        elif isinstance(node, float) and not math.isfinite(node):
            return "has a number JSON cannot hold (NaN or Infinity)"
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > limits.max_bytes:
        return f"is {size} bytes as JSON, more than {limits.max_bytes}"
    return None


def metadata_within_limits(value: dict[str, Any]) -> dict[str, Any]:
    broken = json_limit_broken(value, limits=metadata_limits())
    if broken is not None:
        raise ValueError(f"metadata {broken}")
    return value


def advertise_metadata_limits(schema: dict[str, Any]) -> None:
    """What JSON Schema can say of the limits, in the OpenAPI document: property-based clients (schemathesis)
    generate values on both sides of them. Depth, size and the total of nested keys are in the description."""
    limits = metadata_limits()
    schema.update(maxProperties=limits.max_keys, propertyNames={"maxLength": limits.max_key_chars},
                  additionalProperties={"maxLength": limits.max_string_chars})


# A memory's metadata: any JSON object within the limits above. For every schema that takes metadata.
Metadata = Annotated[dict[str, Any], AfterValidator(metadata_within_limits)]


def metadata_field() -> Any:
    return Field(default_factory=dict, json_schema_extra=advertise_metadata_limits, description=(
        "Any JSON object, stored and returned as is, within the deployment's limits: at most "
        "ZEROMEMORY_MAX_METADATA_BYTES (16,384) bytes as compact UTF-8 JSON, ZEROMEMORY_MAX_METADATA_DEPTH (10) "
        "levels of nesting, ZEROMEMORY_MAX_METADATA_KEYS (256) keys counted at every depth, keys of at most 200 "
        "characters and strings of at most ZEROMEMORY_MAX_METADATA_STRING_CHARS (4,000)."))
