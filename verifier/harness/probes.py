"""The untimed requests sent among the timed ones, and what they leave behind.

- A **same-path probe** asks the engine to score, teacher-forced, one of its own timed
  answers: the verifier's rendering of the prompt followed by the answer's ids, sent in
  exactly the shape of a PPL record (``ppl_request``). The positions of the answer are
  kept for ``integrity.same-path``, judged later against the reference model.
- A **caching control** is a prompt the stream has never carried, sent in exactly the
  shape of a timed request, while later trials repeat the first one's prompts. Its time
  per token is the fresh side of ``integrity.caching``.

Neither is told apart by its shape; recognising one gains an engine nothing, because
the proof of each check is the timed work itself (``docs/measurement.md``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import INTEGRITY_SAME_PATH
from verifier.evidence import RequestRecord, SamePathProbe
from verifier.harness.client import EngineClient
from verifier.harness.ppl import ppl_request
from verifier.harness.tps import Prompt, record_of, workload_body


def record_key(record: RequestRecord) -> str:
    """A request's place in the stream: trial, pass and position (``c`` for a control)."""
    where = f"{record.trial}.{record.pass_index}.{record.position}"
    return f"c{where}:{record.prompt_id}" if record.control else where


def control_prompts(
    heldout: Sequence[Prompt],
    timed: Sequence[Prompt],
    n: int,
    rng: random.Random,
    length: Callable[[Prompt], int],
) -> list[Prompt]:
    """``n`` prompts the timed stream never carries, each the length of a timed one.

    Time per token includes the prompt's prefill, so a control is matched to a timed
    prompt drawn at random: the unused held-out prompt nearest it in rendered length,
    else (none left) a marked copy of it, with a random marker before its first user
    text, so no request of the run can have carried it. Token-id prompts cannot be
    marked safely and are not used for copies.
    """
    used = {str(p["id"]) for p in timed}
    pool = [p for p in heldout if str(p["id"]) not in used]
    lengths = {str(p["id"]): length(p) for p in [*pool, *timed]}
    markable = [p for p in timed if _markable(p["prompt"])]
    out: list[Prompt] = []
    for _ in range(n):
        base = rng.choice(list(timed))
        if pool:
            want = lengths[str(base["id"])]
            pick = min(pool, key=lambda p: (abs(lengths[str(p["id"])] - want), rng.random()))
            pool.remove(pick)
            out.append(pick)
        elif markable:
            copy = base if _markable(base["prompt"]) else rng.choice(markable)
            marker = f"{rng.getrandbits(48):012x}"
            out.append({"id": f"{copy['id']}~{marker}", "prompt": _mark(copy["prompt"], marker)})
    return out


def _markable(prompt: Any) -> bool:
    return isinstance(prompt, str) or (
        isinstance(prompt, list) and any(isinstance(m, dict) for m in prompt)
    )


def _mark(prompt: Any, marker: str) -> Any:
    if isinstance(prompt, str):
        return f"({marker}) {prompt}"
    out = [dict(m) for m in prompt]
    for message in out:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            message["content"] = f"({marker}) {message['content']}"
            break
    return out


async def send_control(
    client: EngineClient,
    spec: ChallengeSpec,
    model: str,
    prompt: Prompt,
    *,
    trial: int,
    position: int,
) -> RequestRecord:
    """One caching control: the timed shape, a prompt the stream never carried, untimed."""
    body = workload_body(spec, model, prompt["prompt"])
    reply = await client.post(spec.tps.endpoint, body, f"caching control {prompt['id']}")
    return record_of(
        reply,
        spec,
        None,
        prompt_id=str(prompt["id"]),
        trial=trial,
        pass_index=0,
        position=position,
        control=True,
    )


async def send_same_path(
    client: EngineClient,
    spec: ChallengeSpec,
    model: str,
    record: RequestRecord,
    prompt_ids: list[int],
) -> SamePathProbe:
    """The engine's teacher-forced scoring of one of its timed answers, PPL-shaped."""
    assert record.token_ids is not None
    ids = [*prompt_ids, *record.token_ids]
    reply = await client.post(
        spec.ppl.endpoint,
        ppl_request(spec, model, ids),
        f"same-path probe of {record_key(record)} ({record.prompt_id})",
        timeout_s=spec.ppl.timeout_s,
    )
    if reply.prompt_logprobs is None:
        raise EngineError(
            "the engine answered a prompt_logprobs request without prompt_logprobs",
            where=INTEGRITY_SAME_PATH,
        )
    start = len(prompt_ids)
    positions = list(reply.prompt_logprobs[start : start + len(record.token_ids)])
    return SamePathProbe(
        record=record_key(record),
        prompt_id=record.prompt_id,
        prompt_ids=list(prompt_ids),
        token_ids=list(record.token_ids),
        positions=positions,
    )
