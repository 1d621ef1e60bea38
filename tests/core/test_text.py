"""The shared text toolkit of the pure modules: tokenisers, stop words, the speaker split, numbers and stems.
Pure, no database."""

from __future__ import annotations

from zeromem.core.domain.text import (
    DECIMAL_NUMBER,
    NUMBER,
    QUERY_STOP_WORDS,
    drop_speaker,
    letter_words,
    normalised_sentence,
    plain_words,
    same_statement,
    sentences,
    split_speaker,
    starts_with_digit,
    statement_tokens,
    stems,
    word_set,
    words,
)
from zeromem.language.rules_tables.text import CAPITALISED_STOP_WORDS, STATEMENT_STOP_WORDS, STOP_WORDS


def test_words_are_lower_cased_runs_of_letters_digits_and_apostrophes():
    assert words("Caroline's 2 cats, A-OK!") == ["caroline's", "2", "cats", "a", "ok"]


def test_letter_words_start_with_a_letter_and_have_two_characters_at_least():
    assert letter_words("I ran 5k with 3 friends in 2024") == ["ran", "with", "friends", "in"]


def test_statement_tokens_keep_hyphenated_words_whole_and_numbers_with_their_ordinal():
    assert statement_tokens("The billing-api moved to the 3rd floor at 9:30, a 1,200 m walk") == [
        "the", "billing-api", "moved", "to", "the", "3rd", "floor", "at", "9:30", "1,200", "walk"]


def test_plain_words_blank_punctuation_and_keep_digits_and_underscores():
    assert plain_words("Run db_migrate (v2) now!") == ["run", "db_migrate", "v2", "now"]


def test_the_base_stop_words_are_part_of_the_statement_list():
    assert STOP_WORDS < STATEMENT_STOP_WORDS
    assert {"what", "get", "i'm"} <= STATEMENT_STOP_WORDS - STOP_WORDS


def test_negations_are_stop_words_for_recall_only():
    assert {"no", "not"} <= QUERY_STOP_WORDS
    assert not {"no", "not"} & (STATEMENT_STOP_WORDS | STOP_WORDS)


def test_really_is_a_stop_word_everywhere_but_in_recall():
    assert "really" in STOP_WORDS and "really" in STATEMENT_STOP_WORDS
    assert "really" not in QUERY_STOP_WORDS


def test_capitalised_stop_words_are_exact_case_so_acronyms_survive():
    assert {"It", "Us", "Thanks"} <= CAPITALISED_STOP_WORDS
    assert not {"IT", "US", "it"} & CAPITALISED_STOP_WORDS


def test_a_word_set_is_the_whitespace_separated_words_of_a_text():
    assert word_set("  of de\n van  ") == frozenset({"of", "de", "van"})


def test_it_splits_the_speaker_from_the_text():
    assert split_speaker("  Mary Jo O'Neil: I moved to Lisbon.\nIt rains.  ") == (
        "Mary Jo O'Neil", "I moved to Lisbon.\nIt rains.")


def test_a_text_without_a_speaker_has_an_empty_one():
    assert split_speaker("  i moved: to Lisbon ") == ("", "i moved: to Lisbon")
    assert split_speaker("Anna Maria Lee Smith: hi") == ("", "Anna Maria Lee Smith: hi")  # four words: no name


def test_the_split_wants_exactly_one_space_after_the_colon():
    assert split_speaker("Mary:  hi") == ("Mary", " hi")
    assert split_speaker("Mary:\thi") == ("", "Mary:\thi")


def test_dropping_a_speaker_accepts_curly_apostrophes_and_any_whitespace():
    assert drop_speaker("O’Neil:\t Do you ski?") == "Do you ski?"
    assert drop_speaker("no speaker: here") == "no speaker: here"


def test_numbers_keep_their_separators():
    assert NUMBER.findall("At 9:30 we paid 1,200.50 for 3 rooms") == ["9:30", "1,200.50", "3"]


def test_decimal_numbers_take_thousands_groups_and_a_decimal_part_only():
    assert DECIMAL_NUMBER.findall("1,200.50 and 9:30") == ["1,200.50", "9", "30"]


def test_a_token_starting_with_a_digit_is_a_value():
    assert starts_with_digit("2nd") and starts_with_digit("9:30")
    assert not starts_with_digit("v2") and not starts_with_digit("")


def test_stems_drop_stop_words_short_words_and_common_suffixes():
    assert stems("She really enjoys hiking and painted the walls quickly") == frozenset(
        {"enjoy", "hik", "paint", "wall", "quick"})


def test_short_words_keep_their_suffix_and_excluded_stems_go():
    assert stems("Maya runs dogs", exclude=frozenset({"maya"})) == frozenset({"runs", "dogs"})


def test_two_wordings_of_one_fact_are_the_same_statement():
    assert same_statement("Maya prefers window seats on flights", "maya prefer window seat on flight")


def test_different_facts_are_not_the_same_statement():
    assert not same_statement("Maya prefers window seats", "Maya dislikes aisle seats")
    assert same_statement("Maya prefers window seats", "Maya dislikes window seats", threshold=0.5)


def test_texts_without_stems_are_the_same_statement_only_when_equal():
    assert same_statement("  It is so. ", "it is so.")
    assert not same_statement("It is.", "It was.")


def test_a_sentence_with_another_case_spacing_end_or_speaker_normalises_to_the_same():
    same = {normalised_sentence(s) for s in ("Alice drinks green tea.", "alice  drinks\ngreen tea",
                                             "Alice: Alice drinks green tea!", " ALICE DRINKS GREEN TEA… ")}
    assert same == {"alice drinks green tea"}


def test_normalising_keeps_the_words_and_the_inner_punctuation():
    assert normalised_sentence("Redis hit 512 MB, again.") == "redis hit 512 mb, again"
    assert normalised_sentence("Alice drinks tea.") != normalised_sentence("Alice drinks coffee.")


def test_a_piece_without_a_letter_stays_with_the_sentence_before_it():
    assert sentences("I'm allergic to sesame. (#85)") == ["I'm allergic to sesame. (#85)"]
    assert sentences("We moved twice. 2. Then to Lyon!") == ["We moved twice. 2.", "Then to Lyon!"]
    assert sentences("(#3) Hello there. Fine.") == ["(#3) Hello there.", "Fine."]
