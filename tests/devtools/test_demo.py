"""`make demo` can be run again: each run shows its own results, and the previous demo key is replaced."""

from __future__ import annotations

import re

import pytest

from zeromem.devtools import demo
from zeromem.models import ApiKey

KEY = re.compile(r"zm_[\w-]+")


def run_demo() -> str:
    lines: list[str] = []
    demo.demo_run(say=lines.append)
    return "\n".join(lines)


@pytest.fixture
def bundled_sample(monkeypatch):
    monkeypatch.setattr(demo.locomo, "available", lambda: False)  # the small bundled conversation, not LoCoMo


@pytest.mark.django_db
def test_a_second_demo_run_shows_the_same_results_as_the_first(bundled_sample):
    first, second = run_demo(), run_demo()

    assert "stored 7 new memories" in first and "stored 7 new memories" in second
    assert "Erased the previous demo run" in second and "previous demo key is revoked" in second
    first_lines, second_lines = (KEY.sub("<key>", text).replace("; the previous demo key is revoked", "")
                                 .split("\n") for text in (first, second))
    assert [line for line in second_lines if not line.startswith("Erased")] == first_lines


@pytest.mark.django_db
def test_only_the_latest_demo_key_is_valid(bundled_sample):
    run_demo()
    run_demo()

    keys = ApiKey.objects.filter(tenant__name="demo", name="demo")
    assert keys.count() == 2 and keys.filter(revoked_at__isnull=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_demos_first_merges_are_informative():
    from zeromem.core import services
    from zeromem.devtools.evaluation.merges import is_empty, is_fragment

    if not demo.locomo.available():
        pytest.skip("LoCoMo data not found in ../shared/eval/locomo/ (the demo then uses its bundled sample)")
    data = demo.demo_data()
    tenant = services.tenant_get_or_create(name="demo")
    services.memories_import(tenant_id=tenant.id, batches=[data.items])
    lines: list[str] = []
    demo.demo_clustering(tenant=tenant, user_id=data.user_id, say=lines.append)
    merges = [line.strip().removeprefix("semantic: ") for line in lines if line.strip().startswith("semantic: ")]
    assert len(merges) == 3
    assert not [text for text in merges if is_empty(text) or is_fragment(text)], merges
