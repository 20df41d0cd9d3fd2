"""The one way a verification report is printed for humans.

``podium verify``, ``podium submission selfcheck`` and ``podium report show`` all call
``render_report``. It is generic over the report: every check and finding is printed
as it comes (the list of check ids is the verifier's, never repeated here), and metrics
the renderer does not know by name are printed as ``name  value`` rows, so new members
show up without a change here. Every string from the report that a participant or an
engine could have written goes through ``podium.untrusted``.

The first lines always say what the document is worth: the verdict, and whether its
signature was checked, merely present, or absent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from podium.untrusted import clean, text

#: Above this coefficient of variation of the trials, the TPS is called unreliable when
#: the challenge does not state its own bound (``tps.max_cv``).
DEFAULT_MAX_CV = 0.15

_VERDICT_STYLE = {"VERIFIED": "bold green", "REJECTED": "bold red", "FAILED": "bold red"}
_STATUS_STYLE = {"pass": "green", "fail": "red", "error": "red"}
_KNOWN_METRICS = {"tps", "ppl", "reported_tps", "baseline_tps", "speedup"}
_TPS_SHOWN = {"median", "ci95", "cv", "trials"}
_PPL_SHOWN = {"value", "cap"}


@dataclass(frozen=True)
class Signature:
    """What is known about a report's signature.

    ``state``: ``verified`` (checked against a public key), ``signed`` (signed by this
    run), ``unchecked`` (a signature is present, nobody checked it), ``unsigned`` or
    ``invalid`` (checked, and it does not match).
    """

    state: str
    key_id: str | None = None
    problem: str | None = None
    how_to_check: str | None = None
    unsigned_because: str | None = None

    def line(self) -> Text:
        kid = f" (key {clean(self.key_id)})" if self.key_id else ""
        if self.state == "verified":
            return Text.assemble(("signature OK", "green"), f"{kid}: checked against the key given")
        if self.state == "signed":
            return Text.assemble(("signed", "green"), f"{kid} by this run")
        if self.state == "invalid":
            return Text.assemble(
                ("signature INVALID", "bold red"),
                f"{kid}: {clean(self.problem)}; nothing in this report can be trusted",
            )
        if self.state == "unchecked":
            out = Text.assemble(
                ("signature NOT CHECKED", "bold yellow"),
                f"{kid}: anyone could have edited this file",
            )
            if self.how_to_check:
                out.append(f"; check it with: {self.how_to_check}")
            return out
        return Text.assemble(
            ("unsigned", "bold yellow"),
            f": {self.unsigned_because or 'no signature'}; it proves nothing to anyone else",
        )


def label(report: dict[str, Any]) -> str:
    """What a human sees: a self-check is SELF-REPORTED whatever it measured."""
    verdict = str(report.get("verdict"))
    if report.get("mode") == "self-check" and verdict in ("VERIFIED", "UNOFFICIAL"):
        return "SELF-REPORTED"
    return verdict


def _num(value: Any, fmt: str = ".2f") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return clean(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return format(value, fmt)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


_UPPER = {"tps": "TPS", "ppl": "PPL", "cv": "CV", "ci95": "95% CI", "nll": "NLL", "id": "id"}


def _label(name: str) -> str:
    """A metric's member path as a label in the words of the known rows
    (``tps.tokens_per_trial`` -> ``TPS tokens per trial``)."""
    words = [w for part in name.split(".") for w in part.split("_") if w]
    return " ".join(_UPPER.get(w.lower(), w) for w in words)


def _generic_rows(prefix: str, values: dict[str, Any], skip: set[str]) -> list[tuple[str, str]]:
    rows = []
    for key, value in values.items():
        if key in skip:
            continue
        name = _label(f"{prefix}{key}")
        if _scalar(value):
            rows.append((name, "-" if value is None else _num(value, ".4g")))
        elif isinstance(value, list):
            rows.append((name, f"{len(value)} items"))
        elif isinstance(value, dict):
            rows += _generic_rows(f"{prefix}{key}.", value, set())
    return rows


def metric_rows(metrics: dict[str, Any], machine: str | None = None) -> list[tuple[str, str]]:
    """The metrics table: the known ones in their words, then every other member."""
    rows: list[tuple[str, str]] = []
    tps = metrics.get("tps") if isinstance(metrics.get("tps"), dict) else None
    ppl = metrics.get("ppl") if isinstance(metrics.get("ppl"), dict) else None
    if tps:
        if "median" in tps:
            rows.append(("TPS (median)", _num(tps["median"])))
        ci = tps.get("ci95")
        if isinstance(ci, list) and len(ci) == 2:
            rows.append(("TPS 95% CI", f"{_num(ci[0])} .. {_num(ci[1])}"))
        if isinstance(tps.get("cv"), (int, float)):
            rows.append(("TPS CV", f"{tps['cv']:.2%}"))
        if isinstance(tps.get("trials"), list):
            rows.append(("TPS trials", str(len(tps["trials"]))))
        rows += _generic_rows("tps.", tps, _TPS_SHOWN)
    if metrics.get("reported_tps") is not None:
        rows.append(("reported TPS", _num(metrics["reported_tps"])))
    if ppl:
        if "value" in ppl:
            rows.append(("PPL", "undefined" if ppl["value"] is None else _num(ppl["value"], "g")))
        if "cap" in ppl:
            rows.append(("PPL cap", _num(ppl["cap"], ".4f")))
        rows += _generic_rows("ppl.", ppl, _PPL_SHOWN)
    if metrics.get("speedup") is not None:
        rows.append(_speedup_row(metrics, machine))
    rest = {k: v for k, v in metrics.items() if k not in _KNOWN_METRICS and v is not None}
    rows += _generic_rows("", rest, set())
    return rows


def baseline_note(report: dict[str, Any]) -> str | None:
    """Which baseline a speed-up is against, and why that one: the shipped challenge's
    baseline entry with the same TPS (the report names only the number)."""
    from schemas.challenge import list_challenges, load_challenge

    metrics = report.get("metrics") or {}
    base = metrics.get("baseline_tps")
    if metrics.get("speedup") is None or not isinstance(base, (int, float)):
        return None
    cid = (report.get("challenge") or {}).get("id")
    if cid not in list_challenges():  # never a path a report names
        return f"speed-up against a baseline of {_num(base, '.1f')} TPS"
    spec = load_challenge(str(cid))
    entry = next((b for b in spec.tps.baselines or [] if b.tps == base), None)
    if entry is None:
        return (
            f"speed-up against the {cid} challenge's baseline, {_num(base, '.1f')} TPS on its "
            "own hardware: the speed a plain engine reaches there"
        )
    setup = "with the challenge's default config" if entry.config else ""
    return (
        f"speed-up against the {cid} challenge's baseline: {entry.engine} {setup}, "
        f"{_num(entry.tps, '.1f')} TPS measured on {entry.hardware}. It was measured on that "
        "machine, not on this run's: where the two differ, the speed-up is a reference, not "
        "what the entry's tuning gained here (verify the baseline's own entry on this machine "
        "for that)"
    ).replace("  ", " ")


def baseline_machine(report: dict[str, Any]) -> str | None:
    """The machine the report's baseline TPS was measured on, as the challenge names it."""
    from schemas.challenge import list_challenges, load_challenge

    base = (report.get("metrics") or {}).get("baseline_tps")
    cid = (report.get("challenge") or {}).get("id")
    if not isinstance(base, (int, float)) or cid not in list_challenges():
        return None
    spec = load_challenge(str(cid))
    entry = next((b for b in spec.tps.baselines or [] if b.tps == base), None)
    return entry.hardware if entry is not None else None


def _speedup_row(metrics: dict[str, Any], machine: str | None) -> tuple[str, str]:
    base = metrics.get("baseline_tps")
    where = f" on {machine.split(', the ')[0]}" if machine else ""
    speedup = _num(metrics["speedup"])
    return "speed-up", f"{speedup}x over the baseline's {_num(base, '.1f')} TPS{where}"


def tps_warning(metrics: dict[str, Any], max_cv: float | None = None) -> str | None:
    """Why the TPS cannot be relied on, or None: trials that disagree, or an interval
    that reaches zero."""
    tps = metrics.get("tps")
    if not isinstance(tps, dict):
        return None
    cv, ci = tps.get("cv"), tps.get("ci95")
    bound = max_cv or DEFAULT_MAX_CV
    reasons = []
    if isinstance(cv, (int, float)) and cv > bound:
        reasons.append(f"its trials disagree (CV {cv:.0%}, above {bound:.0%})")
    if isinstance(ci, list) and len(ci) == 2 and isinstance(ci[0], (int, float)) and ci[0] <= 0:
        reasons.append(f"its 95% interval {_num(ci[0])} .. {_num(ci[1])} reaches zero")
    if not reasons:
        return None
    return (
        "the TPS is unreliable: "
        + " and ".join(reasons)
        + "; something else was probably using the machine: rerun when it is quiet"
    )


def _headline(report: dict[str, Any]) -> Text:
    sub = report.get("submission") or {}
    chal = report.get("challenge") or {}
    verdict = label(report)
    line = Text(verdict, style=_VERDICT_STYLE.get(str(report.get("verdict")), "bold yellow"))
    if label(report) != report.get("verdict"):
        line.append(f" ({clean(report.get('verdict'))})")
    line.append(" ")
    if sub.get("manifest_sha256"):
        line.append_text(text(f"{sub.get('team')}/{sub.get('entry')}", "bold"))
    else:
        digest = str(sub.get("bundle_sha256") or "")[:12]
        line.append(f"bundle {digest} (its manifest could not be read)")
    line.append(f" on {clean(chal.get('id'))} {clean(chal.get('version'))}")
    mode = "self-check on the public prompts" if report.get("mode") == "self-check" else "blind"
    runner = f", runner {clean(report.get('runner'))}" if report.get("runner") else ""
    line.append(f" ({mode}{runner})", style="dim")
    return line


def summary_rows(metrics: dict[str, Any], machine: str | None = None) -> list[tuple[str, str]]:
    """What a participant reads first: the TPS with its interval, the TPS they reported,
    the PPL against the cap, the speed-up. Every other member is in ``metric_rows``."""
    rows: list[tuple[str, str]] = []
    tps = metrics.get("tps") if isinstance(metrics.get("tps"), dict) else None
    ppl = metrics.get("ppl") if isinstance(metrics.get("ppl"), dict) else None
    if tps and "median" in tps:
        ci = tps.get("ci95")
        interval = (
            f" (95% CI {_num(ci[0])} .. {_num(ci[1])})"
            if isinstance(ci, list) and len(ci) == 2
            else ""
        )
        rows.append(("TPS (median)", _num(tps["median"]) + interval))
    if metrics.get("reported_tps") is not None:
        rows.append(("reported TPS", _num(metrics["reported_tps"])))
    if ppl and "value" in ppl:
        value, cap = ppl["value"], ppl.get("cap")
        shown = "undefined" if value is None else _num(value, "g")
        if isinstance(cap, (int, float)):
            over = isinstance(value, (int, float)) and value > cap
            shown += f" ({'over' if over else 'under'} the cap, {_num(cap, '.4f')})"
        rows.append(("PPL", shown))
    if metrics.get("speedup") is not None:
        rows.append(_speedup_row(metrics, machine))
    return rows


def _metrics_table(rows: list[tuple[str, str]]) -> Table:
    table = Table(show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right", no_wrap=True, min_width=8)
    for name, value in rows:
        table.add_row(text(name), text(value))
    return table


def _checks_table(checks: list[dict[str, Any]]) -> Table:
    table = Table(show_header=True, header_style="bold")
    table.add_column("check")
    table.add_column("status")
    table.add_column("summary", overflow="fold")
    for c in checks:
        status = clean(c.get("status"))
        table.add_row(
            text(c.get("id")),
            text(status, _STATUS_STYLE.get(status, "yellow")),
            text(c.get("summary")),
        )
    return table


def _check_counts(checks: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for c in checks:
        status = clean(c.get("status"))
        counts[status] = counts.get(status, 0) + 1
    order = sorted(counts, key=lambda s: (s != "pass", s))
    return "checks: " + ", ".join(f"{counts[s]} {s}" for s in order) + f" (of {len(checks)})"


def render_report(
    con: Console,
    report: dict[str, Any],
    signature: Signature,
    *,
    max_cv: float | None = None,
    details: bool = True,
    more: str | None = None,
) -> None:
    """Print ``report`` for a human; see the module docstring.

    ``details=False`` prints what a participant reads: the verdict, the TPS with its
    interval, the PPL against the cap, the checks that did not pass with their reason,
    the findings; ``more`` then says how to see the rest (every metric, every check)."""
    from podium.cli.fit import fit

    con.print(_headline(report))
    con.print(signature.line())
    metrics = report.get("metrics") or {}
    machine = baseline_machine(report)
    rows = metric_rows(metrics, machine) if details else summary_rows(metrics, machine)
    if rows:
        con.print(fit(_metrics_table(rows), pairs=True))
        note = baseline_note(report)
        if note:
            con.print(text(note, "dim"))
    checks = [c for c in report.get("checks") or [] if isinstance(c, dict)]
    findings = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    # the summary lists each check that did not pass once: by its finding (the message and
    # the hint) when it has one, else by its own row (a skipped one too, with its reason)
    explained = {f.get("check_id") for f in findings}
    shown = (
        checks
        if details
        else [c for c in checks if c.get("status") != "pass" and c.get("id") not in explained]
    )
    if checks and not details:
        con.print(text(_check_counts(checks)))
    if shown:
        con.print(fit(_checks_table(shown)))
    if findings:
        con.print(Text("findings:", style="bold"))
    for f in findings:
        severity = clean(f.get("severity"))
        line = Text("  ")
        line.append(severity, style="red" if severity == "error" else "yellow")
        line.append(f" [{clean(f.get('check_id'))}] {clean(f.get('message'))}")
        con.print(line)
        if f.get("hint"):
            con.print(text(f"      hint: {f['hint']}", "dim"))
    warning = tps_warning(report.get("metrics") or {}, max_cv)
    if warning:
        con.print(Text.assemble(("warning: ", "bold yellow"), warning))
    failure = report.get("failure")
    if isinstance(failure, dict):
        con.print(
            Text.assemble(
                (f"FAILED at stage {clean(failure.get('stage'))}: ", "bold red"),
                clean(failure.get("message")),
            )
        )
    if report.get("organizer_log"):
        con.print(
            text(
                f"the engine's own output: {report['organizer_log']} beside the report "
                "(the organizer's; it may hold held-out text)",
                "dim",
            )
        )
    hidden = len(metric_rows(metrics)) > len(rows) or len(shown) < len(checks)
    if more and not details and hidden:
        con.print(text(more, "dim"))
