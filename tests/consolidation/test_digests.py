"""Window digests (pure): a headline from the dominant tags, the loudest events' statements, the window's mean
importance."""

from __future__ import annotations

from datetime import date

from consolidation.domain.digests import Event, mean_importance, window_digest

DAY = date(2026, 3, 2)


def test_a_digest_quotes_the_most_important_events_under_a_headline_and_keeps_the_windows_mean_importance():
    events = [Event("heartbeat ok from worker-2.", 0.2, DAY, ("payments",)),
              Event("SEV1: payments returning 503 for 61 % of requests.", 0.98, DAY, ("payments", "sev1")),
              Event("payments p99 latency 2900 ms.", 0.9, DAY, ("payments",))]
    digest = window_digest("outage", events, event_count=3, limit=200)
    assert digest.text.startswith("outage window, 3 events, mostly payments, sev1: ")
    assert digest.text.index("SEV1") < digest.text.index("latency")  # the loudest first
    assert digest.importance == round((0.2 + 0.98 + 0.9) / 3, 4)
    assert len(digest.text) <= 200


def test_without_tags_the_headline_names_the_window_and_its_count():
    digest = window_digest("normal", [Event("search p99 latency 120 ms.", 0.25, DAY, ())], event_count=40,
                           limit=350)
    assert digest.text.startswith("normal window, 40 events: ")


def test_the_importance_is_the_mean_of_every_event_of_the_window_not_only_of_those_quoted():
    events = [Event("SEV1: payments returning 503 for 61 % of requests.", 0.98, DAY, ("sev1",)),
              Event("heartbeat ok from worker-2.", 0.2, DAY, ())]
    window = [0.98, 0.2, 0.2, 0.2]  # two more quiet events, folded into the members
    digest = window_digest("outage", events, event_count=4, limit=200,
                           importance=mean_importance(window, fallback=0.98))
    assert digest.importance == 0.395
    assert mean_importance([], fallback=0.7) == 0.7  # every event deleted since: the members' loudest
