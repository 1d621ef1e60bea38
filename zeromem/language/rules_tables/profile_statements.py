"""The `rules` reader's tables for profile statements, used by `consolidation.domain.profile_statements`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

import re

from zeromem.language.rules_tables import word_set
from zeromem.language.rules_tables.text import CAPITALISED_STOP_WORDS

RELATIONS = word_set("""
    daughter daughters son sons kid kids child children baby babies wife husband partner spouse fiance fiancee
    girlfriend boyfriend ex mom mum mother dad father parents parent sister sisters brother brothers sibling
    siblings family friend friends buddy buddies bff colleague colleagues coworker coworkers co-worker co-workers
    boss manager team teammate teammates classmate classmates roommate roommates neighbor neighbors neighbour
    neighbours grandma grandmother grandpa grandfather grandparents grandkids grandchildren grandson granddaughter
    aunt uncle cousin cousins niece nephew in-laws students student teacher mentor therapist doctor coach client
    clients band landlord dog dogs cat cats pet pets puppy puppies kitten kittens horse horses bird birds fish
    hamster rabbit bunny parrot turtle stepdaughter stepson stepmom stepdad mother-in-law father-in-law
    sister-in-law brother-in-law son-in-law daughter-in-law
""")

# Before a relation noun they stay part of it ("best friend", "little sister", "5-year-old daughter").
RELATION_ADJECTIVES = r"(?:(?:best|little|big|older|younger|oldest|eldest|youngest|new|old|late|dear|twin|" \
                      r"baby|step|ex|\w+-year-old|\w+-legged|two|three|four)\s+)*"

ADVERBS = word_set("""
    really also just always never still often usually sometimes even only actually totally absolutely truly
    definitely finally recently already too kinda sorta mostly rarely seldom basically honestly literally
    generally simply personally mainly especially occasionally normally typically certainly genuinely
    seriously constantly regularly frequently now then once again all both
""")

NOT_ADVERBS = word_set("apply reply supply comply multiply rely fly ally rally bully")

PAST = word_set("""
    was had did went got took saw made felt found thought bought brought came gave knew left lost met ran said
    sat sold sent spent told wrote won began became ate drank drove flew forgot grew heard held kept led paid
    rode sang slept spoke stood swam taught threw understood woke wore built caught chose fell fought hung hid
    lit meant shot struck stuck tore dug fed fled froze bit broke blew drew lay lent shook sank spun stole
    swore wept wound burnt learnt dreamt spelt spilt bent bled bred clung crept dealt forgave overcame rang
    rose sought sprang swept underwent withdrew agreed freed
    read put cut hit let set quit hurt cost shut spread bet split upset cast burst fit rid beat
    can could will would shall should may might must ought gotta
""")  # the second-last line: present and past alike, read as past (never a wrong "-s")

AGREEMENT = {"am": "is", "are": "is", "be": "is", "have": "has", "do": "does", "don't": "doesn't",
             "haven't": "hasn't", "aren't": "isn't", "were": "was", "weren't": "wasn't", "wanna": "wants to"}

AUXILIARIES = word_set("""
    can could will would shall should may might must do does did don't doesn't didn't can't won't couldn't
    wouldn't shouldn't have has had haven't hasn't hadn't am is are was were be been wasn't weren't gonna
""")

PARTICIPLES = word_set("been gotten had seen done gone known taken given written eaten forgotten spoken driven")

# Words that cannot be the verb right after "I": agreement stops there ("I, for one, …", "I and my wife …").
NOT_VERBS = word_set("and or but nor the a an to of in on at for with as so that this it who which not no than if")

# Chat glue beyond contradictions' (which knows "By the way, speaking of which,"): interjections before a comma,
# or before the subject when nothing else can follow them ("Honestly I …"). A vocative: a name before I/my/we.
OPENERS = re.compile(
    r"^(?:(?:oh (?:my )?(?:god|gosh)|wow|whoa|ooh|aw+|ah|ha(?:ha)+|hah|heh|lol|omg|honestly|hey|hi|hello|yes|yep|"
    r"yup|yeah|ok(?:ay)?|alright|right|true|sure|totally|absolutely|definitely|man|dude|gosh|geez|jeez|"
    r"seriously|frankly|tbh|basically|anyways?|nope|no|cool|nice|great|awesome|amazing|thanks|thank you|"
    r"congrats|um+|uh+|hmm+|ugh|btw|fyi|funny enough|fun fact|me too|same here)\s*[,!.…-]+\s*|"
    r"(?:wow|ha(?:ha)+|lol|omg|honestly|actually|personally|basically|seriously|frankly|tbh|btw|oh|yeah)\s+"
    r"(?=(?:i|i'm|i've|i'll|i'd|we|we're|we've|my|our|me)\b))", re.I)

# Written twice: merging.VOCATIVE finds the name after a comma or a greeting, anywhere.
VOCATIVE = re.compile(r"^(?P<name>[A-Z][a-z]+),\s+(?=(?:I|I'm|I've|I'll|I'd|[Ww]e|[Mm]y|[Oo]ur)\b)")

FIRST_OR_SECOND = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves|you|your|yours|yourself|"
                             r"yourselves)\b", re.I)

# Written twice: entities' capitalised non-names add DATE_WORDS (abbreviations, plurals), not seasons.
NOT_NAMES = CAPITALISED_STOP_WORDS | word_set("""
    January February March April June July August September October November December Monday Tuesday
    Wednesday Thursday Friday Saturday Sunday Spring Summer Autumn Fall Winter Christmas Easter
""")

# Written twice: contradictions.FIRST_PERSON also counts "I", "we" and contractions.
NARRATOR_MENTION = re.compile(r"\b(?:me|my|mine|myself|us|our|ours|ourselves)\b", re.I)

SUBORDINATE = re.compile(r"^(?:when|whenever|after|before|since|while|if|because|although|though|as|once|until|"
                         r"ever since|every time|each time|whether)\b[^,]*,\s*", re.I)

FRONTED = re.compile(r"^(?:in|on|at|last|this|next|every|each|yesterday|today|tonight|recently|lately|nowadays|"
                     r"back|over|during|for|growing|a (?:few|couple)|earlier|later|then|now|sometimes|usually|"
                     r"often|occasionally|luckily|sadly|unfortunately|fortunately|hopefully|obviously|normally|"
                     r"typically|generally|also|still|eventually|thankfully|anyway)\b[^,]*,\s*",
                     re.I)

# No comma after a fronted phrase: the subject is the first I or we ("After work I usually go for a run").
PREFACE = re.compile(r"^(?:after|before|during|since|at|in|on|for|over|every|each|most|when|whenever|while|once)\b"
                     r"[\w\s'-]{0,40}?\s(?=(?:I|I'm|I've|I'll|I'd|we|we're|we've)\b)", re.I)

# Written twice: contradictions.DATED and merging.RELATIVE spell relative time with other words.
TIME = re.compile(r"^(?:(?:last|this|next|every|each|one|that) (?:week|weekend|month|year|morning|afternoon|"
                  r"evening|night|day|time|summer|winter|spring|fall|autumn|\w+day)s?|yesterday|today|tonight|"
                  r"recently|lately|nowadays|these days|sometimes|usually|often|always|also|finally|now|then|"
                  r"the other day|a while ago|(?:a few|a couple of|\w+) (?:days|weeks|months|years) ago|in \d{4}|"
                  r"over the (?:weekend|summer|holidays)|on (?:weekends|\w+days?))\s+", re.I)

# He/she/they &c.: who they are is said in another sentence.
PRONOUN_SUBJECT = re.compile(r"^(?:he|she|they|it|this|that|there|these|those|here|someone|somebody|everyone|"
                             r"everybody|nobody|something|everything|nothing|one|people|the user|user)"
                             r"(?:'s|'re|'ve|'ll|'d)?\b", re.I)

SPEAKER_PRONOUN = re.compile(r"^(?:(?P<they>they)|he|she|the user|user)(?P<verb>'s|'re|'ve|'ll|'d)?\b", re.I)

NOUN_PHRASE = r"(?:(?:[Mm]y|[Oo]ur) (?:[a-z-]+ )?[a-z-]+|[A-Z][a-z]+(?: [A-Z][a-z]+)?)"

JOINT = re.compile(rf"^(?:(?:I|[Mm]e) and (?P<after>{NOUN_PHRASE})|(?P<before>{NOUN_PHRASE}) and (?:I|me))"
                   r"(?=[\s,])")

POSSESSED = re.compile(rf"^(?:(?:one|some|all|both|two|three|most|many) of )?(?:my|our) (?P<phrase>"
                       rf"{RELATION_ADJECTIVES}(?P<noun>[a-z-]+))(?:,? (?P<name>(?-i:[A-Z][a-z]+))(?=[\s,]))?",
                       re.I)

COPULA_MINE = re.compile(rf"^(?:[\w'\"“”-]+ ){{0,3}}?[\w'\"“”-]+ (?:is|was|has been) (?:my|our) "
                         rf"(?P<phrase>{RELATION_ADJECTIVES}(?P<noun>[a-z-]+))", re.I)
