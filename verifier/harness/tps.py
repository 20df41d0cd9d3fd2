"""Throughput: the challenge's TPS workload, timed and counted by the harness.

A pass sends ``num_prompts`` requests through ``concurrency`` closed-loop workers: each
worker sends its next request as soon as its previous answer arrived. If a pass ends
before ``min_trial_seconds``, another pass follows inside the same trial until the trial
is long enough. Every pass of every trial takes prompts that no earlier request of the
run carried (``PromptStream``: the held-out set shuffled with the run's seed, drawn
without replacement), so no answer can be replayed. Only a held-out set too small for
the run repeats prompts, and says so (``TpsResult.repeated_requests``); then
``integrity.caching`` bounds what a replay gains.

    TPS(trial) = generated tokens of all its requests / wall time of the trial

The wall time is ``time.perf_counter`` in the harness process around the whole trial
(first request sent to last answer read); the engine's clock is never used. Generated
tokens are counted by the harness from the returned ``token_ids`` (or, if the spec says
``count_tokens: retokenize`` and an engine returns none, by re-tokenising the text with
the verifier's tokenizer), never from the engine's ``usage``. Warm-up requests on the
public prompts come first and are not timed.

A trial's first pass may carry fresh controls (``verifier.harness.controls``):
prompts made at run time, each in the place of a held-out prompt, timed and counted like
it (``RequestRecord.fresh``). At concurrency ``c > 1`` they are one block of whole waves
of ``c`` (``verifier.harness.plan.fresh_positions``), sent as a segment of their own: the
``c`` workers carry nothing but controls while it runs, and its wall time and tokens are
recorded (``TrialResult.fresh_seconds``, ``fresh_tokens``) for ``integrity.controls`` to
judge the controls as a throughput. Untimed requests (PPL records, probes) can be placed among
the timed ones (``verifier.harness.plan``): a trial's clock stops while they run, so a
trial's time is the sum of its timed segments. When the trials disagree beyond
``tps.max_cv`` and are too few to pin the mean within ``tps.max_ci``, trials are added
up to ``tps.max_trials``; a measurement still unstable then is reported as such
(``Stability``) and can never be VERIFIED.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from podium.errors import UsageError
from schemas.challenge import ChallengeSpec
from verifier.evidence import RequestRecord, Stability, TpsResult, TrialResult
from verifier.harness.client import EngineClient, Reply
from verifier.harness.stats import summarize, t975

Prompt = dict[str, Any]  # {"id": str, "prompt": str | list[int] | list[message]}
Tokenize = Callable[[str], Sequence[int]]
TpsProgress = Callable[[str, int, int], None]


def messages_of(prompt: Any) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) for m in prompt):
        return prompt
    raise UsageError("a chat prompt must be text or a list of messages, not token ids")


def workload_body(
    spec: ChallengeSpec,
    model: str,
    prompt: Any,
    *,
    max_tokens: int | None = None,
    endpoint: str | None = None,
) -> dict[str, Any]:
    """One request of the TPS workload: explicit sampling, seed, ignore_eos, token ids."""
    tps = spec.tps
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens if max_tokens is not None else tps.max_tokens,
        "temperature": tps.sampling.temperature,
        "top_p": tps.sampling.top_p,
        "top_k": tps.sampling.top_k,
        "seed": tps.seed,
        "ignore_eos": tps.ignore_eos,
        "stream": tps.stream,
        "return_token_ids": True,
    }
    if tps.stream:
        body["stream_options"] = {"include_usage": True}
    if (endpoint or tps.endpoint).endswith("/chat/completions"):
        body["messages"] = messages_of(prompt)
    else:
        body["prompt"] = prompt
    return body


class PromptStream:
    """The timed prompts in the order a run sends them, each drawn once.

    ``seed`` shuffles the set (the verifier's seed: the engine cannot predict the order);
    None keeps it in order. When every prompt has been drawn, the set is drawn again (in a
    new order): the requests from then on repeat a prompt, and are counted.
    """

    def __init__(self, prompts: Sequence[Prompt], seed: int | None = None) -> None:
        if not prompts:
            raise UsageError("the TPS stage needs prompts", where="prompts")
        self._rng = random.Random(f"{seed}:prompts") if seed is not None else None
        self.pool = list(prompts)
        self._order = self._shuffled()
        self.drawn = 0

    def _shuffled(self) -> list[Prompt]:
        order = list(self.pool)
        if self._rng is not None:
            self._rng.shuffle(order)
        return order

    def take(self, n: int) -> list[Prompt]:
        out: list[Prompt] = []
        for _ in range(n):
            index = self.drawn % len(self.pool)
            if index == 0 and self.drawn:
                self._order = self._shuffled()
            out.append(self._order[index])
            self.drawn += 1
        return out

    @property
    def distinct(self) -> int:
        return len(self.pool)

    @property
    def repeated(self) -> int:
        """Requests drawn after the set ran out: each repeats a prompt sent before."""
        return max(0, self.drawn - len(self.pool))


def count_reply(reply: Reply, spec: ChallengeSpec, tokenize: Tokenize | None) -> tuple[int, str]:
    """Generated tokens of one answer, as the harness counts them, and how they were counted."""
    if reply.token_ids is not None:
        return len(reply.token_ids), "token_ids"
    if spec.tps.count_tokens == "retokenize" and tokenize is not None:
        return len(tokenize(reply.text)), "retokenize"
    return 0, "none"


def record_of(
    reply: Reply,
    spec: ChallengeSpec,
    tokenize: Tokenize | None,
    *,
    prompt_id: str,
    trial: int,
    pass_index: int,
    position: int,
    control: bool = False,
    fresh: bool = False,
) -> RequestRecord:
    """The record of one answer, its tokens counted by the harness."""
    counted, source = count_reply(reply, spec, tokenize)
    return RequestRecord(
        prompt_id=prompt_id,
        trial=trial,
        pass_index=pass_index,
        position=position,
        token_ids=reply.token_ids,
        prompt_token_ids=reply.prompt_token_ids,
        text=reply.text,
        latency_s=reply.latency_s,
        usage=reply.usage,
        finish_reason=reply.finish_reason,
        counted_tokens=counted,
        count_source=source,
        control=control,
        fresh=fresh,
    )


async def run_requests(
    client: EngineClient,
    bodies: Sequence[dict[str, Any]],
    *,
    path: str,
    concurrency: int,
    kind: str,
    on_reply: Callable[[int, Reply], None] | None = None,
) -> list[Reply]:
    """Send ``bodies`` through ``concurrency`` closed-loop workers; answers in body order.

    The first failure cancels the other workers and is raised as it came (EngineError).
    """
    replies: list[Reply | None] = [None] * len(bodies)
    jobs = iter(enumerate(bodies))

    async def worker() -> None:
        for index, body in jobs:  # a shared iterator: the next free worker takes the next job
            reply = await client.post(path, body, f"{kind} #{index}")
            replies[index] = reply
            if on_reply is not None:
                on_reply(index, reply)

    tasks = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(bodies))))]
    try:
        await asyncio.gather(*tasks)
    except Exception:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return [r for r in replies if r is not None]


Pause = Callable[[int, int], Awaitable[None]]  # (trial, position) -> untimed requests


async def _trial(
    client: EngineClient,
    spec: ChallengeSpec,
    model: str,
    stream: PromptStream,
    index: int,
    tokenize: Tokenize | None,
    progress: TpsProgress | None,
    pauses: Collection[int] = (),
    pause: Pause | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    fresh: Mapping[int, Prompt] | None = None,
) -> tuple[TrialResult, list[RequestRecord]]:
    """One timed trial; the clock stops at each position in ``pauses`` while ``pause`` runs.

    Each pass draws its ``num_prompts`` prompts from ``stream``; in the first, the
    prompt at each position of ``fresh`` is that fresh control instead (one fewer drawn).
    """
    fresh = {p: c for p, c in (fresh or {}).items() if 0 <= p < spec.tps.num_prompts}
    tps = spec.tps
    records: list[RequestRecord] = []
    stage = f"tps trial {index + 1}"
    passes = 0
    done = 0
    cuts, block = segments(tps.num_prompts, tps.concurrency, pauses, fresh)
    block_s = 0.0

    def tick(_index: int, _reply: Reply) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(stage, done, tps.num_prompts * (passes + 1))

    cpu0 = time.process_time()
    timed = 0.0
    while True:
        controls = fresh if passes == 0 else {}
        drawn = iter(stream.take(tps.num_prompts - len(controls)))
        chosen = [controls[p] if p in controls else next(drawn) for p in range(tps.num_prompts)]
        bodies = [workload_body(spec, model, p["prompt"]) for p in chosen]
        for start, end in itertools.pairwise(cuts if passes == 0 else [0, len(bodies)]):
            if passes == 0 and start in pauses and pause is not None:
                await pause(index, start)  # untimed: the trial's clock is stopped
            t0 = time.perf_counter()
            replies = await run_requests(
                client,
                bodies[start:end],
                path=tps.endpoint,
                concurrency=tps.concurrency,
                kind=f"TPS trial {index + 1} request",
                on_reply=tick,
            )
            elapsed = time.perf_counter() - t0
            timed += elapsed
            block_s += elapsed if passes == 0 and block == (start, end) else 0.0
            for offset, reply in enumerate(replies):
                position = start + offset
                record = record_of(
                    reply,
                    spec,
                    tokenize,
                    prompt_id=str(chosen[position]["id"]),
                    trial=index,
                    pass_index=passes,
                    position=position,
                    fresh=position in controls,
                )
                records.append(record)
                if on_record is not None:
                    on_record(record)
        passes += 1
        if timed >= tps.min_trial_seconds:
            break
    tokens = sum(r.counted_tokens for r in records)
    cpu = time.process_time() - cpu0
    trial = TrialResult(index, tokens, timed, len(records), passes=passes, cpu_s=cpu)
    if block is not None:  # the block's wall time and its tokens, as counted
        trial.fresh_seconds = block_s
        trial.fresh_tokens = sum(r.counted_tokens for r in records if r.fresh)
    return trial, records


def segments(
    requests: int, concurrency: int, pauses: Collection[int], fresh: Mapping[int, Prompt]
) -> tuple[list[int], tuple[int, int] | None]:
    """Where a trial's first pass is cut (at each pause, and around the block of fresh
    controls at concurrency > 1, which is a segment of its own) and that block, if any."""
    cuts = {p for p in pauses if 0 <= p < requests} | {0, requests}
    if concurrency <= 1 or not fresh:
        return sorted(cuts), None
    block = (min(fresh), max(fresh) + 1)
    return sorted(cuts | set(block)), block


def stability_of(spec: ChallengeSpec, trials: Sequence[TrialResult]) -> Stability:
    tps = spec.tps
    cv, ci = 0.0, None
    if len(trials) > 1:
        summary = summarize([t.tps for t in trials])
        cv = summary.cv
        if summary.ci95 is not None and summary.mean > 0:
            ci = t975(len(trials) - 1) * summary.stdev / math.sqrt(len(trials)) / summary.mean
    return Stability(
        max_cv=tps.max_cv,
        cv=cv,
        planned=tps.trials,
        run=len(trials),
        max_trials=tps.max_trials,
        max_ci=tps.max_ci,
        ci=ci,
    )


async def warm_up(
    client: EngineClient, spec: ChallengeSpec, model: str, public_prompts: Sequence[Prompt]
) -> float:
    """Untimed warm-up requests on the public prompts; returns how long they took."""
    n = spec.tps.warmup_requests
    if n <= 0:
        return 0.0
    if not public_prompts:
        raise UsageError("the TPS warm-up needs public prompts", where="public_prompts")
    chosen = list(itertools.islice(itertools.cycle(public_prompts), n))
    t0 = time.perf_counter()
    await run_requests(
        client,
        [workload_body(spec, model, p["prompt"]) for p in chosen],
        path=spec.tps.endpoint,
        concurrency=spec.tps.concurrency,
        kind="warm-up request",
    )
    return time.perf_counter() - t0


async def measure_tps(
    client: EngineClient,
    spec: ChallengeSpec,
    prompts: Sequence[Prompt] | PromptStream,
    *,
    model: str,
    warmup_prompts: Sequence[Prompt] = (),
    tokenize: Tokenize | None = None,
    progress: TpsProgress | None = None,
    pauses: Callable[[int], Collection[int]] | None = None,
    pause: Pause | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    fresh: Callable[[int], Mapping[int, Prompt]] | None = None,
) -> TpsResult:
    """Warm up, run the planned trials (and extra ones while unstable), summarise them.

    ``pauses(trial)`` gives the positions where ``pause`` runs untimed requests in a
    planned trial; extra trials have none. ``fresh(trial)`` gives the fresh controls timed
    in a trial's first pass, by position (extra trials too: a replay there shows as well).
    ``prompts`` in a plain sequence are drawn in order (``PromptStream`` without a seed).
    """
    stream = prompts if isinstance(prompts, PromptStream) else PromptStream(prompts)
    tps = spec.tps
    warmup_s = await warm_up(client, spec, model, warmup_prompts)
    trials: list[TrialResult] = []
    records: list[RequestRecord] = []
    index = 0
    while index < tps.trials or (index < tps.max_trials and not stability_of(spec, trials).stable):
        planned = index < tps.trials
        trial, trial_records = await _trial(
            client,
            spec,
            model,
            stream,
            index,
            tokenize,
            progress,
            pauses=pauses(index) if pauses is not None and planned else (),
            pause=pause,
            on_record=on_record,
            fresh=fresh(index) if fresh is not None else None,
        )
        trials.append(trial)
        records.extend(trial_records)
        index += 1
    summary = summarize([t.tps for t in trials])
    return TpsResult(
        summary=summary,
        trials=trials,
        records=records,
        warmup_seconds=warmup_s,
        tokens_per_trial=tps.tokens_per_trial,
        concurrency=tps.concurrency,
        max_tokens=tps.max_tokens,
        stability=stability_of(spec, trials),
        distinct_prompts=stream.distinct,
        repeated_requests=stream.repeated,
    )
