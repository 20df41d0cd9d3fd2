"""The challenge spec: every rule a result depends on, as data.

Specs ship as JSON files in ``podium/data/challenges/``; ``load_challenge`` is the one
resolver every command uses for ``--challenge``. It takes a shipped name (``fast-gemma``,
``tiny``), a path to a spec file, a URL (``https://...``, fetched by ``podium.remote``) or
an ``hf://`` file (``hf://datasets/ORG/NAME[@REV][/PATH]``, ``challenge.json`` when no
path is given, from the endpoint ``HF_ENDPOINT`` names). Whatever the source, the
document is validated against the challenge schema before anything reads it, and
``source`` records where it came from.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from podium.canonical import canonical_json, sha256_bytes
from podium.errors import SchemaError, UsageError
from podium.remote import is_remote, read_remote
from schemas.contract import Contract
from schemas.validate import read_json, validate


@dataclass(frozen=True)
class PinnedFile(Contract):
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class DrafterPin(Contract):
    """The challenge's speculative-decoding drafter (an MTP assistant): pinned like the
    model, checked and mounted read-only at ``/drafter`` beside it."""

    repo_id: str
    revision: str
    shipped: str | None = None
    files: list[PinnedFile] | None = None


@dataclass(frozen=True)
class ModelPin(Contract):
    repo_id: str
    revision: str
    dtype: str
    tokenizer: str | None = None
    shipped: str | None = None
    files: list[PinnedFile] | None = None
    allowed_derived: list[str] | None = None
    drafter: DrafterPin | None = None


@dataclass(frozen=True)
class Hardware(Contract):
    accelerator: str
    gpu_name: str | None = None
    gpu_count: int | None = None
    flavor: str | None = None
    cpu_threads: int | None = None

    def describe(self) -> str:
        if self.accelerator == "cpu":
            return "CPU"
        return f"{self.gpu_count or 1} x {self.gpu_name}"


@dataclass(frozen=True)
class Quality(Contract):
    metric: str
    rule: str
    reference_ppl: float | None = None
    max_ratio: float | None = None
    max_ppl: float | None = None

    @property
    def cap(self) -> float:
        """The highest PPL a result may have."""
        if self.rule == "absolute":
            assert self.max_ppl is not None
            return float(self.max_ppl)
        assert self.reference_ppl is not None and self.max_ratio is not None
        return float(self.reference_ppl) * float(self.max_ratio)

    @property
    def budget_nats(self) -> float | None:
        """The one allowance for loss, in nats per token: ln(cap / the model's own PPL).

        ln(max_ratio) for a ratio rule; for an absolute cap, ln(max_ppl / reference_ppl)
        where the model's own PPL is pinned, else unknown (None).
        """
        if self.rule == "ratio" and self.max_ratio is not None:
            return math.log(float(self.max_ratio))
        if self.reference_ppl is None:
            return None
        return max(0.0, math.log(self.cap / float(self.reference_ppl)))


@dataclass(frozen=True)
class PplProcedure(Contract):
    endpoint: str
    format: str
    prompt_logprobs: int
    add_special_tokens: bool
    aggregate: str
    timeout_s: float
    bos: str = "in-context"
    max_records: int | None = None


@dataclass(frozen=True)
class Sampling(Contract):
    temperature: float
    top_p: float
    top_k: int


@dataclass(frozen=True)
class Baseline(Contract):
    """The baseline TPS on one hardware, and where the number comes from."""

    hardware: str
    tps: float
    engine: str
    source: str
    config: dict[str, Any] | None = None


@dataclass(frozen=True)
class TpsWorkload(Contract):
    endpoint: str
    num_prompts: int
    max_tokens: int
    ignore_eos: bool
    concurrency: int
    warmup_requests: int
    seed: int
    stream: bool
    sampling: Sampling
    trials: int
    reproduction_tolerance: float
    request_timeout_s: float
    max_cv: float
    max_trials: int
    min_trial_seconds: float = 0.0
    max_ci: float | None = None
    count_tokens: str = "token_ids"
    baseline_tps: float | None = None
    baselines: list[Baseline] | None = None

    @property
    def tokens_per_trial(self) -> int:
        return self.num_prompts * self.max_tokens


@dataclass(frozen=True)
class ReferenceEngine(Contract):
    """How the verifier runs its own reference model after the participant's engine stopped."""

    dtype: str
    device: str
    #: scoring requests sent as one padded batch (token-id prompts of one request)
    batch: int = 1
    #: float32 logit cells (positions x vocabulary) one scoring chunk may hold
    logit_cells: int | None = None


@dataclass(frozen=True)
class Limits(Contract):
    build_s: float
    startup_s: float
    evaluation_s: float
    bundle_bytes: int
    bundle_files: int
    unpacked_bytes: int
    image_bytes: int
    memory_bytes: int | None = None
    pids: int | None = None
    cpus: float | None = None


@dataclass(frozen=True)
class Rule(Contract):
    id: str
    key: str
    op: str
    message: str
    value: Any = None
    hint: str | None = None


@dataclass(frozen=True)
class EngineRules(Contract):
    kinds: list[str]
    forbidden: list[Rule]
    port: int = 8000
    allowed_knobs: list[str] | None = None
    #: object knobs whose members beyond the known ones pass (HF_OVERRIDES: any attribute)
    open_members: list[str] | None = None
    #: the vLLM release of the reference engine image and its pinned base images
    vllm: dict[str, Any] | None = None


@dataclass(frozen=True)
class Dataset(Contract):
    uri: str
    sha256: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class Datasets(Contract):
    public_prompts: Dataset
    ppl_public: Dataset
    heldout_prompts: Dataset | None = None
    ppl_heldout: Dataset | None = None
    #: the most tokens a workload prompt may take, rendered as the harness sends it
    max_prompt_tokens: int | None = None
    #: the most tokens a PPL record may take (context + target)
    max_ppl_tokens: int | None = None


@dataclass(frozen=True)
class OrganizerKey(Contract):
    """A public key pinned by the spec: rows it signed are verified (within its period)."""

    key_id: str
    public_key: str
    owner: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    revoked_at: str | None = None


@dataclass(frozen=True)
class TpsNoise(Contract):
    """TPS's run-to-run noise (a share of TPS) and where that number comes from."""

    relative: float
    source: str


@dataclass(frozen=True)
class LeaderboardRules(Contract):
    keys: list[OrganizerKey] | None = None
    tps_noise: TpsNoise | None = None
    head_max_age_days: float | None = None


@dataclass(frozen=True)
class QuotaRules(Contract):
    """Submissions allowed over a rolling window; an unset member keeps the default."""

    per_user: int | None = None
    per_team: int | None = None
    window_hours: float | None = None


@dataclass(frozen=True)
class CompetitionRules(Contract):
    """How the competition's door admits submissions (``podium server``)."""

    quota: QuotaRules | None = None


@dataclass(frozen=True)
class ChallengeSpec(Contract):
    schema_version: int
    id: str
    version: str
    title: str
    model: ModelPin
    hardware: Hardware
    quality: Quality
    ppl: PplProcedure
    tps: TpsWorkload
    integrity: dict[str, Any]
    reference: ReferenceEngine
    limits: Limits
    engine: EngineRules
    datasets: Datasets
    description: str | None = None
    leaderboard: LeaderboardRules | None = None
    competition: CompetitionRules | None = None
    #: where the spec was read from (not part of the document)
    source: str | None = field(default=None, compare=False, metadata={"json": "__source__"})

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("__source__", None)
        return out

    @property
    def sha256(self) -> str:
        return sha256_bytes(canonical_json(self.to_dict()))

    def check(self, name: str) -> dict[str, Any]:
        """The integrity check's settings; a check the spec omits is disabled."""
        settings = self.integrity.get(name.replace("-", "_"))
        return dict(settings) if isinstance(settings, dict) else {"enabled": False}

    def with_overrides(self, **changes: Any) -> ChallengeSpec:
        return dataclasses.replace(self, **changes)


def _shipped_dir() -> Path:
    return Path(str(resources.files("podium").joinpath("data", "challenges")))


def list_challenges() -> list[str]:
    return sorted(p.stem for p in _shipped_dir().glob("*.json"))


def unknown_challenge_hint(name: str) -> str:
    """What would be accepted instead of ``name``, with the closest shipped name first."""
    import difflib

    shipped = list_challenges()
    close = difflib.get_close_matches(name, shipped, n=1, cutoff=0.6)
    known = (
        f"shipped challenges: {', '.join(shipped)}; or a spec file (.json), a URL or "
        "hf://datasets/ORG/NAME/challenge.json"
    )
    return f"did you mean {close[0]!r}? {known}" if close else known


#: the file an ``hf://`` reference to a repo (with no path) names
HUB_SPEC_FILE = "challenge.json"


def load_challenge(name_or_path: str | Path) -> ChallengeSpec:
    """Load a challenge by shipped name, path, URL or ``hf://`` reference; validate it first."""
    ref = str(name_or_path)
    if is_remote(ref):
        doc = _parse(read_remote(ref, default_file=HUB_SPEC_FILE), ref)
        return _from_doc(doc, ref)
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        path = _shipped_dir() / f"{name_or_path}.json"
        if not path.exists():
            raise UsageError(
                f"unknown challenge {name_or_path!r}",
                hint=unknown_challenge_hint(str(name_or_path)),
            )
    return _from_doc(read_json(path), str(path))


def _parse(data: bytes, where: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SchemaError(f"not UTF-8 text: {exc.reason}", file=where) from None
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            file=where,
            expected="a challenge spec (JSON)",
        ) from None


def _from_doc(doc: Any, where: str) -> ChallengeSpec:
    validate("challenge", doc, file=where)
    spec = ChallengeSpec.from_dict(doc)
    if spec.tps.max_trials < spec.tps.trials:
        raise SchemaError(
            f"tps.max_trials ({spec.tps.max_trials}) is below tps.trials ({spec.tps.trials})",
            file=where,
            json_path="$.tps.max_trials",
        )
    return dataclasses.replace(spec, source=where)
