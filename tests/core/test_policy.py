"""The policy: defaults in code, a tenant's overrides laid over them and validated (pure, no database)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from zeromem.core.domain.policy import (
    DEFAULT_POLICY,
    LEGACY_KEYS,
    Policy,
    PolicyInvalid,
    policy_fields,
    policy_with_overrides,
)


def test_no_overrides_is_the_default_policy():
    assert policy_with_overrides(None) == policy_with_overrides({}) == DEFAULT_POLICY == Policy()


def test_an_override_changes_its_field_and_nothing_else():
    policy = policy_with_overrides({"clustering": {"cosine_floor": 0.7}, "canaries": {"enabled": False}})
    assert policy.clustering.cosine_floor == 0.7 and policy.canaries.enabled is False
    assert policy.clustering.max_size == DEFAULT_POLICY.clustering.max_size
    assert policy.search == DEFAULT_POLICY.search


def test_an_integer_is_a_number_where_a_float_is_expected():
    assert policy_with_overrides({"search": {"vector_weight": 1}}).search.vector_weight == 1.0


@pytest.mark.parametrize("key,section", sorted(LEGACY_KEYS.items()))
def test_the_flat_keys_tenants_set_before_sections_still_set_their_field(key, section):
    value = "incident/" if key == "window_tag_prefix" else 0.5
    policy = policy_with_overrides({key: value})
    assert getattr(getattr(policy, section), key) == value


def test_a_flat_key_and_its_section_combine():
    policy = policy_with_overrides({"window_tag_prefix": "incident/", "clustering": {"window_digest_min": 3}})
    assert (policy.clustering.window_tag_prefix, policy.clustering.window_digest_min) == ("incident/", 3)


@pytest.mark.parametrize("overrides,message", [
    ({"clusterin": {"cosine_floor": 0.6}}, "clusterin: unknown key (known: canaries, clustering, lifecycle,"),
    ({"clustering": {"cosine_flor": 0.6}}, "clustering.cosine_flor: unknown key (known: cosine_floor,"),
    ({"clustering": {"cosine_floor": "0.6"}}, "clustering.cosine_floor: Input should be a valid number (got '0.6')"),
    ({"clustering": {"cosine_floor": 1.5}}, "clustering.cosine_floor: Input should be less than or equal to 1"),
    ({"clustering": {"max_size": 4.5}}, "clustering.max_size: Input should be a valid integer"),
    ({"canaries": {"enabled": 1}}, "canaries.enabled: Input should be a valid boolean (got 1)"),
    ({"canaries": True}, "canaries: Input should be a valid dictionary"),
    ({"purge_days": "soon"}, "lifecycle.purge_days: Input should be a valid number"),
])
def test_an_unknown_key_or_a_wrong_value_is_refused_with_what_is_wrong(overrides, message):
    with pytest.raises(PolicyInvalid) as refused:
        policy_with_overrides(overrides)
    assert str(refused.value).startswith("invalid policy overrides: ") and message in str(refused.value)


def test_overrides_that_are_no_object_are_refused():
    with pytest.raises(PolicyInvalid, match="must be a JSON object"):
        policy_with_overrides(["clustering"])  # type: ignore[arg-type]


def test_a_policy_cannot_be_changed_once_made():
    with pytest.raises(ValidationError):
        DEFAULT_POLICY.clustering.cosine_floor = 0.1  # type: ignore[misc]


def test_a_recorded_policy_reads_back_as_the_same_policy():
    policy = policy_with_overrides({"merging": {"max_chars": 200}})
    assert policy_with_overrides(policy.as_json()) == policy


def test_every_field_says_what_it_does_and_no_variable_a_field_replaced_is_read_any_longer():
    settings = (Path(__file__).resolve().parents[2] / "zeromem" / "settings.py").read_text()
    fields = list(policy_fields())
    moved = [f.moved_from for f in fields if f.moved_from]
    assert len(moved) == len(set(moved)) >= 30 and all(f.description for f in fields)
    for variable in moved:
        assert re.fullmatch(r"ZEROMEMORY_[A-Z0-9_]+", variable) and variable not in settings, variable
