"""The reference phase gathers: what the verifier's own model says about the timed work.

Once the participant's engine has stopped, the verifier's reference engine (podium's
baseline engine on the pinned, hash-checked weights, run as the entry declared it where
that can be reproduced exactly: ``verifier.declared``) is asked three things, all built
from what the verifier itself knows (its own rendering of each prompt, the ids the
engine returned, the held-out records):

- its teacher-forced scoring of a sample of the timed answers, drawn with ``sample_seed``
  (made fresh once the trials ended), and of every control (fresh and caching) and
  same-path probe;
- its NLL of a sample of the held-out PPL records, with the same request the engine got;
- optionally, a free-running greedy decode of a few sampled prompts (information only).

The result is plain data (``ReferenceEvidence``). The reference checks
(``verifier.checks.reference_decode``, ``reference_ppl``, ``same_path``) are pure functions of
it, so they run without any engine, and the calibration script calls the same ones.
Scoring requests go out ``spec.reference.batch`` prompts a request (the reference engine
runs them as one padded batch, nearest lengths together), ``CONCURRENCY`` requests at a
time; each answer is scored once however many checks read it, and each distinct sequence
once however many answers repeat it.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import INTEGRITY_REFERENCE_DECODE, PPL_REFERENCE_MISMATCH
from verifier.declared import DeclaredModel
from verifier.evidence import (
    AnswerScore,
    Evidence,
    Position,
    PplRecordScore,
    PplResult,
    RecordScore,
    ReferenceEvidence,
    RequestRecord,
    TpsResult,
)
from verifier.evidence.parse import listed_values, out_of_vocabulary
from verifier.harness.client import EngineClient
from verifier.harness.ppl import ppl_request, score_record
from verifier.harness.probes import record_key

#: reference requests in flight at once (the baseline engine serves them one by one;
#: two keep it busy while the next request is built and sent)
CONCURRENCY = 2


def _timeout(spec: ChallengeSpec) -> float:
    return max(spec.ppl.timeout_s, spec.tps.request_timeout_s)


def sample_answers(
    tps: TpsResult, evidence: Evidence, sample_seed: int, n: int
) -> list[RequestRecord]:
    """``n`` timed answers drawn with the sample seed (every one for ``n`` 0), and every
    control's answer (the fresh controls timed among them, then the caching controls).

    The controls are fresh work placed among the timed requests, and few: each is checked,
    so an engine cannot answer them with something cheap to look as fast as the rest.
    """
    candidates = [r for r in tps.records if r.token_ids and not r.fresh]
    rng = random.Random(f"{sample_seed}:reference-decode")
    fresh = [r for r in tps.records if r.token_ids and r.fresh]
    controls = [c for c in evidence.controls if c.token_ids]
    if n <= 0 or n >= len(candidates):  # every timed answer
        return candidates + fresh + controls
    return rng.sample(candidates, n) + fresh + controls


def sample_records(
    ppl: PplResult, ppl_records: list[dict[str, Any]], sample_seed: int, n: int
) -> list[dict[str, Any]]:
    scored = {s.id for s in ppl.per_record if s.scored and s.tokens}
    records = [r for r in ppl_records if str(r["id"]) in scored]
    rng = random.Random(f"{sample_seed}:reference-ppl")
    return rng.sample(records, min(n, len(records)))


def greedy_body(
    spec: ChallengeSpec, model: str, prompt_ids: list[int], max_tokens: int
) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": prompt_ids,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "top_p": 1.0,
        "top_k": spec.tps.sampling.top_k,
        "seed": spec.tps.seed,
        "ignore_eos": True,
        "add_special_tokens": False,
        "return_token_ids": True,
    }


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass
class _Job:
    """One scoring request of the reference phase: an answer, a probe or a PPL record."""

    what: str  # for messages: "reference scoring of KEY", "reference PPL record ID"
    ids: list[int]
    entries: list[Any] | None = None


class _Gather:
    def __init__(
        self, client: EngineClient, model: str, spec: ChallengeSpec, vocab_size: int | None
    ) -> None:
        self.client, self.model, self.spec, self.vocab_size = client, model, spec, vocab_size
        self.limit = asyncio.Semaphore(CONCURRENCY)

    async def score(self, jobs: list[_Job]) -> None:
        """Every job's prompt_logprobs, ``spec.reference.batch`` prompts a request, nearest
        lengths together (a padded batch wastes least), ``CONCURRENCY`` requests at once.

        Jobs with the same ids are scored once and share the entries: the reference's
        scoring of a sequence is a function of the sequence, so an engine that repeats a
        (prompt, answer) pair thousands of times costs the verifier one scoring of it."""
        distinct: dict[tuple[int, ...], _Job] = {}
        for job in jobs:
            distinct.setdefault(tuple(job.ids), job)
        size = max(1, self.spec.reference.batch)
        ordered = sorted(distinct.values(), key=lambda j: len(j.ids))
        groups = [ordered[i : i + size] for i in range(0, len(ordered), size)]
        await asyncio.gather(*(self._send(group) for group in groups))
        for job in jobs:
            job.entries = distinct[tuple(job.ids)].entries

    async def _send(self, group: list[_Job]) -> None:
        async with self.limit:
            if len(group) == 1:
                replies = [
                    await self.client.post(
                        "/v1/completions",
                        ppl_request(self.spec, self.model, group[0].ids),
                        group[0].what,
                        timeout_s=_timeout(self.spec) * len(group),
                    )
                ]
            else:
                body = ppl_request(self.spec, self.model, group[0].ids)
                body["prompt"] = [job.ids for job in group]
                replies = await self.client.post_many(
                    "/v1/completions",
                    body,
                    f"{group[0].what} and {len(group) - 1} more",
                    timeout_s=_timeout(self.spec) * len(group),
                )
        for job, reply in zip(group, replies, strict=True):
            if reply.prompt_token_ids is not None and list(reply.prompt_token_ids) != job.ids:
                raise EngineError(
                    f"{job.what}: the reference answered for other prompt ids",
                    where=INTEGRITY_REFERENCE_DECODE,
                )
            job.entries = reply.prompt_logprobs

    async def free_running(
        self, key: str, prompt_ids: list[int], answer: list[int]
    ) -> dict[str, Any]:
        async with self.limit:
            reply = await self.client.post(
                "/v1/completions",
                greedy_body(self.spec, self.model, prompt_ids, len(answer)),
                "reference free-running decode",
                timeout_s=_timeout(self.spec),
            )
        ref = reply.token_ids or []
        return {
            "record": key,
            "identical": ref == answer,
            "common_prefix": common_prefix(ref, answer),
        }


def _positions(job: _Job, n_prompt: int, token_ids: list[int]) -> list[Position]:
    """The reference's view of each generated position of one scored answer."""
    entries = job.entries
    if entries is None or len(entries) != len(job.ids):
        raise EngineError(
            f"{job.what}: prompt_logprobs has "
            f"{'none' if entries is None else len(entries)} positions for {len(job.ids)} ids",
            where=INTEGRITY_REFERENCE_DECODE,
        )
    out: list[Position] = []
    for j, token in enumerate(token_ids):
        values = listed_values(entries[n_prompt + j])
        if token not in values:
            raise EngineError(
                f"{job.what}: position {j} lacks the actual token",
                where=INTEGRITY_REFERENCE_DECODE,
            )
        top_token, top_value = max(values.items(), key=lambda kv: kv[1])
        out.append(Position(token, values[token], top_token, top_value))
    return out


def _record(
    job: _Job, record: dict[str, Any], engine: PplRecordScore, large_gap: float
) -> RecordScore:
    rid = str(record["id"])
    context = [int(t) for t in record["context_token_ids"]]
    nll, tokens, shape = score_record(job.ids, len(context), job.entries, None)
    if not shape.well_formed or job.entries is None:
        raise EngineError(
            f"the reference engine could not score record {rid}: its answer was malformed "
            f"({shape})",
            where=PPL_REFERENCE_MISMATCH,
        )
    withheld = 0
    for index in engine.claimed_top:  # the engine says: the scored token is my top here
        values = listed_values(job.entries[index])
        token = job.ids[index]
        if token in values and max(values.values()) - values[token] > large_gap:
            withheld += 1
    return RecordScore(
        id=rid,
        tokens=tokens,
        engine_nll=engine.nll,
        reference_nll=nll,
        claimed=len(engine.claimed_top),
        withheld=withheld,
    )


async def gather_reference(
    client: EngineClient,
    model: str,
    spec: ChallengeSpec,
    *,
    tps: TpsResult | None,
    ppl: PplResult | None,
    evidence: Evidence | None,
    ppl_records: list[dict[str, Any]],
    sample_seed: int,
    vocab_size: int | None,
    declared: DeclaredModel | None = None,
) -> ReferenceEvidence:
    """Ask the reference engine at ``client`` everything the reference checks judge."""
    out = ReferenceEvidence(sample_seed=sample_seed, model=declared)
    g = _Gather(client, model, spec, vocab_size)
    decode = spec.check("reference_decode")
    greedy = spec.tps.sampling.temperature <= 0
    to_score: dict[str, tuple[list[int], list[int]]] = {}
    sample: list[RequestRecord] = []
    if tps is not None and evidence is not None and decode.get("enabled") and greedy:
        out.candidates = sum(1 for r in tps.records if r.token_ids)
        sample = sample_answers(tps, evidence, sample_seed, int(decode["sample"]))
        for r in sample:
            assert r.token_ids is not None
            to_score[record_key(r)] = (evidence.rendered[r.prompt_id], r.token_ids)
    if evidence is not None and spec.check("same_path").get("enabled") and greedy:
        for probe in evidence.same_path:
            to_score.setdefault(probe.record, (probe.prompt_ids, probe.token_ids))
    records: list[dict[str, Any]] = []
    settings = spec.check("reference_ppl")
    if ppl is not None and settings.get("enabled"):
        records = sample_records(ppl, ppl_records, sample_seed, int(settings["sample"]))
    engine_scores = {s.id: s for s in ppl.per_record} if ppl is not None else {}
    large_gap = float(decode.get("large_gap_nats", 1.0))
    answer_jobs = {
        key: _Job(f"reference scoring of {key}", [*prompt, *answer])
        for key, (prompt, answer) in to_score.items()
        if vocab_size is None or not out_of_vocabulary(answer, vocab_size)
    }
    record_jobs = [
        _Job(
            f"reference PPL record {r['id']}",
            [int(t) for t in r["context_token_ids"]] + [int(t) for t in r["target_token_ids"]],
        )
        for r in records
    ]
    await g.score([*answer_jobs.values(), *record_jobs])
    out.scored = {
        key: _positions(answer_jobs[key], len(prompt), answer) if key in answer_jobs else None
        for key, (prompt, answer) in to_score.items()
    }
    out.records = [
        _record(job, r, engine_scores[str(r["id"])], large_gap)
        for job, r in zip(record_jobs, records, strict=True)
    ]
    out.answers = [
        AnswerScore(
            record=record_key(r),
            prompt_id=r.prompt_id,
            control=r.control,
            fresh=r.fresh,
            tokens=len(r.token_ids or []),
            positions=out.scored[record_key(r)],
        )
        for r in sample
    ]
    free = int(decode.get("free_running", 0)) if decode.get("enabled") else 0
    timed = [r for r in sample if not r.control and not r.fresh][:free]
    if timed and evidence is not None:
        out.free_running = list(
            await asyncio.gather(
                *(
                    g.free_running(record_key(r), evidence.rendered[r.prompt_id], r.token_ids or [])
                    for r in timed
                )
            )
        )
    return out
