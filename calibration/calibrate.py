"""Calibration of the trust checks: honest lossy engines and cheats, one table.

    python -m calibration.calibrate                  # every row (about 25 minutes on 2 cores)
    python -m calibration.calibrate --only W=16,int4 # re-run some rows, merged into the results
    python -m calibration.calibrate --noisy          # re-run the rows only tps.unstable spoiled
    python -m calibration.calibrate --table          # re-write the docs table from the results
    python -m calibration.calibrate --list           # the rows' names

Every row is one whole verification on the ``tiny`` challenge (its real spec, every
bound as shipped): ``examples/tiny-baseline`` packaged with podium's engine code, the
cheats included, its knobs in the bundle's ``[engine.config]`` (so the verifier's
declared-model logic reads them from the frozen config, as it would from any entry),
run by ``verifier.pipeline.verify`` with a process runner that reports itself as a
verifying sandbox (``tests/doubles/sandbox.py``; no Docker) and the verifier's own
reference runner. The engine reads the same frozen config the bundle carries.

Rows: podium's baseline engine with lossy knobs the rules allow (sliding windows, int8
and int4 weights, bfloat16); real vLLM (``examples/tiny-vllm`` in the Docker sandbox,
``podium/vllm-cpu``) with a window and with the KV-cache, dtype and quantisation options
the rules allow, each either served and judged, or refused by vLLM's CPU build at start
(the row says with what error); and every cheating engine of ``tests/doubles`` that
cheats about work. ``Crash``, ``Hang`` and ``Escape`` are
left out: they test robustness and isolation (FAILED by design, or contained by the
sandbox, which a process runner is not), not the judgement of work.

What a row must show: an honest engine inside the PPL cap is VERIFIED; one over the cap
is REJECTED with ``ppl.cap`` as its only error; a cheat is REJECTED. The results go to
``calibration/results/calibration.json`` and the table to ``docs/benchmarks.md`` (section 7).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, import_doubles, machine
from calibration import RESULTS_DIR, margins
from calibration.margins import positions

doubles = import_doubles()

RESULT = RESULTS_DIR / "calibration.json"
DOCS = REPO_ROOT / "docs" / "benchmarks.md"
#: the docs section this script owns: from its heading to the next ``## `` heading
HEADING = "## 7. Calibration of the reference checks"
#: the subsection inside it that ``calibration.gpu_verify --table`` writes: this script's
#: section ends there, so that its ``--table`` leaves the GPU rows in place
GPU_HEADING = "### GPU rows: whole verifications on an NVIDIA H200"
DECODE = "integrity.reference-decode"
CACHING = "integrity.caching"
SAME_PATH = "integrity.same-path"
UNSTABLE = "tps.unstable"
COMMAND = "python -m calibration.calibrate"


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


#: tiny's cap, as a ratio to the model's PPL, and the decode ratio from which a decode
#: lossier than its scoring must always be REJECTED (a window of 10 and below)
CAP_RATIO = 1.05
PAST_THE_CAP = 1.07

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
    cheats.append(
        Row(
            "ForgedPromptReplay (honest ids)",
            "cheat",
            engine=doubles.engine_class("ForgedPromptReplay"),
            env={"ADVERSARY_HONEST_IDS": "1"},
        )
    )
    return honest + cheats + margin_rows()


#: engines of tests/doubles left out, and why
LEFT_OUT = {
    "Crash": "exits mid-run: a robustness test, FAILED by design",
    "Hang": "stops answering mid-run: a robustness test, FAILED by design",
    "Escape": "tries the network and the held-out files: an isolation test that only a "
    "real sandbox can pass; a process runner does not contain it",
}


# -- running a row -----------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def make_source(row: Row, where: Path) -> Path:
    """The row's example with the row's knobs in its config; ``tiny-baseline`` also gets
    podium's baseline engine and the test doubles (the cheats among them)."""
    src = where / "src"
    shutil.copytree(
        REPO_ROOT / "examples" / row.example,
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    if not row.vllm:
        doubles.carry(src / "engine")
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    config = dict(row.config)
    if "DTYPE" in config:
        toml = toml.replace('DTYPE = "float32"\n', "")
    lines = "".join(f"{k} = {_toml_value(v)}\n" for k, v in config.items())
    toml = toml.replace("[engine.config]\n", "[engine.config]\n" + lines, 1)
    (src / "podium.toml").write_text(toml, encoding="utf-8")
    return src


def verify_row(row: Row, where: Path) -> dict[str, Any]:
    """Package the row's bundle and verify it; the report and the wall time."""
    from doubles.sandbox import VerifyingSandbox
    from verifier.runners.reference import reference_runner

    from schemas.challenge import load_challenge
    from submission.bundle import package
    from verifier.pipeline import VerifyRequest, verify

    src = make_source(row, where)
    # a machine without Docker (a GPU host) names the base image's digest itself
    digest = os.environ.get("PODIUM_BASE_DIGEST") or None
    packaged = package(src, where / "dist", build=False, base_digest=digest)
    if packaged.bundle is None:
        raise RuntimeError(f"{row.name}: {[f.one_line() for f in packaged.findings]}")
    frozen = where / "engine-config.json"
    frozen.write_bytes(_member(packaged.bundle.path, "engine-config.json"))
    env = {
        "ENGINE_CLASS": row.engine,
        "ENGINE_CONFIG": str(frozen),  # the engine reads the frozen config, as in its image
        "OMP_NUM_THREADS": "1",
        **row.env,
    }
    from verifier.runners.local_docker import LocalDockerRunner

    runner: Any = LocalDockerRunner() if row.vllm else VerifyingSandbox(env=env)
    t0 = time.perf_counter()
    outcome = verify(
        VerifyRequest(
            packaged.bundle.path,
            load_challenge("tiny"),
            runner,
            where / "out",
            reference=reference_runner,
        )
    )
    wall_s = time.perf_counter() - t0
    log = where / "out" / "engine.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    # the organizer's evidence: every check's details at full precision (the report has none)
    report = outcome.evidence or outcome.report
    return {"report": report, "wall_s": wall_s, "stats": cheat_stats(text), "log": text}


def cheat_stats(log: str) -> dict[str, int] | None:
    """The last ``CHEAT-STATS`` line of an engine log: what a replaying cheat really did."""
    lines = [x for x in log.splitlines() if x.startswith("CHEAT-STATS ")]
    if not lines:
        return None
    stats: dict[str, int] = json.loads(lines[-1].split(" ", 1)[1])
    return stats


def _member(bundle: Path, name: str) -> bytes:
    """A file of the bundle, as the verifier's intake unpacks it."""
    with tarfile.open(bundle) as tar:
        for member in tar.getmembers():
            if member.isfile() and Path(member.name).name == name:
                fh = tar.extractfile(member)
                if fh is not None:
                    return fh.read()
    raise RuntimeError(f"{bundle} carries no {name}")


# -- the table: pure functions of the reports ---------------------------------------------


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any] | None:
    return next((c for c in report.get("checks", []) if c.get("id") == check_id), None)


def summarise(
    row: Row,
    report: dict[str, Any],
    *,
    model_ppl: float,
    cap: float,
    wall_s: float | None = None,
    stats: dict[str, int] | None = None,
    log: str = "",
) -> dict[str, Any]:
    """One table row from a verification report (``log``: the engine's): the numbers
    and whether they meet the expectation of the row's kind."""
    metrics = report.get("metrics") or {}
    ppl_value = (metrics.get("ppl") or {}).get("value")
    ppl = float(ppl_value) if ppl_value is not None else None
    tps = (metrics.get("tps") or {}).get("median")
    errors = sorted(
        {f["check_id"] for f in report.get("findings", []) if f.get("severity") == "error"}
    )
    decode = _check(report, DECODE)
    details = (decode or {}).get("details") or {}
    allowance = details.get("allowance") or {}
    reference_model = details.get("reference_model") or {}
    caching = _check(report, CACHING) or {}
    missing = [
        f for f in report.get("findings", []) if f.get("check_id") == "verdict.checks-missing"
    ]
    # At this commit integrity.caching skips when no timed prompt repeats ("a replay is
    # impossible"), and the verdict counts a skipped required check as missing: such a
    # run ends UNOFFICIAL. ``judged`` is the verdict with that one skip counted as a pass.
    caching_only = bool(missing) and all(
        f.get("message", "").endswith(f": {CACHING}") for f in missing
    )
    judged_verdict = report.get("verdict")
    if (
        judged_verdict == "UNOFFICIAL"
        and caching_only
        and caching.get("status") == "skip"
        and not errors
    ):
        judged_verdict = "VERIFIED"
    out: dict[str, Any] = {
        "name": row.name,
        "kind": row.kind,
        "engine": row.engine,
        "config": dict(row.config),
        "env": dict(row.env),
        "verdict": report.get("verdict"),
        "judged": judged_verdict,
        "caching_status": caching.get("status"),
        "errors": errors,
        "failure": (report.get("failure") or {}).get("message") if report.get("failure") else None,
        "failure_stage": (report.get("failure") or {}).get("stage"),
        "refusal": refusal(report, log) if row.vllm else None,
        "vllm": row.vllm,
        "ppl": ppl,
        "ppl_ratio": ppl / model_ppl if ppl is not None else None,
        "engine_ppl": (metrics.get("ppl") or {}).get("engine_value", ppl),
        "tps": float(tps) if tps is not None else None,
        "decode_status": (decode or {}).get("status"),
        "mean_gap": details.get("mean_gap"),
        "worst_answer_gap": (details.get("worst_answer") or {}).get("mean_gap"),
        "large_gap_share": details.get("large_gap_share"),
        "tokens": details.get("tokens"),
        "allowance": {
            "excess": details.get("reported_scoring_loss"),
            **{k: allowance.get(k) for k in ("mean", "answer", "large_share", "budget", "rule")},
        },
        "reference_applied": reference_model.get("applied"),
        "reference_budgeted": reference_model.get("budgeted"),
        "wall_s": wall_s,
        "cheat_stats": stats,
        "replays": row.replays,
        "no_repeat": caching.get("status") == "pass"
        and "no timed request repeats" in str(caching.get("summary", "")),
    }
    out["bounds"] = positions(report)
    out["decode_ratio"] = row.decode_ratio
    out["mean_self_gap"] = ((_check(report, SAME_PATH) or {}).get("details") or {}).get(
        "mean_self_gap"
    )
    out["expected"], out["meets"] = expectation(out, cap)
    # an unstable clock is the machine's noise, not the trust checks' judgement: what the
    # verdict would be from every other check, so a noisy row shows what it calibrates
    out["noise_only"] = False
    if not out["meets"] and UNSTABLE in errors:
        others = [e for e in errors if e != UNSTABLE]
        quiet = {**out, "errors": others, "judged": "REJECTED" if others else "VERIFIED"}
        out["noise_only"] = expectation(quiet, cap)[1]
    return out


def refusal(report: dict[str, Any], log: str = "") -> str | None:
    """vLLM's own root cause, when the engine exited before it was ready: the first
    ``...Error: ...`` of its whole log (else of the report's tail) that is neither a
    warning nor the engine core's "see root cause above"."""
    failure = report.get("failure") or {}
    if failure.get("stage") not in ("start", "ready"):
        return None
    for text in (log, str(failure.get("log_tail") or "")):
        for line in text.splitlines():
            found = re.search(r"\b(\w+Error: .*)", line)
            if found and "root cause above" not in line and "WARNING" not in line:
                return found.group(1).strip()[:300]
    return str(failure.get("message", ""))[:300]


def expectation(summary: dict[str, Any], cap: float) -> tuple[str, bool]:
    """What the row's kind must show, and whether it does."""
    verdict, errors, ppl = summary["judged"], set(summary["errors"]), summary["ppl"]
    stats = summary.get("cheat_stats") or {}
    nothing = stats.get("replayed_tokens") == 0 if stats else summary.get("no_repeat", False)
    if summary["kind"] == "cheat" and summary.get("replays") and nothing:
        # a replaying cheat on a stream with no repeat had nothing to replay: it computed
        # every token, so it is an honest engine and must be judged as one
        return "VERIFIED (nothing to replay)", verdict == "VERIFIED" and not errors
    decode_ratio = summary.get("decode_ratio")
    if summary["kind"] == "cheat" and decode_ratio is not None:
        # a decode lossier than its scoring: the budget rule judges the decode against the
        # cap itself, so one whose own model is inside the cap is permitted, one a whole
        # window step or more past it (W <= 10 on tiny) is not, and one step past it (W=12,
        # 1.065) sits inside the bound's resolution on 32-token answers
        if decode_ratio <= CAP_RATIO:
            return "VERIFIED (a decode inside the budget)", verdict == "VERIFIED" and not errors
        if decode_ratio < PAST_THE_CAP:
            return "either (one window step past the cap)", verdict in ("VERIFIED", "REJECTED")
    if summary["kind"] == "cheat":
        return "REJECTED", verdict == "REJECTED"
    if summary.get("refusal"):
        # vLLM's CPU build refused the option at start: no engine, nothing to judge
        return "not served (refused at start)", verdict == "FAILED"
    if ppl is not None and ppl > cap:
        # its decode is that of a model over the cap too, which the reference decode may
        # see beside the cap (the budget rule judges the decode against the cap itself)
        return "REJECTED by ppl.cap", (
            verdict == "REJECTED"
            and "ppl.cap" in errors
            and errors <= {"ppl.cap", "integrity.reference-decode"}
        )
    return "VERIFIED", verdict == "VERIFIED" and not errors


def _num(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–" if value is None else str(value)
    return format(value, spec)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _ppl(summary: dict[str, Any]) -> str:
    """The judged PPL, and the engine's own where flattery made it lower."""
    text = _num(summary["ppl"], ".3f")
    own = summary.get("engine_ppl")
    if own is not None and summary["ppl"] is not None and own < summary["ppl"] - 5e-4:
        text += f" (engine's {own:.3f})"
    return text


def _knobs(summary: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in summary["config"].items()]
    parts += [f"{k}={v}" for k, v in summary["env"].items()]
    return ", ".join(f"`{p}`" for p in parts) or "–"


def _verdict(summary: dict[str, Any]) -> str:
    if summary["judged"] != summary["verdict"]:
        return f"{summary['verdict']} ({summary['judged']} but for the caching skip)"
    return str(summary["verdict"])


def markdown_table(summaries: Sequence[dict[str, Any]]) -> str:
    head = (
        "| row | engine | knobs | PPL | ratio | mean gap | worst answer | > 1 nat | e "
        "| allowed mean | allowed answer | allowed > 1 nat | verdict | error ids | as expected |\n"
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | --- | --- |\n"
    )
    lines = []
    for s in summaries:
        a = s["allowance"]
        mark = "yes" if s["meets"] else f"**NO** (expected {s['expected']})"
        if s["meets"] and s["expected"].startswith("VERIFIED (nothing"):
            computed = (s.get("cheat_stats") or {}).get("computed_tokens")
            mark = "yes: no prompt repeated, nothing to replay" + (
                f" ({computed} tokens computed, 0 replayed)" if computed is not None else ""
            )
        if s.get("noise_only"):
            mark = "yes but for `tps.unstable` (the machine's noise)"
        errors = ", ".join(f"`{e}`" for e in s["errors"]) or "–"
        if s.get("refusal"):
            errors = "refused: " + s["refusal"].replace("|", "/").replace("`", "'")
        lines.append(
            f"| {s['name']} | `{s['engine'].split('.', 1)[1]}` | {_knobs(s)} "
            f"| {_ppl(s)} | {_num(s['ppl_ratio'], '.4f')} "
            f"| {_num(s['mean_gap'], '.4f')} | {_num(s['worst_answer_gap'], '.3f')} "
            f"| {_pct(s['large_gap_share'])} | {_num(a.get('excess'), '.4f')} "
            f"| {_num(a.get('mean'), '.4f')} | {_num(a.get('answer'), '.3f')} "
            f"| {_pct(a.get('large_share'))} | {_verdict(s)} | {errors} | {mark} |"
        )
    return head + "\n".join(lines) + "\n"


def docs_section(result: dict[str, Any]) -> str:
    """Section 7 of ``docs/benchmarks.md``, from a results file."""
    m = result["machine"]
    summaries = result["rows"]
    misses = [s["name"] for s in summaries if not s["meets"] and not s.get("noise_only")]
    noisy = [s["name"] for s in summaries if s.get("noise_only")]
    shas = sorted({s.get("git_sha") or m.get("git_sha") or "?" for s in summaries})
    verdict_line = (
        "Every row meets its expectation."
        if not misses
        else "Rows that do not meet their expectation: " + ", ".join(misses) + "."
    )
    if noisy:
        verdict_line += (
            " Rows whose trials disagreed on the busy machine (`tps.unstable`), every "
            "other check as expected: " + ", ".join(noisy) + "."
        )
    return f"""{HEADING}: honest lossy engines and cheats

`{COMMAND}` (one row: `{COMMAND} --only NAME`) · `calibration/calibrate.py` ·
`calibration/results/calibration.json`

Each row is one whole verification on the `tiny` challenge, its spec and bounds as
shipped: `examples/tiny-baseline` packaged with podium's engine code, the row's knobs in
the bundle's `[engine.config]` (so the verifier reads them from the frozen config),
run by `verifier.pipeline.verify` with the verifier's own reference engine and a process
runner that stands in for the sandbox (`tests/doubles/sandbox.py`). The `vLLM` rows
package `examples/tiny-vllm` instead (real vLLM from `podium/vllm-cpu`, in the Docker
sandbox): vLLM's own lossy options, as its CPU build serves them, or the error with
which it refuses one at start. Measured at commit
{", ".join(f"`{s}`" for s in shas)} on a shared 2-core CPU machine ({m.get("cpu")}, load
average {m.get("load_average")} at the end), {m.get("date")}.
{result.get("note") or ""}

The gap at a sampled timed token is the reference's top logprob minus its logprob of the
engine's token (nats); *mean gap* is over every sampled token, *worst answer* the
highest mean gap of one sampled answer, *> 1 nat* the share of tokens whose gap is whole
nats. *e* is the engine's scoring loss against the reference on the sampled PPL records
(nats per token, clipped to the quality budget ln 1.05 = 0.0488 while the PPL is within
the cap); the allowances are `integrity.reference_decode`'s arithmetic on it
(`docs/measurement.md`). The model's own PPL on the held-out set is 23.404752; the cap is
{result["cap"]:.4f}. A window is reproduced by the reference (judged against the
windowed model), as is a declared dtype; quantisation is judged against the budget.

{markdown_table([s for s in summaries if s.get("decode_ratio") is None])}
{verdict_line} Left out: {"; ".join(f"`{k}` ({v})" for k, v in LEFT_OUT.items())}.
{margin_section(result)}"""


def margin_section(result: dict[str, Any]) -> str:
    """The trust-margin rows (``margin_rows``): each row's position at each bound, and
    the separation between honest rows inside the cap and double spenders over it."""
    rows_ = [s for s in result["rows"] if s.get("decode_ratio") is not None]
    if not rows_:
        return ""
    cap_ratio = result["cap"] / result["model_ppl"]
    return f"""
### Trust margins: undeclared approximations and double spenders

`{COMMAND} --only` with the names of `margin_rows()` (`calibration/calibrate.py`; positions by
`calibration/margins.py`). *Honest* rows run `doubles.honest:Undeclared`: the approximation on
every path, not declared, so the reference runs the unmodified model and judges it by
the budget. *Cheat* rows run `doubles.decode:DecodeWindow`: scoring with window
`CHEAT_SCORE_WINDOW`, decoding with the harsher `CHEAT_WINDOW` (*forging*:
`doubles.decode:ForgedDecodeWindow`, which also scores its own answers with its decode
model; *routing*: `doubles.decode:RoutedDecodeWindow`, which remembers nothing and runs
every chat-shaped request, its probes included, with the decode window). *Decode alone*
is the PPL ratio of the model it decodes with (the `W=` rows above; the cap is
{cap_ratio:.2f}). Each bound column is the row's value over what the bound allows (1 = the
bound); `–`: not judged.

{separation_text(rows_, cap_ratio)}"""


def separation_text(rows_: list[dict[str, Any]], cap_ratio: float) -> str:
    """Margin rows as a table of positions, the highest and lowest position at each bound,
    and whether the rows sit apart (``calibration.margins.separation``)."""
    sep = margins.separation(rows_, cap_ratio)
    per = sep["per_bound"]

    def pos(value: Any) -> str:
        return "–" if value is None else f"{value:.2f}"

    bound_lines = "\n".join(
        f"| `{k}` | {what} | {pos(per[k]['honest_max'])} | {pos(per[k]['spender_min'])} "
        f"| {pos(per[k]['spender_max'])} |"
        for k, what in margins.BOUNDS.items()
    )
    deciding = ", ".join(
        f"{name}: `{d['bound']}` {pos(d['position'])}" for name, d in sep["deciding"].items()
    )
    return f"""{margins.markdown_table(rows_, cap_ratio)}
Per bound, the highest position of an honest row inside the cap and the lowest and
highest of a double spender whose decode alone breaks the cap:

| bound | what | honest max | spender min | spender max |
| --- | --- | ---: | ---: | ---: |
{bound_lines}

Every honest row inside the cap at or below {margins.HONEST_MAX} of every allowance:
**{"yes" if sep["honest_ok"] else "no"}** (its worst position {pos(sep["honest_worst"])}).
Every double spender over the cap at or above {margins.SPENDER_MIN} of one allowance:
**{"yes" if sep["spenders_ok"] else "no"}** (weakest {pos(sep["spender_weakest"])}).
Deciding bound of each: {deciding}.
"""


def replace_section(text: str, section: str) -> str:
    """``text`` with the section under ``HEADING`` (to the next ``## ``, or to the GPU rows'
    subsection, ``GPU_HEADING``) replaced."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(HEADING)), None)
    if start is None:
        return text.rstrip("\n") + "\n\n" + section
    ends = ("## ", GPU_HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(ends)), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + tail if tail else "")


def write_docs(result: dict[str, Any], path: Path = DOCS) -> None:
    path.write_text(replace_section(path.read_text(encoding="utf-8"), docs_section(result)))


# -- the command --------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("rows"), list) and "cap" in data:
            return data
    return None


def _keep_dir(keep: Path, row: Row) -> Path:
    return keep / row.name.replace(" ", "_").replace("=", "")


def _from_keep(
    keep: Path, previous: dict[str, Any], model_ppl: float, cap: float
) -> list[dict[str, Any]]:
    """The results' rows re-summarised from the reports and logs kept under ``keep``."""
    from verifier.report import full_document

    old = {s["name"]: s for s in previous["rows"]}
    out = []
    for row in rows():
        where = _keep_dir(keep, row) / "out"
        if not (where / "report.json").is_file():
            if row.name in old:
                out.append(old[row.name])
            continue
        report = full_document(where / "report.json")
        log = where / "engine.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        before = old.get(row.name, {})
        summary = summarise(
            row,
            report,
            model_ppl=model_ppl,
            cap=cap,
            wall_s=before.get("wall_s"),
            stats=cheat_stats(text),
            log=text,
        )
        summary["git_sha"] = before.get("git_sha")
        out.append(summary)
    return out


def _order(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = [r.name for r in rows()]
    return sorted(summaries, key=lambda s: names.index(s["name"]) if s["name"] in names else 99)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated row names (see --list)")
    parser.add_argument(
        "--noisy", action="store_true", help="re-run the rows that only tps.unstable spoiled"
    )
    parser.add_argument("--list", action="store_true", help="print the rows' names")
    parser.add_argument("--table", action="store_true", help="re-write the docs table only")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--note", help="a sentence on what was measured, kept in the results")
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each row's verification here (with --table: rebuild the rows from it)",
    )
    args = parser.parse_args(argv)
    every = rows()
    if args.list:
        print("\n".join(r.name for r in every))
        return 0
    from schemas.challenge import load_challenge

    spec = load_challenge("tiny")
    model_ppl = float(spec.quality.reference_ppl or 0.0)
    cap = float(spec.quality.cap)
    previous = _load(args.out)
    if args.table:
        if previous is None:
            parser.error(f"no results in {args.out}: run without --table first")
        if args.keep is not None:  # rebuild the rows from the kept verifications
            previous["rows"] = _order(_from_keep(args.keep, previous, model_ppl, cap))
        if args.note is not None:
            previous["note"] = args.note
        if args.note is not None or args.keep is not None:
            args.out.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
        write_docs(previous, args.docs)
        return 0
    chosen = every
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in {r.name for r in every}]
        if unknown:
            parser.error(f"unknown rows {unknown}; --list shows them")
        chosen = [r for r in every if r.name in wanted]
    if args.noisy:
        if previous is None:
            parser.error(f"no results in {args.out}")
        noisy = {s["name"] for s in previous["rows"] if s.get("noise_only")}
        chosen = [r for r in every if r.name in noisy]
    kept = (
        {s["name"]: s for s in (previous or {}).get("rows", [])} if args.only or args.noisy else {}
    )
    sha = machine().get("git_sha")
    for row in chosen:
        with tempfile.TemporaryDirectory(prefix="calibrate-") as tmp:
            where = Path(tmp)
            if args.keep is not None:
                where = _keep_dir(args.keep, row)
                shutil.rmtree(where, ignore_errors=True)
                where.mkdir(parents=True)
            run = verify_row(row, where)
        summary = summarise(
            row,
            run["report"],
            model_ppl=model_ppl,
            cap=cap,
            wall_s=run["wall_s"],
            stats=run["stats"],
            log=run["log"],
        )
        summary["git_sha"] = sha
        kept[row.name] = summary
        print(
            f"{row.name}: {summary['verdict']} {summary['errors']} ppl={summary['ppl']} "
            f"mean_gap={summary['mean_gap']} worst={summary['worst_answer_gap']} "
            f"e={summary['allowance']['excess']} {'ok' if summary['meets'] else 'MISS'} "
            f"({summary['wall_s']:.0f} s)",
            flush=True,
        )
        result = {
            "command": f"{COMMAND} {' '.join(argv if argv is not None else sys.argv[1:])}".strip(),
            "machine": machine(),
            "model_ppl": model_ppl,
            "cap": cap,
            "left_out": LEFT_OUT,
            "note": args.note if args.note is not None else (previous or {}).get("note"),
            "rows": _order(list(kept.values())),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    final = _load(args.out)
    if final is not None:
        write_docs(final, args.docs)
    return 0 if all(s["meets"] for s in (final or {}).get("rows", [])) else 1


if __name__ == "__main__":
    raise SystemExit(main())
