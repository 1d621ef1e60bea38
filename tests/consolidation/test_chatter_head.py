"""Clustering archives the pep talk and platitudes the learned chatter head calls chatter (on the stored MiniLM
vectors, past its strict threshold), never a turn that states a value or gives an account."""

from __future__ import annotations

import pytest

from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import LedgerEntry
from tests.factories import HOUR, ingest, policy_set
from zeromem.models import Memory

PEP_TALK = ["Melanie: Keep up the great work, you're doing amazing!",
            "Melanie: Family is everything, it gives us strength.",
            "Melanie: Remember that you're not alone in this journey."]
ACCOUNTS = ["Caroline: They were awestruck and humbled.",  # a main verb in the past
            # a subject joined with the first person
            "Caroline: My husband and I are trying to be as good a family as my parents were!",
            "Caroline: I adopted a beagle called Toby last week."]  # a value (and both of the above)


def conversation(tenant, three_days_ago):
    turns = [text for pair in zip(ACCOUNTS, PEP_TALK, strict=True) for text in pair]
    ids = ingest(tenant, turns, entities=(), session="s1", created_at=three_days_ago)
    ingest(tenant, "Caroline: Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    return ids[1::2], ids[0::2]


@pytest.mark.django_db(transaction=True)
def test_pep_talk_the_head_calls_chatter_is_archived_restorably_and_accounts_stay(tenant, three_days_ago):
    pep_talk, accounts = conversation(tenant, three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert {m.archive_reason for m in Memory.objects.filter(id__in=pep_talk)} == {"uninformative"}
    assert not Memory.objects.filter(id__in=accounts, state="archived").exists()
    entry = LedgerEntry.objects.get(run_id=run.id, action="archive.uninformative")
    assert entry.undoable and set(entry.memory_ids) >= {str(i) for i in pep_talk}
    # Nothing the pep talk said is written as knowledge.
    written = " ".join(Memory.objects.filter(tenant=tenant, memory_type="semantic").values_list("content", flat=True))
    assert "great work" not in written and "strength" not in written


@pytest.mark.django_db(transaction=True)
def test_with_the_head_off_the_small_talk_grammar_alone_decides(tenant, three_days_ago):
    policy_set(tenant, {"merging": {"chatter_head": False}})
    pep_talk, _ = conversation(tenant, three_days_ago)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert not Memory.objects.filter(id__in=pep_talk, state="archived").exists()


@pytest.mark.django_db(transaction=True)
def test_the_head_never_reads_another_embedders_vectors(tenant, three_days_ago, settings):
    settings.ZEROMEMORY_EMBEDDING_MODEL = "builtin:hash"  # 384 dimensions too, meaning nothing to the head
    pep_talk, _ = conversation(tenant, three_days_ago)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert not Memory.objects.filter(id__in=pep_talk, state="archived").exists()


@pytest.mark.django_db(transaction=True)
def test_a_question_and_the_reply_after_it_are_one_exchange_never_chatter(tenant, three_days_ago):
    reply = "Melanie: Yeah, awesome! So glad to be part of it."  # the head calls it chatter, alone
    # After a statement the reply is pep talk; after a question it is the answer ("Are you joining…?" "Yeah…").
    [after_statement] = ingest(tenant, ["Caroline: The choir sang at the town hall.", reply], entities=(),
                               session="s1", created_at=three_days_ago)[1:]
    asked, answer = ingest(tenant, ["Caroline: Are you joining the choir concert?", reply], entities=(),
                           session="s2", created_at=three_days_ago + HOUR)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert Memory.objects.get(id=after_statement).archive_reason == "uninformative"
    assert not Memory.objects.filter(id__in=[asked, answer], state="archived").exists()
