"""The calibration's rows: each engine, its knobs and its environment, one verification.

``rows()`` is the table of ``python -m calibration.calibrate``: podium's baseline engine
with the lossy knobs the rules allow, real vLLM with its lossy options, and every
cheating engine of ``tests/doubles`` that cheats about work. ``margin_rows()`` are the
trust-margin rows: undeclared approximations and double spenders (a GPU driver,
``calibration.gpu_verify --margins``, runs the same list). ``LEFT_OUT`` names the doubles
left out, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.common import import_doubles

doubles = import_doubles()


@dataclass(frozen=True)
class Row:
    """One verification: an engine class, the knobs it declares, its own environment."""

    name: str
    kind: str  # "honest" or "cheat"
    engine: str = doubles.engine_class("Honest")
    config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    #: its only cheat is replaying an answer to a prompt seen before
    replays: bool = False
    #: the example it packages: tiny-baseline (a process standing in for the sandbox) or
    #: tiny-vllm (real vLLM from podium/vllm-cpu, in the Docker sandbox)
    example: str = "tiny-baseline"
    #: a trust-margin row (``margin_rows``): the PPL ratio of the model it decodes with,
    #: measured alone (``DECODE_RATIO``), so the table says whether its decode alone
    #: would break the cap
    decode_ratio: float | None = None
    #: the engine kind its podium.toml declares, where it is not the example's own
    engine_kind: str | None = None

    @property
    def vllm(self) -> bool:
        return self.example == "tiny-vllm"


VLLM = "engines.vllm_launcher"
#: the vLLM rows: the plain example, then each lossy option the rules allow
VLLM_ROWS: dict[str, dict[str, Any]] = {
    "fp32": {},
    "W=16": {"SLIDING_WINDOW": 16},
    "KV fp8": {"KV_CACHE_DTYPE": "fp8"},
    "KV fp8_e5m2": {"KV_CACHE_DTYPE": "fp8_e5m2"},
    "KV bfloat16": {"KV_CACHE_DTYPE": "bfloat16"},
    "bf16": {"DTYPE": "bfloat16"},
    "fp8 weights": {"QUANTIZATION": "fp8"},
    "fp8 weights bf16": {"QUANTIZATION": "fp8", "DTYPE": "bfloat16"},
}


#: the tiny model's PPL ratio with its sliding window cut to W, on every path (the
#: ``W=`` rows of this table; 48 measured by the margin rows), and with weights rounded
DECODE_RATIO: dict[str, float] = {
    "W=48": 1.0031,
    "W=32": 1.0083,
    "W=24": 1.0125,
    "W=16": 1.0372,
    "W=12": 1.0651,
    "W=10": 1.0874,
    "W=8": 1.1219,
    "int8": 1.0015,
    "int4": 1.4062,
}


def margin_rows() -> list[Row]:
    """The trust-margin rows: honest approximations the entry does not declare (the reference
    runs the unmodified model and judges them by the quality budget alone), and double
    spenders that score with one window and decode with a harsher one. Every row is
    ``examples/tiny-baseline`` with podium's engines and the row's environment; nothing
    in it depends on the device, so a GPU driver runs the same list."""
    undeclared = doubles.engine_class("Undeclared")
    out = [
        Row(
            f"undeclared W={w}",
            "honest",
            engine=undeclared,
            env={"UNDECLARED_WINDOW": str(w)},
            decode_ratio=DECODE_RATIO[f"W={w}"],
        )
        for w in (48, 32, 24, 16, 12)
    ]
    out += [
        Row(
            f"undeclared {q}",
            "honest",
            engine=undeclared,
            env={"UNDECLARED_QUANT": q},
            decode_ratio=DECODE_RATIO[q],
        )
        for q in ("int8", "int4")
    ]
    out.append(
        Row(
            "undeclared int8 W=24",
            "honest",
            engine=undeclared,
            env={"UNDECLARED_QUANT": "int8", "UNDECLARED_WINDOW": "24"},
            decode_ratio=DECODE_RATIO["W=24"],
        )
    )
    pairs = [(64, 12), (32, 12), (24, 12), (16, 12), (16, 8), (24, 8), (32, 16), (24, 16)]
    out += [
        Row(
            f"spender {a}/{b}",
            "cheat",
            engine=doubles.engine_class("DecodeWindow"),
            env={"CHEAT_SCORE_WINDOW": str(a), "CHEAT_WINDOW": str(b)},
            decode_ratio=DECODE_RATIO[f"W={b}"],
        )
        for a, b in pairs
    ]
    # the same double spenders answering their own probes: forging them from memory, or
    # routing every chat-shaped request to the decode model, remembering nothing (a
    # restarted engine asked to score its answers would answer as this one does);
    # self-consistency is then silent, and only the reference's judgement is left
    out += [
        Row(
            f"{label} spender {a}/{b}",
            "cheat",
            engine=doubles.engine_class(double),
            env={"CHEAT_SCORE_WINDOW": str(a), "CHEAT_WINDOW": str(b)},
            decode_ratio=DECODE_RATIO[f"W={b}"],
        )
        for label, double in (("forging", "ForgedDecodeWindow"), ("routing", "RoutedDecodeWindow"))
        for a, b in [(32, 12), (24, 12), (16, 12), (16, 8)]
    ]
    return out


def rows() -> list[Row]:
    honest = [Row("baseline fp32", "honest")]
    honest += [
        Row(f"W={w}", "honest", config={"SLIDING_WINDOW": w}) for w in (8, 12, 16, 24, 32, 64)
    ]
    honest += [Row(q, "honest", config={"QUANTIZATION": q}) for q in ("int8", "int4")]
    honest += [Row("bf16", "honest", config={"DTYPE": "bfloat16"})]
    # the closest honest stand-in for an fp8 KV cache vLLM's CPU build serves only with
    # AVX-512: keys and values rounded to fp8 on every path, the knob declared; the
    # reference cannot reproduce it and podium cannot confirm it, so it is judged against
    # the plain budget, as every unconfirmed lever is
    honest.append(
        Row(
            "KV fp8 stand-in",
            "honest",
            engine=doubles.engine_class("Undeclared"),
            config={"KV_CACHE_DTYPE": "fp8"},
            env={"UNDECLARED_KV": "fp8"},
        )
    )
    # vLLM's own lossy options, as its CPU build serves them (or refuses them at start)
    honest += [
        Row(f"vLLM {name}", "honest", engine=VLLM, config=config, example="tiny-vllm")
        for name, config in VLLM_ROWS.items()
    ]
    replayers = {"ReplayCheapControls", "ReplaySlowNeighbour", "ReplayShaped", "CachedReplies"}
    cheats = [
        Row(name, "cheat", engine=doubles.engine_class(name), replays=name in replayers)
        for name in (
            "ReplayCheapControls",
            "ReplaySlowNeighbour",
            "ReplayShaped",
            "FlatterLogprobs",
            "FlatterSomeRecords",
            "DecodeWindow",
        )
    ]
    cheats += [
        Row(name, "cheat", engine=doubles.engine_class(name), replays=name in replayers)
        for name in (
            "InflatedUsage",
            "PositiveLogprobs",
            "SwitchPath",
            "EarlyStop",
            "Degraded",
            "CachedReplies",
            "ScaledLogprobs",
            "ForgedChat",
            "ForgedPromptReplay",
            "GarbageTail",
            "HonestUntilScored",
            "SometimesCheap",
        )
    ]
    # a kind = "vllm" entry on the baseline engine, printing vLLM's argument line for its
    # declared fp8 KV cache and spending the widening that once bought on a lossy decode
    cheats.append(
        Row(
            "forged vLLM KV fp8",
            "cheat",
            engine=doubles.engine_class("ForgedVllm"),
            config={"KV_CACHE_DTYPE": "fp8"},
            env={
                "FORGE_VLLM_ARGS": "{'model': '/model', 'dtype': 'float32', "
                "'kv_cache_dtype': 'fp8'}",
                "BUY_LOSSY_NATS": "0.3",
            },
            engine_kind="vllm",
        )
    )
    cheats.append(
        Row(
            "ForgedPromptReplay (honest ids)",
            "cheat",
            engine=doubles.engine_class("ForgedPromptReplay"),
            env={"ADVERSARY_HONEST_IDS": "1"},
        )
    )
    return honest + cheats + margin_rows()


def corpus_rows(timed: str = "heldout") -> list[Row]:
    """Engines that know the prompt corpus (``tests/doubles/corpus.py``): each decodes the
    set its timed prompts come from at start-up and replays the model's exact greedy
    answers, unpaced, paced to 20x and to 1.5x the honest speed, or checking each replay
    with one teacher-forced pass. ``integrity.controls`` must reject every one. ``timed``
    names tiny's shipped set they read: ``heldout`` in a sandbox, ``public`` under the
    process runner, which never times the held-out set (the engine could read it there)."""
    from bench.common import REPO_ROOT

    path = REPO_ROOT / "podium" / "data" / "tiny" / f"{timed}-prompts.jsonl"
    corpus = {"CHEAT_CORPUS": str(path)}
    replay = doubles.engine_class("CorpusReplay")
    paced = doubles.engine_class("CorpusReplayPaced")
    verified = doubles.engine_class("CorpusReplayVerified")
    return [
        Row("corpus replay", "cheat", engine=replay, env=corpus),
        Row("corpus replay paced 20x", "cheat", engine=paced, env={**corpus, "CHEAT_PACE": "20"}),
        Row("corpus replay paced 1.5x", "cheat", engine=paced, env={**corpus, "CHEAT_PACE": "1.5"}),
        Row("corpus replay verified", "cheat", engine=verified, env=corpus),
    ]


#: engines of tests/doubles left out, and why
LEFT_OUT = {
    "Crash": "exits mid-run: a robustness test, FAILED by design",
    "Hang": "stops answering mid-run: a robustness test, FAILED by design",
    "Escape": "tries the network and the held-out files: an isolation test that only a "
    "real sandbox can pass; a process runner does not contain it",
}
