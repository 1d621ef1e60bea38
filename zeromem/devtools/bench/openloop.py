"""HTTP load for benches. Open loop: requests leave on a fixed schedule whether or not earlier ones have answered, and
each latency runs from the request's scheduled time, so a slow server cannot slow the arrivals down and hide its
own queueing (coordinated omission). Closed loop: one request after the other, for costs per request."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

TIMEOUT_S = 60


@dataclass(frozen=True)
class Arrival:
    scheduled_at: float  # epoch seconds of its slot
    latency_s: float  # from the slot to the whole answer read
    ok: bool  # 200


def open_loop(*, url: str, headers: dict[str, str], bodies: Sequence[dict[str, Any]], rate: float) -> list[Arrival]:
    """POST each body at its slot (`rate` per second, starting now), on as many connections as are in flight."""
    return asyncio.run(_open_loop(url, headers, bodies, rate))


async def _open_loop(url: str, headers: dict[str, str], bodies: Sequence[dict[str, Any]],
                     rate: float) -> list[Arrival]:
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=100)
    async with httpx.AsyncClient(headers=headers, timeout=TIMEOUT_S, trust_env=False, limits=limits) as client:
        start, epoch = time.perf_counter() + 0.05, time.time() + 0.05
        tasks = []
        for i, body in enumerate(bodies):
            due = start + i / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            tasks.append(asyncio.create_task(_send(client, url, body, due, epoch + i / rate)))
        return list(await asyncio.gather(*tasks))


async def _send(client: httpx.AsyncClient, url: str, body: dict[str, Any], due: float, epoch: float) -> Arrival:
    try:
        ok = (await client.post(url, json=body)).status_code == 200
    except httpx.HTTPError:
        ok = False
    return Arrival(scheduled_at=epoch, latency_s=time.perf_counter() - due, ok=ok)


def closed_loop(client: httpx.Client, *, url: str, bodies: Sequence[dict[str, Any]]) -> None:
    """POST each body after the previous one answered (one kept-alive connection); any answer but 200 raises."""
    for body in bodies:
        client.post(url, json=body).raise_for_status()


def percentile_ms(latencies_s: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile in milliseconds (the value below which q % of the requests answered)."""
    if not latencies_s:
        return None
    ordered = sorted(latencies_s)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] * 1000, 1)
