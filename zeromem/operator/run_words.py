"""A run told in sentences (the run page, the operator home): what it read, what it changed, what the safety net
measured and what happened to its changes in review. The raw fields stay on the page, collapsed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consolidation.models import ConsolidationRun, RunKind, RunStatus
from consolidation.selectors import ClusteringBacklog
from zeromem.operator.wording import counted, duration_words

TRIGGERS = {"beat": "the schedule", "api": "an API call", "admin": "an operator", "cli": "a command",
            "session_end": "the end of a session"}


def run_changes(run: ConsolidationRun) -> str:
    """One line of what the run changed ('merged 12 memories into 4; 2 statements superseded'), or 'no change'."""
    if run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        return "not finished"
    parts = []
    if run.merged:
        parts.append(f"merged {counted(run.merged, 'memory', 'memories')} into {run.clusters:,}")
    elif run.clusters:
        parts.append(f"wrote {counted(run.clusters, 'digest')}")
    if run.kind == RunKind.REFLECTION and run.created:
        parts.append(f"wrote {counted(run.created, 'insight memory', 'insight memories')}")
    for count, words in ((run.superseded, ("statement superseded", "statements superseded")),
                         (run.claims_retired, ("claim retired", "claims retired")),
                         (run.flagged, ("contradiction flagged", "contradictions flagged")),
                         (run.archived, ("memory archived", "memories archived")),
                         (run.deleted, ("memory deleted", "memories deleted"))):
        if count:
            parts.append(counted(count, *words))
    return "; ".join(parts) or "no change"


def run_sentences(run: ConsolidationRun, *, backlog: ClusteringBacklog | None = None,
                  reviews: Mapping[str, int] | None = None) -> list[str]:
    """The run in words. `backlog`: the user's episodes now, to say why a clustering run read nothing;
    `reviews`: its changes by review state ('pending', 'review.approve', …)."""
    said = [_opening(run), *_reading(run, backlog), *_outcome(run), *_canaries(run.result.get("canaries")),
            *_omissions(run),
            *_reflection(run), *_reviewed(reviews or {}), *_cost(run)]
    return [sentence for sentence in said if sentence]


def _opening(run: ConsolidationRun) -> str:
    scope = run.user_id or "every user"
    scope += f", entity {run.entity_id}" if run.entity_id else ""
    took = ""
    if run.started_at and run.finished_at:
        took = f" in {_seconds(max(0.0, (run.finished_at - run.started_at).total_seconds()))}"
    state = {RunStatus.PENDING: "is waiting for a worker", RunStatus.RUNNING: "is running",
             RunStatus.SUCCEEDED: f"succeeded{took}", RunStatus.FAILED: f"failed{took}",
             RunStatus.SKIPPED: "was skipped"}.get(RunStatus(run.status), run.status)
    forced = (" It was forced: the recency window, the thresholds and the current-session rule did not apply."
              if run.force else "")
    follows = f" It follows run {run.result['follows']}, which ran unforced." if run.result.get("follows") else ""
    return (f"A {run.kind} run for {scope} ({run.tenant.name}), started by {TRIGGERS.get(run.trigger, run.trigger)}, "
            f"{state}.{forced}{follows}")


def _seconds(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else duration_words(seconds / 3600)


def _reading(run: ConsolidationRun, backlog: ClusteringBacklog | None) -> list[str]:
    if run.kind == RunKind.LIFECYCLE or run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        return []
    if run.reviewed:
        return [f"It reviewed {counted(run.reviewed, 'memory', 'memories')}."]
    if run.kind == RunKind.CLUSTERING and backlog is not None and not run.force:
        return [f"It reviewed no memory: {nothing_to_cluster(backlog)}"]
    return ["It reviewed no memory."]


def nothing_to_cluster(backlog: ClusteringBacklog) -> str:
    """Why an unforced clustering run of the user has nothing to read now (empty when it has something)."""
    if backlog.eligible:
        return ""
    if not backlog.episodes:
        return "the user has no active episodes; everything is consolidated or archived."
    held = [f"{counted(backlog.recent, 'memory', 'memories')} newer than the {_hours(backlog.window_hours)} recency "
            f"window"] if backlog.recent else []
    if backlog.current_session:
        held.append(f"{counted(backlog.current_session, 'memory', 'memories')} in the user's current session")
    return f"right now the user has {' and '.join(held)}; use force to include them."


def _hours(hours: float) -> str:
    return f"{hours:g}-hour"


def _outcome(run: ConsolidationRun) -> list[str]:
    said = []
    if run.kind == RunKind.LIFECYCLE:
        steps = {"decay": "archived as decayed", "retention": "archived past retention", "purge": "purged"}
        said = [f"{counted(int(run.result.get(step, 0)), 'memory', 'memories')} {words}."
                for step, words in steps.items()]
    elif run.status not in (RunStatus.PENDING, RunStatus.RUNNING):
        changes = run_changes(run)
        said = [f"It {changes}." if changes != "no change" else "It changed nothing."]
    if run.result.get("llm_unavailable"):
        said.append("The LLM did not answer; the run is tried again later.")
    if run.error:
        said.append(f"Error: {run.error[:500]}")
    return said


def _canaries(canaries: Mapping[str, Any] | None) -> list[str]:
    if not canaries:
        return []
    checked, worse = int(canaries.get("canaries", 0)), list(canaries.get("worse", []))
    said = [f"The safety net replayed {counted(checked, 'canary query', 'canary queries')} before and after: recall "
            f"{canaries.get('recall_before', 0):.3f} → {canaries.get('recall_after', 0):.3f}."]
    if worse:
        ranked = (f"{counted(len(worse), 'canary query', 'canary queries')} ranked "
                  f"{'its memory' if len(worse) == 1 else 'their memory'} lower after this run")
        verdict = ("the run was undone" if canaries.get("failed")
                   else f"within the allowed drop of {canaries.get('max_drop', 0):g}, the run stands")
        said.append(f"{ranked} → {verdict}.")
    return said


def _omissions(run: ConsolidationRun) -> list[str]:
    checked = run.result.get("omissions")
    if not checked:
        return []
    said = [f"The omission check searched for {counted(run.omission_checked, 'statement')} of what it consolidated: "
            f"{run.omissions:,} no longer found."]
    if run.held:
        said.append(f"It is held for review (more than {checked.get('max_share', 0):g} of them lost): its changes "
                    f"stay until an operator approves the run or rejects it whole. Lost: "
                    f"{', '.join(checked.get('missing', [])[:5])}.")
    return said


def _reflection(run: ConsolidationRun) -> list[str]:
    if run.kind != RunKind.REFLECTION or not run.result:
        return []
    result = run.result
    said = [f"{counted(int(result.get('calls_done', 0)), 'LLM call')} answered, "
            f"{int(result.get('failed_calls', 0)):,} failed."] if "calls_done" in result else []
    insights = list(result.get("insights", []))
    if insights:
        said.append(f"Insights: {'; '.join(str(i) for i in insights[:5])}"
                    + (f" (and {len(insights) - 5:,} more)." if len(insights) > 5 else "."))
    if result.get("profile_updated"):
        said.append("The profile was updated.")
    return said


# Review states in the order told, each as (one change, several changes).
REVIEW_WORDS = {"review.approve": ("change approved", "changes approved"),
                "review.reject": ("change rejected (undone)", "changes rejected (undone)"),
                "review.resolve": ("contradiction resolved", "contradictions resolved"),
                "undone": ("change undone", "changes undone"),
                "pending": ("change awaits review", "changes await review")}


def _reviewed(reviews: Mapping[str, int]) -> list[str]:
    parts = [counted(reviews[state], *words) for state, words in REVIEW_WORDS.items() if reviews.get(state)]
    return [f"In review: {', '.join(parts)}."] if parts else []


def _cost(run: ConsolidationRun) -> list[str]:
    if not run.llm_calls:
        return []
    tokens = run.prompt_tokens + run.completion_tokens
    return [f"{counted(run.llm_calls, 'LLM call')}, {tokens:,} tokens, ${float(run.cost_usd):.4f}"
            + (f" ({run.model})." if run.model else ".")]
