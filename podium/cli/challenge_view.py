"""How a challenge reads on the console: ``podium challenge show`` and the knob lists of
``podium submission knobs``."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from podium.untrusted import markup, text
from schemas.challenge import ChallengeSpec
from submission.knobs import KnobRow, knob_table


def describe(spec: ChallengeSpec, con: Console) -> None:
    """The spec as ``podium challenge show`` prints it: its rules, then its knobs."""
    q, t, p = spec.quality, spec.tps, spec.ppl
    con.print(f"[bold]{markup(spec.title)}[/] ({markup(spec.id)} {markup(spec.version)})")
    con.print(text(f"model      {spec.model.repo_id} @ {spec.model.revision} ({spec.model.dtype})"))
    con.print(text(f"hardware   {spec.hardware.describe()}"))
    rule = (
        f"reference {q.reference_ppl} x {q.max_ratio}"
        if q.rule == "ratio"
        else f"absolute {q.max_ppl}"
    )
    con.print(text(f"PPL cap    {q.cap:.4f} ({rule})"))
    con.print(
        text(
            f"PPL        {p.endpoint}, prompt_logprobs={p.prompt_logprobs}, "
            f"add_special_tokens={str(p.add_special_tokens).lower()}, {p.aggregate}-average "
            "over target tokens"
        )
    )
    con.print(
        text(
            f"TPS        {t.num_prompts} prompts x {t.max_tokens} tokens, "
            f"ignore_eos={str(t.ignore_eos).lower()}, concurrency {t.concurrency}, "
            f"{t.warmup_requests} warm-ups, seed {t.seed}, {t.endpoint}, "
            f"stream={str(t.stream).lower()}, {t.trials} trials, "
            f"reproduction within {t.reproduction_tolerance:.0%}"
        )
    )
    lim = spec.limits
    con.print(
        text(
            f"limits     build {lim.build_s:.0f} s, start-up {lim.startup_s:.0f} s, "
            f"evaluation {lim.evaluation_s:.0f} s, bundle {lim.bundle_bytes / 2**20:.0f} MiB, "
            f"image {lim.image_bytes / 2**30:.0f} GiB"
        )
    )
    con.print(text(f"engines    {', '.join(spec.engine.kinds)}"))
    con.print(text(f"locked     {lock_state(spec)}"))
    for forbidden in spec.engine.forbidden:
        con.print(text(f"rule       {forbidden.message}"))
    con.print()
    print_knobs(con, knob_table(spec), title=f"knobs the {spec.id} challenge allows")


def lock_state(spec: ChallengeSpec) -> str:
    """``yes``, ``not needed`` or what is left to lock (``podium challenge lock``)."""
    from verifier.lock import unlocked_parts

    if not spec.check("isolation").get("enabled"):
        return "not needed (the challenge requires no isolation)"
    parts = unlocked_parts(spec)
    if not parts:
        return "yes"
    return "no: " + "; ".join(f"{p.part} ({p.why})" for p in parts)


def print_knobs(
    con: Console, rows: list[KnobRow], *, title: str, values: dict[str, Any] | None = None
) -> None:
    """The knobs as ``vllm serve --help`` lists options: a line with the name, the values
    it accepts and the engines that act on it, then what it does, indented. A list (not
    a table) reads at any terminal width and in a pipe."""
    con.print(text(f"{title}:", "bold"))
    width = max((len(r.name) for r in rows), default=0)
    for row in rows:
        line = Text("  ")
        line.append(row.name.ljust(width), style="bold")
        if values is not None:
            line.append_text(
                text(f"  = {json.dumps(values[row.name])}" if row.name in values else "  (not set)")
            )
        accepted = row.accepted + (f"; {row.rule}" if row.rule else "")
        line.append_text(text(f"  {accepted}"))
        line.append(f"  [{', '.join(row.engines) or 'custom only'}]", style="dim")
        con.print(line)
        if row.does:
            con.print(text(f"      {row.does}"))
    con.print(
        text(
            "[...]: the engine kinds that act on the knob; a custom engine reads what its own "
            "code reads"
        )
    )
