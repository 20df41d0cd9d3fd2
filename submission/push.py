"""``push``: upload a bundle, its ``.sha256`` and its manifest to a Hub repo in one commit.

The Hub is reached with ``HfApi(endpoint=...)`` (``HF_ENDPOINT`` when set), so the
endpoint is chosen at call time rather than when huggingface_hub was imported. The local
bundle is only read; the commit's sha is recorded next to it in ``BUNDLE.push.json``.
huggingface_hub's errors become ``HubError`` in one function, ``translate_hub_error``.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path
from typing import Any

from podium.canonical import sha256_file
from podium.errors import BundleError, HubError, UsageError
from schemas.check_ids import BUNDLE_CORRUPT, BUNDLE_MANIFEST_MISSING
from submission.defaults import MANIFEST_FILE, MAX_MANIFEST_BYTES
from submission.safe_bundle import check_bundle

LOGIN_HINT = "run `hf auth login`, or set HF_TOKEN"


def translate_hub_error(exc: Exception, *, repo: str, endpoint: str) -> HubError:
    """The one place where huggingface_hub / HTTP errors become podium's ``HubError``."""
    name = type(exc).__name__
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    where = f"{endpoint} {repo}"
    if name == "OfflineModeIsEnabled":
        return HubError(
            f"huggingface_hub is in offline mode: {exc}",
            where=where,
            hint="unset HF_HUB_OFFLINE to reach the Hub",
        )
    if status in (401, 403):
        return HubError(f"the Hub refused the token ({status})", where=where, hint=LOGIN_HINT)
    if status == 404 or name == "RepositoryNotFoundError":
        return HubError(
            f"repository {repo} not found, or the token cannot see it",
            where=where,
            hint="check --repo and --repo-type, and that the token may write there",
        )
    if status in (409, 412, 429):
        return HubError(
            f"the Hub answered {status} (conflict or rate limit): {exc}",
            where=where,
            hint="retry in a minute",
        )
    if status is not None:
        return HubError(f"the Hub answered {status}: {exc}", where=where)
    if isinstance(exc, OSError) or name in (
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "TimeoutException",
        "ConnectionError",
        "RemoteProtocolError",
    ):
        return HubError(
            f"cannot reach the Hub at {endpoint}: {exc}",
            where=where,
            hint="check the network and HF_ENDPOINT",
        )
    return HubError(f"the Hub upload failed: {name}: {exc}", where=where)


def bundle_stem(bundle: Path) -> str:
    name = bundle.name
    return name[: -len(".tar.gz")] if name.endswith(".tar.gz") else bundle.stem


def read_bundle_manifest(bundle: Path) -> bytes:
    """The bytes of ``manifest.json``, the bundle's first member (size-capped)."""
    try:
        with tarfile.open(bundle, mode="r|gz") as tar:
            for info in tar:
                if info.name == MANIFEST_FILE and info.isreg() and info.size <= MAX_MANIFEST_BYTES:
                    src = tar.extractfile(info)
                    assert src is not None
                    return src.read()
                break
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(
            f"{bundle} is not a readable bundle: {exc}", finding_id=BUNDLE_CORRUPT
        ) from None
    raise BundleError(
        f"{bundle} does not start with {MANIFEST_FILE}", finding_id=BUNDLE_MANIFEST_MISSING
    )


def _token(token: str | None) -> str:
    if token:
        return token
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    from huggingface_hub import get_token

    found = get_token()
    if not found:
        raise HubError(
            "no Hugging Face token: pushing needs write access to the repo", hint=LOGIN_HINT
        )
    return found


def push_bundle(
    bundle: Path,
    repo: str,
    *,
    repo_type: str = "model",
    revision: str | None = None,
    path_in_repo: str = "",
    endpoint: str | None = None,
    token: str | None = None,
    private: bool | None = None,
) -> dict[str, Any]:
    """Upload ``bundle`` (+ ``.sha256`` + manifest) in one commit; write ``BUNDLE.push.json``."""
    if not bundle.is_file():
        raise UsageError(f"no such bundle: {bundle}")
    if repo_type not in ("model", "dataset"):
        raise UsageError(f"--repo-type {repo_type!r}: choose model or dataset")
    if "/" not in repo:
        raise UsageError(f"--repo {repo!r} must be ORG/NAME")
    stem = bundle_stem(bundle)
    digest = sha256_file(bundle)
    sha_file = bundle.with_name(f"{stem}.sha256")
    if sha_file.is_file():
        recorded = sha_file.read_text(encoding="utf-8").split()[:1]
        if recorded != [digest]:
            raise UsageError(
                f"{sha_file} does not match {bundle.name}",
                hint="package again; the bundle or its .sha256 changed",
            )
    sha_text = f"{digest}  {bundle.name}\n".encode()
    check_bundle(bundle)  # the whole bundle, read as intake reads it, before any network
    manifest = read_bundle_manifest(bundle)
    tok = _token(token)
    from podium.hub import resolve_endpoint

    endpoint = resolve_endpoint(endpoint)
    prefix = path_in_repo.strip("/") + "/" if path_in_repo.strip("/") else ""
    names = {
        "bundle": f"{prefix}{bundle.name}",
        "sha256": f"{prefix}{stem}.sha256",
        "manifest": f"{prefix}{stem}.manifest.json",
    }
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=endpoint, token=tok)
    try:
        api.create_repo(repo, repo_type=repo_type, exist_ok=True, private=private)
        ops = [
            CommitOperationAdd(path_in_repo=names["bundle"], path_or_fileobj=str(bundle)),
            CommitOperationAdd(path_in_repo=names["sha256"], path_or_fileobj=sha_text),
            CommitOperationAdd(path_in_repo=names["manifest"], path_or_fileobj=manifest),
        ]
        info = api.create_commit(
            repo,
            ops,
            commit_message=f"Add submission {stem} ({digest[:12]})",
            repo_type=repo_type,
            revision=revision,
        )
    except HubError:
        raise
    except Exception as exc:  # huggingface_hub and httpx errors, translated in one place
        raise translate_hub_error(exc, repo=repo, endpoint=endpoint) from exc
    record = {
        "repo": repo,
        "repo_type": repo_type,
        "revision": revision or "main",
        "endpoint": endpoint,
        "commit_sha": getattr(info, "oid", None),
        "commit_url": getattr(info, "commit_url", None),
        "bundle_sha256": digest,
        "files": names,
    }
    out = bundle.with_name(bundle.name + ".push.json")
    out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    record["record_file"] = str(out)
    return record
