"""Test doubles: engines that cheat or break, a fake engine, a sandbox and attention path
that stand in for the real ones. They are fixtures of the verifier's tests (and of the
calibration benchmarks), never part of the wheel.

Two forms of each cheat exist where they can:

- a *torch* double, a ``BaselineEngine`` subclass that runs the real tiny model inside an
  engine process or container as ``ENGINE_CLASS=doubles.MODULE:NAME`` (the bundle carries
  this package as ``engine/doubles/``, on the container's ``PYTHONPATH``); one module per
  check it attacks: ``scoring`` (the ``ppl.*`` checks), ``bought`` (every allowance a
  report, a declaration or a withheld top might buy), ``decode``
  (``integrity.reference-decode``, ``integrity.same-path``), ``replay``
  (``integrity.caching``), ``corpus`` (``integrity.controls``), ``counts``
  (``integrity.lengths``, ``tps.usage-mismatch``), ``robustness`` (``integrity.isolation``,
  FAILED runs), ``covert`` (an engine that hides held-out data in its numbers;
  ``verifier.precision``) and ``honest`` (the yardsticks);
- a *fake* switch, a field of ``doubles.fake_engine.Misbehave``: the arithmetic fake
  engine over HTTP, for fast tests of one check.

``CATALOGUE`` is the one list of them: each double's name (the torch class's, where there
is one), the check ids it attacks, its torch module and its fake switches.
``tests/test_doubles.py`` keeps the catalogue, the modules and ``Misbehave`` in step.

Other doubles here: ``fake_engine`` (the fake engine itself), ``sandbox``
(``VerifyingSandbox``: the process runner posing as a sandbox) and ``attention`` (a wrong
attention path for the reference's self-test).

This module is imported inside engine containers: standard library only.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Double:
    """One cheat (or honest yardstick, or breakage) and the forms it takes."""

    #: the check ids it attacks (empty: it attacks none, or it makes the run FAILED)
    attacks: tuple[str, ...]
    #: the module of ``doubles`` whose class of the catalogue's name is its torch form
    module: str | None = None
    #: the ``Misbehave`` fields that make the fake engine do it
    switches: tuple[str, ...] = ()


CATALOGUE: dict[str, Double] = {
    # honest yardsticks
    "Honest": Double((), "honest"),
    "Undeclared": Double((), "honest"),
    "NgramLookup": Double((), "honest"),
    # scoring
    "PositiveLogprobs": Double(("ppl.logprob-positive",), "scoring", ("positive_logprobs",)),
    "ScaledLogprobs": Double(("ppl.reference-mismatch",), "scoring", ("scale_logprobs",)),
    "FlatterLogprobs": Double(("ppl.reference-mismatch",), "scoring"),
    "FlatterSomeRecords": Double(("ppl.reference-mismatch",), "scoring"),
    "Degraded": Double(("ppl.cap",), "scoring"),
    "WrongPromptIds": Double(
        ("ppl.token-mismatch", "tps.prompt-mismatch"), switches=("wrong_prompt_ids",)
    ),
    "DropActualToken": Double(("ppl.token-mismatch",), switches=("drop_actual_token",)),
    "ShortPromptLogprobs": Double(("ppl.count-mismatch",), switches=("short_prompt_logprobs",)),
    "NanLogprobs": Double(("ppl.non-finite",), switches=("nan_logprobs",)),
    "ForgedRanks": Double(("ppl.rank-mismatch",), switches=("forged_ranks",)),
    # decode
    "SwitchPath": Double(
        ("integrity.same-path", "integrity.reference-decode"), "decode", ("degraded_decode",)
    ),
    "ForgedChat": Double(
        ("integrity.reference-decode", "integrity.same-path"),
        "decode",
        ("degraded_chat_only", "forged_scoring"),
    ),
    "ForgedPromptReplay": Double(
        ("tps.prompt-mismatch", "integrity.reference-decode"), "decode", ("replay_first",)
    ),
    "GarbageTail": Double(("integrity.reference-decode",), "decode", ("garbage_tail",)),
    "HonestUntilScored": Double(("integrity.reference-decode",), "decode"),
    "SometimesCheap": Double(("integrity.reference-decode",), "decode"),
    "DecodeWindow": Double(("integrity.reference-decode",), "decode"),
    "ForgedDecodeWindow": Double(("integrity.reference-decode", "integrity.same-path"), "decode"),
    "RoutedDecodeWindow": Double(("integrity.reference-decode",), "decode"),
    # buying an allowance with a report, a declaration or a withheld top
    "BuysAllowance": Double(
        ("integrity.reference-decode", "ppl.reference-mismatch", "integrity.same-path"),
        "bought",
    ),
    "ForgedVllm": Double(("engine.not-vllm", "integrity.same-path"), "bought"),
    # replay
    "CachedReplies": Double(("integrity.caching",), "replay", ("cache_replies",)),
    "ReplayCheapControls": Double(
        ("integrity.caching", "integrity.reference-decode"), "replay", ("cheap_fresh",)
    ),
    "ReplaySlowNeighbour": Double(
        ("integrity.caching",), "replay", ("cache_replies", "slow_after_fresh_s")
    ),
    "ReplayShaped": Double(("integrity.caching",), "replay"),
    # a known corpus (fresh controls)
    "CorpusReplay": Double(("integrity.controls",), "corpus", ("known_prompts",)),
    "CorpusReplayPaced": Double(("integrity.controls",), "corpus"),
    "CorpusReplayVerified": Double(("integrity.controls",), "corpus"),
    "CorpusReplayServingControlsAlone": Double(
        ("integrity.controls",), switches=("known_prompts", "paced_known", "serial_unknown")
    ),
    "CorpusReplayLossyControls": Double(
        ("integrity.controls", "integrity.reference-decode"),
        switches=("known_prompts", "lossy_unknown"),
    ),
    # counts
    "EarlyStop": Double(("integrity.lengths",), "counts", ("early_stop",)),
    "EosPadding": Double(("integrity.lengths",), switches=("eos_padding",)),
    "InflatedUsage": Double(("tps.usage-mismatch",), "counts", ("lying_usage",)),
    "NoTokenIds": Double(("tps.token-count",), switches=("no_token_ids",)),
    "OutOfVocab": Double(("tps.token-invalid",), switches=("out_of_vocab",)),
    "SpeedJumps": Double(("tps.unstable",), switches=("slow_every",)),
    # covert channels: it cheats no check, it tries to carry held-out data out
    "Covert": Double((), "covert"),
    # robustness
    "Escape": Double(("integrity.isolation",), "robustness"),
    "Crash": Double((), "robustness", ("crash_after",)),
    "Hang": Double((), "robustness", ("hang",)),
}

#: ``Misbehave`` fields that describe an honest engine's features, not a cheat
FAKE_SETTINGS = ("chat_prompt_ids",)


def engine_class(name: str) -> str:
    """``ENGINE_CLASS`` for the torch double ``name``: ``doubles.MODULE:NAME``."""
    module = CATALOGUE[name].module
    if module is None:
        raise KeyError(f"{name} has no torch double, only a fake engine switch")
    return f"doubles.{module}:{name}"


def carry(engine_dir: Path) -> None:
    """Put what a bundle needs to serve these doubles into its ``engine/`` folder: podium's
    baseline engine (``engines/baseline``) and this package (``doubles``), both importable
    from ``engine/`` (the example Dockerfile's ``PYTHONPATH``, the process runner's too)."""
    repo = Path(__file__).resolve().parents[2]
    skip = shutil.ignore_patterns("__pycache__")
    engines = engine_dir / "engines"
    shutil.copytree(repo / "engines" / "baseline", engines / "baseline", ignore=skip)
    shutil.copy(repo / "engines" / "__init__.py", engines / "__init__.py")
    shutil.copytree(Path(__file__).resolve().parent, engine_dir / "doubles", ignore=skip)
