"""The `rules` reader's tables for entity extraction and memory kinds, used by `zeromem.core.domain.entities`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

import re

from zeromem.language.rules_tables import word_set

# Dates are values, not things a memory is about.
MONTH_WORDS = word_set(
    """
    January February March April May June July August September October November December
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec
    """
)

DATE_WORDS = MONTH_WORDS | word_set(
    """
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday Mondays Tuesdays Wednesdays Thursdays
    Fridays Saturdays Sundays Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun
    """
)

# Lowercase particles inside names: "Museum of Modern Art", "Vincent van Gogh".
CONNECTORS = word_set("of de van von der den da del du di la le")

FILE_EXTENSIONS = word_set(
    """
    py pyi ipynb js mjs cjs ts tsx jsx json jsonl yaml yml toml ini cfg conf env md mdx rst txt csv tsv
    html htm css scss sass less sql sh bash zsh fish ps1 bat go rs java kt kts scala rb php c h cc
    cpp hpp cs swift m mm lua pl ex exs erl hs dart vue svelte tf tfvars proto graphql gql xml
    lock log pdf png jpg jpeg gif svg webp ico docx xlsx pptx zip tar gz tgz bz2 xz whl jar parquet
    db sqlite sqlite3 pem crt key j2 jinja dockerfile
    """
)

DOTFILES = word_set("env gitignore gitattributes dockerignore editorconfig bashrc zshrc profile npmrc")

# Unit words compare case-insensitively; short symbols do not, or "5G" would become "5 g".
UNIT_WORDS = word_set(
    """
    bytes byte bits milliseconds millisecond seconds second minutes minute hours hour days day weeks
    week months month years year yrs decades kilometers kilometres kilometer kilometre meters metres
    meter metre miles mile feet foot inches inch kilograms kilogram kilos grams gram pounds ounces
    degrees percent cores core vcpus vcpu cpus gpus threads workers nodes replicas pods shards
    partitions instances servers containers connections requests users rows records tokens items
    files lines retries attempts steps epochs pages dollars euros bucks usd eur gbp
    """
)

UNIT_SYMBOLS = word_set(
    """
    B KB MB GB TB PB KiB MiB GiB TiB kB kb mb gb tb Kb Mb Gb MB/s GB/s Gbps Mbps Kbps kbps
    ns µs ms s sec secs min mins h hr hrs m km cm mm mi km/h mph kph kg mg lb lbs oz ft
    GHz MHz kHz Hz fps rps qps tps req/s rpm px dpi °C °F ° kW kWh mAh
    """
)


def alternation(options: frozenset[str]) -> str:
    # Longest first, so "MB/s" wins over "MB" and "mins" over "min".
    return "|".join(re.escape(o) for o in sorted(options, key=lambda o: (-len(o), o)))


MONTHS = alternation(MONTH_WORDS)

# Written twice: contradictions.QUESTION_START takes the opener alone ("do", "any", "have you").
QUESTION_START = re.compile(
    r"^(?:(?:what|when|where|why|how|who|whom|whose|which)(?:['’]s|\s+(?:is|are|was|were|do|does|did|can"
    r"|could|would|should|will|has|have|had|about|many|much|long|often|come))\b"
    r"|(?:do|does|did|is|are|was|were|can|could|would|should|will|have|has|had|shall|may|might)\s+"
    r"(?:you|we|i|they|he|she|anyone|someone|anybody|somebody|everyone)\b"
    r"|(?:is|are|was|were|will|can|could|should|would)\s+(?:it|there|this|that|these|those)\b)",
    re.IGNORECASE,
)

PREFERENCE = re.compile(
    r"\bI(?:\s+really|\s+absolutely|\s+just)?\s+(?:prefer|like|love|hate|enjoy|dislike|adore)\b"
    r"|\bI\s+(?:don['’]?t|do\s+not)\s+(?:really\s+)?(?:like|love|enjoy)\b"
    r"|\bmy\s+fav(?:ou?rite)?\b|\bI(?:['’]d|\s+would)\s+rather\b|\bprefer(?:s|red)\b"
    r"|\b(?:likes|loves|hates)\s+to\b|\b(?:always|never)\s+use\b|\bcan['’]?t\s+stand\b",
    re.IGNORECASE,
)

DECISION = re.compile(
    r"\bdecided\b|\bdecision\b|\bgoing\s+with\b|\bcho(?:se|sen)\b|\b(?:we|they)\s+agreed\b|\bagreed\s+to\b"
    r"|\b(?:we|I)(?:['’]ll|\s+will)\s+(?:go\s+with|use|adopt|switch\s+to|stick\s+with)\b"
    r"|\blet(?:['’]s|\s+us)\s+(?:use|go\s+with|adopt|switch\s+to|stick\s+with)\b"
    r"|\bsettled\s+on\b|\bopted\s+(?:for|to)\b",
    re.IGNORECASE,
)

OUTCOME = re.compile(
    r"\b(?:succeeded|succeeds|successful(?:ly)?|failed|fails|failing|failure|fixed|resolved|finished"
    r"|completed|crashed|crashes|broken|errors?|timed\s+out|rolled\s+back)\b"
    # "worked at Google" and "passed away" are biography, not results.
    r"|\bworked\b(?!\s+(?:at|as|for|on|with|in|from|there|together)\b)|\bpass(?:ed|es)\b(?!\s+away)"
    r"|\bbroke\b(?!\s+up)|\bthe\s+result\b",
    re.IGNORECASE,
)

PERSONAL_FACT = re.compile(
    r"\bmy\s+[\w'’]+(?:\s+[\w'’]+)?\s+(?:is|are)\b|\bI\s+(?:live|lived|grew\s+up)\s+in\b"
    r"|\bI\s+work(?:ed)?\s+(?:at|as|for|in)\b|\bI(?:['’]m|\s+am)\s+from\b|\bI\s+was\s+born\b"
    r"|\bI\s+have\s+(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\b",
    re.IGNORECASE,
)

DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
    rf"|\b(?:{MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{MONTHS})\b"
    rf"|\b(?:{MONTHS}) (?:19|20)\d{{2}}\b|\b(?:in|since|by|until|from) (?:19|20)\d{{2}}\b"
)

META = re.compile(
    r"\bas\s+(?:I|we)\s+(?:mentioned|said|discussed)\b|\bremember\s+that\b|\bnote\s+to\s+self\b"
    r"|\bfor\s+the\s+record\b|\b(?:summary|recap|to-?do)\s*:|\bTODO\b|\bjust\s+to\s+recap\b",
    re.IGNORECASE,
)
