"""The `rules` reader's tables for knowledge updates, claim by claim, used by `consolidation.domain.contradictions`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

import re

from zeromem.language.rules_tables import word_set

# Strong cues say a value was replaced; weak ones ("now", "new") only count when the older value is gone.
UPDATE = re.compile(
    r"\b(?:no longer|anymore|any more|moved|switched|upgraded|downgraded|bumped|raised|lowered|increased|"
    r"decreased|replaced|instead|gave up|given up|stopped|quit|is up to|is down to|went up|went down|"
    r"used to|not anymore|changed)\b", re.I)

ABANDON = re.compile(r"\b(?:gave up|given up|stopped|quit|no longer|not anymore|replaced|switched|finished)\b", re.I)

WEAK_UPDATE = re.compile(r"\b(?:now|new|these days|updated|started|currently|reached|became)\b", re.I)

# One more of something counted: "I just added a new coin to my collection" changes "I have 37 coins".
ACQUIRED = re.compile(r"\b(?:added|got|bought|received|picked up|completed|finished)\s+(?:a|an|another|one more)\s+"
                      r"(?:new\s+|more\s+)?([a-z][a-z-]+)", re.I)

# Written twice: merging.NEGATION also takes "nothing", "none", "without" and any "n't", but not "cannot".
NEGATION = re.compile(r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|won't|can't|cannot)\b", re.I)

# Written twice: profile_statements.NARRATOR_MENTION and FIRST_OR_SECOND have other words.
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|we're|we've|our|ours|us)\b", re.I)

# A measurement of a moment or a window, not a state: latencies, rates, heartbeats, temperatures.
READING = re.compile(
    r"\b(?:p\d{2,3}|latency|latencies|error rate|errors?|[45]xx|(?:http|status|returning|returned) [45]\d\d|"
    r"timeouts?|heartbeats?|cpu|load|throughput|"
    r"qps|rps|requests? per|uptime|temperature|readings?|measured|spiked?|sev\d|severity|alerts?|ms)\b|%", re.I)

# An operation that happened at a moment (a deploy, a rollback, a restart) is an event, not a state.
OPERATION = re.compile(r"\b(?:deployed|deploying|rolled (?:back|out)|rolling back|restarted|restarting|scaled|"
                       r"failed over|paged|released|reverted|redeployed)\b", re.I)

# Written twice: merging.RELATIVE and AGO (anchored to a date) and profile_statements.TIME
# (a fronted time phrase) spell relative time with other words.
# A one-off event on a date ("on 7/10", "that day", "yesterday"), unless it says it is a running total.
DATED = re.compile(
    r"\b(?:on \d{1,2}/\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}|that day|yesterday|today|tonight|this morning|last night|"
    r"remember|ago|the other day|back in|earlier in|"
    r"last (?:week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2}(?:st|nd|rd|th)?|"
    r"\d{1,2}(?:st|nd|rd|th)? of (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\b", re.I)

# A request to the assistant ("Write me …", "Give me a plan"), not a statement.
REQUEST = re.compile(r"^(?:please |now |so )?(?:write|give|discuss|recount|create|explain|describe|list|tell|"
                     r"make|provide|generate|summari[sz]e|translate|help|show|suggest|rewrite|compose|draft|"
                     r"let's|imagine|pretend|act|continue|add|remove|use|include|find|compare|offer|outline|"
                     r"identify|analy[sz]e|check|review|edit|proofread|correct|fix|convert|calculate|design|"
                     r"recommend|propose|answer|respond|play|start|begin|assume|consider|define|elaborate)\b", re.I)

RUNNING_TOTAL = re.compile(r"\b(?:so far|in total|total|in all|altogether|since|already|now|currently|brings?)\b",
                           re.I)

# Written twice: entities.QUESTION_START (classify_kind's) wants a subject after the opener.
QUESTION_START = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|shall|is|are|was|were|what|how|why|any|have you|has)\b", re.I)

# "By the way, speaking of which, …": chat glue, never a name or a value.
CHAT_GLUE = re.compile(r"^(?:(?:oh|and|also|anyway|actually|well|so|plus|but|yeah|hey)\b,?\s*)*"
                       r"(?:(?:by the way|btw|speaking of [\w'-]+(?: [\w'-]+)?|anyway|also)\b,?\s*)*", re.I)

# An intention or a plan is no state of the world yet: "I'm thinking of …", "I'll …", "looking for …".
INTENTION = re.compile(
    r"\b(?:thinking (?:of|about)|planning|plan to|i'll|i will|we'll|going to|want to|wanna|would like|i'd like|"
    r"looking (?:for|to|into|forward)|hoping to|considering|might|wondering|if)\b", re.I)

# Written twice: merging.NUMBERS (relative dates) counts "a", "a few", "a couple of", up to ten.
NUMBER_WORDS = {w: str(n) for n, w in enumerate([
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"])} | {
    "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "twice": "2", "once": "1"}

ORDINALS = {w: str(n) for n, w in enumerate([
    "zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth"])}

# Words that count nothing by themselves: "17 new ones", "5 more".
NOT_HEADS = word_set("""new old more other different extra total ones one them it so far of in on at to from for and
    first last previous current whole""")

CUE_WORDS = word_set("""now longer anymore changed change moved switched upgraded downgraded bumped raised lowered
    increased decreased replaced instead gave given stopped quit finished new updated went used started currently
    just actually already still brings bring""")

# Written twice: merging.THIN_WORDS is chat filler with other words.
# Talk that says nothing about the attribute: light verbs, fillers, time words.
LIGHT_WORDS = word_set("""really way speaking think thinking thought know want wanted wanting need needed like
    love loving going gonna make made making lot lots thing things good great well able try trying tried help
    helping wondering wonder sure definitely maybe probably much many even though since far total recently lately
    today time times day days week weeks month months year years last next ago yet back again kind sort pretty
    quite amazing awesome excited glad happy especially actually usually lately recently absolutely totally around
    while about bit little thanks thank recommendations recommendation suggestions suggestion advice tips tip idea
    ideas info information""")

IRREGULAR = {"written": "writ", "wrote": "writ", "bought": "buy", "seen": "see", "saw": "see", "met": "meet",
             "caught": "catch", "ran": "run", "made": "make", "took": "tak", "taken": "tak"}
