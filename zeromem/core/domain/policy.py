"""The policy: every algorithm calibration the jobs, search and profiles read, typed, with its default here.

A tenant overrides any of it in `Tenant.overrides`, by section: `{"clustering": {"cosine_floor": 0.6},
"canaries": {"enabled": false}}` (the keys some tenants set before the policy existed, such as
`{"recency_window_hours": 24}`, are still read: LEGACY_KEYS). `policy_with_overrides` validates them: an unknown
key or a value of the wrong type raises PolicyInvalid. The environment keeps only deployment settings (URLs, keys,
limits, schedules, model names); a field that once was an environment variable names it in `moved_from`, and
zeromem/settings.py refuses to start while that variable is still set.

Pure: the kernel's `policy_for` reads a tenant's policy, each run loads it once and hands it down as an argument.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


def setting(default: Any, description: str, *, moved_from: str | None = None, **bounds: Any) -> Any:
    """A policy field: its default, what it does (docs/configuration.md prints it) and the environment variable
    it replaced (None: it was a constant in code)."""
    return Field(default, description=description, json_schema_extra={"moved_from": moved_from}, **bounds)


class Section(BaseModel):
    # Strict: a tenant's "0.6" (a string) or 1 for true is refused, not guessed at.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ClusteringPolicy(Section):
    """Which memories a clustering run folds together."""

    cosine_floor: float = setting(
        0.55, "Two memories link at this cosine or above. Calibrated for all-MiniLM-L6-v2 (paraphrases 0.60–0.95, "
        "unrelated pairs ≤ 0.30; `bench calibrate`) and tuned on LoCoMo with max_size and merging.max_chars.",
        moved_from="ZEROMEMORY_CLUSTER_COSINE_FLOOR", ge=0.0, le=1.0)
    fact_jaccard: float = setting(
        0.5, "Two memories also link when their facts (entities, values) overlap at least this much (Jaccard).",
        moved_from="ZEROMEMORY_CLUSTER_FACT_JACCARD", ge=0.0, le=1.0)
    hub_share: float = setting(
        0.2, "An entity named by more than this share of a user's memories is a hub (the people talking, "
        "\"prod\"): no link, and no detail worth keeping a sentence for.",
        moved_from="ZEROMEMORY_CLUSTER_HUB_SHARE", ge=0.0, le=1.0)
    max_size: int = setting(
        4, "A cluster never grows past this many memories: small, tight clusters keep what an agent retrieves "
        "within a context budget as good as before clustering (at 20, LoCoMo budget recall fell by 0.02).",
        moved_from="ZEROMEMORY_CLUSTER_MAX_SIZE", ge=2, le=20)
    session_floor: float = setting(
        0.3, "Second level: episodes the first level clustered with nothing pair up within their session at this "
        "looser cosine (turns of one conversation about one thing, worded apart); 0 = off.",
        moved_from="ZEROMEMORY_CLUSTER_SESSION_FLOOR", ge=0.0, le=1.0)
    fold_floor: float = setting(
        0.15, "Third level: what a run writes for one session folds together at this cosine of the members' mean "
        "vectors while the text fits merging.max_chars in one piece; 0 = off.",
        moved_from="ZEROMEMORY_CLUSTER_FOLD_FLOOR", ge=0.0, le=1.0)
    max_span_days: int = setting(
        1, "The members of one merged memory were said within this many days: a merged memory is the record of "
        "one day, and turns of sessions further apart are never glued into one text (a later repeat is left out of "
        "the later text instead); 0 = no limit.",
        moved_from="ZEROMEMORY_CLUSTER_MAX_SPAN_DAYS", ge=0, le=36_500)
    recency_window_hours: float = setting(
        48.0, "Episodes younger than this are left for a later run (unless the run is forced): a conversation "
        "under way is not folded yet.", moved_from="ZEROMEMORY_RECENCY_WINDOW_HOURS", ge=0.0, le=24.0 * 365)
    window_tag_prefix: str = setting(
        "window:", "A tag with this prefix names the window of a memory whose `window` field is empty "
        "(\"window:outage\"), so events that carry their window as a tag never cluster across windows; \"\" = off.",
        moved_from="ZEROMEMORY_WINDOW_TAG_PREFIX", max_length=50)
    window_digest_min: int = setting(
        10, "A window with at least this many memories also gets one digest per clustering run that folds it.",
        moved_from="ZEROMEMORY_WINDOW_DIGEST_MIN", ge=2, le=100_000)


class MergingPolicy(Section):
    """How a cluster becomes text."""

    max_chars: int = setting(
        350, "A merged text is at most this long (a longer cluster becomes several memories); one member longer "
        "than this gets a text of its own up to the embedder's input limit (all-MiniLM-L6-v2 reads ~1,000 "
        "characters); a longer one stays as it was said.",
        moved_from="ZEROMEMORY_MERGED_MAX_CHARS", ge=50, le=1000)
    paraphrase_cosine: float = setting(
        0.85, "Two sentences of one speaker in a cluster, with the same values and a content word in common, say "
        "the same thing (the longer is kept) at this cosine or above (MiniLM: same-fact pairs 0.81–0.95).",
        moved_from="ZEROMEMORY_MERGE_PARAPHRASE_COSINE", ge=0.5, le=1.0)
    chatter_head: bool = setting(
        True, "A turn the learned chatter head (zeromem/language/head.py) calls chatter on its stored MiniLM vector, "
        "past the head's strict threshold, and that states no value is small talk: archived, never merged (pep talk "
        "and platitudes the small-talk grammar reads as statements). Off: the grammar alone decides.")


class UpdatesPolicy(Section):
    """How clustering's knowledge-update pass judges a newer statement against an older one of the same user
    (supersede it, flag the pair for a person, or leave both)."""

    reader: Literal["default", "rules"] = setting(
        "default", "Which language reader judges the pairs (zeromem/language): `default` reads spaCy's parse, values "
        "and time; `rules` is the frozen word-table grammar, kept for comparison (its thresholds are the two below).")
    worded_alike: float = setting(
        0.5, "Default reader: two statements whose content words (values masked) overlap at least this much (shared "
        "over all) are about the same attribute.", ge=0.0, le=1.0)
    meant_alike: float = setting(
        0.5, "Default reader: two one-statement memories whose stored vectors' cosine reaches this, and whose noun "
        "phrases do not disagree, are about the same attribute.", ge=0.0, le=1.0)
    series_hours: float = setting(
        24.0, "Default reader: three or more values of one attribute changing at most this many hours apart (the "
        "median) are readings of a measured quantity, each true when measured: none supersedes another.",
        ge=0.0, le=24.0 * 365)
    min_gap_hours: float = setting(
        1.0, "A newer statement supersedes an older one only when said at least this many hours later; two said "
        "closer together are parts of one account (at most flagged).", ge=0.0, le=24.0 * 365)
    same_attribute: float = setting(
        0.5, "Two statements sharing two attribute words are about the same attribute when those are at least this "
        "share of the smaller one's (and \"gave up X\" retires a statement holding this share of X).", ge=0.0, le=1.0)
    certain_attribute: float = setting(
        0.8, "At or above this attribute overlap, a changed measured value or a negation between two brief "
        "statements supersedes (or is flagged) without an update cue such as \"now\".", ge=0.0, le=1.0)


class ReflectionPolicy(Section):
    """When reflection runs and how much it reads per call."""

    entity_threshold: int = setting(
        10, "An entity is reflected on once it has this many unreflected memories.",
        moved_from="ZEROMEMORY_REFLECTION_ENTITY_THRESHOLD", ge=1, le=100_000)
    user_threshold: int = setting(
        50, "A user's memories without an entity are reflected on once there are this many.",
        moved_from="ZEROMEMORY_REFLECTION_USER_THRESHOLD", ge=1, le=100_000)
    window: int = setting(
        50, "Each call picks from this many most recent inputs…", moved_from="ZEROMEMORY_REFLECTION_WINDOW",
        ge=1, le=1000)
    batch: int = setting(
        15, "…the this-many most important of them.", moved_from="ZEROMEMORY_REFLECTION_BATCH", ge=1, le=200)
    min_remaining: int = setting(
        10, "A run calls again while at least this many inputs remain…",
        moved_from="ZEROMEMORY_REFLECTION_MIN_REMAINING", ge=1, le=1000)
    max_calls: int = setting(
        10, "…up to this many calls.", moved_from="ZEROMEMORY_REFLECTION_MAX_CALLS", ge=1, le=1000)
    shared_call: int = setting(
        40, "With an LLM, the entities of one user share calls of up to this many memories (at most `batch` of "
        "one entity): a call each would pay the prompt's overhead every time.",
        moved_from="ZEROMEMORY_REFLECTION_SHARED_CALL", ge=1, le=400)
    min_confidence: float = setting(
        0.6, "An insight the model is less sure of than this is dropped.",
        moved_from="ZEROMEMORY_REFLECTION_MIN_CONFIDENCE", ge=0.0, le=1.0)
    extraction_phase: bool = setting(
        False, "With an LLM: first a batched phase (10 memories a call) that fills kind and entities and proposes "
        "relations.", moved_from="ZEROMEMORY_EXTRACTION_PHASE")


class SearchPolicy(Section):
    """How hybrid search ranks."""

    vector_weight: float = setting(
        0.5, "Weight of the cosine similarity against the max-normalised BM25 score.",
        moved_from="ZEROMEMORY_SEARCH_VECTOR_WEIGHT", ge=0.0, le=1.0)
    bm25_b: float = setting(
        0.75, "BM25 length normalisation: 0 ignores a memory's length, 1 divides fully by it.",
        moved_from="ZEROMEMORY_SEARCH_BM25_B", ge=0.0, le=1.0)
    min_score: float = setting(
        0.0, "Hits an agent gets score above this. At 0 that drops exactly the hits that share no word with the "
        "query and point away from it; the safety net's canaries lost recall at 0.02, so a higher floor is opt-in.",
        moved_from="ZEROMEMORY_SEARCH_MIN_SCORE", ge=0.0, le=1.0)
    pool: int = setting(
        200, "Candidates read from the full-text index (and half as many from the vector index) before ranking.",
        moved_from="ZEROMEMORY_SEARCH_POOL", ge=10, le=5000)
    assistant_weight: float = setting(
        0.7, "An assistant's turn ranks at this share of its score: what the user said about themselves is the "
        "memory, the assistant's long answers share the question's words and would crowd it out; 1 ranks alike.",
        moved_from="ZEROMEMORY_SEARCH_ASSISTANT_WEIGHT", ge=0.0, le=1.0)
    answering_recency: float = setting(
        0.1, "Where a query asks what holds now, the results that speak of what it asks about are ranked again with "
        "this much added to the newest one's score, in proportion for the older ones (0: by relevance alone; a "
        "large value: newest first whatever their relevance). Higher values rank a changed fact's current value "
        "first more often and cost questions about the past some recall; 0.1 cost LoCoMo's none on the dev split.",
        ge=0.0, le=10.0)


class ProfilePolicy(Section):
    """How GET /profile splits what it knows."""

    recent_days: int = setting(
        30, "An item first said within this many days is \"recent\", an older one \"static\".",
        moved_from="ZEROMEMORY_PROFILE_RECENT_DAYS", ge=1, le=36_500)


class LifecyclePolicy(Section):
    """Decay, retention and purge (activation = importance × 2^(−days since last access / half-life))."""

    decay_half_life_days: float = setting(
        30.0, "Days for a memory's activation to halve without an access.",
        moved_from="ZEROMEMORY_DECAY_HALF_LIFE_DAYS", ge=0.1, le=36_500.0)
    archive_threshold: float = setting(
        0.05, "Raw memories whose activation falls below this (and importance below keep_floor) are archived.",
        moved_from="ZEROMEMORY_ARCHIVE_THRESHOLD", ge=0.0, le=1.0)
    keep_floor: float = setting(
        0.7, "Memories at least this important never decay away.", moved_from="ZEROMEMORY_KEEP_FLOOR",
        ge=0.0, le=1.0)
    retention_days: float = setting(
        90.0, "Consolidated episodes older than this (and below retention_importance) are archived.",
        moved_from="ZEROMEMORY_RETENTION_DAYS", ge=0.0, le=36_500.0)
    retention_importance: float = setting(
        0.5, "…unless at least this important.", moved_from="ZEROMEMORY_RETENTION_IMPORTANCE", ge=0.0, le=1.0)
    purge_days: float = setting(
        30.0, "Archived memories are deleted this long after archiving (provenance keeps their id and hash).",
        moved_from="ZEROMEMORY_PURGE_DAYS", ge=0.0, le=36_500.0)
    feedback_step: float = setting(
        0.2, "Feedback moves a memory's reward this share of the way towards +1 (useful) or −1 (not useful).",
        moved_from="ZEROMEMORY_FEEDBACK_STEP", ge=0.01, le=1.0)


class CanaryPolicy(Section):
    """The retrieval safety net: canary queries replayed before and after each clustering or reflection run."""

    enabled: bool = setting(True, "Off: no run is guarded (`evaluate` turns it off).",
                            moved_from="ZEROMEMORY_CANARIES")
    max_drop: float = setting(
        0.05, "A run whose mean budget recall over the canaries drops by more than this is undone.",
        moved_from="ZEROMEMORY_CANARY_MAX_DROP", ge=0.0, le=1.0)
    sample: int = setting(
        20, "Canaries sampled from the memories a run consolidates (one per memory at most), on top of the "
        "operator's own.", moved_from="ZEROMEMORY_CANARY_SAMPLE", ge=0, le=500)
    min_consolidated: int = setting(
        4, "A run consolidating fewer memories samples none (each costs two searches); the operator's own "
        "canaries always run.", moved_from="ZEROMEMORY_CANARY_MIN_CONSOLIDATED", ge=0, le=100_000)


class OmissionPolicy(Section):
    """The omission check: after each clustering run, a sample of the statements it consolidated is searched for."""

    enabled: bool = setting(True, "Off: no clustering run is checked.")
    sample: int = setting(
        8, "Statements (sentences carrying a value: a number, an amount, a date, a name, a place) sampled from the "
        "memories a clustering run merged or archived, one per memory at most; each costs one search.",
        ge=0, le=500)
    max_share: float = setting(
        0.05, "A run that can no longer find more than this share of the sampled statements (no active memory "
        "within the search budget states their values) is held for review; 0 holds a run for one lost statement.",
        ge=0.0, le=1.0)


class Policy(Section):
    """Everything a run, a search or a profile read is calibrated by."""

    clustering: ClusteringPolicy = ClusteringPolicy()
    merging: MergingPolicy = MergingPolicy()
    updates: UpdatesPolicy = UpdatesPolicy()
    reflection: ReflectionPolicy = ReflectionPolicy()
    search: SearchPolicy = SearchPolicy()
    profile: ProfilePolicy = ProfilePolicy()
    lifecycle: LifecyclePolicy = LifecyclePolicy()
    canaries: CanaryPolicy = CanaryPolicy()
    omissions: OmissionPolicy = OmissionPolicy()

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


DEFAULT_POLICY = Policy()
SECTIONS: dict[str, type[Section]] = {
    name: info.annotation for name, info in Policy.model_fields.items()}  # type: ignore[misc]
# Flat keys tenants set before the policy had sections: each still sets its field.
LEGACY_KEYS = {
    "recency_window_hours": "clustering", "window_tag_prefix": "clustering",
    **{name: "lifecycle" for name in ("decay_half_life_days", "archive_threshold", "keep_floor", "retention_days",
                                      "retention_importance", "purge_days")},
}


class PolicyInvalid(ValueError):
    """A tenant's overrides that do not fit the policy; the message names each key and what is wrong with it."""


def policy_with_overrides(overrides: Mapping[str, Any] | None) -> Policy:
    """The defaults with `overrides` (a tenant's) laid over them, validated."""
    if not overrides:
        return DEFAULT_POLICY
    if not isinstance(overrides, Mapping):
        raise PolicyInvalid(f"overrides must be a JSON object of policy sections, got {type(overrides).__name__}")
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in LEGACY_KEYS:
            nested.setdefault(LEGACY_KEYS[key], {})[key] = value
    for key, value in overrides.items():
        if key not in LEGACY_KEYS:
            nested[key] = {**nested.get(key, {}), **value} if isinstance(value, Mapping) else value
    try:
        return Policy.model_validate(nested)
    except ValidationError as error:
        raise PolicyInvalid(_explained(error)) from None


def _explained(error: ValidationError) -> str:
    problems = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"])
        if problem["type"] == "extra_forbidden":
            known = sorted(SECTIONS) if len(problem["loc"]) == 1 else sorted(
                SECTIONS[str(problem["loc"][0])].model_fields)
            problems.append(f"{where}: unknown key (known: {', '.join(known)})")
        else:
            problems.append(f"{where}: {problem['msg']} (got {problem['input']!r})")
    return "invalid policy overrides: " + "; ".join(problems)


@dataclass(frozen=True)
class PolicyField:
    """One field as docs and settings see it: "section.name", its type, default, bounds (None: unbounded), meaning
    and the environment variable it replaced."""

    path: str
    type: str
    default: Any
    minimum: float | None
    maximum: float | None
    description: str
    moved_from: str | None

    def moved_message(self) -> str:
        """What start-up says to an operator who still sets the variable this field replaced."""
        section, name = self.path.split(".")
        return (f"{self.moved_from} is no longer read from the environment: it is the policy field {self.path} "
                f"(default {self.default!r}), set per tenant in Tenant.overrides as "
                f'{{"{section}": {{"{name}": …}}}} (admin → Tenants; docs/configuration.md)')


def policy_fields() -> Iterator[PolicyField]:
    for section, model in SECTIONS.items():
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            bounds = {bound: getattr(m, bound) for m in info.metadata for bound in ("ge", "le") if hasattr(m, bound)}
            yield PolicyField(f"{section}.{name}", getattr(info.annotation, "__name__", str(info.annotation)),
                              info.default, bounds.get("ge"), bounds.get("le"), info.description or "",
                              extra.get("moved_from"))  # type: ignore[arg-type]
