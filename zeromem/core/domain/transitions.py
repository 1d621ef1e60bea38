"""The memory state table of ARCHITECTURE.md, "States", as plain data. No Django import.

Every state change names an operation; the operation fixes the one allowed (from, to) pair. Undo-only
moves (consolidated → raw, archived → raw) exist only as `unmerge` and `restore`.
"""

from __future__ import annotations

from dataclasses import dataclass

RAW, CONSOLIDATED, ARCHIVED = "raw", "consolidated", "archived"
STATES = (RAW, CONSOLIDATED, ARCHIVED)


@dataclass(frozen=True)
class Transition:
    operation: str
    from_state: str
    to_state: str
    description: str


TRANSITIONS: dict[str, Transition] = {t.operation: t for t in (
    Transition("consolidate", RAW, CONSOLIDATED, "folded into a semantic memory that cites it"),
    Transition("decay", RAW, ARCHIVED, "activation decayed below the archive threshold"),
    Transition("supersede", RAW, ARCHIVED, "superseded by a newer statement"),
    Transition("uninformative", RAW, ARCHIVED, "states nothing durable: a greeting, a reaction, thanks"),
    Transition("retract", RAW, ARCHIVED, "a semantic memory retracted by an undo"),
    Transition("retention", CONSOLIDATED, ARCHIVED, "past the retention window with low importance"),
    Transition("unmerge", CONSOLIDATED, RAW, "undo of a merge"),
    Transition("restore", ARCHIVED, RAW, "undo of a supersede or archive"),
)}

# A memory archived by an operation keeps the operation's name as its archive reason: this one marks a statement a
# newer one replaced, which history-aware reads (as_of, include_history) still cover.
SUPERSEDED = "supersede"

# An undo's retraction is final: restoring it would resurrect what an operator explicitly took back.
UNDONE = "retract"
UNRESTORABLE_ARCHIVE_REASONS = frozenset({UNDONE})


class TransitionRefused(Exception):
    """A state change the table does not allow, with the reason in the message."""


def transition_for(operation: str) -> Transition:
    try:
        return TRANSITIONS[operation]
    except KeyError:
        raise TransitionRefused(f"unknown operation {operation!r}; allowed: {sorted(TRANSITIONS)}") from None


def check_transition(*, operation: str, current_state: str, archive_reason: str = "") -> Transition:
    """The transition `operation` would make from `current_state`, or TransitionRefused saying why not."""
    transition = transition_for(operation)
    if current_state != transition.from_state:
        raise TransitionRefused(
            f"{operation} moves {transition.from_state} → {transition.to_state}; the memory is {current_state}")
    if operation == "restore" and archive_reason in UNRESTORABLE_ARCHIVE_REASONS:
        raise TransitionRefused("restore refuses a memory that an undo retracted")
    return transition


def allowed_pairs() -> set[tuple[str, str]]:
    return {(t.from_state, t.to_state) for t in TRANSITIONS.values()}
