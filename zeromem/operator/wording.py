"""Figures as an operator reads them: durations in days, hours and minutes, counts with their noun. Pure."""

from __future__ import annotations


def duration_words(hours: float) -> str:
    """'under a minute', '42 min', '3 h 5 min', '2 days 4 h', '21 days' (whole days from a week on)."""
    minutes = round(hours * 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        whole, rest = divmod(minutes, 60)
        return f"{whole} h" + (f" {rest} min" if rest else "")
    days, rest_hours = divmod(round(hours), 24)
    if days >= 7 or not rest_hours:
        return f"{round(hours / 24):,} days"
    return f"{days} days {rest_hours} h"


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """'1 memory', '4,895 memories'."""
    return f"{number:,} {singular if number == 1 else plural or singular + 's'}"
