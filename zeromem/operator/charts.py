"""Server-rendered SVG charts for the operator dashboard. Pure: strings in, SVG text out; nothing fetched at
run time, no JavaScript. Every label is escaped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

PALETTE = ("#2b6cb0", "#38a169", "#a0aec0", "#dd6b20", "#805ad5", "#e53e3e", "#319795", "#d69e2e")
FONT = 'font-family="sans-serif" font-size="11"'


def _frame(title: str, width: int, height: int, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}"><title>{escape(title)}</title>'
            f'<rect width="{width}" height="{height}" fill="#fff"/>' + "".join(body) + "</svg>")


def _color(number: int, name: str, colors: Mapping[str, str] | None) -> str:
    return (colors or {}).get(name, PALETTE[number % len(PALETTE)])


def _heading(title: str, names: Sequence[str], colors: Mapping[str, str] | None, x: int) -> list[str]:
    """The visible title, and the legend under it."""
    parts = [f'<text x="8" y="16" {FONT} font-weight="bold">{escape(title)}</text>']
    for number, name in enumerate(names):
        left = x + number * 130
        parts.append(f'<rect x="{left}" y="24" width="10" height="10" fill="{_color(number, name, colors)}"/>'
                     f'<text x="{left + 14}" y="33" {FONT}>{escape(name)}</text>')
    return parts


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** (len(str(int(value))) - 1)
    return float((int(value / step) + 1) * step) if value > step else float(step)


def _axes(labels: Sequence[str], top: float, plot: tuple[int, int, int, int]) -> list[str]:
    left, upper, right, lower = plot
    parts = [f'<line x1="{left}" y1="{lower}" x2="{right}" y2="{lower}" stroke="#718096"/>',
             f'<line x1="{left}" y1="{upper}" x2="{left}" y2="{lower}" stroke="#718096"/>',
             f'<text x="{left - 4}" y="{upper + 4}" text-anchor="end" {FONT}>{top:g}</text>',
             f'<text x="{left - 4}" y="{lower}" text-anchor="end" {FONT}>0</text>']
    every = max(1, len(labels) // 6)
    for index in range(0, len(labels), every):
        x = left + (right - left) * (index + 0.5) / max(1, len(labels))
        parts.append(f'<text x="{x:.1f}" y="{lower + 14}" text-anchor="middle" {FONT}>{escape(labels[index])}</text>')
    return parts


def line_chart(title: str, labels: Sequence[str], series: Mapping[str, Sequence[float]], *, width: int = 720,
               height: int = 240) -> str:
    """One line per series over the labels (e.g. days)."""
    plot = (56, 48, width - 16, height - 24)
    left, upper, right, lower = plot
    top = _nice_max(max((v for values in series.values() for v in values), default=0))
    body = _axes(labels, top, plot) + _heading(title, list(series), None, left)
    for number, values in enumerate(series.values()):
        points = " ".join(f"{left + (right - left) * (i + 0.5) / max(1, len(values)):.1f},"
                          f"{lower - (lower - upper) * v / top:.1f}" for i, v in enumerate(values))
        body.append(f'<polyline fill="none" stroke="{PALETTE[number % len(PALETTE)]}" stroke-width="2" '
                    f'points="{points}"/>')
    return _frame(title, width, height, body)


def stacked_bars(title: str, labels: Sequence[str], series: Mapping[str, Sequence[float]], *, width: int = 720,
                 height: int = 240, colors: Mapping[str, str] | None = None) -> str:
    """One bar per label, stacked by series (e.g. runs per day by outcome)."""
    plot = (56, 48, width - 16, height - 24)
    left, upper, right, lower = plot
    totals = [sum(values[i] for values in series.values()) for i in range(len(labels))]
    top = _nice_max(max(totals, default=0))
    slot = (right - left) / max(1, len(labels))
    body = _axes(labels, top, plot) + _heading(title, list(series), colors, left)
    for index in range(len(labels)):
        base = float(lower)
        for number, (name, values) in enumerate(series.items()):
            size = (lower - upper) * values[index] / top
            if size <= 0:
                continue
            body.append(f'<rect x="{left + index * slot + slot * 0.15:.1f}" y="{base - size:.1f}" '
                        f'width="{slot * 0.7:.1f}" height="{size:.1f}" fill="{_color(number, name, colors)}">'
                        f'<title>{escape(labels[index])} {escape(name)}: {values[index]:g}</title></rect>')
            base -= size
    return _frame(title, width, height, body)


def horizontal_bars(title: str, items: Sequence[tuple[str, float]], *, unit: str = "", width: int = 720,
                    threshold: float | None = None, value_words: Callable[[float], str] | None = None) -> str:
    """One bar per (label, value), largest first as given; an optional threshold line (an alert level).
    `value_words` writes a value (e.g. hours as "21 days"); by default the value and the unit."""
    words = value_words or (lambda value: f"{value:,.4g} {unit}".strip())
    row, left, right = 22, 220, width - 90
    height = 40 + row * max(1, len(items))
    top = _nice_max(max([v for _, v in items] + [threshold or 0], default=0))
    body = [f'<text x="8" y="16" {FONT} font-weight="bold">{escape(title)}</text>']
    if not items:
        body.append(f'<text x="8" y="40" {FONT}>nothing to show</text>')
    for index, (label, value) in enumerate(items):
        y = 28 + index * row
        body.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" {FONT}>{escape(label[:40])}</text>'
                    f'<rect x="{left}" y="{y}" width="{(right - left) * value / top:.1f}" height="{row - 6}" '
                    f'fill="{PALETTE[0]}"/><text x="{left + (right - left) * value / top + 4:.1f}" y="{y + 13}" '
                    f'{FONT}>{escape(words(value))}</text>')
    if threshold is not None and items:
        x = left + (right - left) * threshold / top
        body.append(f'<line x1="{x:.1f}" y1="24" x2="{x:.1f}" y2="{height - 8}" stroke="#e53e3e" '
                    f'stroke-dasharray="4 3"/><text x="{x + 3:.1f}" y="{height - 10}" fill="#e53e3e" {FONT}>'
                    f'alert {escape(words(threshold))}</text>')
    return _frame(title, width, height, body)
