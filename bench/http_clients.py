"""Three HTTP clients under the harness, side by side, against the paced engine.

The same TPS code (``verifier.harness.tps.measure_tps`` through ``EngineClient``) runs
over three wires:

- ``h11``: the harness's wire (``verifier/harness/wire.py``: h11 parses, one write per
  request);
- ``legacy``: the hand-written HTTP/1.1 client it replaced (``bench/legacy_wire.py``);
- ``httpx``: a plain ``httpx.AsyncClient`` (``trust_env=False``, a kept-alive pool as
  large as the harness's).

For every rate (100 to 5,000 tokens/s per stream, and unpaced) and concurrency (1 and
8), one paced engine process serves all three, and the clients take turns: each round
runs one trial per client, in an order that rotates every round, so the machine's other
load falls on all three alike. Per trial: the harness's TPS against the engine's own
clock (the timing error), against the nominal rate, the harness's time per request (its
latency minus the engine's busy time) and its CPU per token (``bench.fidelity``). Ratios
are taken within a round, between trials minutes apart at most.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import httpx

from bench import legacy_wire
from bench.common import paced_engine
from bench.fidelity import CONCURRENCY, RATES, run_cell
from verifier.harness.client import EngineClient
from verifier.harness.wire import Response

CLIENTS = ("h11", "legacy", "httpx")


class HttpxWire:
    """The harness wire's ``request`` over httpx (the TPS loop sends no streamed requests)."""

    def __init__(self, base_url: str, *, pool: int, connect_timeout_s: float) -> None:
        self.prefix = httpx.URL(base_url).path.rstrip("/")
        self._client = httpx.AsyncClient(
            base_url=base_url,
            trust_env=False,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=pool),
            timeout=httpx.Timeout(None, connect=connect_timeout_s),
            headers={"User-Agent": "podium-harness"},
        )

    async def request(
        self, method: str, path: str, body: bytes | None = None, *, timeout_s: float
    ) -> Response:
        headers = {"Content-Type": "application/json"} if body is not None else None
        answer = await self._client.request(
            method, path, content=body, headers=headers, timeout=timeout_s
        )
        return Response(answer.status_code, dict(answer.headers), answer.content, path)

    async def aclose(self) -> None:
        await self._client.aclose()


class LegacyClient(EngineClient):
    """``EngineClient`` over the earlier hand-written wire."""

    def __init__(self, base_url: str, *, timeout_s: float, concurrency: int = 1, **_: Any):
        super().__init__(base_url, timeout_s=timeout_s, concurrency=concurrency)
        self._wire = legacy_wire.Wire(self.base_url, pool=max(1, concurrency) + 2)  # type: ignore[assignment]


class HttpxClient(EngineClient):
    """``EngineClient`` over httpx."""

    def __init__(self, base_url: str, *, timeout_s: float, concurrency: int = 1, **_: Any):
        super().__init__(base_url, timeout_s=timeout_s, concurrency=concurrency)
        self._wire = HttpxWire(  # type: ignore[assignment]
            self.base_url, pool=max(1, concurrency) + 2, connect_timeout_s=10.0
        )


CLIENT_CLASSES: dict[str, type[EngineClient]] = {
    "h11": EngineClient,
    "legacy": LegacyClient,
    "httpx": HttpxClient,
}


def rotated(names: Sequence[str], round_no: int) -> list[str]:
    k = round_no % len(names)
    return [*names[k:], *names[:k]]


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in rows))


def summarize_cell(
    rate: float, concurrency: int, rounds: list[dict[str, dict[str, Any]]]
) -> dict[str, Any]:
    """Per client: medians over the rounds; against h11: the medians of per-round ratios."""
    per: dict[str, Any] = {}
    for name in CLIENTS:
        rows = [r[name] for r in rounds]
        per[name] = {
            "harness_tps_median": _median(rows, "harness_tps"),
            "error_vs_engine_median": _median(rows, "error_vs_engine"),
            "max_abs_error_vs_engine": max(abs(r["error_vs_engine"]) for r in rows),
            "error_vs_nominal_median": _median(rows, "error_vs_nominal") if rate > 0 else None,
            "client_us_per_request_median": _median(rows, "client_us_per_request"),
            "harness_cpu_us_per_token_median": _median(rows, "harness_cpu_us_per_token"),
        }
    vs_h11: dict[str, Any] = {}
    for name in CLIENTS[1:]:
        vs_h11[name] = {
            "tps_ratio": statistics.median(
                r[name]["harness_tps"] / r["h11"]["harness_tps"] for r in rounds
            ),
            "client_time_ratio": statistics.median(
                r[name]["client_us_per_request"] / r["h11"]["client_us_per_request"]
                for r in rounds
                if r["h11"]["client_us_per_request"] > 0
            )
            if any(r["h11"]["client_us_per_request"] > 0 for r in rounds)
            else None,
            "cpu_per_token_ratio": statistics.median(
                r[name]["harness_cpu_us_per_token"] / r["h11"]["harness_cpu_us_per_token"]
                for r in rounds
            ),
        }
    return {
        "rate": rate,
        "concurrency": concurrency,
        "nominal_tps": rate * concurrency if rate > 0 else None,
        "clients": per,
        "vs_h11": vs_h11,
        "rounds": rounds,
    }


def run(*, quick: bool = False, rates: Sequence[float] = RATES) -> dict[str, Any]:
    """Every rate x concurrency cell (and unpaced), the three clients interleaved."""
    rounds_n, trial_s = (2, 1.0) if quick else (3, 3.0)
    cells = []
    for rate in [*rates, 0]:
        with paced_engine(rate) as engine:
            for concurrency in CONCURRENCY:
                rounds: list[dict[str, dict[str, Any]]] = []
                for r in range(rounds_n):
                    got: dict[str, dict[str, Any]] = {}
                    for name in rotated(CLIENTS, r):
                        cell = run_cell(
                            engine.url, rate, concurrency, 1, trial_s, CLIENT_CLASSES[name]
                        )
                        got[name] = {**cell["trials"][0], "order": rotated(CLIENTS, r)}
                    rounds.append(got)
                summary = summarize_cell(rate, concurrency, rounds)
                cells.append(summary)
                _print(summary)
    paced = [c for c in cells if c["rate"] > 0]
    return {
        "rounds_per_cell": rounds_n,
        "target_trial_s": trial_s,
        "clients": list(CLIENTS),
        "cells": cells,
        "worst_abs_error_vs_engine": {
            name: max(c["clients"][name]["max_abs_error_vs_engine"] for c in paced)
            for name in CLIENTS
        },
    }


def _print(cell: dict[str, Any]) -> None:
    rate = "unpaced" if cell["rate"] == 0 else f"{cell['rate']:g}"
    parts = []
    for name in CLIENTS:
        c = cell["clients"][name]
        parts.append(
            f"{name} {c['harness_tps_median']:.1f} tok/s "
            f"(vs engine {c['error_vs_engine_median'] * 100:+.3f} %, "
            f"{c['client_us_per_request_median']:.0f} us/req)"
        )
    print(f"  rate {rate:>7} c={cell['concurrency']}: " + "; ".join(parts), flush=True)
