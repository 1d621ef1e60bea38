"""The `rules` reader's tables for stop words, used by `zeromem.core.domain.text`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

from zeromem.language.rules_tables import word_set

# Lower-case words too common to tell two sentences apart: merging's redundancy check and stems.
STOP_WORDS = frozenset([
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "i", "you", "he", "she", "we", "they", "my", "your",
    "his", "her", "our", "their", "me", "him", "them", "us", "so", "just", "really", "very",
])

FUNCTION_WORDS = frozenset([
    "being", "these", "those", "as", "do", "did", "does", "have", "has", "had", "if", "then", "than", "too", "can",
    "will", "would", "should", "could", "into", "about", "over", "after", "before", "up", "down", "out", "also",
])

# A statement's attribute (contradictions): also contractions, question words and light verbs; negations are
# not stop words there, they are values judged on their own.
STATEMENT_STOP_WORDS = STOP_WORDS | FUNCTION_WORDS | frozenset([
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
