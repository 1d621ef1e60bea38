"""The frozen dev/test split every evaluation reads: tune on `dev`, report `test`.

An item goes to a split by a hash of its stable key (a LoCoMo conversation's sample_id, a LongMemEval question_id, an
update case's question, a labelled language item's topic), so the split is the same on every machine, never moves
when data is added, and also splits data this project has never seen (the held-back LongMemEval half, other
update cases) the same way. Changing SALT would unfreeze it: never do that."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

SALT = "zeromem-split-v1"
SPLITS = ("dev", "test")
ALL = "all"

T = TypeVar("T")


def split_of(key: str) -> str:
    return SPLITS[int(hashlib.sha256(f"{SALT}:{key}".encode()).hexdigest(), 16) % 2]


def in_split(items: Iterable[T], split: str, key: Callable[[T], str]) -> list[T]:
    """The items of one split (`ALL`: every item)."""
    return [item for item in items if split == ALL or split_of(key(item)) == split]
