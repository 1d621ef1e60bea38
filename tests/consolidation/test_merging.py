"""Extractive merging: what a semantic memory keeps, drops and anchors. Pure, no database."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from consolidation.domain.merging import (
    Member,
    Said,
    anchor_dates,
    closing_question,
    concrete_values,
    condensed,
    fold_into,
    is_chatter,
    is_low_signal,
    is_uninformative,
    joined_length,
    keeps,
    meaning_of,
    merge_cluster,
    pack_passages,
    paraphrase_candidates,
    plain_openers,
    sentences,
    statements,
    topic_groups,
    topic_similarity,
)
from zeromem.core.adapters.embeddings import embedder_for
from zeromem.core.domain.text import split_speaker

MAY_8 = date(2023, 5, 8)


def merged_text(members, limit=400):
    return " ".join(chunk.text for chunk in merge_cluster(members, limit=limit))


def test_a_merged_memory_keeps_every_number_date_and_name_of_its_members():
    members = [
        Member("Ops: The billing-api timed out after 30 seconds on 3 March 2024; Priya rolled it back.", MAY_8),
        Member("Ops: billing-api timed out after 45 seconds on 3 March 2024, Priya rolled back.", MAY_8),
        Member("Ops: We raised the Redis limit from 512 MB to 1 GB for the billing-api.", MAY_8),
        Member("Ops: Thanks!", MAY_8),
    ]
    text = merged_text(members)
    for member in members:
        for sentence in sentences(split_speaker(member.text)[1]):
            if not is_low_signal(sentence):
                assert concrete_values(sentence) <= concrete_values(text), sentence
    for value in ("30", "45", "512", "1", "3 March 2024", "Priya", "Redis"):
        assert value in text


def test_near_duplicates_collapse_into_the_most_complete_statement():
    members = [Member("Caroline: I went to the LGBTQ support group.", MAY_8),
               Member("Caroline: I went to the LGBTQ support group and it was so powerful.", MAY_8)]
    text = merged_text(members)
    assert text == "Caroline: I went to the LGBTQ support group and it was so powerful."


def test_small_talk_and_bare_questions_are_dropped_but_facts_stay():
    members = [Member("Melanie: Hey Caroline! How are you? I signed up for a pottery class on Tuesdays.", MAY_8),
               Member("Melanie: Wow, great! My kids love the beach.", MAY_8)]
    text = merged_text(members)
    assert text == "Melanie: I signed up for a pottery class on Tuesdays. My kids love the beach."


MEMORIAL = Member("John: Last week we visited a military memorial with my kids. It made an impact on them.", MAY_8)


def test_a_member_the_text_keeps_less_than_half_of_is_not_retired_but_stays_as_it_was_said():
    """"They were awestruck and humbled." is too short to pass for a statement and leans on the question it
    answers: the merge may leave it out of its text, but then the text does not replace it."""
    members = [MEMORIAL, Member("John: They were awestruck and humbled.", MAY_8),
               Member("John: The memorial had a wall with the names of 20,000 soldiers.", MAY_8)]
    chunks = merge_cluster(members, limit=400)
    assert [c.members for c in chunks] == [[0, 2]]
    assert all(keeps(c.text, members[m].text) for c in chunks for m in c.members)
    assert not keeps(chunks[0].text, members[1].text)


def test_a_turn_the_text_leaves_out_that_says_something_is_not_cited_but_stays_as_it_was_said():
    members = [Member("Jon: I am opening a dance studio downtown next month with my savings.", MAY_8),
               Member("Jon: Yeah, awesome! Glad to be part of it.", MAY_8)]
    [chunk] = merge_cluster(members, limit=400)
    assert chunk.members == [0] and "Glad" not in chunk.text


def test_small_talk_that_says_nothing_is_cited_without_being_written():
    members = [Member("Jon: I am opening a dance studio downtown next month with my savings.", MAY_8),
               Member("Gina: Thanks so much!", MAY_8)]
    [chunk] = merge_cluster(members, limit=400)
    assert chunk.members == [0, 1] and "Thanks" not in chunk.text


def test_a_member_whose_questions_the_text_leaves_out_is_cited_by_the_text_keeping_its_statement():
    members = [Member("Jon: I am opening a dance studio downtown next month with my savings.", MAY_8),
               Member("Jon: I signed the lease today. Do you know a good flooring company for the dance studio? "
                      "Which one would install sprung floors?", MAY_8)]
    [chunk] = merge_cluster(members, limit=400)
    assert chunk.members == [0, 1] and "?" not in chunk.text


def test_a_member_that_only_reacts_and_asks_is_not_cited_by_a_text_without_its_question():
    members = [Member("Jon: My dance crew performed downtown last weekend and the video looks awesome.", MAY_8),
               Member("Gina: I finally opened my clothing store downtown last month.", MAY_8),
               Member("Gina: Wow, it looks awesome! Are they yours at the festival? They're so graceful!", MAY_8)]
    chunks = merge_cluster(members, limit=400)
    assert chunks and all(2 not in c.members for c in chunks)


def test_a_member_that_only_asks_is_not_glued_after_another_turn():
    """"Where in England was it?" asks about the other speaker's trip: written after the speaker's own concert it
    would read as asked of the concert. The turn stays as it was said."""
    members = [Member("John: Just last week I found a violin concert downtown that we all enjoyed with the kids.",
                      MAY_8),
               Member("John: Wow, that looks great! Where in England was it?", MAY_8)]
    chunks = merge_cluster(members, limit=400)
    assert chunks and all(1 not in c.members and "England" not in c.text for c in chunks)


def test_a_statement_another_memory_says_with_fewer_words_is_still_written():
    """"virtual" is in no sentence the other memory writes: by the lemmas `statements_lost` reads, it says too little
    of this statement for it to go."""
    said = statements([Member("Here are seven potential names for the fortune teller app: 1. Fortuneteller 2. Oracle",
                              MAY_8)])
    member = Member("Sure, here are seven potential names for the virtual fortune teller app: 1. Virtual "
                    "Fortuneteller 2. Oracle Online", MAY_8)
    [chunk] = merge_cluster([member], limit=400, said=said)
    assert "virtual fortune teller app" in chunk.text


def test_a_member_whose_statement_another_memory_already_says_is_not_retired_by_a_text_without_it():
    said = statements([Member("Jon: I am opening a dance studio downtown next month with my savings.", MAY_8)])
    members = [Member("Jon: I lost my job as a banker at the bank on Main Street.", MAY_8),
               Member("Jon: I am opening a dance studio downtown next month with my savings.", MAY_8)]
    chunks = merge_cluster(members, limit=400, said=said, redundancy=0.6)
    assert [c.members for c in chunks] == [[0]]


@pytest.mark.parametrize("sentence,anchored", [
    ("I went to a support group yesterday.", "I went to a support group yesterday (7 May 2023)."),
    ("I painted that sunrise last year!", "I painted that sunrise last year (2022)!"),
    ("We moved here 3 days ago.", "We moved here 3 days ago (5 May 2023)."),
    ("We're going camping next month.", "We're going camping next month (June 2023)."),
    ("I ran a charity race last weekend.", "I ran a charity race last weekend (the weekend before 8 May 2023)."),
    ("Already anchored yesterday (7 May 2023).", "Already anchored yesterday (7 May 2023)."),
    ("I got it the day before yesterday.", "I got it the day before yesterday."),  # counted from another date
    ("The vet saw him last Thursday.", "The vet saw him last Thursday (the Thursday before 8 May 2023)."),
    ("My tire went flat last Tue on the highway.",
     "My tire went flat last Tue (the Tuesday before 8 May 2023) on the highway."),
    ("The exam is next Wednesday.", "The exam is next Wednesday (the Wednesday after 8 May 2023)."),
    ("It is due the day after next Monday.", "It is due the day after next Monday."),  # counted from another date
    ("I rest on Sundays and last weekend too.",
     "I rest on Sundays and last weekend (the weekend before 8 May 2023) too."),  # no weekday said relative
])
def test_relative_dates_are_anchored_to_the_members_date(sentence, anchored):
    assert anchor_dates(sentence, MAY_8) == anchored


def test_no_merged_text_exceeds_the_limit_and_every_member_is_cited_once():
    members = [Member(f"Dev: Step {i} of the migration moved table t{i} with {i * 100} rows to the new cluster.",
                      MAY_8) for i in range(12)]
    chunks = merge_cluster(members, limit=200)
    assert len(chunks) > 1 and all(len(c.text) <= 200 for c in chunks)
    cited = sorted(m for c in chunks for m in c.members)
    assert cited == list(range(12))


def test_one_member_longer_than_the_limit_gets_a_text_of_its_own():
    long = Member("Dev: " + " ".join(f"Server {i} runs Postgres {i + 10}." for i in range(12)), MAY_8)
    chunks = merge_cluster([long, Member("Dev: The cache node runs Redis 7.", MAY_8)], limit=200, hard_limit=1000)
    assert [c.members for c in chunks] == [[0], [1]] and "Server 11 runs Postgres 21." in chunks[0].text


def test_a_member_longer_than_the_embedders_input_limit_stays_as_it_was_said():
    """Cut at `hard_limit`, its text would retire the member's last sentences with it: nothing cites it."""
    long = Member("Dev: " + " ".join(f"Server {i} runs Postgres {i + 10}." for i in range(40)), MAY_8)
    chunks = merge_cluster([long, Member("Dev: The cache node runs Redis 7 on port 6379.", MAY_8)], limit=200,
                           hard_limit=1000)
    assert all(0 not in c.members and len(c.text) <= 1000 for c in chunks)


def test_a_cluster_of_pure_small_talk_writes_no_text():
    assert merge_cluster([Member("Ana: Thanks!", MAY_8), Member("Ana: Thank you so much!", MAY_8)], limit=300) == []


@pytest.mark.parametrize("text,expected", [
    ("Ana: Thanks, Bo! Your support means a lot.", True), ("Wow, that's so cool! Take care, bye!", True),
    ("Bo: Thanks! I ran 10 km in Oslo yesterday.", False), ("Ana: We adopted a second cat named Miso.", False),
    ("I quit smoking.", False), ("My wife is pregnant.", False), ("I hate cilantro.", False), ("", False)])
def test_a_memory_is_uninformative_when_every_sentence_is_small_talk(text, expected):
    assert is_uninformative(text) is expected


def test_an_informative_sentence_starting_with_a_filler_word_is_kept():
    assert not is_low_signal("Yeah, we moved to Boston last year.")
    assert not is_low_signal("Did you finish the Berlin marathon in 2019?")
    assert is_low_signal("Thanks, Caroline!") and is_low_signal("How are you doing?")


# --- passages by topic (reflection) --------------------------------------------------------------------------

ALLERGY = "Maya: I'm allergic to peanuts, so please keep them out of the team lunch."
ALLERGY_2 = "Maya: I'm allergic to sesame too, so please keep it out of the team lunch."
CLIMBING = "Maya: I go climbing at the Boulder Lab every Tuesday evening after work."
CLIMBING_2 = "Maya: Climbing at the Boulder Lab on Tuesday evenings is my favourite part of the week."


def no_vectors(texts):
    return topic_similarity(texts, [None] * len(texts))


def test_lossless_merging_keeps_statements_that_differ_by_one_word():
    members = [Member(ALLERGY, MAY_8), Member(ALLERGY.replace("peanuts", "shellfish"), MAY_8)]
    assert "peanuts" not in merged_text(members)  # lossy by default: one word apart counts as a paraphrase
    lossless = " ".join(c.text for c in merge_cluster(members, limit=400, lossless=True))
    assert "peanuts" in lossless and "shellfish" in lossless


def test_topic_groups_put_statements_of_one_topic_together_and_never_chain_across_topics():
    texts = [ALLERGY, CLIMBING, ALLERGY_2, CLIMBING_2]
    assert topic_groups(no_vectors(texts), threshold=0.2) == [[0, 2], [1, 3]]
    assert topic_groups(no_vectors(texts), threshold=0.99) == [[0], [1], [2], [3]]


def test_statements_sharing_too_few_words_are_no_topic_whatever_the_vectors_say():
    same = [[1.0, 0.0], [1.0, 0.0]]  # an embedder that finds every chat line alike
    similarity = topic_similarity([ALLERGY, CLIMBING], [same[0], same[1]])
    assert similarity[0][1] == 0.0 and similarity[0][0] == 1.0


def test_a_passage_grows_an_earlier_one_of_its_topic_and_opens_its_own_otherwise():
    targets = [ALLERGY]
    texts = [ALLERGY_2, CLIMBING, CLIMBING_2]
    similarity = no_vectors([*targets, *texts])[len(targets):]
    homes, grown = fold_into(texts, similarity, targets, limit=350, threshold=0.2)
    assert homes == [0, 2, 2]  # sesame joins the allergy passage; the climbing ones open one together
    assert grown[0] == ALLERGY + " I'm allergic to sesame too, so please keep it out of the team lunch."
    assert grown[2].startswith(CLIMBING) and "favourite part" in grown[2] and grown[1] == ""


def test_a_passage_that_already_says_it_only_cites_and_none_grows_past_the_limit():
    homes, grown = fold_into([ALLERGY], no_vectors([ALLERGY, ALLERGY])[1:], [ALLERGY], limit=len(ALLERGY))
    assert homes == [0] and grown == [ALLERGY, ""]  # said already: cited, nothing appended
    homes, grown = fold_into([ALLERGY_2], no_vectors([ALLERGY, ALLERGY_2])[1:], [ALLERGY], limit=100,
                             threshold=0.2)
    assert homes == [1] and grown == [ALLERGY, ALLERGY_2]  # no room: a passage of its own


INCIDENT = "Liam noted the billing-api was migrated after 412 MB due to a missing index; alert raised to 80%."


def test_passages_that_fit_whole_pack_into_the_fullest_one_with_room_whatever_their_topic():
    texts = [ALLERGY, CLIMBING, INCIDENT]  # 74, 73 and 98 characters
    assert pack_passages(texts, limit=350) == {1: 2, 0: 2}  # the shortest first, into the fullest
    assert pack_passages(texts, limit=200) == {1: 2}  # then no room is left for the allergy


def test_earlier_passages_only_take_and_passages_kept_apart_neither_move_nor_take():
    texts = [ALLERGY, CLIMBING, INCIDENT]
    assert pack_passages(texts, limit=350, settled=2) == {2: 0}  # the two earlier ones stay; the new one joins
    assert pack_passages(texts, limit=350, settled=2, apart={0}) == {2: 1}
    assert pack_passages(texts, limit=350, apart={2}) == {1: 0}
    assert pack_passages(["", CLIMBING, ""], limit=350) == {}


def test_a_passage_refused_somewhere_tries_the_emptiest_home_next():
    texts = [ALLERGY, CLIMBING, INCIDENT, ALLERGY_2]
    assert pack_passages(texts, limit=400)[1] == 2
    assert pack_passages(texts, limit=400, refused={(1, 2)})[1] == 0  # the allergy is emptier than the sesame


def test_members_without_end_punctuation_stay_separate_sentences():
    lines = ["search p99 latency 381 ms", "payments deployed v2.14.3 (canary)", 'The pager said "SEV1!"',
             "search p99 latency 340 ms"]
    assert merged_text([Member(line, MAY_8) for line in lines]) == (
        'search p99 latency 381 ms. payments deployed v2.14.3 (canary). The pager said "SEV1!" '
        "search p99 latency 340 ms")


def by_meaning(members, vectors_of, threshold=0.85):
    """Merged text with the sentence vectors `vectors_of` gives the cluster's paraphrase candidates."""
    texts = sorted(paraphrase_candidates(members))
    meaning = meaning_of(texts, [vectors_of(t) for t in texts], threshold)
    return " ".join(chunk.text for chunk in merge_cluster(members, limit=400, meaning=meaning))


def minilm(text):
    return embedder_for("builtin:minilm", 384, 1, Path(settings.ZEROMEMORY_MODEL_CACHE_DIR)).embed_batch([text])[0]


def test_a_paraphrase_collapses_into_the_more_complete_sentence():
    members = [Member("Maya: I started learning to play the guitar with a teacher.", MAY_8),
               Member("Maya: I began taking guitar lessons.", MAY_8),
               Member("Maya: We paged the on-call engineer.", MAY_8)]
    assert "began taking guitar lessons" in merged_text(members)  # word overlap alone keeps both
    text = by_meaning(members, minilm)
    assert "I started learning to play the guitar with a teacher." in text
    assert "began taking guitar lessons" not in text
    assert "We paged the on-call engineer." in text


def test_a_paraphrase_carrying_a_value_in_other_words_is_a_statement_of_its_own():
    """"This spring" is a value: the sentence is a statement, and one that says it in other words does not write
    it (a merge never loses a statement on a judgement of meaning)."""
    members = [Member("Maya: I started learning to play the guitar this spring.", MAY_8),
               Member("Maya: This spring I began taking guitar lessons.", MAY_8)]
    text = by_meaning(members, minilm)
    assert "I started learning to play the guitar this spring." in text and "began taking guitar lessons" in text


def test_statements_giving_different_values_for_one_attribute_never_collapse():
    members = [Member("Maya: I ran 5 km in the park with Sam this morning.", MAY_8),
               Member("Maya: This morning I ran 10 km in the park with Sam.", MAY_8),
               Member("Maya: My sister Ana lives in Lisbon.", MAY_8),
               Member("Maya: My sister Ana lives in Porto.", MAY_8)]
    assert paraphrase_candidates(members) == set()  # no vector can make them one statement
    text = by_meaning(members, lambda _: np.ones(4), threshold=0.5)
    for value in ("5 km", "10 km", "Lisbon", "Porto"):
        assert value in text


def test_sentences_of_other_speakers_or_without_a_shared_word_are_never_compared():
    members = [Member("Maya: The garden party was lovely and relaxed.", MAY_8),
               Member("Sam: The garden party was lovely and relaxed.", MAY_8),
               Member("Maya: We grilled vegetables until sunset.", MAY_8)]
    assert paraphrase_candidates(members) == set()


def test_a_lone_episode_that_says_a_weekday_relative_to_its_day_is_written_with_it_anchored():
    """Nothing to trim, yet a date to anchor: "last Thursday" said on 8 May 2023 says when only beside that date."""
    text = condensed(Member("Mel: My sister ran her first marathon in Boston last Thursday.", MAY_8), limit=350)
    assert text == "Mel: My sister ran her first marathon in Boston last Thursday (the Thursday before 8 May 2023)."


def test_a_lone_episode_is_condensed_to_its_statements_with_dates_anchored():
    text = condensed(Member("Mel: Hey Caroline! So good to hear from you. I painted a sunset with my kids last week. "
                            "It was so fun, thanks!", MAY_8), limit=350, common_names=frozenset({"caroline"}))
    assert text == "Mel: I painted a sunset with my kids last week (the week before 8 May 2023)."


@pytest.mark.parametrize("text", [
    "Mel: I painted a sunset over the lake with my two kids at the cabin.",  # nothing to drop or anchor
    "Mel: Wow, that is amazing! What did you paint?",  # nothing left worth a memory
    "Deborah: Wow, thanks so much! It's great for reflection and self-care.",  # too thin for a memory of its own
    "Gina: Hah, yeah!) But really having a creative space for dancers is so important to me and my friends.",
])
def test_a_lone_episode_stays_as_it_is_when_condensing_gains_nothing_or_leaves_a_fragment(text):
    assert condensed(Member(text, MAY_8), limit=350) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("Mel: Wow, that's so cool! What did you paint?", True),
    ("Mel: How's it going?", True),
    ("Mel: Did you finish the 10k race in Denver?", False),  # a question with values may be what is remembered
    ("Mel: I quit smoking. How about you?", False),
])
def test_chatter_is_small_talk_around_questions_that_carry_no_value(text, expected):
    assert is_chatter(text) is expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("Wow, Mel, that's awesome!", True),
    ("That sounds so sweet, Nate!", True),
    ("That's Boston, Cal!", False),  # the person spoken to is no value; Boston is
    ("Caroline went to Paris, Mel!", False),
])
def test_the_name_of_the_person_spoken_to_is_no_value_worth_keeping_small_talk_for(sentence, expected):
    assert is_low_signal(sentence) is expected


@pytest.mark.parametrize("sentence", ["Let me know how it goes if you give it a shot!", "Have fun and let's chat soon.",
                                      "Don't forget to take it easy and look after yourself."])
def test_send_offs_without_a_value_are_small_talk(sentence):
    assert is_low_signal(sentence)
    assert not is_low_signal("Let's meet at the Blue Door cafe on 12 May.")


def test_a_merged_text_says_more_than_the_opener_of_a_remark():
    members = [Member("Maria: It's inspiring to be around people like that. Thanks!", MAY_8),
               Member("Maria: Wow, so cool!", MAY_8)]
    assert merge_cluster(members, limit=400) == []


def test_what_another_memory_already_says_is_not_written_again_and_a_denial_is_never_said_by_a_claim():
    said = statements([Member("Mel: I love painting sunsets at the beach.", date(2023, 5, 8))])
    members = [Member("Mel: I love painting. We went camping in the Rockies.", date(2023, 5, 8)),
               Member("Mel: I don't love painting sunsets.", date(2023, 5, 8))]
    [chunk] = merge_cluster(members, limit=350, said=said)
    assert chunk.text == "Mel: We went camping in the Rockies. I don't love painting sunsets."
    assert chunk.members == [0, 1]  # still cites both


def test_said_finds_every_statement_that_can_say_a_sentence_without_the_rest_of_the_store():
    store = [Member(f"Mel: I painted the old boathouse by the lake with my kids on day {i}.", MAY_8)
             for i in range(200)]
    store += [Member("Mel: I love painting sunsets at the beach.", MAY_8),
              Member("Mel: We went camping in the Rockies. It rained.", MAY_8),
              Member("Jon: I love painting sunsets at the beach.", MAY_8)]
    said = Said()
    said.add(statements(store))
    members = [Member("Mel: I love painting sunsets. We went camping in the Rockies.", MAY_8),
               Member("Mel: I don't love painting sunsets.", MAY_8)]
    near = said.near(statements(members), redundancy=0.6)
    assert {s.text for s in near} == {"I love painting sunsets at the beach.", "We went camping in the Rockies."}
    assert merge_cluster(members, limit=350, said=near, redundancy=0.6) == \
        merge_cluster(members, limit=350, said=statements(store), redundancy=0.6)


def test_two_texts_of_one_speaker_written_as_one_say_the_speaker_once():
    first, second = "Mel: I painted the old boathouse by the lake", "Mel: We went camping in the Rockies."
    [chunk] = merge_cluster([Member(first, MAY_8), Member(second, MAY_8)], limit=400)
    assert chunk.text == "Mel: I painted the old boathouse by the lake. We went camping in the Rockies."
    assert joined_length(first, second) == len(chunk.text)
    assert joined_length(first, "Jon: We went camping.") == len(f"{first}. Jon: We went camping.")


def test_an_opener_the_store_also_writes_in_lower_case_is_no_name_worth_keeping_small_talk_for():
    store = ["Mel: Gorgeous! The lake was gorgeous at dawn.", "Mel: LeBron is incredible. I saw LeBron play.",
             "Jon: Max! My dog Max loves the lake.", "Jon: Appreciate it. I appreciate the help with the move."]
    openers = plain_openers(store)
    assert {"gorgeous", "appreciate"} <= openers and not {"lebron", "max", "i"} & openers
    assert is_low_signal("Gorgeous!", openers) and is_low_signal("Appreciate it.", openers)
    assert not is_low_signal("LeBron is incredible.", openers) and not is_low_signal("Max!", openers)
    assert not is_low_signal("Gorgeous!")  # without the store, a capitalised opener may be a name


@pytest.mark.parametrize("said_on,anchored", [
    (date(2024, 1, 10), "summer 2023"),  # never the summer to come
    (date(2024, 7, 1), "summer 2023"),  # the summer under way is not over: the one before
    (date(2024, 9, 3), "summer 2024"),
])
def test_last_season_is_the_latest_one_over_when_it_was_said(said_on, anchored):
    assert anchor_dates("We went camping last summer.", said_on) == f"We went camping last summer ({anchored})."


def test_last_winter_said_in_january_is_the_winter_before():
    assert anchor_dates("last winter", date(2024, 1, 5)) == "last winter (winter 2022–2023)"
    assert anchor_dates("last winter", date(2024, 3, 5)) == "last winter (winter 2023–2024)"


def test_a_question_the_next_sentence_leans_on_is_kept_with_it():
    asked = Member("Mel: Did your doctor say anything about the diet? They could give you more exercise tips.", MAY_8)
    [chunk] = merge_cluster([asked, Member("Caro: I will ask my doctor about the diet and the gym.", MAY_8)],
                            limit=350)
    assert "Did your doctor say anything about the diet?" in chunk.text


def test_a_bare_question_nothing_leans_on_is_still_dropped():
    asked = Member("Mel: Did your doctor say anything? I started running three times a week.", MAY_8)
    [chunk] = merge_cluster([asked, Member("Caro: I run on Sundays with my sister in the park.", MAY_8)], limit=350)
    assert "doctor" not in chunk.text


def test_a_member_whose_words_were_all_dropped_is_cited_but_does_not_voice_the_text():
    members = [Member("Mel: I adopted a beagle named Max in 2021 from the shelter.", date(2023, 5, 1)),
               Member("Mel: Thanks!", date(2023, 5, 1)),
               Member("Mel: I adopted a beagle named Max in 2021.", date(2023, 5, 1))]
    [chunk] = merge_cluster(members, limit=350)
    assert sorted(chunk.members) == [0, 1, 2] and chunk.voiced == [0]


def test_a_statement_that_looks_like_small_talk_is_kept_and_never_archived():
    """"Saturday works for me!" opens like a reaction, yet carries a value by the parse: it is never archived, and
    as what works on Saturday is in the turn it answers (its subject left out), its turn stays out of the merge."""
    members = [Member("Audrey: Saturday works for me! Thanks!", MAY_8),
               Member("Audrey: I will bring snacks for the dog park meetup with my four dogs.", MAY_8)]
    assert merge_cluster(members, limit=350)[0].members == [1]
    assert not is_chatter("Audrey: Saturday works for me! Thanks!")
    assert is_chatter("Audrey: Thanks! See you!")


def test_a_sentence_with_a_value_is_not_dropped_for_one_that_lacks_it():
    members = [Member("Audrey: Cooking is definitely calming, it is my go-to way to relax.", MAY_8),
               Member("Audrey: Garlic is my go-to ingredient.", MAY_8)]
    assert "Garlic is my go-to ingredient." in merge_cluster(members, limit=350, redundancy=0.2)[0].text


def test_a_sentence_opening_with_its_value_keeps_it_however_the_verb_is_joined():
    """A word the store also writes in lower case is common, yet a sentence that opens with it is about it: "Coffee's
    the best." keeps its value (the parse's) as "Garlic is my go-to ingredient." does, the verb's contraction
    notwithstanding."""
    for said, word in (("Coffee's the best.", "coffee"), ("Pottery's the best.", "pottery")):
        members = [Member(f"Audrey: Morning! {said} I roast my own beans at home every weekend.", MAY_8),
                   Member("Audrey: I roast beans from Ethiopia in a small drum roaster on the balcony.", MAY_8)]
        text = " ".join(c.text for c in merge_cluster(members, limit=350, common_names=frozenset({word})))
        assert said in text, (said, text)


def test_members_of_a_thin_text_that_states_something_stay_out_of_the_merge():
    members = [Member("Mel: We hiked the ridge trail above the lake for six hours in the rain. The summit view over "
                      "the valley and the glacier was unreal. We camped by the river and cooked noodles on the stove. "
                      "On the way down my boots fell apart and I walked the last mile in socks.", MAY_8),
               Member("Mel: Buddy is my sidekick.", MAY_8)]
    chunks = merge_cluster(members, limit=280)
    assert all(1 not in chunk.members for chunk in chunks) and all("Buddy" not in c.text for c in chunks)


def test_a_cluster_that_says_nothing_writes_no_text_however_long_its_small_talk():
    members = [Member("Maria: Oh John, that sounds tough. I'm glad you're alright. Life does throw us some surprises, "
                      "doesn't it?", MAY_8),
               Member("Maria: Yeah, it's tough. Appreciate what you've got. You got through it - stay strong. Are "
                      "there any things you like to do to calm down during times like this?", MAY_8)]
    assert merge_cluster(members, limit=350) == []


def test_members_of_a_text_that_says_nothing_stay_as_they_were_said_beside_one_that_says_something():
    members = [Member("Mel: We hiked the ridge trail above the lake for six hours in the rain. The summit view over "
                      "the valley and the glacier was unreal. We camped by the river and cooked noodles on the stove. "
                      "On the way down my boots fell apart and I walked the last mile in socks.", MAY_8),
               Member("Mel: I'm glad you're alright. Yeah, it's tough. You got through it - stay strong. It's so "
                      "inspiring to see you staying optimistic even when things get tough.", MAY_8)]
    chunks = merge_cluster(members, limit=280)
    assert [c.members for c in chunks] == [[0]] and "stay strong" not in chunks[0].text


def test_a_date_the_store_also_writes_capitalised_is_still_a_value_worth_keeping_a_sentence_for():
    """"Tomorrow" opens sentences and is written in lower case too, so it counts among the store's plain openers;
    still it is a date by the parse, not a name, and the sentence carrying it is a statement."""
    members = [Member("Gina: Wow, Jon, you must be so excited! You've come so far since we last talked, and "
                      "tomorrow's gonna be a blast!", MAY_8),
               Member("Gina: Enjoy the good feels tomorrow, you earned it! The studio looks amazing.", MAY_8)]
    [chunk] = merge_cluster(members, limit=350, common_names=frozenset({"tomorrow", "jon", "gina"}))
    assert "You've come so far since we last talked" in chunk.text


def test_a_sentence_said_elsewhere_stays_where_the_next_one_leans_on_it():
    """Dropped as said by another memory, the thanks would leave "It" pointing at nothing."""
    said = statements([Member("John: Thanks for your care and kindness, Maria. It means a lot.", MAY_8)])
    leaning = Member("John: Thanks for your care, Maria. It's been tough but I'm trying to stay up. I've been looking "
                     "into jobs in the tech industry for a while now.", MAY_8)
    plain = Member("John: Thanks for your care, Maria. I've been looking into jobs in the tech industry for a while "
                   "now.", MAY_8)
    assert merge_cluster([leaning], limit=350, said=said, redundancy=0.6)[0].text.startswith("John: Thanks for your")
    assert "Thanks" not in merge_cluster([plain], limit=350, said=said, redundancy=0.6)[0].text


@pytest.mark.parametrize("answer", [
    "Noor: They're so gentle with the kids, and they love fresh carrots.",
    "Noor: Pepper and Miso! They're so gentle with the kids, and they love fresh carrots.",  # names, no argument
])
def test_a_member_pointing_at_what_another_turn_named_stays_out_of_the_merge(answer):
    """"They're so gentle with the kids." answers a question of another turn ("How are your rabbits?"): glued after
    the speaker's other sentences, "they" would point at whatever came before it there."""
    members = [Member("Noor: I repainted the garden shed green last weekend with my neighbour Sam.", MAY_8),
               Member(answer, MAY_8),
               Member("Noor: The shed now holds all my tools and the new lawn mower.", MAY_8)]
    [chunk] = merge_cluster(members, limit=350)
    assert "gentle" not in chunk.text and sorted(chunk.members) == [0, 2]


def test_a_reply_to_a_question_is_written_after_it_in_brackets_one_sentence_with_its_first():
    """"Unemployment in our community was the reason behind it." says what it is the reason for only after the
    question it answers: the text opens the reply with it, bracketed into the reply's first sentence, so no later
    merge of the text cuts the two apart."""
    asked = closing_question("Maria: That's really great of you. What sparked your decision to start the food drive?")
    members = [Member("John: Thanks, Maria. Unemployment in our community was the reason behind it.", MAY_8,
                      asked=asked),
               Member("John: We've been overwhelmed by the response and the volunteers at the food drive.", MAY_8)]
    [chunk] = merge_cluster(members, limit=350)
    assert chunk.text.startswith("John: (Maria: What sparked your decision to start the food drive?) Unemployment in "
                                 "our community was the reason behind it.")
    assert sentences(split_speaker(chunk.text)[1])[0].endswith("the reason behind it.")
    assert sorted(chunk.members) == [0, 1]


def test_a_reply_standing_for_what_the_question_named_is_merged_after_it_not_kept_apart():
    """"He's a German Shepherd." says something and leans on the turn before it: without that turn's question it stays
    out of the merge, as it was said; with it, the text writes it after the question."""
    answer = "Noor: He's a German Shepherd. He guards the shed and naps under the lawn mower."
    shed = Member("Noor: I repainted the garden shed green last weekend with my neighbour Sam.", MAY_8)
    alone = merge_cluster([shed, Member(answer, MAY_8)], limit=350)
    assert [c.members for c in alone] == [[0]] and "Shepherd" not in alone[0].text
    [chunk] = merge_cluster([shed, Member(answer, MAY_8, asked="Sam: What breed is Toby?")], limit=350)
    assert "(Sam: What breed is Toby?) He's a German Shepherd." in chunk.text and chunk.members == [0, 1]


def test_a_reply_written_after_its_question_is_written_whole():
    """Once the question opens it, nothing the reply says points at another turn: "They look so happy together."
    answers "How are the puppies doing?" as much as the sentence after it does, and stays with it."""
    answer = "Noor: They look so happy together. I walk them twice a day along the river."
    shed = Member("Noor: I repainted the garden shed green last weekend with my neighbour Sam.", MAY_8)
    [chunk] = merge_cluster([shed, Member(answer, MAY_8, asked="Sam: How are the puppies doing?")], limit=350)
    assert "(Sam: How are the puppies doing?) They look so happy together. I walk them twice a day" in chunk.text


@pytest.mark.parametrize("turn,question", [
    ("Maria: Yeah! What inspired you to go on the hike? [shares image: a photo of a trail]",
     "Maria: What inspired you to go on the hike?"),
    ("Maria: What inspired you to go on the hike? I loved the photos.", None),  # it closes with no question
    ("Maria: That's great! How about you?", None),  # it names nothing
    ("What inspired you to go on the hike?", None),  # no speaker: no exchange to read
])
def test_the_question_a_turn_closes_with_is_what_the_next_turn_answers(turn, question):
    assert closing_question(turn) == question


def test_a_question_the_text_writes_already_is_not_quoted_again():
    """Turns of one scope (an agent's user and assistant under one entity) may merge with the question itself."""
    question = "Sam: Which trail did you hike on Sunday?"
    members = [Member("Sam: I walked the dog around the lake on Sunday morning. Which trail did you hike on Sunday?",
                      MAY_8),
               Member("Noor: The ridge trail above the lake, six hours in the rain with my neighbour.", MAY_8,
                      asked=question)]
    [chunk] = merge_cluster(members, limit=350)
    assert chunk.text.count("Which trail did you hike on Sunday?") == 1


def test_a_member_saying_something_with_a_pronoun_inside_its_sentence_stays_out_of_the_merge():
    """"Yeah, I made them myself." answers "Did you make the tags?": "them" is not its first word, yet it stands for
    what the other turn named."""
    members = [Member("Noor: I repainted the garden shed green last weekend with my neighbour Sam.", MAY_8),
               Member("Noor: Yeah, I painted them myself with a stencil from the craft shop.", MAY_8),
               Member("Noor: The shed now holds all my tools and the new lawn mower.", MAY_8)]
    [chunk] = merge_cluster(members, limit=350)
    assert "stencil" not in chunk.text and sorted(chunk.members) == [0, 2]


def test_a_reaction_to_another_turn_is_left_out_of_the_text_and_its_member_cited():
    """"Looks like fun!" (its subject left out) and "I bet they look adorable!" react to the other speaker's photo;
    they say nothing, so the merge writes the rest of the turn without them and cites it."""
    members = [Member("Noor: I repainted the garden shed green last weekend with my neighbour Sam.", MAY_8),
               Member("Noor: Looks like fun! I bet they look adorable! I planted tulips along the shed in March.",
                      MAY_8)]
    [chunk] = merge_cluster(members, limit=350)
    assert "tulips" in chunk.text and "fun" not in chunk.text and "adorable" not in chunk.text
    assert sorted(chunk.members) == [0, 1]


def test_a_member_that_names_what_its_pronoun_stands_for_is_merged():
    members = [Member("Noor: I repainted the garden shed green last weekend with my neighbour Sam.", MAY_8),
               Member("Noor: I adopted two rabbits in spring. They love fresh carrots from the market.", MAY_8)]
    [chunk] = merge_cluster(members, limit=350)
    assert "They love fresh carrots" in chunk.text and sorted(chunk.members) == [0, 1]


def test_two_turns_pictures_are_two_pictures_however_alike_their_captions():
    members = [Member("Audrey: We walked to the lake on Sunday. [shares image: a photo of a bench looking at the "
                      "sunset]", MAY_8),
               Member("Audrey: My dogs loved the new trail by the river. [shares image: a photo of a bench in a "
                      "forest]", MAY_8)]
    [chunk] = merge_cluster(members, limit=400, redundancy=0.5)
    assert "sunset" in chunk.text and "forest" in chunk.text
