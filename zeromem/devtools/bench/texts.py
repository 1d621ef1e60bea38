"""Synthetic but realistic agent memories for benchmarks: distinct, deterministic, 100–150 characters."""

from __future__ import annotations

import random

PEOPLE = ["Alice", "Bob", "Priya", "Chen", "Fatima", "Diego", "Olga", "Kwame", "Sofia", "Hiroshi", "Maya", "Liam"]
SYSTEMS = ["billing-api", "auth service", "search cluster", "checkout flow", "nightly ETL", "Redis cache",
           "Postgres replica", "CI pipeline", "mobile app", "payments webhook", "data warehouse", "SSO gateway"]
EVENTS = ["timed out", "was rolled back", "shipped to prod", "hit its memory limit", "passed load tests",
          "started failing health checks", "was migrated", "got a new owner", "doubled its latency",
          "recovered without intervention"]
CAUSES = ["a missing index", "an expired TLS certificate", "a config typo", "a noisy neighbour",
          "a schema change", "a retry storm", "a leaked connection pool", "a bad feature flag"]
FOLLOWUPS = ["ticket filed for the platform team", "follow-up review booked for Thursday",
             "runbook updated with the fix", "alert threshold raised to 80%", "owner asked for a postmortem",
             "customer support was notified", "rollback script kept for next time"]
UNITS = ["minutes", "hours", "requests/s", "MB", "GB", "ms"]


def memory_texts(n: int, *, seed: int = 7) -> list[str]:
    """n distinct sentences of 100–150 characters (a sequence number keeps them distinct)."""
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < n:
        text = (f"{rng.choice(PEOPLE)} noted the {rng.choice(SYSTEMS)} {rng.choice(EVENTS)} after "
                f"{rng.randint(2, 900)} {rng.choice(UNITS)} due to {rng.choice(CAUSES)}; "
                f"{rng.choice(FOLLOWUPS)} (#{len(texts)}).")
        if 100 <= len(text) <= 150:
            texts.append(text)
    return texts
