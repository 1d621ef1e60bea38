"""The `rules` reader's tables for reflection's insights, used by `consolidation.domain.insights`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

import re

INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|prompt|rules|above)\b|\bsystem prompt\b|"
    r"\byou are now\b|\bas an ai\b|\blanguage model\b", re.I)

VAGUE = re.compile(r"^(?:the )?(?:user|subject|they|he|she) (?:talked|spoke|said|mentioned|discussed|"
                   r"asked|chatted)\b", re.I)
