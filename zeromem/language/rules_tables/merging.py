"""The `rules` reader's tables for extractive merging, used by `consolidation.domain.merging`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

import re

from zeromem.language.rules_tables import word_set

LOW_SIGNAL = re.compile(
    r"^(?:(?:hey|hi|hello|hiya|yo|oh|wow|whoa|woo+hoo+|hooray|yippee|aw+|omg|haha+|lol|yay|ok(?:ay)?|cool|nice|great|awesome|amazing|"
    r"sweet|wonderful|fantastic|perfect|totally|absolutely|definitely|exactly|sure|yeah|yes|yep|no|nope|true|"
    r"right|thanks|thank you|thx|cheers|bye|goodbye|see you|see ya|take care|good luck|congrats|"
    r"congratulations|same here|me too|i agree|agreed|sounds good|sounds great|that's (?:so )?(?:great|awesome|"
    r"amazing|cool|nice|wonderful|fantastic|true|right|sweet|lovely|good|fair)|good to (?:see|hear from) you|"
    r"glad to hear(?: that)?|you too|no problem|of course|for sure|i know(?: right)?|my pleasure)"
    r"(?:[\s,!.]+(?:so much|a lot|too|man|dude|buddy|friend|mate|again|(?-i:[A-Z][a-z]+))){0,2}[\s!.,]*)$", re.I)

# Goodbyes: "Take care, bye!", "Talk soon!", "Have a great day, Mel!".
FAREWELL = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|well|anyway|thanks(?: again)?)[,\s]+)?(?:take care|bye|goodbye|see (?:you|ya)"
    r"(?: (?:soon|later|then))?|talk (?:to you )?(?:soon|later)|catch you later|have a (?:good|great|nice|lovely) "
    r"(?:one|day|night|time|weekend))(?:[\s,!.]+(?:take care|bye|goodbye|see you|talk soon|(?-i:[A-Z][a-z]+)))*"
    r"[\s!.,]*$", re.I)

# Chit-chat aimed at the other person or at nothing in particular: compliments, encouragement, generic
# enthusiasm. Dropped only when the sentence carries no concrete value (number, date, name).
SMALL_TALK = re.compile(
    r"^(?:(?:you're|you are|you'll|you've|you were|you'd|your)\b|"
    r"(?:wow|whoa|aw+|oh|ooh|phew|yeah|yes|haha+|omg|yay|agreed|totally|absolutely)\b[^.!?]{0,60}\b"
    r"(?:great|awesome|amazing|cool|fun|nice|lovely|beautiful|wonderful|fantastic|incredible|sweet|cute)\b|"
    r"(?:glad|happy) (?:you|to hear|it)\b|"
    r"(?:i'm|i am) (?:so |really )?(?:glad|happy|proud|excited|thrilled|sorry) (?:for|of|to hear)|"
    r"(?:keep (?:it )?up|keep going|good job|well done|you got this|hang in there|good for you)\b|"
    r"(?:i'd|i would) love to (?:see|hear|check)|"
    r"(?:let me know|let's (?:chat|catch up|talk|keep in touch)|hope (?:you|it|that|to see)|"
    r"have (?:a blast|fun|a great time)|don't (?:forget|hesitate|give up)|can't wait to (?:see|hear)|"
    r"keep me (?:posted|updated))\b|"
    r"(?:sounds|looks|seems) (?:like )?(?:you|it|that|so|really|a|fun|great|awesome|amazing|lovely|nice)\b"
    r"[^.!?]{0,60}[.!]*$|(?:i'm|i am) (?:always |just )?(?:here|there) for you\b|"
    r"(?:(?:hey|hi|hello)\b[\w\s,]{0,20}[,!]?\s*)?(?:it's |it is |so |really )?(?:great|good|nice|lovely|awesome) "
    r"(?:to|talking|chatting)\b[^.!?]{0,40}[.!]*$|"
    r"(?:that|it|this|what a|such a)\b[\w\s']{0,40}\b(?:sounds?|looks?|seems?|is|was|'s)\b[\w\s']{0,25}\b"
    r"(?:great|awesome|amazing|cool|fun|nice|lovely|beautiful|gorgeous|wonderful|fantastic|incredible|inspiring|"
    r"special|impressive|exciting|sweet|cute|fancy|pretty|adorable|stunning|brilliant|peaceful|calming|"
    r"powerful|relaxing|perfect)[!.]*$)|"
    r".*\bmeans? (?:a lot|so much|the world)\b", re.I)

# Written twice: contradictions.LIGHT_WORDS is chat filler with other words.
THIN_WORDS = word_set("""think thought know really make made makes like love lot things thing stuff feel feels felt
    great good nice cool awesome amazing fun wonderful lovely glad happy sure definitely totally always never much
    very also just well yes yeah thanks thank wow blast hey hello again chat chatting talk talking get got how
    right does doing going lots bit absolutely sounds seems looks that's""")

# Written twice: profile_statements.VOCATIVE only knows a name before I/my/we.
# The person spoken to, named in passing: "Wow, Mel, that's awesome!", "Hey Evan, great hearing from you!".
VOCATIVE = re.compile(r"(,|\b(?:hey|hi|hello|thanks|thank you|wow|congrats|yay|oh|aww?))\s*(?-i:[A-Z][a-z]+)"
                      r"(?=\s*(?:[,!?.]|$))", re.I)

# Written twice: contradictions.NUMBER_WORDS (claims' values) runs to twenty, thirty, … hundred.
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}

AGO = re.compile(r"\b(\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten) "
                 r"(day|week|month|year)s? ago\b(?! \()", re.I)

# Written twice: contradictions.DATED and profile_statements.TIME spell relative time with other words.
RELATIVE = re.compile(r"\b(yesterday|today|tonight|tomorrow|this morning|this evening|this afternoon|"
                      r"last (?:night|week|weekend|month|year|summer|winter|spring|fall|autumn)|"
                      r"(?:this|next) (?:week|weekend|month|year))\b(?! \()", re.I)

# Written twice: contradictions.NEGATION names its contractions and "cannot", and has no "nothing" or "without".
NEGATION = re.compile(r"\b(?:not|no|never|nothing|nobody|none|neither|nor|without)\b|n't\b", re.I)
