"""The review queue's sentence diff: pure, no database."""

from __future__ import annotations

from consolidation.domain.sentence_diff import Fate, SentenceChange, sentence_diff, similarity

SIMILAR = 0.8


def fates(changes: list[SentenceChange]) -> list[tuple[str, str]]:
    return [(change.fate.value, change.text) for change in changes]


def test_a_merge_that_only_dropped_a_greeting_shows_one_dropped_sentence_and_the_rest_kept():
    sources = ["Hi there! The billing-api Redis cache filled up during the deploy.",
               "The billing-api Redis cache filled up during the deploy. On-call flushed the session keys."]
    result = ["The billing-api Redis cache filled up during the deploy.\nOn-call flushed the session keys."]

    changes = sentence_diff(sources, result, similar=SIMILAR)

    assert fates(changes) == [("dropped", "Hi there!"),
                              ("kept", "The billing-api Redis cache filled up during the deploy."),
                              ("kept", "The billing-api Redis cache filled up during the deploy."),
                              ("kept", "On-call flushed the session keys.")]


def test_a_sentence_the_result_rewords_is_kept_with_its_new_wording():
    changes = sentence_diff(["Alice: We moved the standup to 10am yesterday."],
                            ["We moved the standup to 10am yesterday (3 November 2026)."], similar=SIMILAR)

    assert changes == [SentenceChange(Fate.KEPT, "Alice: We moved the standup to 10am yesterday.",
                                      now="We moved the standup to 10am yesterday (3 November 2026).")]


def test_a_result_sentence_no_source_says_is_added():
    changes = sentence_diff(["Max retries is 3."], ["Max retries is 3.", "The worker runs hourly."], similar=SIMILAR)

    assert fates(changes) == [("kept", "Max retries is 3."), ("added", "The worker runs hourly.")]


def test_a_retired_claim_is_retired_and_the_remainder_kept():
    older = "My dog Luna comes along on every trail near Bergen. I've hiked 30 peaks in Norway so far."

    changes = sentence_diff([older], ["My dog Luna comes along on every trail near Bergen."],
                            retired=["I've hiked 30 peaks in Norway so far."], similar=SIMILAR)

    assert fates(changes) == [("kept", "My dog Luna comes along on every trail near Bergen."),
                              ("retired", "I've hiked 30 peaks in Norway so far.")]


def test_a_superseded_statement_is_retired_and_the_newer_one_added():
    changes = sentence_diff(["Max retries for the payment worker is 3."],
                            ["We bumped max retries for the payment worker to 8."],
                            retired=["Max retries for the payment worker is 3."], similar=SIMILAR)

    assert fates(changes) == [("retired", "Max retries for the payment worker is 3."),
                              ("added", "We bumped max retries for the payment worker to 8.")]


def test_different_statements_stay_apart_and_the_same_one_scores_one_whatever_its_case_and_period():
    assert similarity("The queue limit is 500 messages.", "the queue limit is 500 messages") == 1.0
    assert similarity("The queue limit is 500 messages.", "Luna hiked 34 peaks in Norway.") < SIMILAR
    assert similarity("The queue limit is 500 messages.", "The queue limit is 800 messages.") == 0.0
    assert fates(sentence_diff(["Good morning!"], [], similar=SIMILAR)) == [("dropped", "Good morning!")]
