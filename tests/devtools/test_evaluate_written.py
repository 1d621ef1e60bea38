"""How well merged texts are written (zeromem/devtools/evaluation/written.py): cross-session joins, orphaned
referents and content-free memories, by their fixed definitions."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.text import drop_speaker, sentences
from zeromem.devtools.evaluation.written import Merged, Source, content_free, cross_session_joins, orphaned_referents
from zeromem.language.readers import reader

SAID = datetime(2023, 5, 1, 18, 0, tzinfo=UTC)


def source(text: str, at: datetime = SAID) -> Source:
    return Source(uuid.uuid4(), at, tuple(sentences(drop_speaker(text))))


def merged(text: str, *sources: Source) -> Merged:
    return Merged(uuid.uuid4(), text, sources)


def joins(*texts: Merged) -> list[str]:
    return cross_session_joins(texts, reader("default"), embed_texts)


@pytest.mark.django_db
def test_a_merge_of_unrelated_sentences_said_days_apart_is_a_cross_session_join():
    puppy, oslo = source("Mel: I adopted a puppy named Toby."), source("Mel: My sister lives in Oslo.",
                                                                       SAID + timedelta(days=3))
    text = "Mel: I adopted a puppy named Toby. My sister lives in Oslo."

    assert joins(merged(text, puppy, oslo)) == [text]
    assert joins(merged(text, puppy, source("Mel: My sister lives in Oslo.", SAID + timedelta(hours=2)))) == []


@pytest.mark.django_db
def test_sentences_about_the_same_attribute_may_join_across_sessions():
    bill = source("Mel: My phone bill is $80.")
    raised = source("Mel: They raised my phone bill to $95.", SAID + timedelta(days=30))

    assert joins(merged("Mel: My phone bill is $80. They raised my phone bill to $95.", bill, raised)) == []


@pytest.mark.django_db
def test_only_kept_sentences_join():
    puppy = source("Mel: I adopted a puppy named Toby.")
    oslo = source("Mel: My sister lives in Oslo.", SAID + timedelta(days=3))

    assert joins(merged("Mel: I adopted a puppy named Toby.", puppy, oslo)) == []


def test_a_pronoun_whose_antecedent_sentence_was_dropped_is_orphaned():
    doctor = source("Mel: What did the doctor say? They told me to walk more. I walk daily now.")

    assert orphaned_referents([merged("Mel: They told me to walk more.", doctor)]) == [
        "What did the doctor say? → They told me to walk more."]
    assert orphaned_referents([merged("Mel: What did the doctor say? They told me to walk more.", doctor)]) == []


def test_a_first_person_opener_a_dropped_thanks_or_an_it_standing_for_a_clause_orphans_nothing():
    walk = source("Mel: What did the doctor say? I walk daily now.")
    thanks = source("Mel: Thanks a bunch! It helps me keep track of my ideas.")
    clause = source("Mel: My town opened a shelter. It's important to help people find what they need.")

    assert orphaned_referents([merged("Mel: I walk daily now.", walk),
                               merged("Mel: It helps me keep track of my ideas.", thanks),
                               merged("Mel: It's important to help people find what they need.", clause)]) == []


def test_a_text_with_no_statement_and_no_verb_taking_a_thing_is_content_free():
    texts = {uuid.uuid4(): text for text in (
        "Gina: Believe in yourself and keep pushing.", "Gina: I'll see you around! That's so cool!",
        "Gina: I love that painting.", "Gina: I'm keen on counseling.", "Gina: I swim twice a week.",
        "Gina: Did you buy the red car?")}

    assert content_free(texts) == ["Gina: Believe in yourself and keep pushing.",
                                   "Gina: I'll see you around! That's so cool!", "Gina: Did you buy the red car?"]
