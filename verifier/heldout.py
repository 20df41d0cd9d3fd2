"""Can this held-out set serve this challenge? The organizer's look before it opens.

A held-out set is a folder (or ``hf://datasets/ORG/NAME[@REV]``) holding ``prompts.jsonl``
and ``ppl.jsonl``, one record a line (``schemas/json/heldout-prompt.schema.json``,
``heldout-ppl.schema.json``). ``check_heldout`` reads it as the verifier would and says,
for each question, ``ok``, ``failed`` (a problem: the set cannot serve the spec as it is)
or ``skipped`` (with why):

- ``records``: every line is a record its schema accepts;
- ``count``: at least ``num_prompts × passes × max_trials`` prompts, where ``passes =
  ceil(min_trial_seconds × TPS / (num_prompts × max_tokens))`` at the TPS the organizer
  sizes for (``tps``, default the spec's baseline): every pass of every trial takes
  prompts no earlier request carried (``docs/challenges.md``); and at least the PPL
  records ``ppl.max_records`` asks for (one when it asks no number);
- ``duplicates``: no prompt text or PPL record twice, no id twice;
- ``public-overlap``: no prompt text or PPL record of the spec's public sets;
- ``prompt-length``: each prompt, rendered by the pinned tokenizer as the harness sends
  it (``verifier.harness.render``), within ``datasets.max_prompt_tokens``;
- ``ppl-length``: each record's context + target within ``datasets.max_ppl_tokens``, and
  every id inside the pinned vocabulary when the tokenizer is at hand.

Everything judged here comes from the organizer: the set, the spec, the tokenizer files.
No text of a record leaves this module: problems name records by id.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import PodiumError, UsageError
from schemas.challenge import ChallengeSpec
from schemas.validate import validation_errors
from verifier.datasets import load_set, read_jsonl, resolve_uri

SHOWN = 5  # ids a problem names before "and N more"


@dataclass(frozen=True)
class Question:
    name: str
    status: str  # ok | failed | skipped
    detail: str
    ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status, "detail": self.detail}
        if self.ids:
            out["ids"] = self.ids
        return out


@dataclass
class HeldoutCheck:
    challenge: str
    source: str
    counts: dict[str, Any]
    questions: list[Question] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(q.status != "failed" for q in self.questions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "challenge": self.challenge,
            "set": self.source,
            "ok": self.ok,
            "counts": self.counts,
            "questions": [q.to_dict() for q in self.questions],
        }


def _named(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def _ask(name: str, bad: list[str], ok: str, failed: str) -> Question:
    if not bad:
        return Question(name, "ok", ok)
    return Question(name, "failed", f"{failed}: {_named(bad)}", bad)


def set_files(heldout: str) -> tuple[Path, Path]:
    """``prompts.jsonl`` and ``ppl.jsonl`` of a held-out folder or Hub dataset."""
    if heldout.startswith("hf://"):
        repo, _, rev = heldout.partition("@")
        suffix = f"@{rev}" if rev else ""
        return (
            resolve_uri(f"{repo}/prompts.jsonl{suffix}")[0],
            resolve_uri(f"{repo}/ppl.jsonl{suffix}")[0],
        )
    root = Path(heldout)
    if not root.is_dir():
        raise UsageError(
            f"no such directory: {heldout}",
            hint="a held-out set is a folder holding prompts.jsonl and ppl.jsonl",
            where=heldout,
        )
    return root / "prompts.jsonl", root / "ppl.jsonl"


def passes_at(spec: ChallengeSpec, tps: float | None) -> int:
    """Passes a trial takes at ``tps``: enough to last ``min_trial_seconds``."""
    if not tps:
        return 1
    return max(1, math.ceil(spec.tps.min_trial_seconds * tps / spec.tps.tokens_per_trial))


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("id", i)) for i, r in enumerate(rows)]


def _records(kind: str, rows: list[dict[str, Any]], ids: list[str]) -> list[str]:
    return [ids[i] for i, row in enumerate(rows) if validation_errors(kind, row)]


def _ppl_key(row: dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(row.get("context_token_ids") or ()), tuple(row.get("target_token_ids") or ())


def _repeated(keys: list[Any], ids: list[str]) -> list[str]:
    seen: set[Any] = set()
    out = []
    for key, rid in zip(keys, ids, strict=True):
        if key in seen:
            out.append(rid)
        seen.add(key)
    return out


def _prompt_text(row: dict[str, Any]) -> str:
    return " ".join(str(row.get("prompt", "")).split())


def check_heldout(
    heldout: str,
    spec: ChallengeSpec,
    *,
    tps: float | None = None,
    renderer: Any = None,
    renderer_missing: str = "no tokenizer given",
    public: Callable[[str], list[dict[str, Any]]] | None = None,
) -> HeldoutCheck:
    """The questions above for ``heldout`` against ``spec``.

    ``renderer``: the pinned tokenizer (``verifier.harness.render.Renderer``); None skips
    the prompt lengths and the vocabulary, saying ``renderer_missing``. ``public(kind)``
    reads the spec's public ``prompts`` or ``ppl`` rows (default: ``load_set`` of the
    spec's URIs); one that cannot be read skips the overlap with the reason.
    """
    prompts_path, ppl_path = set_files(heldout)
    prompts, ppl = read_jsonl(prompts_path), read_jsonl(ppl_path)
    p_ids, r_ids = _ids(prompts), _ids(ppl)
    tps = tps if tps is not None else spec.tps.baseline_tps
    passes = passes_at(spec, tps)
    needed = spec.tps.num_prompts * passes * spec.tps.max_trials
    ppl_needed = spec.ppl.max_records or 1
    counts = {
        "prompts": len(prompts),
        "prompts_needed": needed,
        "passes": passes,
        "sized_for_tps": tps,
        "formula": f"num_prompts × passes × max_trials = {spec.tps.num_prompts} × {passes} × "
        f"{spec.tps.max_trials}",
        "ppl_records": len(ppl),
        "ppl_records_needed": ppl_needed,
        "ppl_target_tokens": sum(len(r.get("target_token_ids") or []) for r in ppl),
    }
    out = HeldoutCheck(spec.id, heldout, counts)
    bad = [f"prompts.jsonl:{i}" for i in _records("heldout-prompt", prompts, p_ids)]
    bad += [f"ppl.jsonl:{i}" for i in _records("heldout-ppl", ppl, r_ids)]
    out.questions.append(
        _ask("records", bad, "every record matches its schema", "records that break the schema")
    )
    out.questions.append(_count(len(prompts), needed, len(ppl), ppl_needed, passes, tps))
    dup = _repeated([_prompt_text(r) for r in prompts], p_ids)
    dup += _repeated(p_ids, p_ids) + _repeated([_ppl_key(r) for r in ppl], r_ids)
    dup += _repeated(r_ids, r_ids)
    out.questions.append(
        _ask("duplicates", sorted(set(dup)), "no prompt, record or id twice", "repeated")
    )
    out.questions.append(_overlap(spec, prompts, ppl, p_ids, r_ids, public))
    out.questions.append(_prompt_lengths(spec, prompts, p_ids, renderer, renderer_missing))
    out.questions.append(_ppl_lengths(spec, ppl, r_ids, renderer))
    return out


def _count(
    prompts: int, needed: int, records: int, ppl_needed: int, passes: int, tps: float | None
) -> Question:
    at = f"at {tps:g} TPS, {passes} pass(es) a trial" if tps else "1 pass a trial (no TPS given)"
    detail = f"{prompts} prompts for {needed} needed ({at}); {records} PPL records"
    short = []
    if prompts < needed:
        short.append(f"{needed - prompts} prompts short")
    if records < ppl_needed:
        short.append(f"{ppl_needed - records} PPL records short")
    if short:
        return Question("count", "failed", f"{detail}: {', '.join(short)}")
    return Question("count", "ok", detail)


def _public_rows(spec: ChallengeSpec, kind: str) -> list[dict[str, Any]]:
    ds = spec.datasets.public_prompts if kind == "prompts" else spec.datasets.ppl_public
    return load_set(ds.uri, kind, sha256=ds.sha256).rows


def _overlap(
    spec: ChallengeSpec,
    prompts: list[dict[str, Any]],
    ppl: list[dict[str, Any]],
    p_ids: list[str],
    r_ids: list[str],
    public: Callable[[str], list[dict[str, Any]]] | None,
) -> Question:
    read = public or (lambda kind: _public_rows(spec, kind))
    try:
        public_prompts = {_prompt_text(r) for r in read("prompts")}
        public_ppl = {_ppl_key(r) for r in read("ppl")}
    except PodiumError as exc:
        return Question(
            "public-overlap",
            "skipped",
            f"the public set could not be read ({exc.message}); pass --public DIR with its "
            "prompts.jsonl and ppl.jsonl",
        )
    shared = [i for i, r in zip(p_ids, prompts, strict=True) if _prompt_text(r) in public_prompts]
    shared += [i for i, r in zip(r_ids, ppl, strict=True) if _ppl_key(r) in public_ppl]
    return _ask("public-overlap", shared, "nothing shared with the public set", "public records")


def _prompt_lengths(
    spec: ChallengeSpec, prompts: list[dict[str, Any]], ids: list[str], renderer: Any, why: str
) -> Question:
    from verifier.harness.render import render_prompt

    limit = spec.datasets.max_prompt_tokens
    if renderer is None:
        return Question("prompt-length", "skipped", f"prompt lengths not checked: {why}")
    lengths = [
        len(render_prompt(renderer, r["prompt"], endpoint=spec.tps.endpoint))
        if isinstance(r.get("prompt"), str) and r["prompt"]
        else 0
        for r in prompts
    ]
    longest = max(lengths, default=0)
    if limit is None:
        return Question("prompt-length", "ok", f"longest {longest} tokens (the spec sets no limit)")
    over = [i for i, n in zip(ids, lengths, strict=True) if n > limit]
    return _ask(
        "prompt-length", over, f"longest {longest} of {limit} tokens", f"over {limit} tokens"
    )


def _ppl_lengths(
    spec: ChallengeSpec, ppl: list[dict[str, Any]], ids: list[str], renderer: Any
) -> Question:
    limit = spec.datasets.max_ppl_tokens
    lengths = [
        sum(len(r.get(k) or []) for k in ("context_token_ids", "target_token_ids")) for r in ppl
    ]
    over = [i for i, n in zip(ids, lengths, strict=True) if limit is not None and n > limit]
    if renderer is not None:
        size = int(renderer.vocab_size)
        over += [
            i
            for i, r in zip(ids, ppl, strict=True)
            if any(
                int(t) >= size
                for k in ("context_token_ids", "target_token_ids")
                for t in r.get(k) or []
            )
        ]
    longest = max(lengths, default=0)
    scope = f"of {limit} tokens" if limit is not None else "tokens (the spec sets no limit)"
    vocab = ", ids within the vocabulary" if renderer is not None else ""
    return _ask(
        "ppl-length",
        sorted(set(over), key=ids.index),
        f"longest {longest} {scope}{vocab}",
        f"over {limit} tokens or outside the vocabulary",
    )


def tokenizer_for(spec: ChallengeSpec, weights: Path | None) -> tuple[Any, str]:
    """(the pinned tokenizer's renderer, "") or (None, why not): from ``weights``, else the
    shipped model, else the local Hub cache at the pinned revision (never a download)."""
    from verifier.harness.render import TokenizerRenderer

    folder = weights
    if folder is None and spec.model.shipped:
        from verifier.weights import pinned_model

        folder = pinned_model(spec).path
    if folder is None:
        try:
            from huggingface_hub import snapshot_download

            repo = spec.model.tokenizer or spec.model.repo_id
            folder = Path(
                snapshot_download(repo, revision=spec.model.revision, local_files_only=True)
            )
        except (OSError, ValueError):  # huggingface_hub: not in the cache, or a bad id
            return None, (
                f"the tokenizer of {spec.model.repo_id} is not in the local Hub cache; pass "
                "--weights DIR holding its tokenizer files"
            )
    try:
        return TokenizerRenderer(folder), ""
    except PodiumError as exc:
        return (
            None,
            f"no tokenizer in {folder} ({exc.message.split(':')[0]}); pass --weights DIR "
            "holding the model's tokenizer files",
        )
