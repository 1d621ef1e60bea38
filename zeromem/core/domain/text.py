"""Text helpers shared by the pure modules: stop words, word tokenisers, the "<speaker>: text" split, number
patterns and content-word stems. Standard library only, no Django import.

Where two callers tokenise or filter differently, the variants stay apart under their own names: merging,
contradiction judging, reflection and recall were each tuned (and measured) with their own, so folding them into
one would move results.
"""

from __future__ import annotations

import re


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of a text: long word lists are written as one string."""
    return frozenset(text.split())


# --- stop words ----------------------------------------------------------------------------------------------

# Lower-case words too common to tell two sentences apart: merging's redundancy check and stems.
STOP_WORDS = frozenset([
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "i", "you", "he", "she", "we", "they", "my", "your",
    "his", "her", "our", "their", "me", "him", "them", "us", "so", "just", "really", "very",
])
_FUNCTION_WORDS = frozenset([
    "being", "these", "those", "as", "do", "did", "does", "have", "has", "had", "if", "then", "than", "too", "can",
    "will", "would", "should", "could", "into", "about", "over", "after", "before", "up", "down", "out", "also",
])
# Recall's content words: negations carry no topic there; "really" was never on recall's list (kept off, so
# canary phrases and budget recall do not move).
QUERY_STOP_WORDS = (STOP_WORDS - {"really"}) | _FUNCTION_WORDS | frozenset(["not", "no"])
# A statement's attribute (contradictions): also contractions, question words and light verbs; negations are
# not stop words there, they are values judged on their own.
STATEMENT_STOP_WORDS = STOP_WORDS | _FUNCTION_WORDS | frozenset([
    "i'm", "i've", "we're", "we've", "it's", "that's", "there", "here", "what", "when", "where", "who", "how",
    "which", "all", "any", "some", "one", "ones", "get", "got", "set",
])
# Exact case, for names (entities): capitalised only because they start a sentence (or chat filler), never
# entities — so "US" and "IT" survive while "Us" and "It" do not.
CAPITALISED_STOP_WORDS = word_set("""
    I A An The This That These Those It Its We You He She They Me Him Her Us Them My Our Your His
    Their Mine Yours Ours Theirs Myself Yourself Ourselves Someone Somebody Anyone Anybody Everyone
    Everybody Nobody Nothing Something Everything Anything There Here
    Yes No Not Nope Yep Yeah Yup Hey Hi Hello Howdy Bye Goodbye Cheers Oh Ah Aw Aww Ugh Hmm Huh Wow
    Whoa Yay Oops Haha Lol Omg Congrats Congratulations Thanks Thank Please Sorry Okay Ok OK Sure
    Great Good Nice Cool Awesome Amazing Wonderful Fantastic Perfect Lovely Glad Happy Sad Fine Right
    So But And Or Nor Yet If Then Else Because Since Although Though While Unless Until Whether
    Well Also Just Really Actually Honestly Basically Anyway Anyways Maybe Perhaps Probably Definitely
    Absolutely Totally Exactly Indeed Still Even Only Once Again Always Never Sometimes Usually Often
    Now Today Yesterday Tomorrow Tonight Morning Afternoon Evening Night Weekend Later Soon Earlier
    First Second Third Last Next Finally Meanwhile Otherwise However Besides Instead Plus
    What When Where Why How Who Whom Whose Which Whatever Whenever Wherever
    Do Does Did Done Is Are Was Were Be Been Being Am Has Have Had Having Can Could Would Should Will
    Shall May Might Must Let Lets
    In On At For With From To By Of As About Into Onto Over Under Through During Without Within
    After Before Around Between Among Against Per Via Like Unlike Near Off Out Up Down
    Some Any All Every Each Both Most Many Much More Less Few Several Other Another Such Same Very
    Went Got Had Made Saw Took Gave Came Felt Thought Started Tried Found Said Told Asked Wanted
    Make Take Try Check See Look Use Run Add Remove Fix Update Deploy Email Send Call Ask Tell Keep
    Move Set Get Go Come Give Find Think Know Need Want Love Hate Hope Feel Remember Note Consider
    Sounds Seems Looks Guess Wish Imagine Wait Stop Start Read Write Open Close Bring Show
    Ping Remind Schedule Book Create Delete Install Restart Merge Push Pull Review Ship Test Rename
    Refactor Investigate Follow Reply Share Buy Pick Drop Cancel Confirm Verify Ensure Avoid Turn
    Mr Mrs Ms Dr Prof Sir Madam
    User Assistant System Human Bot Summary Todo TODO FYI BTW LOL OMG ASAP PS TBH IMO IMHO TLDR
    Error Warning Info Edit Re Fwd Subject Update Result Status Answer Question Reason Example Tip
""")

# --- numbers -------------------------------------------------------------------------------------------------

# Digits with any "." "," ":" separators ("3.5", "1,200", "9:30"): a value a merge must never lose.
NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# Thousands groups and a decimal part only, so an amount, percentage or quantity never swallows "9:30" (entities
# embeds `.pattern` in larger patterns).
DECIMAL_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_LEADING_DIGIT = re.compile(r"\d")


def starts_with_digit(token: str) -> bool:
    """A value rather than a word: "30", "2nd", "9:30", "3pm"."""
    return bool(_LEADING_DIGIT.match(token))


# --- words ---------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9']+")
_LETTER_WORD = re.compile(r"[a-z][a-z0-9']+")
# Hyphenated words stay whole ("billing-api") and numbers keep an ordinal ("3rd").
_STATEMENT_TOKEN = re.compile(rf"[a-z][a-z'-]+|{NUMBER.pattern}(?:st|nd|rd|th)?")
_PUNCTUATION = re.compile(r"[^\w\s]")


def words(text: str) -> list[str]:
    """Lower-cased runs of letters, digits and apostrophes, one character or more (merging)."""
    return _WORD.findall(text.lower())


def letter_words(text: str) -> list[str]:
    """Lower-cased words of two or more characters that start with a letter (stems)."""
    return _LETTER_WORD.findall(text.lower())


def statement_tokens(text: str) -> list[str]:
    """Lower-cased words of two or more letters (hyphens kept) and numbers (contradictions)."""
    return _STATEMENT_TOKEN.findall(text.lower())


def plain_words(text: str) -> list[str]:
    """Lower-cased text split on whitespace once punctuation is blanked; digits and underscores stay (recall)."""
    return _PUNCTUATION.sub(" ", text.lower()).split()


# --- speakers ------------------------------------------------------------------------------------------------

# "Name: text", a name of one to three capitalised words.
_SPEAKER = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}): (.*)$", re.S)
# Lenient about typography (curly apostrophes, any whitespace after the colon): classifying a kind only needs the
# prefix gone, whereas split_speaker's exact form is what a merged text writes back.
_SPEAKER_PREFIX = re.compile(r"^[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}:\s+")


def split_speaker(text: str) -> tuple[str, str]:
    """("Name", "text") for "Name: text"; ("", text) when there is no speaker. Both stripped of outer space."""
    match = _SPEAKER.match(text.strip())
    return (match.group(1), match.group(2)) if match else ("", text.strip())


def drop_speaker(text: str) -> str:
    """The text without a leading "Name: " prefix (the text as given when it has none)."""
    return _SPEAKER_PREFIX.sub("", text, count=1)


# --- sentences -----------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_LETTER = re.compile(r"[^\W\d_]")


def sentences(text: str) -> list[str]:
    """The sentences of `text`. A piece with no letter ("(#12)", "2.") belongs to the sentence before it: alone it
    would be a fragment."""
    found: list[str] = []
    for piece in (s.strip() for s in _SENTENCE_END.split(text)):
        if found and piece and not _LETTER.search(piece):
            found[-1] = f"{found[-1]} {piece}"
        elif piece:
            found.append(piece)
    return found


def normalised_sentence(text: str) -> str:
    """A sentence as compared for repeats: without a leading speaker, lower-cased, runs of whitespace as one space,
    no trailing punctuation. Reflection writes a turn's sentence with and without its speaker, so "Alice: I drink
    tea." and "i drink  tea" are the same sentence."""
    return " ".join(drop_speaker(text.strip()).lower().split()).rstrip(" .!?;:,…")


# --- stems ---------------------------------------------------------------------------------------------------

_SUFFIX = re.compile(r"(?:'s|ing|ed|es|s|ly)$")


def stems(text: str, exclude: frozenset[str] = frozenset()) -> frozenset[str]:
    """Content-word stems of a text (stop words and `exclude`d stems removed)."""
    found = (_SUFFIX.sub("", w) if len(w) > 4 else w for w in letter_words(text) if w not in STOP_WORDS)
    return frozenset(w for w in found if len(w) >= 3 and w not in exclude)


def same_statement(a: str, b: str, threshold: float = 0.8) -> bool:
    """Do two texts say the same thing: stem overlap (Jaccard) >= threshold; equal texts when either has none."""
    first, second = stems(a), stems(b)
    if not first or not second:
        return a.strip().lower() == b.strip().lower()
    return len(first & second) / len(first | second) >= threshold
