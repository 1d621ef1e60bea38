"""What reflection leaves in profiles: third-person statements filed under whom they are about, items that fold
across runs, a summary composed within its limit, fewer semantic memories than episodes, and calls shared by
the small entities of one user (a bad part of a reply failing only its entity)."""

from __future__ import annotations

import json

import pytest

from consolidation.corrections.revert import run_revert
from consolidation.domain.insights import parts_from_messages
from consolidation.jobs.reflection import reflection_user_run_now
from consolidation.models import LedgerEntry
from consolidation.selectors import reflection_eligible_scopes
from profiles.models import MemoryProfile
from tests.factories import ALICE, DAY, ingest, ingest_entity, memory_input, reflect_entity
from zeromem.devtools.evaluation.profiles import third_person
from zeromem.devtools.fake_llm import extractive_answer
from zeromem.models import Memory, MemorySource

pytestmark = pytest.mark.usefixtures("hash_embedder")




def items_of(entity, tenant):
    profile = MemoryProfile.objects.get(tenant=tenant, user_id="u1", entity_id=entity)
    return profile, profile.preferences + profile.behaviors + profile.facts


def test_items_are_third_person_statements_and_family_facts_are_never_the_speakers_habits(tenant):
    ingest_entity(tenant, n=16)
    assert reflect_entity(tenant).status == "succeeded"
    profile, items = items_of("alice", tenant)
    assert items and all(third_person(i["statement"]) for i in items), [i["statement"] for i in items]
    assert not any(i["statement"].startswith("Alice:") for i in items)
    own = [i["statement"] for i in profile.preferences + profile.behaviors]
    assert not any("daughter" in s or "husband" in s for s in own)  # "My daughter Mia started violin lessons…"
    family = [i for i in profile.facts if "daughter" in i["statement"]]
    assert family and family[0]["statement"].startswith("Alice's daughter") and family[0]["category"] == "entity"
    assert any(i["statement"].startswith("Alice prefers green tea") for i in profile.preferences)


def test_a_statement_about_another_entity_of_the_user_goes_to_that_entitys_profile(tenant, now):
    texts = ["Melanie: Caroline really loves painting sunsets by the lake every weekend.",
             *[f"Melanie: I usually swim {n} laps at the community pool before work." for n in range(10, 21)]]
    ingest(tenant, [memory_input(text, user="u1", entity_id="Melanie", session=f"m{i}",
                                 created_at=now - (20 - i) * DAY) for i, text in enumerate(texts)]
           + [memory_input("Caroline: I adopted a grey cat named Pixel.", user="u1", entity_id="Caroline",
                           session="c1", created_at=now - 30 * DAY),
              memory_input("Current chat: hello", user="u1", session="now", created_at=now)])
    assert reflect_entity(tenant, "Melanie").status == "succeeded"
    _, caroline = items_of("Caroline", tenant)
    assert [i["statement"] for i in caroline] == ["Caroline really loves painting sunsets by the lake every weekend."]
    _, melanie = items_of("Melanie", tenant)
    assert not any("Caroline" in i["statement"] for i in melanie)


def test_an_item_said_again_in_later_weeks_folds_with_its_sources_and_grows_surer(tenant):
    confidences = []
    for week in range(3):
        ingest_entity(tenant, n=12, week=week)
        assert reflect_entity(tenant).status == "succeeded"
        _, items = items_of("alice", tenant)
        tea = [i for i in items if "green tea" in i["statement"]]
        assert len(tea) == 1  # folded, never duplicated
        confidences.append(tea[0]["confidence"])
    assert len(tea[0]["source_ids"]) == 3 and confidences[0] < confidences[1] < confidences[2]
    assert tea[0]["valid_from"] < tea[0]["last_seen"]  # said first in week 0, last in week 2


def test_the_summary_is_composed_from_the_strongest_items_within_400_characters(tenant):
    ingest_entity(tenant, n=30)
    reflect_entity(tenant)
    profile, items = items_of("alice", tenant)
    assert 0 < len(profile.summary) <= 400
    strongest = max(items, key=lambda i: i["weight"])
    assert strongest["statement"].rstrip(".") in profile.summary
    assert "Alice:" not in profile.summary


def test_reflection_writes_fewer_semantic_memories_and_every_episode_stays_cited(tenant):
    memories = ingest_entity(tenant, n=15)
    run = reflect_entity(tenant)
    assert run.status == "succeeded" and run.reviewed == 15
    assert run.created <= 0.35 * 15
    assert not Memory.objects.filter(tenant=tenant, tags__contains=["digest"]).exists()
    cited = set(MemorySource.objects.filter(memory__tenant=tenant, memory__state="raw")
                .values_list("source_memory_id", flat=True))
    assert {m.id for m in memories} <= cited
    _, items = items_of("alice", tenant)
    carriers = Memory.objects.filter(id__in=[m for i in items for m in i["memory_ids"]])
    assert all(m.memory_type == "semantic" and m.state == "raw" for m in carriers)


def breaking(subject):
    """A model that answers every part well except `subject`'s, which it always gets wrong."""
    def answer(messages):
        reply = json.loads(extractive_answer(messages))
        for key, name, _ in parts_from_messages(messages):
            if name == subject:
                reply[key] = {"items": "not a list", "summary": 3}
        return json.dumps(reply)
    return answer


def test_small_entities_of_one_user_share_a_call_and_a_bad_part_fails_only_its_entity(tenant, fake_llm):
    alice = ingest_entity(tenant, n=12, entity="alice")
    bob = ingest_entity(tenant, n=12, entity="bob")
    carol = ingest_entity(tenant, n=12, entity="carol", user="u2")
    fake_llm.answer = breaking("bob")
    outcomes = reflection_user_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    runs = {o.run.entity_id: o.run for o in outcomes}
    first, repair = fake_llm.requests  # one shared call for both entities, and its one repair
    assert [name for _, name, _ in parts_from_messages(first["messages"])] == ["alice", "bob"]
    assert "carol" not in json.dumps(first)  # another user's memories never share a prompt
    assert runs["alice"].status == "succeeded" and runs["alice"].reviewed == 12
    assert runs["bob"].status == "failed" and "invalid output after one repair" in runs["bob"].error
    assert Memory.objects.filter(id__in=[m.id for m in alice], state="consolidated").count() == 12
    assert Memory.objects.filter(id__in=[m.id for m in bob + carol], state="raw").count() == 24
    assert not MemoryProfile.objects.filter(entity_id="bob").exists()
    charged = runs["alice"].prompt_tokens + runs["bob"].prompt_tokens
    assert charged == fake_llm.prompt_tokens and runs["alice"].llm_calls + runs["bob"].llm_calls == 2


def passages_now(tenant):
    return {m.id: (m.content, m.metadata["source_count"], set(m.source_links.values_list("source_memory_id",
                                                                                        flat=True)))
            for m in Memory.objects.filter(tenant=tenant, state="raw", tags__contains=["condensed"])}


@pytest.mark.django_db(transaction=True)
def test_a_later_week_grows_or_cites_the_passages_of_its_topics_and_an_undo_shrinks_them_back(tenant):
    ingest_entity(tenant, n=12)
    first = reflect_entity(tenant)
    before = passages_now(tenant)
    later = ingest_entity(tenant, n=12, week=1)  # the same statements again, a week later
    second = reflect_entity(tenant)
    assert second.status == "succeeded" and second.created < first.created
    after = passages_now(tenant)
    cited = set().union(*(links for _, _, links in after.values()))
    assert {m.id for m in later} <= cited  # every episode of the later week is cited
    grown = [i for i in before if after[i][1] > before[i][1]]
    assert grown and all(after[i][0].startswith(before[i][0]) for i in grown)  # appended to, never rewritten
    entry = LedgerEntry.objects.get(run=second, action="reflection")
    assert {g["id"] for g in entry.outputs["grown"]} == {str(i) for i in grown}
    run_revert(run_id=second.id, actor="test", reason="undo the later week")
    assert passages_now(tenant) == before
    assert Memory.objects.filter(id__in=[m.id for m in later], state="raw").count() == 12
    assert all(m.embedding is not None for m in Memory.objects.filter(id__in=grown))  # re-embedded after commit


def test_small_talk_that_makes_no_passage_is_still_cited(tenant):
    texts = ["Alice: Thanks so much!", "Alice: Haha, that's so cool!", *ALICE[:10]]
    memories = ingest_entity(tenant, n=12, texts=texts)
    assert reflect_entity(tenant).status == "succeeded"
    cited = set(MemorySource.objects.filter(memory__state="raw").values_list("source_memory_id", flat=True))
    assert {m.id for m in memories} <= cited
    assert Memory.objects.filter(id__in=[m.id for m in memories], state="consolidated").count() == 12


# A turn that leans on another ("it" is the photo the other speaker asked about): no merged text may hold it, so
# no passage says it.
LEANING = "Alice: Thanks! I took it at the beach in Lisbon last month."
PLACES = ["beach in Lisbon", "harbour in Porto", "lake in Geneva", "market in Seville", "castle in Prague",
          "bridge in Budapest", "canal in Utrecht", "park in Vienna", "square in Krakow", "cliff in Dover"]


def test_a_turn_no_passage_can_say_stays_active_read_once_and_an_undo_makes_it_unread(tenant):
    memories = ingest_entity(tenant, n=12, texts=[LEANING, "Alice: Thanks so much!", *ALICE[:10]])
    leaning, chatter = memories[0], memories[1]
    run = reflect_entity(tenant)
    assert run.status == "succeeded"
    leaning.refresh_from_db()
    assert leaning.state == "raw" and leaning.reflected_at is not None  # what it said is still said, by itself
    assert Memory.objects.filter(id__in=[m.id for m in memories[1:]], state="consolidated").count() == 11
    assert Memory.objects.filter(id=chatter.id, cited_by_links__memory__state="raw").exists()
    forced = reflection_eligible_scopes(policies={}, tenant_id=tenant.id, force=True)
    assert "alice" not in [s.entity_id for s in forced]  # read once: never sent again
    run_revert(run_id=run.id, actor="test", reason="undo")
    leaning.refresh_from_db()
    assert leaning.state == "raw" and leaning.reflected_at is None
    assert Memory.objects.filter(id__in=[m.id for m in memories], state="raw").count() == 12


# A reaction that asks what a photo shows: no statement, yet no small talk either (what the dancers are is in it).
REACTION = "Alice: Wow, it looks awesome! Are they yours at the festival? They're so graceful!"


def test_a_reaction_no_passage_says_stays_active_while_small_talk_is_still_retired(tenant):
    memories = ingest_entity(tenant, n=12, texts=[REACTION, "Alice: Thanks so much!", *ALICE[:10]])
    reaction, chatter = memories[0], memories[1]
    assert reflect_entity(tenant).status == "succeeded"
    reaction.refresh_from_db()
    assert reaction.state == "raw" and reaction.reflected_at is not None
    assert Memory.objects.filter(id=chatter.id, state="consolidated", cited_by_links__memory__state="raw").exists()


def test_a_batch_of_turns_no_passage_can_say_gets_no_digest_that_would_retire_them(tenant):
    memories = ingest_entity(tenant, n=10, texts=[f"Alice: Thanks! I took it at the {p} last month." for p in PLACES])
    assert reflect_entity(tenant).status == "succeeded"
    assert Memory.objects.filter(id__in=[m.id for m in memories], state="raw").count() == 10
    assert not Memory.objects.filter(tenant=tenant, tags__contains=["digest"]).exists()


@pytest.mark.django_db(transaction=True)
def test_undoing_a_week_a_later_week_added_to_is_refused_and_loses_nothing(tenant):
    ingest_entity(tenant, n=12)
    first = reflect_entity(tenant)
    later = ingest_entity(tenant, n=12, week=1)
    assert reflect_entity(tenant).status == "succeeded"
    result = run_revert(run_id=first.id, actor="test", reason="undo the first week only")
    assert result.refused  # the later week's episodes rest on the first week's passages
    cited = set(MemorySource.objects.filter(memory__state="raw").values_list("source_memory_id", flat=True))
    assert {m.id for m in later} <= cited


def test_undoing_a_run_never_overwrites_a_later_change_of_a_profile_it_filed_into(tenant, now):
    melanie = ["Melanie: Caroline really loves painting sunsets by the lake every weekend.",
               *[f"Melanie: I usually swim {n} laps at the community pool before work." for n in range(10, 21)]]
    ingest(tenant, [memory_input(text, user="u1", entity_id="Melanie", session=f"m{i}",
                                 created_at=now - (40 - i) * DAY) for i, text in enumerate(melanie)]
           + [memory_input("Current chat: hello", user="u1", session="now", created_at=now)])
    ingest_entity(tenant, n=12, entity="Caroline", texts=[t.replace("Alice", "Caroline") for t in ALICE], now=now)
    routed = reflect_entity(tenant, "Melanie")  # files "Caroline really loves painting…" under Caroline
    assert reflect_entity(tenant, "Caroline").status == "succeeded"  # then Caroline's own items change her profile
    _, before = items_of("Caroline", tenant)
    result = run_revert(run_id=routed.id, actor="test", reason="undo Melanie's run")
    assert any("profile.update" in refused for refused in result.refused), (result.refused, result.undone)
    _, after = items_of("Caroline", tenant)
    assert after == before  # Caroline's own later items survive
    assert not items_of("Melanie", tenant)[1]  # Melanie's own profile, which nothing changed since, is undone
