"""Rule-based entity extraction and kind classification: pure functions, no database."""

from __future__ import annotations

import pytest

from zeromem.core.domain.entities import KINDS, classify_kind, extract_entities

CAROLINE = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
DEPLOY = (
    "The deploy to prod failed because /etc/nginx/nginx.conf had a typo; see https://wiki.example.com/runbook"
)
CACHE = "We decided to move the cache to Redis with a 512 MB limit and 30 days retention."
POTTERY = "Melanie: Do you still go to the pottery class on Tuesdays?"
EDITOR = "I prefer dark mode in VS Code and use getUserById from user_service.py"
TICKET = "Email alice@example.com about ticket JIRA-1234 before Friday."
LATENCY = "Latency dropped to 200ms after we upgraded to PostgreSQL 18."


def test_it_extracts_a_speaker_and_proper_names_but_not_sentence_filler() -> None:
    entities = extract_entities(CAROLINE)

    assert entities == ["Caroline", "LGBTQ"]


def test_it_ignores_common_capitalised_words_weekdays_and_months() -> None:
    entities = extract_entities(
        "Thanks Melanie! That's great. Yesterday I told Caroline about it. "
        "See you on Friday, or in March. Hey Jon, how's it going?"
    )

    assert entities == ["Melanie", "Caroline", "Jon"]


def test_it_keeps_multi_word_names_whole_and_does_not_repeat_their_parts() -> None:
    entities = extract_entities(
        "Melanie Smith's sister moved to New York City. New York is huge, said Melanie. "
        "She loved the Museum of Modern Art."
    )

    assert entities == ["Melanie Smith", "New York City", "Museum of Modern Art"]


def test_it_extracts_file_paths_and_urls() -> None:
    entities = extract_entities(DEPLOY)

    assert entities == ["/etc/nginx/nginx.conf", "https://wiki.example.com/runbook"]


def test_it_does_not_split_a_url_into_its_host_or_path() -> None:
    entities = extract_entities(
        "Runbook: https://wiki.example.com/ops/runbook.md (see the rollback section)."
    )

    assert "https://wiki.example.com/ops/runbook.md" in entities
    assert not {"wiki.example.com", "/ops/runbook.md", "runbook.md"} & set(entities)


def test_it_extracts_relative_windows_and_bare_file_names_but_not_prose_slashes() -> None:
    entities = extract_entities(
        "Edit ./src/app.py and src/app/main.ts, then copy C:\\Users\\ana\\notes.txt; "
        "config.yaml and README.md stay as they are, and/or we revisit it."
    )

    assert entities == [
        "./src/app.py",
        "src/app/main.ts",
        "C:\\Users\\ana\\notes.txt",
        "config.yaml",
        "README.md",
    ]


def test_it_extracts_emails_and_ticket_ids_but_not_the_deadline_weekday() -> None:
    entities = extract_entities(TICKET)

    assert entities == ["alice@example.com", "JIRA-1234"]


def test_it_extracts_code_identifiers() -> None:
    entities = extract_entities(
        "The bug was in getUserById: it read settings.DEBUG instead of calling numpy.linalg.norm "
        "from user_service, e.g. when gpt-4o ran against pg18 on an iPhone."
    )

    assert entities == [
        "getUserById",
        "settings.DEBUG",
        "numpy.linalg.norm",
        "user_service",
        "gpt-4o",
        "pg18",
        "iPhone",
    ]


def test_it_keeps_a_product_with_its_version_but_not_a_bare_number() -> None:
    entities = extract_entities("We run Django 5.2 and ship v2.3.1; the score was 5.2 overall.")

    assert entities == ["Django 5.2", "v2.3.1"]


def test_it_normalises_numbers_with_units() -> None:
    entities = extract_entities(
        "Latency fell to 200ms on 8 cores with 3.5GB RAM; the run took 2 hours, cost $40 "
        "and used 15 % of the budget."
    )

    assert {"200 ms", "8 cores", "3.5 GB", "2 hours", "$40", "15%"} <= set(entities)
    assert "200ms" not in entities


def test_it_extracts_the_example_quantities_and_cache_target() -> None:
    assert extract_entities(CACHE) == ["Redis", "512 MB", "30 days"]
    assert {"200 ms", "PostgreSQL 18"} <= set(extract_entities(LATENCY))


def test_it_does_not_read_a_decade_as_seconds() -> None:
    entities = extract_entities("I grew up on music from the 90s; the job has a 30s timeout and ran 10 km.")

    assert entities == ["30 s", "10 km"]


def test_it_extracts_mentions_and_hashtags() -> None:
    entities = extract_entities("Ping @alice in #infra about the flaky test, cc @bob.")

    assert entities == ["@alice", "#infra", "@bob"]


def test_it_mixes_entity_types_in_order_of_first_appearance() -> None:
    entities = extract_entities(EDITOR)

    assert entities == ["VS Code", "getUserById", "user_service.py"]


def test_it_returns_each_entity_once() -> None:
    entities = extract_entities("Caroline met Melanie. Later Caroline called Melanie about Redis and Redis.")

    assert entities == ["Caroline", "Melanie", "Redis"]


def test_it_respects_the_limit() -> None:
    text = "Alice, Bob, Carol, Dave, Erin and Frank reviewed config.yaml and /etc/hosts."

    assert extract_entities(text, limit=3) == ["Alice", "Bob", "Carol"]
    assert extract_entities(text, limit=0) == []
    assert len(extract_entities(text)) == 8


def test_it_returns_nothing_for_text_without_entities() -> None:
    assert extract_entities("") == []
    assert extract_entities("yeah, that sounds good to me, thanks!") == []


def test_extraction_and_classification_are_deterministic() -> None:
    samples = [CAROLINE, DEPLOY, CACHE, POTTERY, EDITOR, TICKET, LATENCY]

    first = [(extract_entities(text), classify_kind(text)) for text in samples]
    second = [(extract_entities(text), classify_kind(text)) for text in samples]

    assert first == second


@pytest.mark.parametrize(
    "text",
    [POTTERY, "how do I rotate the API keys", "Is it still raining in Seattle", "Wait, really?!"],
)
def test_it_classifies_questions(text: str) -> None:
    assert classify_kind(text) == "question"


@pytest.mark.parametrize(
    "text",
    [
        EDITOR,
        "My favourite band is Radiohead.",
        "Caroline: I'd rather hike than swim.",
        "She likes to paint.",
    ],
)
def test_it_classifies_preferences(text: str) -> None:
    assert classify_kind(text) == "preference"


@pytest.mark.parametrize(
    "text",
    [CACHE, "Let's use pgvector for the embeddings.", "After a long debate we agreed on weekly releases."],
)
def test_it_classifies_decisions(text: str) -> None:
    assert classify_kind(text) == "decision"


@pytest.mark.parametrize(
    "text",
    [DEPLOY, "The migration completed without errors.", "Restarting the worker fixed it, it worked!"],
)
def test_it_classifies_outcomes(text: str) -> None:
    assert classify_kind(text) == "outcome"


@pytest.mark.parametrize(
    "text",
    [
        LATENCY,
        TICKET,
        "Caroline is a counselor at the community center.",
        "I live in Boston with my two cats.",
        "I worked at Google for five years.",
        "The release is planned for 2025-03-14.",
    ],
)
def test_it_classifies_facts(text: str) -> None:
    assert classify_kind(text) == "fact"


@pytest.mark.parametrize(
    "text",
    [
        "As I mentioned earlier, let's keep this conversation short.",
        "Note to self: revisit this thread later.",
        "TODO: write up the notes from this chat",
        "For the record, this conversation is getting long.",
    ],
)
def test_it_classifies_remarks_about_the_conversation_as_meta(text: str) -> None:
    assert classify_kind(text) == "meta"


@pytest.mark.parametrize("text", [CAROLINE, "It was a sunny afternoon at the park.", "Have a great day", ""])
def test_it_falls_back_to_observation(text: str) -> None:
    assert classify_kind(text) == "observation"


def test_every_classification_is_a_known_kind() -> None:
    samples = [CAROLINE, DEPLOY, CACHE, POTTERY, EDITOR, TICKET, LATENCY, "hmm", "?"]

    assert {classify_kind(text) for text in samples} <= set(KINDS)
