"""Section 7 of ``docs/benchmarks.md``: the calibration table and its trust margins,
pure functions of a results file (``calibration/results/calibration.json``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT
from calibration import margins
from calibration.rows import LEFT_OUT

DOCS = REPO_ROOT / "docs" / "benchmarks.md"
#: the docs section ``python -m calibration.calibrate`` owns: from its heading to the next
#: ``## `` heading
HEADING = "## 7. Calibration of the reference checks"
#: the subsection inside it that ``calibration.gpu_verify --table`` writes: the
#: calibration's section ends there, so that its ``--table`` leaves the GPU rows in place
GPU_HEADING = "### GPU rows: whole verifications on an NVIDIA H200"
COMMAND = "python -m calibration.calibrate"


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
