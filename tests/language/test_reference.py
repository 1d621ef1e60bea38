"""Sentences that lean on another turn (`leans_outside`), decided from the parse: what a merge must not glue."""

from __future__ import annotations

import pytest

from zeromem.language.reference import leans_on, leans_outside


@pytest.mark.parametrize(("turn", "leaning"), [
    (["Woah!", "They look ready for an adventure."], [False, True]),  # a pronoun opening the sentence
    (["Yeah, I made them myself."], [True]),  # inside it, nothing named before
    (["I bet they look adorable!"], [True]),
    (["Looks like fun!"], [True]),  # a present-tense verb with its subject left out
    (["Sure is a different experience."], [True]),
    (["I adopted a puppy last week.", "He is a German Shepherd."], [False, False]),  # the turn names it first
    (["My sister visited me with her kids."], [False]),  # the noun comes before the pronoun
    (["It is great to see you again."], [False]),  # "it" standing for the clause that follows
    (["Take some pictures and show me."], [False]),  # an order has no subject either
    (["I'll let you know."], [False]),  # first and second person point at the people talking
    (["That hiking spot looks great!"], [True]),  # a thing pointed at that the turn never named
    (["I found a hiking spot by the lake.", "That spot is great."], [False, False]),
    (["We hike there this weekend."], [False]),  # "this" before a time points at the calendar
    (["Must have been amazing!"], [True]),  # the copula's subject left out
    (["Must have taken a lot of work."], [True]),  # a modal's perfect: what the speaker supposes "it" took
    (["Can't wait to see the studio!"], [False]),  # a modal alone: the speaker's own elided "I"
    (["I must have taken a wrong turn."], [False]),
    (["Pepper and Miso!", "They love fresh carrots."], [False, True]),  # names called out are no argument
    (["I'm sure they'll love the cake."], [True]),  # an adjective is nothing a pronoun stands for
    (["Not only does it help me stay calm, it keeps me fit."], [True]),  # no predicate: "it" is a thing
    (["That hiking spot looks great!", "It has a lake."], [True, True]),  # named only by a sentence that leans
    # "that" after an interjection, which the tagger takes for a relative pronoun with nothing to relate to
    (["Wow, that looks great!"], [True]),
    (["Woah, Maria, that sounds cool!", "I'm doing kickboxing now."], [True, False]),
    (["I finally read the book that you lent me."], [False]),  # a relative "that" after the noun it is about
    (["Oof, sorry to hear that."], [True]),  # "hear" takes "that": a verb, nothing "that" could stand for
    (["I love to paint.", "It calms me."], [False, False]),  # "paint" takes nothing: the thing "it" stands for
    (["We had so much fun making them together."], [True]),  # "them" is no mass noun of its own sentence
    (["I love coffee and drink it daily."], [False]),  # "it" may be one
    (["We made pizza!", "We had so much fun making them together."], [False, False]),  # across sentences it may
    (["My kids had fun with their cousins.", "They played all day."], [False, False]),
])
def test_what_leans_on_another_turn(turn, leaning):
    assert leans_outside(turn) == leaning


@pytest.mark.parametrize(("turn", "leaning"), [
    (["Aww John, bummer about that."], [True]),  # the one spoken to is no thing "that" stands for
    (["Aww John, bummer about that.", "No doubt it's been tough."], [True, True]),
    (["Wow, Maria!", "That is so cool."], [False, True]),
    (["John told me about the trip.", "It sounds great."], [False, False]),  # a thing named besides the name
    (["I met John at the gym.", "He is a firefighter."], [False, False]),  # a name said of someone, not to them
])
def test_the_one_spoken_to_is_no_antecedent(turn, leaning):
    assert leans_outside(turn) == leaning


@pytest.mark.parametrize(("sentence", "before", "leaning"), [
    ("They could probably give you more tips.", "Did your doctor say anything?", True),
    ("I bet they gave you tips.", "Did your doctor say anything?", True),  # the pronoun need not open it
    ("Even when times are hard, they always have my back.", "My family is awesome.", False),  # "times" may be it
    ("I bet they look adorable!", "Looks like fun!", False),  # "they" is not the fun: both are about another turn
    ("It gives me hope.", "That pic is gorgeous!", True),
    ("I repainted the shed.", "My sister visited.", False),  # nothing to stand for
])
def test_what_a_sentence_leans_on(sentence, before, leaning):
    assert leans_on(sentence, before) == leaning
