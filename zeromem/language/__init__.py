"""The language seam: every judgement about what English text means goes through a `Reader`.

Four judgements, each batched (a parse costs ~1.6 ms a sentence, and work is batched where it can be):
- `chatter`: says this sentence nothing a later question could ask about (a greeting, thanks, small talk)?
- `change`: does this sentence say that something the speaker had, did or was has ended or been replaced ("I gave up
  hot yoga.", "We sold the lake cabin.")? Such a statement retires an older one about the same thing without
  naming a new value;
- `same_attribute`: do two statements speak of the same attribute ("My phone bill is $80." / "They raised my phone
  bill to $95.": the phone bill), modifiers included ("the staging cluster" is not "the production cluster")?
- `relation`: does the newer statement replace the older one (`REPLACES`), contradict it (`CONTRADICTS`: another
  value of the same attribute said at the same time, for a person to decide), or do both stay true (`KEEPS`)?

Formats (splitting, tokens, numbers, dates, money, URLs, versions) stay rules elsewhere. Readers are named
(`zeromem.language.readers`): `rules`, the frozen word tables kept for comparison, and `default`, built on spaCy's
parse, the stored MiniLM vectors, values and time. This module holds only the interface, so any layer may import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

REPLACES, CONTRADICTS, KEEPS = "replaces", "contradicts", "keeps"
RELATIONS = (REPLACES, CONTRADICTS, KEEPS)
JUDGEMENTS = ("chatter", "change", "same_attribute", "relation")


@dataclass(frozen=True)
class Said:
    """A sentence as it was said: its text, when, and (where stored) its MiniLM vector and the parse features a
    reader stored for it (`Reader.features`: a memory is parsed once in its life, not each night). `alone`: the text
    is all its memory says, so the vector is of this sentence; a claim of a longer turn may carry the turn's vector,
    which says more ("Thanks! I appreciate your help. I'm gonna keep going and never quit.")."""

    text: str
    at: datetime
    vector: Sequence[float] | None = None
    features: Mapping[str, Any] | None = None
    alone: bool = True


class Reader(Protocol):
    name: str
    # The version of what `features` keeps: a memory whose stored parse is of another version is parsed again,
    # once (its next clustering run, or `manage.py reparse` after an upgrade), and read freshly until then.
    features_version: int

    def features(self, texts: Sequence[str]) -> list[dict[str, Any] | None]:
        """What the reader keeps of each text's parse, as JSON to store with the memory (None: nothing to keep)."""
        ...

    def keys(self, said: Sequence[Said]) -> list[frozenset[str]]:
        """What each statement is about, as index keys: only statements sharing a key are compared."""
        ...

    def chatter(self, said: Sequence[Said]) -> list[bool]: ...

    def change(self, said: Sequence[Said]) -> list[bool]:
        """Does each sentence say that something held before has ended or been replaced?"""
        ...

    def asks_now(self, question: str) -> bool:
        """Does the question ask what holds now ("How much is my rent?"), not what happened once ("When did I…")?"""
        ...

    def about_asked(self, question: str, said: Sequence[Said]) -> list[bool]:
        """Does each text speak of what the question asks about ("How many bikes do I own?": the bikes)?"""
        ...

    def same_attribute(self, pairs: Sequence[tuple[Said, Said]]) -> list[bool]: ...

    def relation(self, pairs: Sequence[tuple[Said, Said]]) -> list[str]:
        """Each pair is (older, newer); the answer is one of `RELATIONS`."""
        ...
