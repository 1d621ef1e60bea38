"""Statements and the ones consolidation lost (zeromem/devtools/evaluation/statements.py): what a statement is, by
the parse, and which ones no active memory states any more and no retirement explains."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import DAY, ingest
from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.devtools.evaluation.statements import lost, source_statements
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType


def statements_of(*texts: str) -> list[tuple[str, frozenset[str]]]:
    return [(s.text, s.values) for s in source_statements({uuid.uuid4(): text for text in texts})]


def test_a_frequency_is_a_value():
    assert statements_of("Mel: I swim twice a week.") == [("I swim twice a week.", frozenset({"twice a week"}))]


def test_numbers_places_and_dates_are_values():
    assert statements_of("Jon: I moved to Lisbon in 2021 with my 3 kids.") == [
        ("I moved to Lisbon in 2021 with my 3 kids.", frozenset({"lisbon", "2021", "3"}))]


def test_a_question_a_greeting_and_thanks_are_no_statement():
    assert statements_of("Caroline: Hey Mel! Good to see you!", "Mel: Thanks, Caroline!",
                         "Mel: How many kids do you have?", "Mel: Did you go to Paris in May?") == []


def test_the_speakers_names_and_the_addressee_are_no_value():
    assert statements_of("Jon: That is really great Gina!", "Gina: Thanks Jon, I opened my store in Paris.") == [
        ("Thanks Jon, I opened my store in Paris.", frozenset({"paris"}))]


def test_a_date_spelled_like_a_speakers_name_is_still_a_value():
    assert statements_of("Maya: I moved in May.") == [("I moved in May.", frozenset({"may"}))]


def test_a_value_the_tagger_splits_inside_a_word_is_the_whole_word():
    assert statements_of("Maria: I set up a 5K charity run in our neighborhood.") == [
        ("I set up a 5K charity run in our neighborhood.", frozenset({"5k"}))]


def merged(tenant, text: str, sources: list[uuid.UUID], *, now, source_type: str = "consolidated") -> Memory:
    """Arrange what a clustering run leaves behind (the run itself is tested in tests/consolidation): a semantic
    memory citing its sources, which leave the active store."""
    memory = Memory.objects.create(tenant=tenant, user_id="u1", memory_type=MemoryType.SEMANTIC, content=text,
                                   content_hash=uuid.uuid4().hex, created_at=now,
                                   metadata={"source_type": source_type})
    for source in Memory.objects.filter(id__in=sources):
        MemorySource.objects.create(memory=memory, source=source, source_memory_id=source.id,
                                    source_content_hash=source.content_hash)
    Memory.objects.filter(id__in=sources).update(state=MemoryState.CONSOLIDATED)
    return memory


SWIM = "Mel: I swim twice a week at the lake."
RENT = "Mel: My rent is $1,400 a month since we moved to Lisbon."
BAND = "Mel: Oh wow! I play bass in a jazz trio called Blue Fig."


@pytest.fixture
def sources(tenant, now) -> list[uuid.UUID]:
    return ingest(tenant, [SWIM, RENT, BAND], embed=False, created_at=now - DAY)


@pytest.mark.django_db
def test_a_statement_still_active_in_its_own_memory_is_not_lost(tenant, sources):
    assert lost(tenant.id) == []


@pytest.mark.django_db
def test_a_statement_dropped_from_every_active_memory_is_lost(tenant, sources, now):
    swim, rent, band = sources
    merged(tenant, "Mel: I play bass in a jazz trio called Blue Fig. My rent went up.", [swim, rent, band], now=now)

    assert sorted(s.text for s in lost(tenant.id)) == ["I swim twice a week at the lake.",
                                                       "My rent is $1,400 a month since we moved to Lisbon."]
    assert lost(tenant.id, user_id="someone else") == []


@pytest.mark.django_db
def test_a_statement_kept_verbatim_in_a_merged_memory_is_not_lost(tenant, sources, now):
    swim, rent, band = sources
    merged(tenant, "Mel: I swim twice a week at the lake. My rent is $1,400 a month since we moved to Lisbon "
                   "(May 2023). I play bass in a jazz trio called Blue Fig.", [swim, rent, band], now=now)

    assert lost(tenant.id) == []


@pytest.mark.django_db
def test_a_value_written_inside_a_word_is_stated_by_a_memory_keeping_it_verbatim(tenant, now):
    run = ingest(tenant, "Maria: Last weekend I set up a 5K charity run in our neighborhood.", embed=False,
                 created_at=now - DAY)
    merged(tenant, "Maria: Last weekend I set up a 5K charity run in our neighborhood. It raised $900.", run, now=now)

    assert lost(tenant.id) == []


@pytest.mark.django_db
def test_a_value_ending_in_an_abbreviation_point_is_stated_by_a_memory_anchoring_it(tenant, now):
    """"last Wed." is the words "last wed": the point ends the sentence, and a merge writing the date it stands for
    after it ("last Wed (the Wednesday before …).") still says it."""
    run = ingest(tenant, "Mel: I felt unwell, so I made an appointment with a doctor last Wed.", embed=False,
                 created_at=now - DAY)
    assert statements_of("Mel: I felt unwell, so I made an appointment with a doctor last Wed.")[0][1] == {"last wed"}
    merged(tenant, "Mel: I felt unwell, so I made an appointment with a doctor last Wed (the Wednesday before 8 May "
                   "2023).", run, now=now)

    assert lost(tenant.id) == []


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "written"), [
    ("I've seen a big difference: last month's bill was lower than the previous month's.",
     "I've seen a big difference: last month (April 2023)'s bill was lower than the previous month's."),
    ("I'm going to Denver for 4 days, from next Wednesday to Sunday.",
     "I'm going to Denver for 4 days, from next Wednesday (the Wednesday after 7 May 2023) to Sunday."),
])
def test_a_value_with_a_date_anchored_inside_it_is_still_stated(tenant, now, said, written):
    """A merge writes the date a relative phrase stands for right after the phrase, which may end inside a longer
    value ("last month's", "next Wednesday to Sunday"): the value is still said."""
    run = ingest(tenant, f"Kim: {said}", embed=False, created_at=now - DAY)
    merged(tenant, f"Kim: {written}", run, now=now)

    assert lost(tenant.id) == []


@pytest.mark.django_db
def test_a_value_kept_without_its_sentence_is_still_lost(tenant, sources, now):
    swim, _, _ = sources
    merged(tenant, "Mel: Twice a week is a lot.", [swim], now=now)

    assert [s.text for s in lost(tenant.id)] == ["I swim twice a week at the lake."]


@pytest.mark.django_db
def test_a_statement_whose_memory_was_superseded_is_not_lost(tenant, sources):
    swim, _, _ = sources
    Memory.objects.filter(id=swim).update(state=MemoryState.ARCHIVED, archive_reason=SUPERSEDED)

    assert lost(tenant.id) == []


@pytest.mark.django_db
def test_a_statement_retired_as_a_claim_is_not_lost_and_the_rest_of_its_memory_still_counts(tenant, sources, now):
    _, rent, _ = sources
    claim = merged(tenant, "My rent is $1,400 a month since we moved to Lisbon.", [rent], now=now,
                   source_type="claim")
    Memory.objects.filter(id=claim.id).update(state=MemoryState.ARCHIVED, archive_reason=SUPERSEDED)
    assert lost(tenant.id) == []

    Memory.objects.filter(id=claim.id).update(content="My rent is high.")
    assert [s.text for s in lost(tenant.id)] == ["My rent is $1,400 a month since we moved to Lisbon."]


@pytest.mark.django_db
def test_a_memory_archived_as_small_talk_loses_its_statements(tenant, sources):
    _, _, band = sources
    Memory.objects.filter(id=band).update(state=MemoryState.ARCHIVED, archive_reason="uninformative")

    assert [s.text for s in lost(tenant.id)] == ["I play bass in a jazz trio called Blue Fig."]
