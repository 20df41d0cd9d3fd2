"""How far apart could any bound of the reference decode put an honest entry and a double
spender? Read from the recorded rows, nothing is run.

    python -m calibration.attainable            # CPU and GPU rows; results/attainable.json
    python -m calibration.attainable --json     # the same, as JSON on stdout

The reference decode judges a timed answer by its gaps to the verifier's model; what it
allows depends on the engine's scoring loss e alone (``integrity.reference_decode``). The
trust-margin target asks every honest row inside the cap to sit at or below half of each
allowance and every double spender whose decode alone breaks the cap at or above 1.5 times
one of them: a factor of 3 between the two. ``calibration.margins.attainable`` says, per
spender and bound, whether *any* allowance that does not fall as e grows could do that, and
against which honest row it fails. The rows are the trust-margin rows of
``calibration.calibrate`` (CPU, ``results/calibration.json``), each honest row's twenty
repeated runs where they were made (``results/false_rejection-undeclared.json``: e is that
row's, measured on the same records), and the GPU runs (``results/gpu_verify.json``).

The answer is a property of the model's numerics, not of a constant: a spender that
decodes one window-step harsher than it scores decodes at gaps the honest rows of a
similar e reach themselves.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibration import RESULTS_DIR, margins, tiny_spec

CALIBRATION = RESULTS_DIR / "calibration.json"
REPEATED = RESULTS_DIR / "false_rejection-undeclared.json"
GPU = RESULTS_DIR / "gpu_verify.json"
RESULT = RESULTS_DIR / "attainable.json"


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def cpu_rows(calibration: dict[str, Any], repeated: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The CPU's margin rows, with every repeated honest run as a row of its own (its gaps,
    and the e and PPL ratio of the row it repeats: the same records score it the same)."""
    rows = [r for r in calibration["rows"] if r.get("decode_ratio") is not None]
    by_name = {r["name"]: r for r in rows}
    out = list(rows)
    for name, row in ((repeated or {}).get("rows") or {}).items():
        base = by_name.get(name)
        if base is None:
            continue
        for run in row.get("per_run", []):
            out.append(
                {
                    **{k: base.get(k) for k in ("kind", "ppl_ratio", "decode_ratio", "allowance")},
                    "name": f"{name} (run {run['run']})",
                    "mean_gap": run.get("reference_decode_mean_gap"),
                    "worst_answer_gap": run.get("reference_decode_worst_answer"),
                    "large_gap_share": run.get("reference_decode_large_gap_share"),
                }
            )
    return out


def gpu_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The GPU runs of margin rows (each run a row, named with its run number)."""
    from calibration.gpu_table import margin_runs

    return [{**r, "name": f"{r['name']} (run {r.get('run', 1)})"} for r in margin_runs(doc)]


def measure() -> dict[str, Any]:
    cap_ratio = float(tiny_spec()["quality"]["max_ratio"])
    out: dict[str, Any] = {"cap_ratio": cap_ratio, "machines": {}}
    calibration = _read(CALIBRATION)
    if calibration is not None:
        rows = cpu_rows(calibration, _read(REPEATED))
        out["machines"]["cpu"] = margins.attainable(rows, cap_ratio)
    gpu = _read(GPU)
    if gpu is not None:
        out["machines"]["gpu"] = margins.attainable(gpu_rows(gpu), cap_ratio)
    return out


def text(result: dict[str, Any]) -> str:
    parts = []
    for machine, res in result["machines"].items():
        weakest = res["weakest"]
        parts.append(
            f"### {machine.upper()}: {len(res['honest_rows'])} honest rows or runs "
            "inside the cap\n\n"
            + margins.attainable_table(res)
            + f"\nNeeded: {res['needed']:g}x. Weakest spender's best: "
            + ("–" if weakest is None else f"{weakest:.2f}x")
            + ". Out of reach of any such bound: "
            + (", ".join(res["inseparable"]) or "none")
            + ".\n"
        )
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.attainable", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--out", type=Path, default=RESULT, help="where to write the result")
    args = parser.parse_args(argv)
    result = measure()
    if not result["machines"]:
        print(f"no recorded rows: run python -m calibration.calibrate first ({CALIBRATION})")
        return 2
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1) if args.json else text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
