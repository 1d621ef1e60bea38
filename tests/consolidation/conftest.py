from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.factories import use_fake_llm
from zeromem.devtools.fake_llm import FakeLLM


@pytest.fixture
def fake_llm(settings: Any) -> Iterator[FakeLLM]:
    """A local OpenAI-compatible server the reflection model points at (the real litellm path runs)."""
    with FakeLLM() as server:
        use_fake_llm(settings, server)
        yield server
