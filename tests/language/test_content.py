"""Whether a text says something: the one definition clustering writes by and `evaluate merges` counts by."""

from __future__ import annotations

import pytest

from zeromem.language.content import in_an_exchange, says_something, text_reports, text_says_something

SAYS = [
    "Gina: I love that painting.",  # a verb taking a thing
    "Gina: I'm keen on counseling.",  # through the adjective complementing the verb
    "Gina: I swim twice a week.",  # a frequency: a value
    "Gina: Saturday works for me!",  # a date: a value
]
SAYS_NOTHING = [
    "Gina: Believe in yourself and keep pushing.",
    "Gina: I'll see you around! That's so cool!",
    "Gina: Did you buy the red car?",  # a question is no statement
    "Maria: I'm glad you're alright. Yeah, it's tough. You got through it - stay strong.",
    "Gina: Jon is so happy!",  # the name of one of the people talking is no value
]


@pytest.mark.parametrize("text", SAYS)
def test_a_statement_or_a_verb_taking_a_thing_says_something(text):
    assert says_something([text], frozenset({"gina", "jon"})) == [True]
    assert text_says_something(text, frozenset({"gina", "jon"}))


@pytest.mark.parametrize("text", SAYS_NOTHING)
def test_small_talk_questions_and_the_speakers_names_say_nothing(text):
    assert says_something([text], frozenset({"gina", "jon", "maria"})) == [False]
    assert not text_says_something(text, frozenset({"gina", "jon", "maria"}))


def test_a_name_says_something_unless_it_names_one_of_the_people_talking():
    assert text_says_something("Gina: Jon is so happy!")
    assert not text_says_something("Gina: Jon is so happy!", frozenset({"jon"}))


@pytest.mark.parametrize(("text", "reports"), [
    ("Caroline: They were awestruck and humbled.", True),  # a main verb in the past
    ("Jolene: Just started learning, but haven't gone yet.", True),  # the subject left out, in the past
    ("Deborah: My husband and I are trying to be a good family.", True),  # joined with a first-person subject
    ("Andrew: I've always been awed by birds.", True),
    ("Gina: I swim on Saturdays.", True),  # a value
    ("Gina: Keep up the great work, you're doing amazing!", False),  # to the listener, in the present
    ("Gina: Family is everything, it gives us strength.", False),  # of the world at large
    ("Gina: Did you go to Paris?", False),  # a question is no account
    ("Gina: That's so cool, Jon!", False),  # the name of one of the people talking is no value
])
def test_an_account_or_a_value_is_what_a_sense_of_chatter_never_overrules(text, reports):
    assert text_reports(text, frozenset({"gina", "jon"})) is reports


def test_a_question_and_the_turn_after_it_are_an_exchange():
    turns = ["Ana: The pottery class was fun.", "Ben: Nice!", "Ana: Did you glaze the vase? It looked great.",
             "Ben: Yep, all done.", "Ana: Cool.", "Ben: Sure?!"]
    assert in_an_exchange(turns) == [False, False, True, True, False, True]
