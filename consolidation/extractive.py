"""Extractive merging of a cluster's texts. No Django import; deterministic."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_SPACE = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[^\w\s]")


@dataclass
class Chunk:
    """One merged text and the indexes of the members it stands for (duplicates included)."""

    text: str
    members: list[int] = field(default_factory=list)


def normalised(text: str) -> str:
    return _SPACE.sub(" ", _NOT_WORD.sub("", text.lower())).strip()


def merge_texts(texts: Sequence[str], *, limit: int) -> list[Chunk]:
    """The distinct texts (duplicates after normalisation collapsed), in order, packed into as few chunks as
    fit within `limit` characters each; a text longer than the limit is cut at a word boundary."""
    home: dict[str, Chunk] = {}
    chunks: list[Chunk] = []
    for index, text in enumerate(texts):
        key = normalised(text) or text
        if key in home:
            home[key].members.append(index)
            continue
        piece = _cut(text.strip(), limit)
        if chunks and len(chunks[-1].text) + 1 + len(piece) <= limit:
            chunks[-1].text = f"{chunks[-1].text} {piece}"
        else:
            chunks.append(Chunk(piece))
        chunks[-1].members.append(index)
        home[key] = chunks[-1]
    return chunks


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit - 1].rsplit(" ", 1)[0] + "…"
