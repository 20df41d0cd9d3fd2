"""What the harness gathers and the checks judge: plain data, owned by neither side.

The harness (``verifier.harness``) talks to engines and fills these types; the checks
(``verifier.checks``) read them and send nothing. Both import this module, and it
imports neither, so evidence flows one way: harness → evidence → checks. Everything
here is what an engine (the participant's, or the verifier's reference) answered, as
the harness recorded it: it is the engine's word, trusted only as far as each check's
own arithmetic trusts it. The one exception is ``IsolationEvidence``, which a runner
fills (``Runner.isolation``): the Docker engine's account of the sandbox, and what a
probe run with the image's own python3 found inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verifier.declared import DeclaredModel

if TYPE_CHECKING:
    from verifier.harness.stats import Summary


# --- the evaluation: the timed requests (verifier.harness.tps) ---


@dataclass
class RequestRecord:
    """What one timed request sent and got back; the raw material of the integrity checks."""

    prompt_id: str
    trial: int
    pass_index: int
    position: int
    token_ids: list[int] | None
    prompt_token_ids: list[int] | None
    text: str
    latency_s: float
    usage: dict[str, Any] | None
    finish_reason: str | None
    counted_tokens: int
    count_source: str  # token_ids | retokenize | none
    #: a caching control: untimed, never counted in the TPS, judged like a timed answer
    control: bool = False
    #: a fresh control (``integrity.controls``): a prompt made at run time, timed and
    #: counted like every other timed request, judged like one and compared with the rest
    fresh: bool = False

    @property
    def s_per_token(self) -> float:
        return self.latency_s / max(1, self.counted_tokens)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class TrialResult:
    index: int
    tokens: int
    seconds: float
    requests: int
    passes: int
    cpu_s: float
    #: at concurrency > 1: the wall time and the tokens of the segment that timed nothing
    #: but the trial's fresh controls (the verifier's clock and count; 0 without one)
    fresh_seconds: float = 0.0
    fresh_tokens: int = 0

    @property
    def tps(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_s_per_token(self) -> float | None:
        return self.cpu_s / self.tokens if self.tokens else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "tps": self.tps,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "requests": self.requests,
            "passes": self.passes,
            "harness_cpu_s": self.cpu_s,
            "harness_cpu_s_per_token": self.cpu_s_per_token,
        }


@dataclass
class TpsResult:
    summary: Summary
    trials: list[TrialResult]
    records: list[RequestRecord]
    warmup_seconds: float = 0.0
    tokens_per_trial: int = 0
    concurrency: int = 1
    max_tokens: int = 0
    stability: Stability | None = None
    #: the held-out prompts available, and the timed requests that repeated one
    distinct_prompts: int = 0
    repeated_requests: int = 0

    @property
    def median(self) -> float:
        return self.summary.median

    def to_metrics(self) -> dict[str, Any]:
        """The report's ``metrics.tps`` member."""
        out: dict[str, Any] = {
            "median": self.summary.median,
            "mean": self.summary.mean,
            "cv": self.summary.cv,
            "trials": [t.to_dict() for t in self.trials],
            "tokens_per_trial": self.tokens_per_trial,
            "concurrency": self.concurrency,
            "max_tokens": self.max_tokens,
            "distinct_prompts": self.distinct_prompts,
            "repeated_requests": self.repeated_requests,
        }
        if self.stability is not None:
            out["stability"] = self.stability.to_dict()
        if self.summary.ci95 is not None:
            out["ci95"] = list(self.summary.ci95)
        return out


@dataclass(frozen=True)
class Stability:
    """Did the trials agree? ``tps.unstable`` when not, even after the extra trials.

    Stable when the trials agree (CV <= ``max_cv``), or when, on a noisy machine, enough
    of them pin the mean down: the 95 % t-interval of the mean TPS across trials is
    within ``max_ci`` of it (relative half-width ``t(n-1) * CV / sqrt(n)``). Extra trials
    run until one holds or ``max_trials`` is reached. An honest engine on a shared
    machine then pays in trials, not in its verdict; trials that stay far apart (a clock
    that jumps, an engine whose speed swings) never pin the mean and stay unstable.
    """

    max_cv: float
    cv: float
    planned: int
    run: int
    max_trials: int
    max_ci: float | None = None
    #: relative half-width of the 95 % t-interval of the mean (None with one trial)
    ci: float | None = None

    @property
    def agree(self) -> bool:
        return math.isfinite(self.cv) and self.cv <= self.max_cv

    @property
    def pinned(self) -> bool:
        return self.max_ci is not None and self.ci is not None and self.ci <= self.max_ci

    @property
    def stable(self) -> bool:
        return self.agree or self.pinned

    @property
    def why(self) -> str:
        cmp = "<=" if self.agree else ">"
        text = f"CV {self.cv:.3f} {cmp} {self.max_cv:.3f}"
        if self.ci is not None and self.max_ci is not None:
            cmp = "<=" if self.pinned else ">"
            text += (
                f", the mean pinned to +/-{100 * self.ci:.1f} % {cmp} {100 * self.max_ci:.1f} % "
                "(95 % interval)"
            )
        if self.run == self.planned:
            return f"{self.planned} planned trials, {text}"
        verb = "now" if self.stable else "still"
        return (
            f"the first {self.planned} trials disagreed; {self.run - self.planned} more ran "
            f"(cap {self.max_trials}), {verb} {text}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_cv": self.max_cv,
            "cv": self.cv if math.isfinite(self.cv) else None,
            "max_ci": self.max_ci,
            "ci": self.ci,
            "planned_trials": self.planned,
            "trials_run": self.run,
            "max_trials": self.max_trials,
            "stable": self.stable,
            "why": self.why,
        }


# --- the PPL records (verifier.harness.ppl) ---


@dataclass(frozen=True)
class PplAnswerShape:
    """What one PPL answer held, counted as the harness read it (``verifier.checks.ppl``
    judges it): an answer with anything counted here is not scored."""

    #: the ids sent
    prompt_tokens: int
    #: the ids the engine reported back, where they differ from those sent
    returned_ids: int | None = None
    #: its prompt_logprobs entries, where they are not one per prompt id (-1: none at all);
    #: then nothing below is counted
    positions: int | None = None
    #: listed values above 0 (raw logits?), anywhere in the answer
    positive: int = 0
    #: scored positions that do not list the prompt's own token
    missing: int = 0
    #: listed values that are NaN, infinite or not numbers
    non_finite: int = 0
    #: pairs of listed tokens whose ranks contradict their values
    rank_pairs: int = 0

    @property
    def well_formed(self) -> bool:
        anomalies = (self.positive, self.missing, self.non_finite, self.rank_pairs)
        return self.returned_ids is None and self.positions is None and not any(anomalies)


@dataclass
class PplRecordScore:
    id: str
    tokens: int
    nll: float
    seconds: float
    scored: bool = True
    #: what the answer held, for ``verifier.checks.ppl`` (None: not recorded)
    shape: PplAnswerShape | None = None
    #: the prompt positions where the answer lists the scored token as its own top (by
    #: value): what it says of its distribution, for the reference to check
    claimed_top: tuple[int, ...] = ()

    @property
    def ppl(self) -> float | None:
        return math.exp(self.nll / self.tokens) if self.scored and self.tokens else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tokens": self.tokens,
            "nll": self.nll,
            "ppl": self.ppl,
            "seconds": round(self.seconds, 4),
            "scored": self.scored,
        }


@dataclass
class PplResult:
    """The PPL stage's outcome. ``value`` is NaN when no record could be scored.

    ``tokens`` and ``records`` count what was scored: the records the engine answered in a
    well-formed way, which it chose. ``sent_tokens`` and ``sent_records`` count what the
    procedure sent (the spec's selection of the held-out set, fixed before the engine saw
    any of it): the only counts a public report says."""

    value: float
    nll_sum: float
    tokens: int
    records: int
    per_record: list[PplRecordScore] = field(default_factory=list)
    seconds: float = 0.0
    sent_tokens: int | None = None
    sent_records: int | None = None

    def to_metrics(self, cap: float | None = None) -> dict[str, Any]:
        """The report's ``metrics.ppl`` member: ``tokens`` and ``records`` are what the
        procedure sent, ``scored_tokens`` and ``scored_records`` what entered the PPL (the
        organizer's evidence only: the public report leaves them out)."""
        # no scored record leaves the PPL undefined: null, never NaN (JSON has none)
        out: dict[str, Any] = {
            "value": self.value if math.isfinite(self.value) else None,
            "nll_sum": self.nll_sum,
            "tokens": self.tokens if self.sent_tokens is None else self.sent_tokens,
            "records": self.records if self.sent_records is None else self.sent_records,
            "scored_tokens": self.tokens,
            "scored_records": self.records,
        }
        if cap is not None:
            out["cap"] = cap
        return out


# --- the untimed requests among the timed ones (verifier.harness.probes) ---


@dataclass
class SamePathProbe:
    record: str  # record_key of the timed answer probed
    prompt_id: str
    prompt_ids: list[int]  # the verifier's rendering
    token_ids: list[int]  # the engine's timed answer
    positions: list[Any]  # the engine's prompt_logprobs entries of the answer's positions

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Evidence:
    """What the evaluation leaves for the checks and for the reference stage (plain data)."""

    plan: dict[str, Any]
    #: prompt id -> the verifier's own ids for it (timed prompts and controls)
    rendered: dict[str, list[int]] = field(default_factory=dict)
    same_path: list[SamePathProbe] = field(default_factory=list)
    #: the caching controls' answers (``RequestRecord.control``), in the order sent
    controls: list[RequestRecord] = field(default_factory=list)


# --- the sandbox the engine runs in (Runner.isolation) ---


@dataclass(frozen=True)
class IsolationEvidence:
    """What a runner saw of the sandbox its engine runs in (``integrity.isolation``).

    A runner with a sandbox reports ``configuration``: the running container and its
    network as the Docker engine reported them (``{"container": ..., "network": ...}``,
    ``EngineHandle.describe()``), and ``probe``: what a probe run inside the container
    found (None when the image has no python3 to run it, ``{"error": ...}`` when it
    failed). A runner without a sandbox says so in ``no_sandbox`` (what is left open; then
    nothing above was observed), with ``facts`` about where the engine runs.
    """

    configuration: dict[str, Any] = field(default_factory=dict)
    probe: dict[str, Any] | None = None
    no_sandbox: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    #: how long the probe took, by the verifier's clock (set by the pipeline)
    seconds: float | None = None


@dataclass(frozen=True)
class VllmImage:
    """What the verifier established about a ``kind = "vllm"`` entry's image from what it
    holds itself (``verifier.vllm_image``; judged by ``verifier.checks.vllm_image``).

    Who wrote each input: the bundle's Dockerfile and files are the participant's, read
    from the bundle intake opened and hashed; ``pinned`` is the challenge spec's (the
    organizer's); ``serve_args`` is the verifier's own copy of podium's launcher run over
    the frozen config; ``rebuilt_from`` is the base the verifier's own rebuild started FROM
    (its Docker engine checked the image against the pin). Nothing here is the engine's.
    """

    #: the base image the manifest names (its digest is checked by the rebuild)
    base_ref: str
    #: the spec's pinned vLLM images (``engine.vllm.images``: each ``ref``)
    pinned: tuple[str, ...]
    #: the manifest's base is one of ``pinned``: its name, and its digest where the spec
    #: pins one
    base_is_pinned: bool
    #: the last stage's ENTRYPOINT then CMD, as the builder reads them (None: unreadable)
    command: tuple[str, ...] | None
    #: the command starts podium's launcher or vLLM's own server
    starts_vllm: bool
    #: what enters the image or the server's environment besides the pinned base,
    #: podium's launcher and the frozen config (each as ``where: what``)
    foreign: tuple[str, ...] = ()
    #: the server command line podium's launcher (the verifier's copy) makes of the frozen
    #: config; None where it refuses the config
    serve_args: tuple[str, ...] | None = None
    #: the rebuild started FROM the pinned image (None: no rebuild by the verifier here)
    rebuilt_from_pin: bool | None = None


# --- what the reference said (verifier.harness.rescoring) ---


@dataclass(frozen=True)
class Position:
    """The reference's view of one generated token."""

    token: int
    logprob: float
    top_token: int
    top_logprob: float

    @property
    def gap(self) -> float:
        """Nats between the reference's top and the generated token (>= 0)."""
        return max(0.0, self.top_logprob - self.logprob)


@dataclass(frozen=True)
class AnswerScore:
    """One timed answer (or control) as the reference scored it, teacher-forced."""

    record: str  # record_key
    prompt_id: str
    control: bool
    tokens: int
    #: None when the answer holds ids outside the vocabulary (nothing can score them)
    positions: list[Position] | None
    #: a fresh control's answer (``RequestRecord.fresh``)
    fresh: bool = False

    @property
    def gaps(self) -> list[float]:
        return [p.gap for p in self.positions or []]


@dataclass(frozen=True)
class RecordScore:
    """One held-out PPL record: the engine's NLL and the reference's, on the same ids."""

    id: str
    tokens: int
    engine_nll: float
    reference_nll: float
    #: target positions where the engine's answer listed the scored token as its own top
    claimed: int = 0
    #: of those, where the reference puts that token over ``large_gap_nats`` below its top
    withheld: int = 0

    @property
    def delta(self) -> float:
        """Engine minus reference, nats per target token (> 0: the engine scored worse)."""
        return (self.engine_nll - self.reference_nll) / self.tokens


@dataclass
class ReferenceEvidence:
    """Everything the reference phase learned; the reference checks read only this."""

    sample_seed: int
    model: DeclaredModel | None
    #: timed answers with token ids (what the sample was drawn from)
    candidates: int = 0
    #: the sampled timed answers, then every control (fresh, then caching)
    answers: list[AnswerScore] = field(default_factory=list)
    #: record_key -> positions, for every answer scored (answers and same-path probes)
    scored: dict[str, list[Position] | None] = field(default_factory=dict)
    records: list[RecordScore] = field(default_factory=list)
    free_running: list[dict[str, Any]] = field(default_factory=list)

    @property
    def excess_nats(self) -> float | None:
        """The engine's scoring loss against the reference, token-weighted over the
        sampled records (nats per token; > 0: lossier than the reference model)."""
        tokens = sum(r.tokens for r in self.records)
        if not tokens:
            return None
        return math.fsum(r.engine_nll - r.reference_nll for r in self.records) / tokens
