"""Prompt sets and PPL ground truth: where they come from, what they hash to.

A dataset URI is ``shipped:NAME/FILE`` (data shipped with podium), a local path, or
``hf://datasets/ORG/NAME/FILE[@REVISION]`` (downloaded through huggingface_hub). The
held-out set can also be given as a directory (or ``hf://datasets/ORG/NAME[@REV]``)
holding ``prompts.jsonl`` and ``ppl.jsonl``. Only digests of held-out data ever go
into reports; the content travels to the engine as requests and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from podium.canonical import sha256_file
from podium.errors import HubError, SchemaError, UsageError
from schemas.challenge import ChallengeSpec, Dataset


@dataclass(frozen=True)
class LoadedSet:
    path: Path
    sha256: str
    rows: list[dict[str, Any]]
    revision: str | None = None


def shipped_path(name: str) -> Path:
    """``tiny/public-prompts.jsonl`` -> the file inside podium's shipped data."""
    return Path(str(resources.files("podium").joinpath("data", *name.split("/"))))


def _hf_download(uri: str, filename: str | None = None) -> tuple[Path, str | None]:
    rest = uri.removeprefix("hf://datasets/")
    rest, _, revision = rest.partition("@")
    parts = rest.split("/")
    if len(parts) < 2:
        raise UsageError(
            f"bad Hub dataset URI {uri!r}", hint="use hf://datasets/ORG/NAME/FILE[@REV]"
        )
    repo_id = "/".join(parts[:2])
    file = filename or "/".join(parts[2:])
    if not file:
        raise UsageError(f"{uri!r} names no file")
    from huggingface_hub import hf_hub_download

    from podium.hub import HUB_ERRORS, default_cache_dir, resolve_endpoint

    errors: tuple[type[Exception], ...] = (*HUB_ERRORS, OSError)
    try:
        local = hf_hub_download(
            repo_id,
            file,
            repo_type="dataset",
            revision=revision or None,
            endpoint=resolve_endpoint(),  # HF_ENDPOINT as it is now, as every Hub call reads it
            cache_dir=default_cache_dir(),
        )
    except errors as exc:
        raise HubError(
            f"could not download {file} from dataset {repo_id}: {exc}",
            hint="check the URI, HF_TOKEN for private sets, and that the Hub is reachable",
            where=uri,
        ) from exc
    return Path(local), revision or None


def resolve_uri(uri: str) -> tuple[Path, str | None]:
    if uri.startswith("shipped:"):
        return shipped_path(uri.removeprefix("shipped:")), None
    if uri.startswith("hf://"):
        return _hf_download(uri)
    return Path(uri), None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SchemaError(
                        f"line {lineno} is not JSON: {exc.msg}", file=str(path)
                    ) from None
                if not isinstance(row, dict):
                    raise SchemaError(f"line {lineno} is not a JSON object", file=str(path))
                rows.append(row)
    except FileNotFoundError:
        raise UsageError(f"no such data file: {path}") from None
    return rows


def _check_prompts(rows: list[dict[str, Any]], path: Path) -> None:
    for i, row in enumerate(rows):
        if not isinstance(row.get("prompt"), str) or not row["prompt"]:
            raise SchemaError(
                "each prompt row needs a non-empty string 'prompt'",
                file=str(path),
                json_path=f"$[{i}].prompt",
            )
        row.setdefault("id", str(i))


def _check_ppl(rows: list[dict[str, Any]], path: Path) -> None:
    for i, row in enumerate(rows):
        for key in ("context_token_ids", "target_token_ids"):
            ids = row.get(key)
            if not isinstance(ids, list) or not all(isinstance(t, int) and t >= 0 for t in ids):
                raise SchemaError(
                    f"{key} must be a list of token ids", file=str(path), json_path=f"$[{i}].{key}"
                )
        if not row["target_token_ids"]:
            raise SchemaError("target_token_ids is empty", file=str(path), json_path=f"$[{i}]")
        row.setdefault("id", str(i))


def load_set(uri: str, kind: str, *, sha256: str | None = None) -> LoadedSet:
    """Load a ``prompts`` or ``ppl`` set from a URI and check its shape (and digest, if pinned)."""
    path, revision = resolve_uri(uri)
    if sha256 is not None and sha256_file(path) != sha256:
        raise SchemaError(
            f"the data set's sha256 is not the {sha256[:12]}... the challenge spec pins",
            file=str(path),
            hint="fetch the data set again; the verifier only evaluates on pinned data",
        )
    rows = read_jsonl(path)
    if not rows:
        raise SchemaError("the data set is empty", file=str(path))
    (_check_prompts if kind == "prompts" else _check_ppl)(rows, path)
    return LoadedSet(path=path, sha256=sha256_file(path), rows=rows, revision=revision)


@dataclass(frozen=True)
class EvaluationSets:
    warmup_prompts: LoadedSet
    prompts: LoadedSet
    ppl: LoadedSet
    public: bool

    def heldout_summary(self) -> dict[str, Any]:
        return {
            "prompts_sha256": self.prompts.sha256,
            "ppl_sha256": self.ppl.sha256,
            "revision": self.prompts.revision,
            "public": self.public,
        }


def _required(ds: Dataset | None, what: str, spec: ChallengeSpec) -> str:
    if ds is None:
        raise UsageError(
            f"the {spec.id} challenge ships no {what}",
            hint="pass the held-out set with --heldout DIR (prompts.jsonl + ppl.jsonl) or hf://datasets/...",
        )
    return ds.uri


def evaluation_sets(spec: ChallengeSpec, *, heldout: str | None, public: bool) -> EvaluationSets:
    """The sets a run uses: public ones for a self-check, held-out ones for verification."""
    ds = spec.datasets
    warmup = load_set(ds.public_prompts.uri, "prompts", sha256=ds.public_prompts.sha256)
    if public:
        ppl_public = load_set(ds.ppl_public.uri, "ppl", sha256=ds.ppl_public.sha256)
        return EvaluationSets(warmup, warmup, ppl_public, True)
    if heldout:
        if heldout.startswith("hf://"):
            base = heldout
            repo, _, rev = base.partition("@")
            suffix = f"@{rev}" if rev else ""
            prompts_uri, ppl_uri = f"{repo}/prompts.jsonl{suffix}", f"{repo}/ppl.jsonl{suffix}"
        else:
            root = Path(heldout)
            if not root.is_dir():
                raise UsageError(
                    f"--heldout {heldout} is not a directory",
                    hint="a held-out directory holds prompts.jsonl and ppl.jsonl",
                )
            prompts_uri, ppl_uri = str(root / "prompts.jsonl"), str(root / "ppl.jsonl")
        pins: tuple[str | None, str | None] = (None, None)
    else:
        prompts_uri = _required(ds.heldout_prompts, "held-out prompts", spec)
        ppl_uri = _required(ds.ppl_heldout, "held-out PPL records", spec)
        pins = (
            ds.heldout_prompts.sha256 if ds.heldout_prompts else None,
            ds.ppl_heldout.sha256 if ds.ppl_heldout else None,
        )
    prompts = load_set(prompts_uri, "prompts", sha256=pins[0])
    ppl = load_set(ppl_uri, "ppl", sha256=pins[1])
    if prompts.sha256 == warmup.sha256:
        raise UsageError(
            "the held-out prompts are the public prompts",
            hint="verification must run on prompts the engine has never seen",
        )
    return EvaluationSets(warmup, prompts, ppl, False)
