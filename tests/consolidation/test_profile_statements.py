"""Profile statements (pure): who a chat sentence is about, and the sentence in the third person."""

from __future__ import annotations

import pytest

from consolidation.domain.profile_statements import Attributed, agree, attribute, is_third_person


def statement(text, **kwargs):
    found = attribute(text, speaker=kwargs.pop("speaker", "Caroline"), **kwargs)
    assert found is not None, text
    return found.statement


@pytest.mark.parametrize("text,expected", [
    ("I love horses.", "Caroline loves horses."),
    ("I really love horses!", "Caroline really loves horses."),
    ("I have two cats.", "Caroline has two cats."),
    ("I am a nurse.", "Caroline is a nurse."),
    ("I'm a software engineer at a fintech startup.", "Caroline is a software engineer at a fintech startup."),
    ("I was born in Sweden.", "Caroline was born in Sweden."),
    ("I've been to Japan twice.", "Caroline has been to Japan twice."),
    ("I'll start a new job on Monday.", "Caroline will start a new job on Monday."),
    ("I'd love to visit Japan someday.", "Caroline would love to visit Japan someday."),
    ("I'd been there twice before.", "Caroline had been there twice before."),
    ("I don't eat meat anymore.", "Caroline doesn't eat meat anymore."),
    ("I do yoga every morning.", "Caroline does yoga every morning."),
    ("I can't stand cold weather.", "Caroline can't stand cold weather."),
    ("I should call my mom more often.", "Caroline should call their mom more often."),
    ("I try to run every morning.", "Caroline tries to run every morning."),
    ("I go to the gym twice a week.", "Caroline goes to the gym twice a week."),
    ("I fix bikes on weekends.", "Caroline fixes bikes on weekends."),
    ("I watch way too much TV.", "Caroline watches way too much TV."),
    ("I miss the ocean.", "Caroline misses the ocean."),
    ("I play the guitar.", "Caroline plays the guitar."),
    ("I need a break.", "Caroline needs a break."),
    ("I adopted a puppy last month.", "Caroline adopted a puppy last month."),
    ("I used to play the violin as a kid.", "Caroline used to play the violin as a kid."),
    ("I always say I hate mornings.", "Caroline always says Caroline hates mornings."),
    ("I, too, love jazz.", "Caroline, too, loves jazz."),
    ("I wanna learn Spanish.", "Caroline wants to learn Spanish."),
])
def test_the_first_person_becomes_the_speaker_with_the_verb_agreeing(text, expected):
    assert statement(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("I love my dog.", "Caroline loves their dog."),
    ("I'm my own boss now.", "Caroline is their own boss now."),
    ("I told Sam about my trip.", "Caroline told Sam about Caroline's trip."),
    ("Whenever I hear this jam, I think about my mom.",
     "Whenever Caroline hears this jam, Caroline thinks about Caroline's mom."),
    ("My favourite food is pizza.", "Caroline's favourite food is pizza."),
    ("I bought myself a new bike.", "Caroline bought themself a new bike."),
    ("Painting really helps me relax.", "Painting really helps Caroline relax."),
])
def test_possessives_name_the_speaker_and_their_points_only_at_the_subject(text, expected):
    assert statement(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("We went camping last summer.", "Caroline and others went camping last summer."),
    ("We're moving to Boston next month.", "Caroline and others are moving to Boston next month."),
    ("We've sold our car.", "Caroline and others have sold their car."),
    ("Sam invited us to dinner.", "Sam invited Caroline and others to dinner."),
    ("Every summer, we go to the lake with our kids.",
     "Every summer, Caroline and others go to the lake with Caroline's kids."),
])
def test_we_becomes_the_speaker_and_others_with_a_plural_verb(text, expected):
    assert statement(text) == expected


def test_a_joint_subject_puts_the_speaker_first_and_is_their_own():
    for text, expected in [("My wife and I went to Paris in May.", "Caroline and their wife went to Paris in May."),
                           ("Sam and I went hiking.", "Caroline and Sam went hiking."),
                           ("Me and my sister go shopping every Saturday.",
                            "Caroline and their sister go shopping every Saturday.")]:
        found = attribute(text, speaker="Caroline")
        assert found == Attributed("Caroline", "", expected)


def test_text_in_quotation_marks_is_left_untouched():
    assert statement('I always say "I love you" to my mom.') == 'Caroline always says "I love you" to Caroline\'s mom.'
    assert statement("My motto is “we rise by lifting others”.") == "Caroline's motto is “we rise by lifting others”."
    assert statement('"Be kind" is my motto.') == '"Be kind" is Caroline\'s motto.'


def test_the_speaker_label_markup_and_chat_openers_are_removed():
    assert statement("Caroline: [shares image: a sunset] I took this photo at the beach!") == \
        "Caroline took this photo at the beach."
    assert statement("Yeah, I've been painting a lot lately.") == "Caroline has been painting a lot lately."
    assert statement("By the way, speaking of which, I finally adopted a puppy.") == "Caroline finally adopted a puppy."
    assert statement("Haha, honestly, I eat too much chocolate.") == "Caroline eats too much chocolate."
    assert statement("Oh wow, so I ran my first marathon.") == "Caroline ran their first marathon."
    assert statement("Btw I started learning guitar.") == "Caroline started learning guitar."
    assert statement("Me too, I signed up for a pottery class.") == "Caroline signed up for a pottery class."
    assert statement("Mel, I finally finished my degree!") == "Caroline finally finished their degree."


def test_the_label_names_who_says_i():
    found = attribute("Melanie: I love painting.", speaker="Caroline", known=("Melanie",))
    assert found == Attributed("Melanie", "", "Melanie loves painting.")


@pytest.mark.parametrize("text,relation,expected", [
    ("My daughter started pottery classes.", "daughter", "Caroline's daughter started pottery classes."),
    ("My daughter loves pottery.", "daughter", "Caroline's daughter loves pottery."),
    ("Oh, my daughter always paints on Sundays!", "daughter", "Caroline's daughter always paints on Sundays."),
    ("My 5-year-old daughter hates broccoli.", "5-year-old daughter", "Caroline's 5-year-old daughter hates broccoli."),
    ("My daughter, Emma, wants to be a vet.", "daughter Emma", "Caroline's daughter, Emma, wants to be a vet."),
    ("My colleague Sam always drinks espresso.", "colleague Sam", "Caroline's colleague Sam always drinks espresso."),
    ("My coworker hates meetings.", "coworker", "Caroline's coworker hates meetings."),
    ("Honestly, my boss prefers email over calls.", "boss", "Caroline's boss prefers email over calls."),
    ("One of my colleagues runs every lunch break.", "colleagues",
     "One of Caroline's colleagues runs every lunch break."),
    ("My dog loves the beach.", "dog", "Caroline's dog loves the beach."),
    ("Our cat sleeps all day.", "cat", "Caroline's cat sleeps all day."),
    ("My puppy chews everything I own.", "puppy", "Caroline's puppy chews everything Caroline owns."),
    ("Caroline's dog hates the vet.", "dog", "Caroline's dog hates the vet."),
    ("A friend of mine works at Google.", "friend", "A friend of Caroline's works at Google."),
])
def test_a_sentence_about_someone_of_theirs_is_never_their_own(text, relation, expected):
    found = attribute(text, speaker="Caroline")
    assert found == Attributed("Caroline", relation, expected) and not found.own


def test_the_speakers_own_possessions_are_their_own():
    for text in ("My favorite movie is Inception.", "My job is mostly remote.", "Pottery is my favorite hobby.",
                 "Summer is my favorite season.", "Caroline loves horses."):
        found = attribute(text, speaker="Caroline")
        assert found is not None and found.own and found.about == "Caroline", text


def test_a_sentence_about_another_known_entity_goes_to_that_entity():
    found = attribute("Melanie: Caroline helped me move.", speaker="Melanie", known=("Caroline",))
    assert found == Attributed("Caroline", "", "Caroline helped Melanie move.")
    assert attribute("melanie loves painting with her kids.", speaker="Caroline", known=("Melanie Smith",)) is None
    assert attribute("Melanie loves painting with her kids.", speaker="Caroline", known=("Melanie Smith",)) == \
        Attributed("Melanie Smith", "", "Melanie loves painting with her kids.")


def test_an_unknown_named_person_becomes_a_relation():
    assert attribute("Sam always drinks espresso.", speaker="Caroline") == \
        Attributed("Caroline", "Sam", "Sam always drinks espresso.")
    assert attribute("Sam is my best friend.", speaker="Caroline") == \
        Attributed("Caroline", "best friend Sam", "Sam is Caroline's best friend.")
    assert attribute("Sam's dog bit me.", speaker="Caroline") == \
        Attributed("Caroline", "Sam's dog", "Sam's dog bit Caroline.")


@pytest.mark.parametrize("text", ["She loves hiking.", "He's been a nurse for years.", "They love dogs.",
                                  "It was amazing.", "This is my favourite song.", "That's what I love about it.",
                                  "There is a park near my house.", "The kids loved it."])
def test_a_pronoun_or_unresolved_subject_is_dropped(text):
    assert attribute(text, speaker="Caroline") is None


@pytest.mark.parametrize("text,expected", [
    ("She loves hiking.", "Caroline loves hiking."),
    ("He's been a nurse for ten years.", "Caroline has been a nurse for ten years."),
    ("They love hiking with their dog.", "Caroline loves hiking with their dog."),
    ("They're vegetarian.", "Caroline is vegetarian."),
    ("The user prefers tea over coffee.", "Caroline prefers tea over coffee."),
])
def test_a_pronoun_means_the_speaker_when_the_caller_says_so(text, expected):
    assert attribute(text, speaker="Caroline", pronoun_means_speaker=True) == Attributed("Caroline", "", expected)
    assert attribute("It works.", speaker="Caroline", pronoun_means_speaker=True) is None


@pytest.mark.parametrize("text", ["Do you like horses?", "I wonder if it will rain?", "You should try pottery.",
                                  "I love your paintings.", "I'll send you the recipe.", "Thanks!", "Yeah, me too!",
                                  "[shares image: a cat]", "Caroline:  "])
def test_questions_things_said_to_the_listener_and_empty_sentences_are_dropped(text):
    assert attribute(text, speaker="Caroline") is None


@pytest.mark.parametrize("verb,expected", [("love", "loves"), ("try", "tries"), ("play", "plays"), ("go", "goes"),
                                           ("watch", "watches"), ("wish", "wishes"), ("fix", "fixes"),
                                           ("miss", "misses"), ("have", "has"), ("am", "is"), ("need", "needs"),
                                           ("went", "went"), ("moved", "moved"), ("could", "could")])
def test_a_verb_agrees_with_a_third_person_subject(verb, expected):
    assert agree(verb) == expected


CHAT = [
    "Yeah, I've been painting a lot lately, it really helps me relax.",
    "Last week I took my kids camping at the lake.",
    "I'm a software engineer at a fintech startup.",
    "Oh wow, my son just got into college!",
    "Whenever I hear this jam, I think about my grandma's kitchen.",
    "I'm so proud of my kids’ progress in swimming.",
    "We've been renovating our kitchen since March.",
    "Honestly, I think my job is the best part of my week.",
    "My wife and I are planning a trip to Portugal in the fall.",
    "After work I usually go for a long run by the river.",
    "In 2019, I moved to Denver for a new job.",
    "My therapist suggested I start journaling every night.",
    "My sister and I used to bake cookies every Christmas.",
    "I've been volunteering at the animal shelter on weekends.",
    "Haha, I'm terrible at cooking but I love trying new recipes.",
    "I just finished reading \"The Night Circus\" and I loved it!",
    "I can't believe I ran my first half marathon last Sunday.",
    "Me and my buddies play basketball every Thursday night.",
    "My dad taught me how to fish when I was little.",
    "I really enjoy hiking in the mountains with my dog Max.",
    "We adopted two cats from the shelter last spring.",
    "By the way, I started taking pottery classes with my daughter.",
    "I'd love to open my own bakery someday.",
    "I was a teacher for ten years before I switched careers.",
    "Our team ships a new release every two weeks.",
    "My colleague Priya always brings homemade samosas to the office.",
    "I don't drink coffee after noon because it keeps me up.",
    "Well, I've always wanted to learn how to play the piano.",
    "Caroline: [shares image: a painting of a sunset] I painted this after my trip to Hawaii.",
    "I'm going to a LGBTQ support group meeting tomorrow.",
    "Being outdoors makes me so happy.",
    "So I finally bought myself a new guitar, a Fender!",
    "Ugh, my landlord raised our rent again.",
    "When my daughter was born, I quit my job to stay home.",
    "I go swimming at the YMCA twice a week.",
]


@pytest.mark.parametrize("text", CHAT)
def test_every_statement_returned_is_in_the_third_person(text):
    found = attribute(text, speaker="Caroline", known=("Melanie",))
    assert found is not None, text
    assert is_third_person(found.statement), found.statement


def test_is_third_person_spots_first_and_second_person_and_speaker_labels():
    assert is_third_person("Caroline loves their dog.") and is_third_person('Caroline says "I love you" daily.')
    assert is_third_person("Caroline moved to the US in 2019.")
    for text in ("I love horses.", "Caroline loves my dog.", "We went camping.", "Sam invited us.",
                 "Caroline told you.", "Caroline: loves horses.", "Caroline did it myself.", "i love horses"):
        assert not is_third_person(text), text
